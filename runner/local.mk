# runner/ — librunner.a: model, tokenizer, sampler, engine, scheduler, HTTP servers; backends below.
noinst_LIBRARIES += librunner.a
librunner_a_SOURCES = runner/backend.c runner/backend.h
librunner_a_CPPFLAGS = $(AM_CPPFLAGS) $(PCRE2_CFLAGS) $(MHD_CFLAGS) $(CURL_CFLAGS)
