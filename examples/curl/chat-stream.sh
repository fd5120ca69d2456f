#!/bin/sh
# examples/curl/chat-stream.sh — the seed article's streaming chat (article 1) against `orun serve` (or
# Ollama): one NDJSON line per token. MODEL defaults to the model tools/quickstart creates.
#   MODEL=qwen3-14b-fast examples/curl/chat-stream.sh
host=${OLLAMA_HOST:-127.0.0.1:11434}
case $host in http://*|https://*) ;; *) host=http://$host ;; esac
curl -sN -X POST "$host/api/chat" -H "Content-Type: application/json" --http1.1 --max-time 120 -d '{
  "model": "'"${MODEL:-quickstart}"'",
  "messages": [{"role": "user", "content": "请用三句话解释量子纠缠"}],
  "stream": true,
  "options": {"num_keep": 4, "repeat_last_n": 64, "temperature": 0.3}
}'
