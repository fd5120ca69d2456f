"""Bounded load test of `orun serve` (opt-in: ORUN_LOAD_TEST=1; minutes, not seconds): 16 concurrent streaming
/api/chat clients for ORUN_LOAD_SECONDS (default 120) against the qwen2 model with OLLAMA_NUM_PARALLEL=4 (four
slots decoded together, the others queued), every client looping short requests, some disconnecting mid-stream.
Passes when no request fails (every stream ends with a done line, framing intact) and the server's resident
memory is flat (the end within 10 % + 16 MiB of the level after the first quarter).

Run:  ORUN_LOAD_TEST=1 ORUN_BIN=build/cpu/orun ~/.cache/orun/venv/bin/python -m pytest -q \
          tests/integration/test_server_load.py
"""
import json
import os
import random
import threading
import time

import pytest
import requests

from test_server_common import Server, create_qwen

pytestmark = pytest.mark.skipif(os.environ.get("ORUN_LOAD_TEST") != "1",
                                reason="opt-in load test: set ORUN_LOAD_TEST=1 (takes minutes)")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_sixteen_streaming_clients(orun_bin, tmp_path):
    import ollama

    seconds = float(os.environ.get("ORUN_LOAD_SECONDS", "120"))
    srv = Server(orun_bin, tmp_path, env_extra={"OLLAMA_NUM_PARALLEL": "4", "OLLAMA_MAX_QUEUE": "64"})
    try:
        create_qwen(ollama.Client(host=srv.base))
        requests.post(srv.base + "/api/generate", json={"model": "qwen2", "prompt": ""}).raise_for_status()
        stop = time.time() + seconds
        stats = {"ok": 0, "aborted": 0, "errors": [], "tokens": 0}
        lock = threading.Lock()

        def client(i):
            rng = random.Random(i)
            while time.time() < stop:
                abort_after = rng.choice([None, None, None, 2])  # a quarter of the requests hang up early
                body = {"model": "qwen2", "stream": True,
                        "messages": [{"role": "user", "content": f"Client {i}: name a color and a number."}],
                        "options": {"num_predict": rng.randint(4, 16), "temperature": 0.7}}
                try:
                    with requests.post(srv.base + "/api/chat", json=body, stream=True, timeout=600) as r:
                        if r.status_code != 200:
                            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
                        n, done = 0, False
                        for line in r.iter_lines():
                            obj = json.loads(line)  # one object per line, or this raises
                            if "error" in obj:
                                raise RuntimeError(obj["error"])
                            n += 1
                            done = obj["done"]
                            if abort_after and n >= abort_after:
                                break
                        with lock:
                            stats["tokens"] += n
                            if abort_after and not done:
                                stats["aborted"] += 1
                            elif done:
                                stats["ok"] += 1
                            else:
                                raise RuntimeError("stream ended without a done line")
                except Exception as e:  # noqa: BLE001 — every failure is counted and reported
                    with lock:
                        stats["errors"].append(f"client {i}: {e}")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        time.sleep(seconds / 4)
        rss_early = rss_kib(srv.proc.pid)
        for t in threads:
            t.join()
        rss_end = rss_kib(srv.proc.pid)
        metrics = requests.get(srv.base + "/metrics").text
        print(f"\nload: {stats['ok']} completed, {stats['aborted']} aborted by the client, "
              f"{len(stats['errors'])} errors, {stats['tokens']} lines; RSS {rss_early} -> {rss_end} KiB")
        assert not stats["errors"], stats["errors"][:5]
        assert stats["ok"] >= 16
        assert rss_end <= rss_early * 1.10 + 16 * 1024, (rss_early, rss_end)
        assert "ollama_queue_depth 0" in metrics
        # the server is still healthy and answers at once
        r = requests.post(srv.base + "/api/chat", json={"model": "qwen2", "stream": False,
                                                        "messages": [{"role": "user", "content": "hi"}],
                                                        "options": {"num_predict": 2}})
        assert r.status_code == 200 and r.json()["done"]
    finally:
        srv.stop()
