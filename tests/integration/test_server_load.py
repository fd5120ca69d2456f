"""Bounded load tests of `orun serve` (opt-in: ORUN_LOAD_TEST=1; minutes, not seconds), against the qwen2 model
with OLLAMA_NUM_PARALLEL=4 (four slots decoded together, the others queued), every client looping short
streaming /api/chat requests, a quarter of them hanging up mid-stream.

* test_sixteen_streaming_clients: 16 clients for ORUN_LOAD_SECONDS (default 120). Passes when no request
  fails (every stream ends with a done line, framing intact) and the resident memory is flat (the end within
  10 % + 16 MiB of the level after the first quarter).
* test_soak_64_streams: 64 clients for ORUN_SOAK_SECONDS (default 600), the resident memory sampled every
  5 s. Passes when no request fails and, after the warm-up (the first fifth), the resident memory stays
  within 5 % of its level at the end of the warm-up. Prints the series. ORUN_SOAK_ENV="K=V K2=V2" adds
  variables to the server's environment (e.g. MALLOC_ARENA_MAX=1, to compare allocator settings).

Run:  ORUN_LOAD_TEST=1 ORUN_BIN=build/cpu/orun ~/.cache/orun/venv/bin/python -m pytest -q -s \\
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


def rss_kib(pid, field="VmRSS"):
    """Resident memory in KiB: VmRSS (all of it: the model's mapped pages too) or RssAnon (the heap)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def start_server(orun_bin, tmp_path, env_extra):
    import ollama

    srv = Server(orun_bin, tmp_path, env_extra=env_extra)
    create_qwen(ollama.Client(host=srv.base))
    requests.post(srv.base + "/api/generate", json={"model": "qwen2", "prompt": ""}).raise_for_status()
    return srv


def run_clients(srv, n_clients, seconds, tick=None, tick_every=5.0):
    """n_clients threads loop streaming chats for `seconds`; tick(t) runs every tick_every seconds meanwhile.
    Returns the stats: completed, aborted by the client, lines, errors."""
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

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(min(tick_every, max(0.1, stop - time.time() + 0.1)))
        if tick and time.time() < stop:
            tick(time.time() - t0)
    for t in threads:
        t.join()
    return stats


def check_healthy(srv):
    """The queue is empty and the server still answers at once."""
    assert "ollama_queue_depth 0" in requests.get(srv.base + "/metrics").text
    r = requests.post(srv.base + "/api/chat", json={"model": "qwen2", "stream": False,
                                                    "messages": [{"role": "user", "content": "hi"}],
                                                    "options": {"num_predict": 2}})
    assert r.status_code == 200 and r.json()["done"]


def test_sixteen_streaming_clients(orun_bin, tmp_path):
    seconds = float(os.environ.get("ORUN_LOAD_SECONDS", "120"))
    srv = start_server(orun_bin, tmp_path, {"OLLAMA_NUM_PARALLEL": "4", "OLLAMA_MAX_QUEUE": "64"})
    try:
        early = {}

        def tick(t):
            if "rss" not in early and t >= seconds / 4:
                early["rss"] = rss_kib(srv.proc.pid)

        stats = run_clients(srv, 16, seconds, tick)
        rss_early = early.get("rss", 0)
        rss_end = rss_kib(srv.proc.pid)
        print(f"\nload: {stats['ok']} completed, {stats['aborted']} aborted by the client, "
              f"{len(stats['errors'])} errors, {stats['tokens']} lines; RSS {rss_early} -> {rss_end} KiB")
        assert not stats["errors"], stats["errors"][:5]
        assert stats["ok"] >= 16
        assert rss_end <= rss_early * 1.10 + 16 * 1024, (rss_early, rss_end)
        check_healthy(srv)
    finally:
        srv.stop()


def test_soak_64_streams(orun_bin, tmp_path):
    seconds = float(os.environ.get("ORUN_SOAK_SECONDS", "600"))
    warmup = seconds / 5
    env = {"OLLAMA_NUM_PARALLEL": "4", "OLLAMA_MAX_QUEUE": "128"}
    env.update(kv.split("=", 1) for kv in os.environ.get("ORUN_SOAK_ENV", "").split())
    srv = start_server(orun_bin, tmp_path, env)
    try:
        series, anon = [], []  # (seconds since the start, KiB): VmRSS, RssAnon

        def sample(t):
            series.append((round(t), rss_kib(srv.proc.pid)))
            anon.append((round(t), rss_kib(srv.proc.pid, "RssAnon")))

        stats = run_clients(srv, 64, seconds, sample)
        sample(seconds)
        base = next((kib for t, kib in series if t >= warmup), series[-1][1])
        after = [kib for t, kib in series if t >= warmup]
        print(f"\nsoak: 64 streams for {seconds:.0f} s ({os.environ.get('ORUN_SOAK_ENV', 'default allocator')}): "
              f"{stats['ok']} completed, {stats['aborted']} aborted by the client, {len(stats['errors'])} errors, "
              f"{stats['tokens']} lines")
        print("soak RSS MiB every 5 s: " + " ".join(f"{t}:{kib / 1024:.1f}" for t, kib in series))
        print("soak RssAnon MiB every 5 s: " + " ".join(f"{t}:{kib / 1024:.1f}" for t, kib in anon))
        abase = next((kib for t, kib in anon if t >= warmup), anon[-1][1])
        print(f"soak RssAnon after the warm-up: {abase / 1024:.1f} MiB -> max "
              f"{max(kib for t, kib in anon if t >= warmup) / 1024:.1f}, end {anon[-1][1] / 1024:.1f} MiB")
        print(f"soak RSS after the warm-up ({warmup:.0f} s): {base / 1024:.1f} MiB -> max {max(after) / 1024:.1f}, "
              f"end {series[-1][1] / 1024:.1f} MiB ({(series[-1][1] / base - 1) * 100:+.1f} %)")
        assert not stats["errors"], stats["errors"][:5]
        assert stats["ok"] >= 64
        assert max(after) <= base * 1.05, (base, max(after))
        check_healthy(srv)
    finally:
        srv.stop()
