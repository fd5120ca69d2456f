"""`orun serve` on the wire: raw-socket checks of the NDJSON and SSE framing (one JSON object per HTTP chunk,
one SSE event per token), CORS (gin-contrib/cors with Ollama's origins), the Host-header check on a loopback
listener, a client that disconnects mid-stream (its slot is free for the next request at once),
OLLAMA_MAX_QUEUE (503 with Ollama's message), and a client that stops reading (the engine's short write handed
to the connection's thread: nothing lost).
"""
import json
import socket
import threading
import time

import requests

from test_server_common import Server, served  # noqa: F401  (fixture)


def raw_request(port, method, path, body=None, headers=None):
    s = socket.create_connection(("127.0.0.1", port))
    data = json.dumps(body).encode() if body is not None else b""
    hdrs = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Content-Length": str(len(data))}
    hdrs.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items()) + "\r\n"
    s.sendall(head.encode() + data)
    return s


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    return status, headers, rest


def read_chunks(s, rest):
    """Decodes chunked transfer encoding; returns the list of chunk payloads."""
    buf = rest
    chunks = []
    while True:
        while b"\r\n" not in buf:
            d = s.recv(65536)
            if not d:
                return chunks
            buf += d
        size_line, _, buf = buf.partition(b"\r\n")
        n = int(size_line.split(b";")[0], 16)
        while len(buf) < n + 2:
            d = s.recv(65536)
            if not d:
                return chunks
            buf += d
        if n == 0:
            return chunks
        chunks.append(buf[:n])
        buf = buf[n + 2:]


def test_ndjson_framing(served):
    s = raw_request(served.port, "POST", "/api/chat", {
        "model": "qwen2", "messages": [{"role": "user", "content": "Count from 1 to 5."}],
        "options": {"temperature": 0, "num_predict": 10}})
    status, headers, rest = read_head(s)
    assert status == 200
    assert headers["content-type"] == "application/x-ndjson"
    assert headers["transfer-encoding"] == "chunked"
    chunks = read_chunks(s, rest)
    s.close()
    assert len(chunks) >= 3
    for c in chunks:  # exactly one JSON object per chunk, newline-terminated
        assert c.endswith(b"\n") and c.count(b"\n") == 1, c
        json.loads(c)
    objs = [json.loads(c) for c in chunks]
    assert objs[-1]["done"] is True and all(o["done"] is False for o in objs[:-1])
    assert all(o["message"]["content"] for o in objs[:-1])  # no empty token lines


