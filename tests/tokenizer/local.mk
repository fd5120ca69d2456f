# tests/tokenizer/ — tests of runner/tokenizer (owned with the tokenizer).
check_PROGRAMS += tests/tokenizer/test_tokenizer tests/tokenizer/test_golden
tests_tokenizer_test_tokenizer_SOURCES = tests/tokenizer/test_tokenizer.c tests/tokenizer/golden.h
tests_tokenizer_test_tokenizer_LDADD = $(TEST_LDADD)
tests_tokenizer_test_golden_SOURCES = tests/tokenizer/test_golden.c tests/tokenizer/golden.h
tests_tokenizer_test_golden_LDADD = $(TEST_LDADD) -lpthread
TESTS += tests/tokenizer/test_tokenizer tests/tokenizer/test_golden
# golden data (.inp/.out/.pieces per model, hand-made bad files) and the scripts that regenerate it
EXTRA_DIST += tests/data/tokenizer
# tokenizer speed (a benchmark, not a test): tok_bench MODEL.gguf TEXT_FILE [REPEAT]
noinst_PROGRAMS += tests/tokenizer/tok_bench
tests_tokenizer_tok_bench_LDADD = $(TEST_LDADD)
# Fuzz target (tests/fuzz/fuzz_tokenizer.c): `make check` replays its corpus; with `./configure CC=clang
# --enable-fuzzing` the libFuzzer binary is built too (tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_tokenizer
tests_fuzz_replay_tokenizer_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_tokenizer.c
tests_fuzz_replay_tokenizer_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/tokenizer"'
tests_fuzz_replay_tokenizer_LDADD = $(TEST_LDADD)
TESTS += tests/fuzz/replay_tokenizer
EXTRA_DIST += tests/fuzz/corpus/tokenizer
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_tokenizer
tests_fuzz_fuzz_tokenizer_SOURCES = tests/fuzz/fuzz_tokenizer.c
tests_fuzz_fuzz_tokenizer_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_tokenizer_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_tokenizer_LDADD = $(TEST_LDADD)
endif
