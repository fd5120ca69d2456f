# examples/ — runnable Modelfiles, client calls and a systemd unit: data only, shipped in the tarball.
# (tests/modelfile/test_examples parses the Modelfiles.)
EXTRA_DIST += examples/README.md examples/Modelfile.quickstart examples/qwen3-14b-fast.Modelfile \
	examples/qwen3-14b-nothink.Modelfile examples/orun.service
EXTRA_DIST += examples/curl/chat-low-latency.sh examples/curl/chat-stream.sh examples/curl/first-token.sh \
	examples/curl/models.sh examples/curl/openai-chat.sh
EXTRA_DIST += examples/python/ollama_client.py examples/python/openai_chat.py examples/python/stream_chat.py \
	examples/python/ttft.py