def test_sse_framing(served):
    s = raw_request(served.port, "POST", "/v1/chat/completions", {
        "model": "qwen2", "messages": [{"role": "user", "content": "Count from 1 to 5."}], "stream": True,
        "max_tokens": 8, "temperature": 0})
    status, headers, rest = read_head(s)
    assert status == 200 and headers["content-type"] == "text/event-stream"
    chunks = read_chunks(s, rest)
    s.close()
    events = []
    for c in chunks:
        text = c.decode()
        assert text.startswith("data: ") and text.endswith("\n\n"), text
        parts = [p for p in text.split("\n\n") if p]
        events += parts
        if "[DONE]" not in text and '"finish_reason":"' not in text:
            assert len(parts) == 1  # one event per token
    assert events[-1] == "data: [DONE]"
    first = json.loads(events[0][6:])
    assert first["object"] == "chat.completion.chunk" and first["choices"][0]["delta"]["role"] == "assistant"
    finish = [json.loads(e[6:]) for e in events[:-1] if json.loads(e[6:])["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and finish[0]["choices"][0]["delta"] == {}


def test_cors_and_host_check(served):
    b = served.base
    r = requests.get(b + "/api/version", headers={"Origin": "http://localhost:3000"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    r = requests.get(b + "/api/version", headers={"Origin": "https://evil.example"})
    assert r.status_code == 403
    r = requests.options(b + "/api/chat", headers={"Origin": "app://obsidian.md",
                                                    "Access-Control-Request-Method": "POST"})
    assert r.status_code == 204 and "POST" in r.headers["Access-Control-Allow-Methods"]
    s = raw_request(served.port, "GET", "/api/version", headers={"Host": "evil.example.com"})
    status, _, _ = read_head(s)
    s.close()
    assert status == 403
    for host in ("localhost", "myhost.local", "10.0.0.5:11434"):
        s = raw_request(served.port, "GET", "/api/version", headers={"Host": host})
        status, _, _ = read_head(s)
        s.close()
        assert status == 200, host


def test_origins_env(orun_bin, tmp_path):
    srv = Server(orun_bin, tmp_path, env_extra={"OLLAMA_ORIGINS": "https://*.example.org"})
    try:
        r = requests.get(srv.base + "/api/tags", headers={"Origin": "https://ui.example.org"})
        assert r.status_code == 200 and r.json() == {"models": []}
        assert r.headers["Access-Control-Allow-Origin"] == "https://ui.example.org"
        assert requests.get(srv.base + "/api/tags", headers={"Origin": "https://ui.example.com"}).status_code == 403
    finally:
        srv.stop()
    srv = Server(orun_bin, tmp_path, env_extra={"OLLAMA_ORIGINS": "*"})
    try:
        r = requests.get(srv.base + "/api/tags", headers={"Origin": "https://anything.test"})
        assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"
    finally:
        srv.stop()


def test_disconnect_frees_the_slot(served):
    # a long generation, abandoned after two tokens ...
    s = raw_request(served.port, "POST", "/api/generate", {
        "model": "qwen2", "prompt": "Write a long story about a dragon.", "options": {"num_predict": 400}})
    status, _, rest = read_head(s)
    assert status == 200
    got = rest
    while got.count(b'"done":false') < 2:
        got += s.recv(4096)
    s.close()
    # ... must not hold the only slot: the next request finishes in about its own time
    t0 = time.time()
    r = requests.post(served.base + "/api/generate", json={
        "model": "qwen2", "prompt": "hi", "stream": False, "options": {"num_predict": 3, "temperature": 0}})
    assert r.status_code == 200 and r.json()["done"]
    assert time.time() - t0 < 60, "the abandoned generation kept the slot"


def test_max_queue(orun_bin, served, tmp_path):
    srv = Server(orun_bin, tmp_path, env_extra={
        "OLLAMA_MODELS": str(served.models), "OLLAMA_MAX_QUEUE": "1", "OLLAMA_NUM_PARALLEL": "1", "OLLAMA_NOPRUNE": "1"})
    try:
        # A occupies the slot (greedy: this prompt runs the whole 400 tokens, where a sampled story may stop early
        # and free the slot) ...
        a = raw_request(srv.port, "POST", "/api/generate", {
            "model": "qwen2", "prompt": "Write a long story.",
            "options": {"num_predict": 400, "temperature": 0, "seed": 1}})
        status, _, _ = read_head(a)
        assert status == 200
        # ... B waits for it (the one queue place) ...
        result = {}

        def run_b():
            r = requests.post(srv.base + "/api/generate", json={
                "model": "qwen2", "prompt": "hi", "stream": False, "options": {"num_predict": 2}})
            result["b"] = r.status_code

        tb = threading.Thread(target=run_b)
        tb.start()
        time.sleep(1.0)
        # ... and C finds the queue full
        r = requests.post(srv.base + "/api/generate", json={
            "model": "qwen2", "prompt": "hi", "stream": False, "options": {"num_predict": 2}})
        assert r.status_code == 503
        assert r.json() == {"error": "server busy, please try again.  maximum pending requests exceeded"}
        a.close()  # A leaves: B runs
        tb.join(timeout=120)
        assert result.get("b") == 200
    finally:
        srv.stop()



def backpressure_count(port):
    text = requests.get(f"http://127.0.0.1:{port}/metrics").text
    return int(next(l.split()[1] for l in text.splitlines() if l.startswith("orun_stream_backpressure_total ")))


def test_slow_reader_loses_nothing(orun_bin, served, tmp_path):
    """A client that stops reading: the engine thread's non-blocking write comes up short, the connection's
    thread writes the rest and the tokens after it. Every line must arrive whole and in order, with the same
    text as an answer collected by the server (greedy, prompt cache off so both evaluate the same batches).
    ORUN_HTTP_SNDBUF and a small receive buffer make the socket fill after a few lines (the kernel would
    otherwise grow the buffers to megabytes)."""
    srv = Server(orun_bin, tmp_path, env_extra={
        "OLLAMA_MODELS": str(served.models), "OLLAMA_NOPRUNE": "1", "ORUN_HTTP_SNDBUF": "4096"})
    try:
        req = {"model": "qwen2", "messages": [{"role": "user", "content": "Write a long story about a dragon."}],
               "options": {"temperature": 0, "seed": 1, "num_predict": 120, "cache_prompt": False}}
        whole = requests.post(srv.base + "/api/chat", json=dict(req, stream=False)).json()
        assert backpressure_count(srv.port) == 0
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.connect(("127.0.0.1", srv.port))
        data = json.dumps(req).encode()
        s.sendall((f"POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data)
        status, _, rest = read_head(s)
        assert status == 200
        # not reading while the tokens come, until the server had to hand a short write over
        deadline = time.time() + 120
        while backpressure_count(srv.port) == 0 and time.time() < deadline:
            time.sleep(0.2)
        assert backpressure_count(srv.port) > 0, "the socket never filled: the hand-over was not exercised"
        time.sleep(1.0)
        chunks = read_chunks(s, rest)
        s.close()
    finally:
        srv.stop()
    objs = []
    for c in chunks:  # still one JSON object per chunk
        assert c.endswith(b"\n") and c.count(b"\n") == 1, c
        objs.append(json.loads(c))
    assert objs[-1]["done"] is True and all(o["done"] is False for o in objs[:-1])
    text = "".join(o["message"]["content"] for o in objs)
    assert objs[-1]["eval_count"] == whole["eval_count"] == 120
    assert text == whole["message"]["content"]
