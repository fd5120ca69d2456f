"""Token log-probabilities on `orun serve` (issue 15 item 4): Ollama's `logprobs`/`top_logprobs` on /api/chat
and /api/generate, streamed and not, raw and through the `ollama` client, the OpenAI client's logprobs on
/v1/chat/completions and /v1/completions. Greedy decoding, so the chosen token must be the most probable one
of the model's raw distribution, and the token texts must spell the answer."""
import contextlib
import json
import math
import subprocess

import requests

from conftest import model_path
from test_server_common import free_port, served  # noqa: F401  (fixture)
from test_server_llamaserver import ollama_argv, wait_health

OPTS = {"temperature": 0, "num_predict": 8, "seed": 1}
MSGS = [{"role": "user", "content": "Say hello."}]


@contextlib.contextmanager
def llama_server(orun_bin, model):
    """`orun llama-server` on a test model, started as Ollama starts it; yields its base URL."""
    port = free_port()
    proc = subprocess.Popen([orun_bin, "llama-server", *ollama_argv(orun_bin, model_path(model), port)[1:]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_health(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def check_entries(entries, top):
    assert entries, "no logprobs"
    for e in entries:
        assert set(e) <= {"token", "logprob", "bytes", "top_logprobs"}, e
        assert e["logprob"] <= 0 and math.exp(e["logprob"]) <= 1
        if e["token"]:
            assert bytes(e["bytes"]) == e["token"].encode(), e
        tl = e.get("top_logprobs", [])
        assert len(tl) == top, e
        if top:
            # greedy: the chosen token is the top-1 of the model's raw distribution
            assert tl[0]["token"] == e["token"] and abs(tl[0]["logprob"] - e["logprob"]) < 1e-6, e
            assert all(tl[i]["logprob"] >= tl[i + 1]["logprob"] for i in range(len(tl) - 1))
            assert sum(math.exp(t["logprob"]) for t in tl) <= 1 + 1e-6
    return "".join(e["token"] for e in entries)


def test_chat_logprobs_whole_and_streamed(served):
    body = {"model": "qwen2", "messages": MSGS, "options": OPTS, "logprobs": True, "top_logprobs": 3}
    r = requests.post(served.base + "/api/chat", json={**body, "stream": False})
    assert r.status_code == 200, r.text
    j = r.json()
    text = check_entries(j["logprobs"], 3)
    assert text == j["message"]["content"]
    assert len(j["logprobs"]) == j["eval_count"] - (1 if j["done_reason"] == "stop" else 0)

    r = requests.post(served.base + "/api/chat", json={**body, "stream": True}, stream=True)
    lines = [json.loads(x) for x in r.iter_lines() if x]
    streamed = [e for ln in lines for e in ln.get("logprobs", [])]
    assert check_entries(streamed, 3) == "".join(ln["message"]["content"] for ln in lines)
    assert streamed == j["logprobs"]
    # each chunk carries the entries of its own tokens
    for ln in lines:
        if ln["message"]["content"]:
            assert "".join(e["token"] for e in ln["logprobs"]) == ln["message"]["content"]


def test_generate_logprobs(served):
    body = {"model": "qwen2", "prompt": "1, 2, 3,", "options": OPTS, "logprobs": True}
    j = requests.post(served.base + "/api/generate", json={**body, "stream": False}).json()
    assert check_entries(j["logprobs"], 0) == j["response"]
    r = requests.post(served.base + "/api/generate", json={**body, "top_logprobs": 20}, stream=True)
    lines = [json.loads(x) for x in r.iter_lines() if x]
    streamed = [e for ln in lines for e in ln.get("logprobs", [])]
    assert check_entries(streamed, 20) == j["response"]
    # without logprobs: no member at all
    j = requests.post(served.base + "/api/generate", json={**body, "logprobs": False, "stream": False}).json()
    assert "logprobs" not in j


def test_logprobs_stop_string(served):
    """As Ollama's runner: a token whose text a stop string swallows whole gets no entry; one with some text
    before the stop keeps its entry."""
    base = {"model": "qwen2", "prompt": "The days of the week: Monday, Tuesday,", "logprobs": True, "stream": False, "raw": True}
    full = requests.post(served.base + "/api/generate", json={**base, "options": OPTS}).json()
    toks = [e["token"] for e in full["logprobs"]]
    assert len(toks) >= 5 and "".join(toks) == full["response"]
    k = next(i for i in range(2, len(toks) - 1) if len(toks[i].strip()) >= 1 and toks[i] not in "".join(toks[:i]))
    cases = [(toks[k] + toks[k + 1], k)]  # the stop starts where token k starts: k..k+1 get none
    assert len(toks[k]) >= 2, toks
    cases.append((toks[k][1:] + toks[k + 1], k + 1))  # starts inside token k: k keeps its entry
    for stop, n in cases:
        j = requests.post(served.base + "/api/generate", json={**base, "options": {**OPTS, "stop": [stop]}}).json()
        assert j["response"] == full["response"][:full["response"].index(stop)], (stop, j)
        assert [e["token"] for e in j["logprobs"]] == toks[:n], (stop, j["logprobs"])


def test_top_logprobs_range(served):
    for n in (21, -1):
        r = requests.post(served.base + "/api/chat", json={"model": "qwen2", "messages": MSGS, "logprobs": True,
                                                          "top_logprobs": n})
        assert r.status_code == 400 and r.json() == {"error": "top_logprobs must be between 0 and 20"}


def test_ollama_client_logprobs(served):
    import ollama

    c = ollama.Client(host=served.base)
    r = c.chat(model="qwen2", messages=MSGS, options=OPTS, logprobs=True, top_logprobs=2)
    assert r.logprobs and r.logprobs[0].top_logprobs[0].token == r.logprobs[0].token
    assert "".join(e.token for e in r.logprobs) == r.message.content
    g = c.generate(model="qwen2", prompt="1, 2, 3,", options=OPTS, logprobs=True)
    assert "".join(e.token for e in g.logprobs) == g.response


def test_openai_client_logprobs(served):
    from openai import OpenAI

    c = OpenAI(base_url=served.base + "/v1", api_key="x")
    r = c.chat.completions.create(model="qwen2", messages=MSGS, temperature=0, max_tokens=8, seed=1,
                                  logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert check_entries([x.model_dump(exclude_none=True) for x in content], 2) == r.choices[0].message.content
    chunks = list(c.chat.completions.create(model="qwen2", messages=MSGS, temperature=0, max_tokens=8, seed=1,
                                            logprobs=True, top_logprobs=2, stream=True))
    streamed = [x for ch in chunks if ch.choices and ch.choices[0].logprobs for x in ch.choices[0].logprobs.content]
    assert [x.token for x in streamed] == [x.token for x in content]
    # /v1/completions: logprobs (an int) is the number of top entries
    r = requests.post(served.base + "/v1/completions", json={"model": "qwen2", "prompt": "1, 2, 3,", "max_tokens": 8,
                                                             "temperature": 0, "seed": 1, "logprobs": 3}).json()
    ch = r["choices"][0]
    assert check_entries(ch["logprobs"]["content"], 3) == ch["text"]
    r = requests.post(served.base + "/v1/completions", json={"model": "qwen2", "prompt": "1, 2, 3,", "max_tokens": 8,
                                                             "temperature": 0, "seed": 1}).json()
    assert "logprobs" not in r["choices"][0]


def test_llama_server_n_probs(orun_bin, tmp_path):
    """`orun llama-server`: n_probs → completion_probabilities on /completion's events as Ollama's runner
    client reads them (token, logprob, bytes, top_logprobs per generated token); logprobs + top_logprobs →
    choices[0].logprobs.content on /v1/chat/completions."""
    with llama_server(orun_bin, "qwen2") as base:
        prompt = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n"
        body = {"prompt": prompt, "stream": True, "n_predict": 8, "temperature": 0, "n_probs": 3,
                "stop": ["<|im_end|>", "<|endoftext|>"]}
        content, probs = "", []
        for line in requests.post(base + "/completion", json=body, stream=True).iter_lines():
            if not line or line.startswith(b":"):
                continue
            ev = json.loads(line[6:] if line.startswith(b"data: ") else line)
            content += ev["content"]
            for p in ev.get("completion_probabilities", []):
                assert isinstance(p["id"], int) and len(p["top_logprobs"]) == 3
                probs.append({k: p[k] for k in ("token", "logprob", "bytes")} |
                             {"top_logprobs": [{k: t[k] for k in ("token", "logprob", "bytes")}
                                               for t in p["top_logprobs"]]})
            if ev["stop"]:
                break
        assert check_entries(probs, 3) == content
        # not streamed: all of them on the one object
        j = requests.post(base + "/completion", json={**body, "stream": False}).json()
        assert [p["token"] for p in j["completion_probabilities"]] == [p["token"] for p in probs]
        # without n_probs: none
        j = requests.post(base + "/completion", json={**body, "stream": False, "n_probs": 0}).json()
        assert "completion_probabilities" not in j
        # the chat endpoint, as Ollama's native chat path asks
        chat = {"messages": MSGS, "stream": False, "n_predict": 8, "temperature": 0, "logprobs": True,
                "top_logprobs": 2}
        j = requests.post(base + "/v1/chat/completions", json=chat).json()
        lc = j["choices"][0]["logprobs"]["content"]
        assert check_entries([{k: p[k] for k in ("token", "logprob", "bytes", "top_logprobs")} for p in lc], 2) \
            == j["choices"][0]["message"]["content"]


def test_llama_server_preserved_tokens(orun_bin, tmp_path):
    """preserved_tokens (issue 15 item 5): a control token listed there comes back as its text, as upstream
    (detokenized with special = true); not listed, it is dropped from the text. The logprob entry of such a
    token carries its text either way."""
    with llama_server(orun_bin, "llama") as base:
        # SmolLM2 opens the next turn with <|im_start|> (a control token, not an end of generation) after a
        # finished system turn
        body = {"prompt": "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n", "n_predict": 3,
                "temperature": 0, "stream": False, "n_probs": 1}
        plain = requests.post(base + "/completion", json=body).json()
        assert plain["completion_probabilities"][0]["token"] == "<|im_start|>", plain
        assert not plain["content"].startswith("<|im_start|>")
        kept = requests.post(base + "/completion", json={**body, "preserved_tokens": ["<|im_start|>", "a b"]}).json()
        assert kept["content"].startswith("<|im_start|>"), kept
        assert kept["content"] == "<|im_start|>" + plain["content"]
        # streamed the same
        r = requests.post(base + "/completion", json={**body, "stream": True, "preserved_tokens": ["<|im_start|>"]},
                          stream=True)
        text = "".join(json.loads(x[6:])["content"] for x in r.iter_lines() if x.startswith(b"data: "))
        assert text == kept["content"]
