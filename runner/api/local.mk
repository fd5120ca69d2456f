# runner/api/ — the three faces (Ollama's /api, OpenAI's /v1, llama-server's runner protocol), the request
# pipeline they share, Go-style request decoding, and the output parsers for stop strings, thinking and tools.
if WITH_SERVER
librunner_a_SOURCES += runner/api/decode.c runner/api/decode.h runner/api/pipeline.c runner/api/pipeline.h \
	runner/api/parsers.c runner/api/parsers.h runner/api/stored_model.c runner/api/stored_model.h \
	runner/api/jinja_chat.c runner/api/jinja_chat.h \
	runner/api/ollama.c runner/api/embed.c runner/api/openai.c runner/api/llamaserver.c runner/api/llamaserver.h
librunner_a_SOURCES += runner/api/api.c runner/api/api.h runner/api/lines.c runner/api/lines.h \
	runner/api/ollama_format.c runner/api/structured.c runner/api/structured.h runner/api/pull.c
endif
