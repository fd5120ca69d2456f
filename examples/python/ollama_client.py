#!/usr/bin/env python3
"""examples/python/ollama_client.py — the official `ollama` client against `orun serve`: list, show, a
streamed chat with thinking shown separately (models whose template thinks, e.g. Qwen3), and ps."""
import os, ollama

client = ollama.Client(host=os.environ.get("OLLAMA_HOST", "127.0.0.1:11434"))
model = os.environ.get("MODEL", "quickstart")
print([m.model for m in client.list().models])
print(client.show(model).capabilities)
for chunk in client.chat(model=model, stream=True, options={"temperature": 0.3, "num_predict": 128},
                         messages=[{"role": "user", "content": "Why is the sky blue? One paragraph."}]):
    if chunk.message.thinking:
        print(chunk.message.thinking, end="", flush=True)
    print(chunk.message.content, end="", flush=True)
print()
print([(m.model, m.expires_at) for m in client.ps().models])
