#!/bin/sh
# examples/curl/first-token.sh — time to first token as the seed measured it (article 2): the same request
# with num_predict 1, streamed and not. curl's time_starttransfer is when the first byte arrived.
host=${OLLAMA_HOST:-127.0.0.1:11434}
case $host in http://*|https://*) ;; *) host=http://$host ;; esac
for stream in true false; do
	curl -s -o /dev/null -w "stream=$stream: first byte after %{time_starttransfer}s, done after %{time_total}s\n" \
		"$host/api/chat" -d '{
  "model": "'"${MODEL:-quickstart}"'",
  "messages": [{"role": "user", "content": "请用一句话总结量子计算"}],
  "stream": '"$stream"',
  "options": {"num_predict": 1, "temperature": 0}
}'
done
