#!/usr/bin/env python3
"""examples/python/openai_chat.py — the `openai` SDK against orun's /v1 endpoints, streamed."""
import os
from openai import OpenAI

host = os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")
client = OpenAI(base_url=(host if host.startswith("http") else "http://" + host) + "/v1", api_key="unused")
stream = client.chat.completions.create(
    model=os.environ.get("MODEL", "quickstart"), stream=True, max_tokens=128, temperature=0.3,
    messages=[{"role": "user", "content": "Write a haiku about fast inference."}])
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        print(chunk.choices[0].delta.content, end="", flush=True)
print()
