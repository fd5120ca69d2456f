"""`orun llama-server` with Jinja chat templates, as upstream llama-server renders them (--jinja is the default):
/apply-template and /v1/chat/completions through the GGUF's tokenizer.chat_template (compared with Python jinja2
rendering the same messages, tests/integration/jinja_golden.py), --no-jinja / --chat-template NAME /
--chat-template-file / --chat-template-kwargs and the request's chat_template_kwargs, --reasoning-format, tool calls
and reasoning returned as upstream returns them (tool_calls with arguments as a JSON string, reasoning_content), a
template's raise_exception answered 400, an unknown template name refused at start.
"""
import json
import subprocess

import pytest
import requests

from conftest import model_path
from jinja_golden import gguf_chat, render
from test_server_common import free_port
from test_server_llamaserver import wait_health

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city",
                                           "parameters": {"type": "object", "required": ["city"],
                                                          "properties": {"city": {"type": "string"}}}}}]


class Runner:
    def __init__(self, orun_bin, model, log_dir, *flags):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(log_dir / f"llama-server-{self.port}.log", "wb")
        self.proc = subprocess.Popen([orun_bin, "llama-server", "--model", str(model), "--port", str(self.port),
                                      "-c", "4096", *flags], stdout=self.log, stderr=subprocess.STDOUT)
        wait_health(self.port, self.proc)

    def apply(self, body):
        r = requests.post(self.base + "/apply-template", json=body)
        assert r.status_code == 200, r.text
        return r.json()["prompt"]

    def chat(self, body):
        return requests.post(self.base + "/v1/chat/completions", json={"temperature": 0, "max_tokens": 30, **body})

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.log.close()


@pytest.fixture
def runners(tmp_path):
    started = [tmp_path]  # the log folder, then the runners
    yield started
    for r in started[1:]:
        r.stop()


def start(runners, orun_bin, model, *flags):
    r = Runner(orun_bin, model, runners[0], *flags)
    runners.append(r)
    return r


def test_smollm2_default_is_jinja(orun_bin, runners):
    """Before: /apply-template rendered a Go chatml equivalent (no default system prompt). Now, by default (as
    upstream), SmolLM2's own template: its default system prompt is there; --no-jinja keeps the Go rendering."""
    tpl, bos, eos = gguf_chat(orun_bin, model_path("llama"))
    msgs = [{"role": "user", "content": "hi"}]
    r = start(runners, orun_bin, model_path("llama"))
    got = r.apply({"messages": msgs})
    assert got == render(tpl, msgs, bos=bos, eos=eos)
    assert "You are a helpful AI assistant named SmolLM" in got
    props = requests.get(r.base + "/props").json()
    assert props["chat_template"] == tpl
    out = r.chat({"messages": msgs}).json()
    assert out["choices"][0]["message"]["content"]
    go = start(runners, orun_bin, model_path("llama"), "--no-jinja", "--chat-template", "chatml")
    assert go.apply({"messages": msgs}) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_qwen_tools_and_tool_calls(orun_bin, runners):
    """qwen2.5's template with tools and a tool-call history renders as transformers renders it (arguments sent
    as JSON text reach the template as objects); the model's <tool_call> output comes back as tool_calls with
    arguments as a JSON string (finish_reason tool_calls), whole and streamed."""
    tpl, bos, eos = gguf_chat(orun_bin, model_path("qwen2"))
    r = start(runners, orun_bin, model_path("qwen2"))
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"id": "call_1", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": "22 C, sunny"}]
    want_msgs = json.loads(json.dumps(history))
    want_msgs[1]["tool_calls"][0]["function"]["arguments"] = {"city": "Paris"}
    assert r.apply({"messages": history, "tools": TOOLS}) == render(tpl, want_msgs, tools=TOOLS, bos=bos, eos=eos)
    assert r.apply({"messages": history[:1]}) == render(tpl, history[:1], bos=bos, eos=eos)

    ask = [{"role": "system", "content": "You answer only by calling tools."},
           {"role": "user", "content": "What is the weather in Paris?"},
           {"role": "assistant", "content": "<tool_call>\n"}]  # prefill: this small model does not open the tag
    assert r.apply({"messages": ask, "tools": TOOLS}).endswith("<|im_start|>assistant\n<tool_call>\n")
    out = r.chat({"messages": ask, "tools": TOOLS}).json()
    ch = out["choices"][0]
    assert ch["finish_reason"] == "tool_calls"
    call = ch["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["function"]["name"] == "get_weather"
    args = call["function"]["arguments"]
    assert isinstance(args, str) and json.loads(args) == {"city": "Paris"}
    s = r.chat({"messages": ask, "tools": TOOLS, "stream": True})
    deltas = [json.loads(l[6:])["choices"][0] for l in s.iter_lines() if l.startswith(b"data: {")]
    calls = [tc for d in deltas for tc in d["delta"].get("tool_calls", [])]
    assert [c["function"]["name"] for c in calls] == ["get_weather"] and calls[0]["index"] == 0
    assert deltas[-1]["finish_reason"] == "tool_calls"


def test_template_flags_and_kwargs(orun_bin, runners, tmp_path):
    """--chat-template chatml, --chat-template-file with --chat-template-kwargs defaults that a request's
    chat_template_kwargs overrides, a raise_exception answered 400, reasoning_content from a template that opens
    <think> (and none with --reasoning-format none), an unknown template name refused at start."""
    msgs = [{"role": "user", "content": "hi"}]
    r = start(runners, orun_bin, model_path("qwen2"), "--chat-template", "chatml")
    assert r.apply({"messages": msgs}) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"

    f = tmp_path / "t.jinja"
    f.write_text("{% if messages[0].role != 'user' %}{{ raise_exception('first message must be the user') }}{% endif %}"
                 "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                 "<|im_start|>assistant\n[{{ style }}]<think>\n\n")  # jinja2 drops one trailing newline
    r = start(runners, orun_bin, model_path("qwen2"), "--chat-template-file", str(f),
              "--chat-template-kwargs", '{"style": "terse"}')
    assert r.apply({"messages": msgs}).endswith("assistant\n[terse]<think>\n")
    assert r.apply({"messages": msgs, "chat_template_kwargs": {"style": "long"}}).endswith("[long]<think>\n")
    bad = requests.post(r.base + "/apply-template", json={"messages": [{"role": "assistant", "content": "x"}, *msgs]})
    assert bad.status_code == 400 and "first message must be the user" in bad.text
    assert r.chat({"messages": [{"role": "system", "content": "x"}, *msgs]}).status_code == 400
    m = r.chat({"messages": msgs, "max_tokens": 8}).json()["choices"][0]["message"]
    assert m.get("reasoning_content") and not m["content"]  # the prompt opened <think>: all of it is reasoning
    m = r.chat({"messages": msgs, "max_tokens": 8, "reasoning_format": "none"}).json()["choices"][0]["message"]
    assert m["content"] and "reasoning_content" not in m

    p = subprocess.run([orun_bin, "llama-server", "--model", str(model_path("llama")), "--port", str(free_port()),
                        "--chat-template", "no-such-template"], capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "unknown chat template 'no-such-template'" in p.stdout + p.stderr
    p = subprocess.run([orun_bin, "llama-server", "--reasoning-format", "sometimes"], capture_output=True, text=True)
    assert p.returncode != 0 and "--reasoning-format" in p.stderr
