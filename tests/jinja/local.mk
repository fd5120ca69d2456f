# tests/jinja/ — the Jinja engine (modelfile/jinja/, issue 14): goldens from Python jinja2, engine cases, limits.
check_PROGRAMS += tests/jinja/test_jinja
tests_jinja_test_jinja_LDADD = libtestutil.a libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
TESTS += tests/jinja/test_jinja
EXTRA_DIST += tests/data/jinja

# Fuzz target for the Jinja engine (tests/fuzz/fuzz_jinja.c): `make check` replays its corpus; with
# `./configure CC=clang --enable-fuzzing` the libFuzzer binary is built too (see tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_jinja
tests_fuzz_replay_jinja_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_jinja.c
tests_fuzz_replay_jinja_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/jinja"'
tests_fuzz_replay_jinja_LDADD = libtestutil.a libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
TESTS += tests/fuzz/replay_jinja
EXTRA_DIST += tests/fuzz/corpus/jinja
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_jinja
tests_fuzz_fuzz_jinja_SOURCES = tests/fuzz/fuzz_jinja.c
tests_fuzz_fuzz_jinja_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_jinja_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_jinja_LDADD = libmodelfile.a libgguf.a libbase.a -lm
endif

# Render speed (a benchmark, not a test): bench_jinja [-j CHAT.json] [TEMPLATE [SECONDS]] — a 20-turn chat with
# 5 tools through the Qwen3 template (issue 14: under 1 ms a render).
noinst_PROGRAMS += tests/jinja/bench_jinja
tests_jinja_bench_jinja_LDADD = libmodelfile.a libgguf.a libbase.a -lm
EXTRA_DIST += tests/jinja/README.md
