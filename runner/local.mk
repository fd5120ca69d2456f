# runner/ — librunner.a: model, tokenizer, sampler, engine, scheduler, HTTP servers; backends below.
noinst_LIBRARIES += librunner.a
librunner_a_SOURCES = runner/backend.c runner/backend.h
librunner_a_CPPFLAGS = $(AM_CPPFLAGS) $(PCRE2_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS)
if WITH_SERVER
# The HTTP servers (issue [server]): transport, Go-style request decoding, Ollama's environment.
librunner_a_SOURCES += runner/http.c runner/http.h runner/http_decode.c runner/http_decode.h \
	runner/server_config.c runner/server_config.h runner/server_parsers.c runner/server_parsers.h
librunner_a_SOURCES += runner/metrics.c runner/metrics.h runner/server_model.c runner/server_model.h
librunner_a_SOURCES += runner/sched.c runner/sched.h runner/server.c runner/server.h runner/server_infer.c \
	runner/server_infer.h runner/api_ollama.c runner/api_ollama_embed.c runner/api_openai.c \
	runner/api_llamaserver.c runner/api_llamaserver.h
endif
# The tokenizer (issue [engine], tokenizer part): BPE with PCRE2 pre-tokenizers, SentencePiece, streaming decode.
librunner_a_SOURCES += runner/tokenizer.c runner/tokenizer.h runner/tokenizer_internal.h runner/tokenizer_bpe.c \
	runner/tokenizer_spm.c runner/tokenizer_stream.c runner/tokenizer_unicode.c
EXTRA_DIST += runner/tokenizer_unicode_gen.py
# The engine (issue [engine]): model, backend interface, KV cells, sampler, sequence manager.
librunner_a_SOURCES += runner/error.c runner/error.h runner/model.c runner/model.h runner/kvcache.c \
	runner/kvcache.h runner/sampler.c runner/sampler.h runner/engine.c runner/engine.h
