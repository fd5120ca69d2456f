"""`orun serve` with models created from a bare GGUF (no TEMPLATE): Ollama's behaviour — a bundled template when
the GGUF's Jinja template is close to a known one (SmolLM2 → chatml), else the GGUF's own Jinja template, used for
/api/chat, /api/generate and /v1/chat/completions, shown by /api/show and `orun show --template`, with the
capabilities read from it.

Every prompt check compares the prompt orun renders (_debug_render_only) with Python jinja2 rendering the same
OpenAI-shaped messages as transformers does (tests/integration/jinja_golden.py). Also: the qwen2.5 tool-call round
trip through the ollama and openai clients, think → enable_thinking, a template's raise_exception → 400, `cp`
keeping the choice and a TEMPLATE overriding it. A synthetic model (orun mkmodel --chat-template) carries the
thinking/raising template.
"""
import json
import os
import subprocess

import pytest
import requests

from conftest import model_path
from jinja_golden import gguf_chat, render
from test_server_common import Server

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city",
                                           "parameters": {"type": "object", "required": ["city"],
                                                          "properties": {"city": {"type": "string"}}}}}]
OPTS = {"temperature": 0, "num_predict": 30, "seed": 1}

THINK_TEMPLATE = """{%- for m in messages -%}
{%- if m.role == 'system' and not loop.first -%}
{{ raise_exception('System message must be at the beginning.') }}
{%- endif -%}
<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}
{%- if add_generation_prompt -%}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{%- endif -%}"""


