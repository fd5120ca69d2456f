"""`orun llama-server`, driven exactly as Ollama >= 0.30 drives its llama-server runner (llm/llama_server.go):
spawn with Ollama's argv, poll /health every 250 ms until "ok" (503 "loading model" before), /tokenize,
stream a /completion (SSE), parse content / stop / stop_type / timings as Ollama does, /detokenize,
/apply-template and /v1/chat/completions; the discovery starts (--list-devices; no --model) and the
buffer-size log lines Ollama's memory accounting parses. Also: started under the name `llama-server`.
"""
import json
import os
import re
import subprocess
import time

import requests

from conftest import model_path
from test_server_common import free_port

# llm/llama_server.go: bufferSizeRegex
BUFFER_SIZE = re.compile(r"(?m)(?:^|\n)[^\n:]*?([A-Za-z_][A-Za-z0-9_]*):\s+(\S+)\s+(model|KV|compute|output|RS)"
                         r"\s+buffer size\s*=\s*([\d.]+)\s*MiB")


def ollama_argv(exe, model, port, num_ctx=4096, parallel=1):
    # startLlamaServer: the flags Ollama always passes, plus the ones it adds for a Go-template model on CPU
    return [exe, "--model", str(model), "--port", str(port), "--host", "127.0.0.1", "--no-webui", "--offline",
            "-c", str(num_ctx * parallel), "-np", str(parallel), "--log-verbosity", "4", "--no-log-prefix",
            "--no-log-timestamps", "--no-jinja", "--chat-template", "chatml", "--flash-attn", "off",
            "-b", "512", "-ub", "512", "--context-shift", "--keep", "4"]


def wait_health(port, proc, timeout=60):
    """Ollama's WaitUntilRunning: poll /health (200 ms timeout) every 250 ms."""
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, "llama-server exited while loading"
        try:
            r = requests.get(f"http://127.0.0.1:{port}/health", timeout=0.2)
            body = r.json()
            status = body.get("status") or (body.get("error") or {}).get("message", "").lower()
            seen.append(status)
            if status == "ok":
                return seen
            assert status == "loading model", body
        except requests.RequestException:
            seen.append("not responding")
        time.sleep(0.25)
    raise AssertionError(f"not ready after {timeout}s: {seen[-5:]}")


def parse_sse(resp):
    """Ollama's Completion loop: skip comments and blank lines, optional data: prefix."""
    partial, final = [], None
    for line in resp.iter_lines():
        if not line or line.startswith(b":"):
            continue
        evt = line[6:] if line.startswith(b"data: ") else line
        ev = json.loads(evt)
        if ev.get("content") and not ev["stop"]:
            partial.append(ev["content"])
        if ev["stop"]:
            final = ev
            break
    return partial, final


