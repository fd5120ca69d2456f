# runner/ — librunner.a: model, tokenizer, sampler, engine, scheduler, HTTP servers; backends below.
noinst_LIBRARIES += librunner.a
librunner_a_SOURCES = runner/backend.c runner/backend.h
librunner_a_CPPFLAGS = $(AM_CPPFLAGS) $(PCRE2_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS)
if WITH_SERVER
# The HTTP servers (issue [server]): transport, Go-style request decoding, Ollama's environment.
librunner_a_SOURCES += runner/http.c runner/http.h runner/http_decode.c runner/http_decode.h \
	runner/server_config.c runner/server_config.h runner/server_parsers.c runner/server_parsers.h
endif
# The engine (issue [engine]): model, backend interface, KV cells, sampler, sequence manager.
librunner_a_SOURCES += runner/error.c runner/error.h runner/model.c runner/model.h runner/kvcache.c \
	runner/kvcache.h runner/sampler.c runner/sampler.h
