#!/usr/bin/env python3
"""examples/python/stream_chat.py — the seed's five-line streaming client (article 2), with `requests`:
print each token as its NDJSON line arrives. MODEL and OLLAMA_HOST as for the curl examples."""
import json, os, requests

host = os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")
url = (host if host.startswith("http") else "http://" + host) + "/api/chat"
body = {"model": os.environ.get("MODEL", "quickstart"), "stream": True,
        "messages": [{"role": "user", "content": "请用一句话总结量子计算"}],
        "options": {"num_predict": 128, "temperature": 0.3, "top_k": 40, "top_p": 0.9, "repeat_penalty": 1.1}}
with requests.post(url, json=body, stream=True) as r:
    for line in r.iter_lines():
        chunk = json.loads(line)
        if "error" in chunk:
            raise SystemExit(chunk["error"])
        print(chunk["message"]["content"], end="", flush=True)
        if chunk["done"]:
            print(f"\n\n{chunk['eval_count']} tokens, {chunk['eval_count'] / chunk['eval_duration'] * 1e9:.1f} tok/s")
