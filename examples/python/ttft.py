#!/usr/bin/env python3
"""examples/python/ttft.py — time to first token and decode rate as the seed's table reports them: N
streamed requests of a fixed prompt, then mean tok/s and the P50/P95 time to first token (client side:
request sent → first token line read). Usage: ttft.py [N]"""
import json, os, statistics, sys, time, requests

host = os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")
url = (host if host.startswith("http") else "http://" + host) + "/api/chat"
n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ttfts, rates = [], []
for i in range(n):
    body = {"model": os.environ.get("MODEL", "quickstart"), "stream": True,
            "messages": [{"role": "user", "content": f"({i}) 请用一句话总结量子计算"}],
            "options": {"num_predict": 64, "temperature": 0.3}}
    t0 = time.perf_counter()
    first = None
    with requests.post(url, json=body, stream=True) as r:
        for line in r.iter_lines():
            c = json.loads(line)
            if first is None and c.get("message", {}).get("content"):
                first = time.perf_counter() - t0
            if c.get("done"):
                rates.append(c["eval_count"] / c["eval_duration"] * 1e9)
    ttfts.append(first or float("nan"))
ttfts.sort()
print(f"requests {n}: decode {statistics.mean(rates):.1f} tok/s, TTFT p50 {ttfts[len(ttfts) // 2] * 1e3:.0f} ms, "
      f"p95 {ttfts[min(n - 1, int(n * 0.95))] * 1e3:.0f} ms")
