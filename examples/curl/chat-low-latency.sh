#!/bin/sh
# examples/curl/chat-low-latency.sh — the seed's low-latency chat (article 2) with the options Ollama really
# has. The article also sent "cache_prompt": true (an orun extension, on by default; Ollama ignores it) and
# "mirostat": 0 (removed from Ollama in v0.7.0; ignored by both). "think": false is what really turns
# Qwen3's thinking off.
host=${OLLAMA_HOST:-127.0.0.1:11434}
case $host in http://*|https://*) ;; *) host=http://$host ;; esac
curl -sN "$host/api/chat" -d '{
  "model": "'"${MODEL:-quickstart}"'",
  "messages": [{"role": "user", "content": "请用一句话总结量子计算"}],
  "stream": true,
  "options": {"num_predict": 128, "temperature": 0.3, "top_k": 40, "top_p": 0.9, "repeat_penalty": 1.1,
              "num_keep": 4}
}'
