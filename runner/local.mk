# runner/ — librunner.a: the engine core here (model, backend interface, load-time parameters, KV cache, sampler,
# engine); the tokenizer, the server, the API faces and the backends in the folders below, each with its local.mk.
noinst_LIBRARIES += librunner.a
librunner_a_CPPFLAGS = $(AM_CPPFLAGS) $(PCRE2_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS)
librunner_a_SOURCES = runner/error.c runner/error.h runner/model.c runner/model.h runner/backend.c runner/backend.h \
	runner/load.c runner/load.h runner/kvcache.c runner/kvcache.h runner/kvpool.c runner/kvpool.h runner/sampler.c runner/sampler.h runner/logprob.c runner/logprob.h \
	runner/engine.c runner/engine.h
EXTRA_DIST += runner/README.md
# libFuzzer coverage for the fuzz targets (only with --enable-fuzzing).
librunner_a_CFLAGS = $(AM_CFLAGS)
if ENABLE_FUZZING
librunner_a_CFLAGS += -fsanitize=fuzzer-no-link
endif
