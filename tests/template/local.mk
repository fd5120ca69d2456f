# tests/template/ — tests of the template module (owned with the module's issue).
check_PROGRAMS += tests/template/test_template
tests_template_test_template_LDADD = libtestutil.a libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
TESTS += tests/template/test_template
EXTRA_DIST += tests/data/template

# Fuzz target for the template engine (tests/fuzz/fuzz_template.c): `make check` replays its corpus; with
# `./configure CC=clang --enable-fuzzing` the libFuzzer binary is built too (see tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_template
tests_fuzz_replay_template_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_template.c
tests_fuzz_replay_template_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/template"'
tests_fuzz_replay_template_LDADD = libtestutil.a libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
TESTS += tests/fuzz/replay_template
EXTRA_DIST += tests/fuzz/corpus/template
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_template
tests_fuzz_fuzz_template_SOURCES = tests/fuzz/fuzz_template.c
tests_fuzz_fuzz_template_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_template_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_template_LDADD = libmodelfile.a libgguf.a libbase.a -lm
endif
