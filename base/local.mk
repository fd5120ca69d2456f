# base/ — libbase.a: what gguf/, modelfile/ and runner/ share — the growable buffer, JSON in and out, UTF-8
# and Unicode classes, Go's number formatting. It depends on nothing but libc.
noinst_LIBRARIES += libbase.a
libbase_a_SOURCES = base/buf.c base/buf.h base/json.c base/jsonw.c base/json.h base/jsonutil.c base/jsonutil.h \
	base/utf8.c base/utf8.h base/base64.c base/base64.h \
	base/unicode.c base/unicode_data.c base/unicode.h base/gofmt.c base/gofmt.h
EXTRA_DIST += base/unicode_gen.py base/README.md
# libFuzzer coverage for the fuzz targets (only with --enable-fuzzing).
libbase_a_CFLAGS = $(AM_CFLAGS)
if ENABLE_FUZZING
libbase_a_CFLAGS += -fsanitize=fuzzer-no-link
endif