def cli(orun_bin, srv, *args):
    env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{srv.port}")
    return subprocess.run([orun_bin, *args], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def jserved(orun_bin, tmp_path_factory):
    """A server with qwen2.5 created by `orun create` from `FROM <gguf>`, SmolLM2 created through the ollama
    client from its GGUF blob, and a synthetic model whose GGUF carries THINK_TEMPLATE."""
    import ollama

    tmp = tmp_path_factory.mktemp("jinja")
    srv = Server(orun_bin, tmp)
    try:
        mf = tmp / "Modelfile"
        mf.write_text(f"FROM {model_path('qwen2')}\n")
        r = cli(orun_bin, srv, "create", "qwen-gguf", "-f", str(mf))
        assert r.returncode == 0, r.stderr
        c = ollama.Client(host=srv.base)
        digest = c.create_blob(model_path("llama"))
        srv.smol_progress = [p.status for p in c.create(model="smol-gguf", files={"model.gguf": digest}, stream=True)]
        tpl = tmp / "think.jinja"
        tpl.write_text(THINK_TEMPLATE)
        synth = tmp / "think.gguf"
        subprocess.run([orun_bin, "mkmodel", "-o", str(synth), "--tokenizer", str(model_path("llama")), "--arch",
                        "llama", "--layers", "1", "--dim", "64", "--heads", "2", "--kv-heads", "1", "--ff", "128",
                        "--tied", "--chat-template", str(tpl)], check=True, capture_output=True)
        mf2 = tmp / "Modelfile.think"
        mf2.write_text(f"FROM {synth}\n")
        r = cli(orun_bin, srv, "create", "think-gguf", "-f", str(mf2))
        assert r.returncode == 0, r.stderr
        srv.tmp = tmp
        yield srv
    finally:
        srv.stop()


def rendered(srv, path, body):
    r = requests.post(srv.base + path, json={**body, "_debug_render_only": True})
    assert r.status_code == 200, r.text
    return r.json()["_debug_info"]["rendered_template"]


def test_create_show_and_capabilities(jserved, orun_bin):
    """Before: a bare-GGUF qwen2.5 showed `{{ .Prompt }}` with only "completion" (tools refused). After: the
    GGUF's Jinja template is shown (no TEMPLATE layer is stored, none in the Modelfile) and tools come from it;
    SmolLM2's template is close to Ollama's chatml, which is autodetected as Ollama does."""
    qwen_tpl, _, _ = gguf_chat(orun_bin, model_path("qwen2"))
    show = requests.post(jserved.base + "/api/show", json={"model": "qwen-gguf"}).json()
    assert show["template"] == qwen_tpl
    assert show["capabilities"] == ["completion", "tools"]
    assert "TEMPLATE" not in show["modelfile"]
    r = cli(orun_bin, jserved, "show", "--template", "qwen-gguf")
    assert r.returncode == 0 and r.stdout == qwen_tpl
    r = cli(orun_bin, jserved, "show", "qwen-gguf")
    assert "tools" in r.stdout
    manifest = jserved.models / "manifests" / "registry.ollama.ai" / "library" / "qwen-gguf" / "latest"
    layers = [l["mediaType"] for l in json.loads(manifest.read_text())["layers"]]
    assert layers == ["application/vnd.ollama.image.model"]  # the choice is not a layer: it follows from none

    assert "using autodetected template chatml" in jserved.smol_progress
    smol = requests.post(jserved.base + "/api/show", json={"model": "smol-gguf"}).json()
    assert smol["template"].startswith("{{- range .Messages }}<|im_start|>")
    assert smol["capabilities"] == ["completion"]

    think = requests.post(jserved.base + "/api/show", json={"model": "think-gguf"}).json()
    assert think["template"] == THINK_TEMPLATE
    assert think["capabilities"] == ["completion", "thinking"]


def test_qwen_prompts_equal_jinja2(jserved, orun_bin):
    """/api/chat, /api/generate and /v1/chat/completions render exactly what transformers renders: plain turns,
    a system message, tools (passed only when the request has some), a tool call and its result (Ollama's
    tool_name → name, arguments as objects)."""
    tpl, bos, eos = gguf_chat(orun_bin, model_path("qwen2"))
    call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    cases = [
        ([{"role": "user", "content": "hi"}], None),
        ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
          {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Who are you?"}], None),
        ([{"role": "user", "content": "Weather in Paris?"}], TOOLS),
        ([{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [call]},
          {"role": "tool", "content": "22 C, sunny", "tool_name": "get_weather"}], TOOLS),
    ]
    for msgs, tools in cases:
        body = {"model": "qwen-gguf", "messages": msgs, **({"tools": tools} if tools else {})}
        openai_msgs = []
        for m in msgs:
            o = {"role": m["role"], "content": m["content"]}
            if "tool_calls" in m:
                o["tool_calls"] = [{"type": "function", "function": c["function"]} for c in m["tool_calls"]]
            if "tool_name" in m:
                o["name"] = m["tool_name"]
            openai_msgs.append(o)
        want = render(tpl, openai_msgs, tools=tools, bos=bos, eos=eos)
        assert rendered(jserved, "/api/chat", body) == want
    # generate: the prompt as a user message
    want = render(tpl, [{"role": "user", "content": "Write a haiku"}], bos=bos, eos=eos)
    assert rendered(jserved, "/api/generate", {"model": "qwen-gguf", "prompt": "Write a haiku"}) == want
    # OpenAI: the same path
    assert rendered(jserved, "/v1/chat/completions", {
        "model": "qwen-gguf", "messages": [{"role": "user", "content": "hi"}]}) == render(
        tpl, [{"role": "user", "content": "hi"}], bos=bos, eos=eos)


def test_smollm2_prompt(jserved, orun_bin):
    """SmolLM2 through the autodetected chatml (Ollama's choice for it): equal to its Jinja template whenever the
    chat has a system message; without one Ollama's chatml adds no default system prompt (the GGUF's Jinja
    does: `orun llama-server --jinja` renders that, test_llamaserver_jinja.py)."""
    tpl, bos, eos = gguf_chat(orun_bin, model_path("llama"))
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert rendered(jserved, "/api/chat", {"model": "smol-gguf", "messages": msgs}) == render(tpl, msgs, bos=bos,
                                                                                             eos=eos)
    got = rendered(jserved, "/api/chat", {"model": "smol-gguf", "messages": msgs[1:]})
    assert got == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_chat_through_clients(jserved):
    """Both test models answer through the ollama client (streamed and not) and the openai client, from the
    rendered template: qwen2.5's prompt carries its template's default system prompt (~30 tokens; the bare
    `{{ .Prompt }}` of before was 3)."""
    import ollama
    import openai

    c = ollama.Client(host=jserved.base)
    oc = openai.OpenAI(base_url=jserved.base + "/v1", api_key="x")
    for model in ("qwen-gguf", "smol-gguf"):
        msgs = [{"role": "user", "content": "Say hello."}]
        r = c.chat(model=model, messages=msgs, options=OPTS, stream=False)
        assert r.done and r.message.content.strip()
        assert r.prompt_eval_count >= (20 if model == "qwen-gguf" else 10), r.prompt_eval_count
        chunks = list(c.chat(model=model, messages=msgs, options=OPTS, stream=True))
        assert "".join(ch.message.content for ch in chunks) == r.message.content
        o = oc.chat.completions.create(model=model, messages=msgs, temperature=0, max_tokens=30, seed=1)
        assert o.choices[0].message.content == r.message.content


def test_qwen_tool_round_trip(jserved, orun_bin):
    """qwen2.5: a request with tools gets the model's <tool_call> output back as tool_calls (the reply prefilled
    with "<tool_call>", which this small model does not open by itself), arguments as an object (ollama) / a
    JSON string (openai); the tool's result goes back and is rendered as the template renders it."""
    import ollama
    import openai

    tpl, bos, eos = gguf_chat(orun_bin, model_path("qwen2"))
    c = ollama.Client(host=jserved.base)
    msgs = [{"role": "system", "content": "You answer only by calling tools."},
            {"role": "user", "content": "What is the weather in Paris?"}]
    r = c.chat(model="qwen-gguf", messages=msgs + [{"role": "assistant", "content": "<tool_call>\n"}], tools=TOOLS,
               options=OPTS, stream=False)
    assert r.message.tool_calls, r.message
    call = r.message.tool_calls[0]
    assert call.function.name == "get_weather" and call.function.arguments == {"city": "Paris"}
    assert "<tool_call>" not in (r.message.content or "")
    # streamed: the call arrives in a chunk
    chunks = list(c.chat(model="qwen-gguf", messages=msgs + [{"role": "assistant", "content": "<tool_call>\n"}],
                         tools=TOOLS, options=OPTS, stream=True))
    calls = [tc for ch in chunks for tc in (ch.message.tool_calls or [])]
    assert [tc.function.name for tc in calls] == ["get_weather"]
    # the result goes back: rendered as transformers renders it, and the model answers
    follow = msgs + [{"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "22 C, sunny", "tool_name": "get_weather"}]
    want = render(tpl, msgs + [
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "22 C, sunny", "name": "get_weather"}], tools=TOOLS, bos=bos, eos=eos)
    assert rendered(jserved, "/api/chat", {"model": "qwen-gguf", "messages": follow, "tools": TOOLS}) == want
    assert "<tool_response>\n22 C, sunny\n</tool_response>" in want
    r2 = c.chat(model="qwen-gguf", messages=follow, tools=TOOLS, options=OPTS, stream=False)
    assert r2.done and (r2.message.content or r2.message.tool_calls)
    # OpenAI client: tool_calls with arguments as a JSON string
    oc = openai.OpenAI(base_url=jserved.base + "/v1", api_key="x")
    o = oc.chat.completions.create(model="qwen-gguf", tools=TOOLS, temperature=0, max_tokens=30, seed=1,
                                   messages=msgs + [{"role": "assistant", "content": "<tool_call>\n"}])
    tc = o.choices[0].message.tool_calls
    assert tc and tc[0].function.name == "get_weather" and json.loads(tc[0].function.arguments) == {"city": "Paris"}
    assert o.choices[0].finish_reason == "tool_calls"


def test_qwen_bare_json_tool_call(jserved):
    """Without a prefill this small qwen2.5 writes its call as bare JSON, with no <tool_call> tag: the template's
    chat format (llama-server's Hermes 2 Pro, runner/chatfmt) takes {"name": ..., "arguments": ...} as the call,
    as llama-server does, through both clients and streamed."""
    import ollama
    import openai

    c = ollama.Client(host=jserved.base)
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = c.chat(model="qwen-gguf", messages=msgs, tools=TOOLS, options=OPTS, stream=False)
    assert [(tc.function.name, tc.function.arguments) for tc in r.message.tool_calls or []] == \
        [("get_weather", {"city": "Paris"})], r.message
    assert (r.message.content or "") == ""
    chunks = list(c.chat(model="qwen-gguf", messages=msgs, tools=TOOLS, options=OPTS, stream=True))
    assert [tc.function.name for ch in chunks for tc in (ch.message.tool_calls or [])] == ["get_weather"]
    assert "".join(ch.message.content for ch in chunks) == ""
    oc = openai.OpenAI(base_url=jserved.base + "/v1", api_key="x")
    o = oc.chat.completions.create(model="qwen-gguf", tools=TOOLS, temperature=0, max_tokens=30, seed=1, messages=msgs)
    tc = o.choices[0].message.tool_calls
    assert tc and tc[0].function.name == "get_weather" and json.loads(tc[0].function.arguments) == {"city": "Paris"}


def test_think_maps_to_enable_thinking(jserved, orun_bin):
    """The request's think reaches the template as enable_thinking (and reasoning_effort); a thinking model
    defaults to think on, as Ollama does."""
    tpl, bos, eos = gguf_chat(orun_bin, jserved.tmp / "think.gguf")
    msgs = [{"role": "user", "content": "hi"}]
    off = rendered(jserved, "/api/chat", {"model": "think-gguf", "messages": msgs, "think": False})
    assert off == render(tpl, msgs, bos=bos, eos=eos, extra={"enable_thinking": False})
    assert off.endswith("<think>\n\n</think>\n\n")
    on = rendered(jserved, "/api/chat", {"model": "think-gguf", "messages": msgs})
    assert on == render(tpl, msgs, bos=bos, eos=eos, extra={"enable_thinking": True, "reasoning_effort": "medium"})
    assert on.endswith("<|im_start|>assistant\n")
    r = requests.post(jserved.base + "/api/chat", json={"model": "qwen-gguf", "messages": msgs, "think": True})
    assert r.status_code == 400 and "does not support thinking" in r.json()["error"]


def test_template_error_is_400(jserved):
    """A template's raise_exception is the client's error: 400 with the template's message, on every face."""
    msgs = [{"role": "user", "content": "hi"}, {"role": "system", "content": "late"}]
    for path in ("/api/chat", "/v1/chat/completions"):
        r = requests.post(jserved.base + path, json={"model": "think-gguf", "messages": msgs, "stream": False})
        assert r.status_code == 400, r.text
        assert "System message must be at the beginning." in r.text


def test_copy_keeps_jinja_and_template_overrides(jserved, orun_bin, tmp_path):
    """`cp` keeps the GGUF's template (the choice is the absence of a template layer); a Modelfile with TEMPLATE
    over the model wins, as in Ollama."""
    tpl, _, _ = gguf_chat(orun_bin, model_path("qwen2"))
    assert cli(orun_bin, jserved, "cp", "qwen-gguf", "qwen-copy").returncode == 0
    show = requests.post(jserved.base + "/api/show", json={"model": "qwen-copy"}).json()
    assert show["template"] == tpl and show["capabilities"] == ["completion", "tools"]
    mf = tmp_path / "Modelfile"
    mf.write_text('FROM qwen-copy\nTEMPLATE "{{ .Prompt }}"\n')
    r = cli(orun_bin, jserved, "create", "qwen-plain", "-f", str(mf))
    assert r.returncode == 0, r.stderr
    show = requests.post(jserved.base + "/api/show", json={"model": "qwen-plain"}).json()
    assert show["template"] == "{{ .Prompt }}" and show["capabilities"] == ["completion"]
    hi = [{"role": "user", "content": "hi"}]
    assert rendered(jserved, "/api/chat", {"model": "qwen-plain", "messages": hi}) == "hi"
    r = requests.post(jserved.base + "/api/chat", json={"model": "qwen-plain", "tools": TOOLS,
                                                        "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 400 and "does not support tools" in r.json()["error"]
    for m in ("qwen-copy", "qwen-plain"):
        requests.delete(jserved.base + "/api/delete", json={"model": m})
