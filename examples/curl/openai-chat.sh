#!/bin/sh
# examples/curl/openai-chat.sh — the OpenAI-compatible endpoint, streamed as server-sent events
# (one "data:" event per token, then "data: [DONE]").
host=${OLLAMA_HOST:-127.0.0.1:11434}
case $host in http://*|https://*) ;; *) host=http://$host ;; esac
curl -sN "$host/v1/chat/completions" -H "Content-Type: application/json" -d '{
  "model": "'"${MODEL:-quickstart}"'",
  "messages": [{"role": "user", "content": "Write a haiku about fast inference."}],
  "stream": true, "max_tokens": 64, "temperature": 0.3
}'
