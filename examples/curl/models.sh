#!/bin/sh
# examples/curl/models.sh — what is installed, what is loaded, and the Prometheus metrics.
host=${OLLAMA_HOST:-127.0.0.1:11434}
case $host in http://*|https://*) ;; *) host=http://$host ;; esac
curl -s "$host/api/version"; echo
curl -s "$host/api/tags"; echo
curl -s "$host/api/ps"; echo
curl -s "$host/metrics" | grep -E '^ollama_(inference_tokens_total|request_duration_seconds_count)'