def test_runner_protocol(orun_bin, tmp_path):
    model = model_path("qwen2")
    port = free_port()
    log = open(tmp_path / "runner.log", "wb")
    proc = subprocess.Popen([orun_bin, "llama-server", *ollama_argv(orun_bin, model, port)[1:]],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_health(port, proc)
        base = f"http://127.0.0.1:{port}"
        # buffer sizes for VRAM accounting
        text = (tmp_path / "runner.log").read_text()
        sizes = BUFFER_SIZE.findall(text)
        assert any(kind == "model" and float(mib) > 400 for _, _, kind, mib in sizes), text
        # tokenize as Ollama does (add_special omitted when false)
        toks = requests.post(base + "/tokenize", json={"content": "Hello world"}).json()["tokens"]
        assert toks == [9707, 1879]
        assert requests.post(base + "/detokenize", json={"tokens": toks}).json() == {"content": "Hello world"}
        # stream a completion with llamaServerCompletionRequest's fields
        prompt = "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n"
        body = {"prompt": prompt, "stream": True, "cache_prompt": True, "n_predict": 8, "n_keep": 4,
                "temperature": 0, "top_k": 40, "top_p": 0.9, "min_p": 0, "stop": ["<|im_end|>", "<|endoftext|>"],
                "repeat_penalty": 1, "repeat_last_n": 64, "frequency_penalty": 0, "presence_penalty": 0,
                "seed": -1}
        r = requests.post(base + "/completion", json=body, stream=True)
        assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        partial, final = parse_sse(r)
        assert partial and final and final["stop"] is True
        assert final["stop_type"] in ("eos", "word", "limit")
        t = final["timings"]
        assert t["cache_n"] + t["prompt_n"] == len(requests.post(base + "/tokenize", json={
            "content": prompt, "add_special": True}).json()["tokens"])
        assert t["predicted_n"] >= len(partial) and t["predicted_ms"] > 0 and t["prompt_ms"] > 0
        # the same prompt again: the slot's KV prefix is reused (cache_prompt)
        partial2, final2 = parse_sse(requests.post(base + "/completion", json=body, stream=True))
        assert "".join(partial2) == "".join(partial)
        assert final2["timings"]["cache_n"] > 0
        # n_predict limit → stop_type "limit" (Ollama's done_reason "length")
        body["n_predict"] = 2
        _, final3 = parse_sse(requests.post(base + "/completion", json=body, stream=True))
        assert final3["stop_type"] == "limit" and final3["timings"]["predicted_n"] == 2
        # a truncated prompt as token ids (Ollama sends ids after context-shift truncation)
        ids = requests.post(base + "/tokenize", json={"content": prompt, "add_special": True}).json()["tokens"]
        _, final4 = parse_sse(requests.post(base + "/completion", json=dict(body, prompt=ids), stream=True))
        assert final4["stop"]
        # native chat path helpers
        msgs = [{"role": "user", "content": "hi"}]
        p = requests.post(base + "/apply-template", json={"messages": msgs}).json()["prompt"]
        assert p.endswith("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
        r = requests.post(base + "/v1/chat/completions", json={"messages": msgs, "stream": True, "n_predict": 4,
                                                               "temperature": 0}, stream=True)
        events = [l[6:] for l in r.iter_lines() if l.startswith(b"data: ")]
        assert events[-1] == b"[DONE]"
        last = json.loads(events[-2])
        assert last["choices"][0]["finish_reason"] in ("stop", "length") and "timings" in last
        # a grammar (GBNF, as Ollama sends for format "json") constrains the output
        partial, _ = parse_sse(requests.post(base + "/completion", json=dict(body, grammar="root ::= \"x\""),
                                             stream=True))
        assert "".join(partial) == "x"
        # unsupported features answer clearly
        r = requests.post(base + "/v1/embeddings", json={"input": "x"})
        assert r.status_code == 501
    finally:
        proc.kill()  # Ollama unloads with Process.Kill
        proc.wait()
        log.close()


def test_discovery_starts(orun_bin, tmp_path):
    out = subprocess.run([orun_bin, "llama-server", "--list-devices", "--offline", "--verbose"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("Available devices:")
    # the model-less start: stderr must reach system_info quickly, then Ollama kills it
    port = free_port()
    proc = subprocess.Popen([orun_bin, "llama-server", "--port", str(port), "--host", "127.0.0.1", "--no-webui",
                             "--offline", "--verbose"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        deadline = time.time() + 10
        seen = False
        while time.time() < deadline and not seen:
            line = proc.stderr.readline()
            if not line:
                break
            seen = "system_info:" in line
        assert seen
    finally:
        proc.kill()
        proc.wait()


def test_invoked_as_llama_server(orun_bin, tmp_path):
    link = tmp_path / "lib" / "ollama" / "llama-server"
    link.parent.mkdir(parents=True)
    os.symlink(os.path.realpath(orun_bin), link)
    out = subprocess.run([str(link), "--list-devices"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.startswith("Available devices:")
    out = subprocess.run([str(link), "--no-such-flag"], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "invalid argument: --no-such-flag" in out.stderr
