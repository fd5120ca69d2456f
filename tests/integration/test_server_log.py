"""The server's log a person can follow (issue 17, item 3): model load and unload with the file, format,
context, backend and memory; a num_ctx capped at the model's training context, with the reason; a prompt
truncated to fit the context in Ollama's form; gin's access line for each request.

A live `orun serve` with the small real qwen2 model; the test reads the server's stderr (its log file).
"""
import re
import time

import pytest
import requests

from test_server_common import Server, create_qwen

TS = r"time=\S+ level=(INFO|WARN) source=orun "


@pytest.fixture(scope="module")
def logged(orun_bin, tmp_path_factory):
    import ollama

    srv = Server(orun_bin, tmp_path_factory.mktemp("serve-log"))
    try:
        create_qwen(ollama.Client(host=srv.base))
        yield srv
    finally:
        srv.stop()


def wait_for(srv, pattern, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(pattern, srv.read_log(), re.M)
        if m:
            return m
        time.sleep(0.1)
    pytest.fail(f"no line matching {pattern!r} in the server log:\n{srv.read_log()}")


def generate(srv, prompt, **options):
    r = requests.post(srv.base + "/api/generate", json={"model": "qwen2", "prompt": prompt, "stream": False,
                                                        "options": dict(num_predict=2, **options)}, timeout=300)
    assert r.status_code == 200, r.text
    return r.json()


def test_load_cap_truncate_unload(logged):
    generate(logged, "hi", num_ctx=131072)
    wait_for(logged, TS + r'msg="requested context size too large for model" num_ctx=131072 n_ctx_train=32768 '
                          r'used=32768 reason="capped at the model\'s training context"$')
    m = wait_for(logged, TS + r'msg="loading model" model=(\S+) name=qwen2:latest format="GGUF v3" arch=qwen2 '
                              r'file_type=Q4_K_M size="[0-9.]+ MiB" n_ctx_train=32768 num_ctx=32768 num_batch=512 '
                              r'parallel=1 kv_cache=f16 backend=cpu threads=\w+ embedding=false$')
    assert "/blobs/sha256-" in m.group(2)
    wait_for(logged, TS + r'msg="model weights" device=cpu size="[0-9.]+ MiB" '
                          r'placement="(copied into memory|read in place from the file mapping)" reason=".+"$')
    wait_for(logged, TS + r'msg="kv cache and buffers" device=cpu size="[0-9.]+ MiB"$')
    wait_for(logged, TS + r'msg="model loaded" name=qwen2:latest total="[0-9.]+ [MG]iB" duration=[0-9.]+s$')

    # a prompt longer than the context: truncated as Ollama logs it (limit = new = what is kept)
    out = generate(logged, "word " * 300, num_ctx=128, num_gpu=1)
    # num_gpu=1 of 24 layers: without a GPU it runs on the CPU, with CUDA every layer is offloaded: said either way
    wait_for(logged, TS + r'msg="(num_gpu asked without a GPU backend" num_gpu=1 used=0|partial offload asked" '
                          r'num_gpu=1 layers=24 used=24) reason=".+"$')
    m = wait_for(logged, TS + r'msg="truncating input prompt" limit=(\d+) prompt=(\d+) keep=(\d+) new=(\d+)$')
    limit, prompt, keep, new = map(int, m.groups()[1:])
    assert limit == new == out["prompt_eval_count"] and prompt > 300 and 0 < keep < new < 128
    # a conversation longer than the context: the oldest messages are dropped, and the log says so (Ollama logs
    # this at DEBUG; an Open WebUI user whose tool schemas overflow num_ctx would otherwise see no trace)
    msgs = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"message {k}: " + "word " * 40}
            for k in range(5)]
    r = requests.post(logged.base + "/api/chat", json={"model": "qwen2", "messages": msgs, "stream": False,
                                                       "options": {"num_ctx": 128, "num_gpu": 1, "num_predict": 2}},
                      timeout=300)
    assert r.status_code == 200, r.text
    m = wait_for(logged, TS + r'msg="truncating input messages which exceed context length" truncated=(\d+)$')
    assert 1 <= int(m.group(2)) < 5
    # the reload for the other num_ctx unloaded the first instance, saying why
    wait_for(logged, TS + r'msg="unloading model" name=qwen2:latest size="[0-9.]+ MiB" '
                          r'reason="reloading with other load options"$')
    requests.post(logged.base + "/api/generate", json={"model": "qwen2", "keep_alive": 0}, timeout=60)
    wait_for(logged, TS + r'msg="unloading model" name=qwen2:latest size="[0-9.]+ MiB" '
                          r'reason="keep_alive 0 \(a request or orun stop asked\)"$')


def test_gin_access_lines(logged):
    requests.get(logged.base + "/api/tags", timeout=60)
    requests.post(logged.base + "/api/show", json={"model": "nope"}, timeout=60)
    # [GIN] 2024/12/11 - 09:58:58 | 200 |    414.019µs |       127.0.0.1 | GET      "/api/tags"
    for code, method, path in ((200, "GET", "/api/tags"), (404, "POST", "/api/show")):
        m = wait_for(logged, r"^\[GIN\] \d{4}/\d\d/\d\d - \d\d:\d\d:\d\d \| %d \| (.{13}) \| {7}127\.0\.0\.1 \| %s +\"%s\"$"
                     % (code, method, path))
        assert re.fullmatch(r" *[0-9.]+(ns|µs|ms|s)", m.group(1)), m.group(0)  # Go's Duration, 13 wide
        assert m.group(0).index('"') == m.group(0).index(f"| {method}") + 2 + 7 + 2  # gin: %-7s then two spaces
