# tests/base/ — tests of libbase.a (owned with base/).
BASE_TEST_LDADD = libtestutil.a libbase.a -lm
check_PROGRAMS += tests/base/test_json
tests_base_test_json_LDADD = $(BASE_TEST_LDADD)
TESTS += tests/base/test_json
# JSON reader speed (a benchmark, not a test): bench_json [SECONDS_PER_CASE]. Beside jansson and raw jsmn:
#   cc -O2 -DBENCH_JANSSON -DBENCH_JSMN -I. -Ibuild/cpu tests/base/bench_json.c build/cpu/libbase.a -ljansson -lm
noinst_PROGRAMS += tests/base/bench_json
tests_base_bench_json_LDADD = libbase.a -lm
check_PROGRAMS += tests/base/test_json_reader
tests_base_test_json_reader_LDADD = $(BASE_TEST_LDADD)
TESTS += tests/base/test_json_reader
check_PROGRAMS += tests/base/test_unicode tests/base/test_buf tests/base/test_base64
tests_base_test_unicode_LDADD = $(BASE_TEST_LDADD)
tests_base_test_buf_LDADD = $(BASE_TEST_LDADD)
tests_base_test_base64_LDADD = $(BASE_TEST_LDADD)
TESTS += tests/base/test_unicode tests/base/test_buf tests/base/test_base64
# Fuzz target for the JSON reader and writer (tests/fuzz/fuzz_json.c): `make check` replays its corpus; with
# `./configure CC=clang --enable-fuzzing` the libFuzzer binary is built too (see tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_json
tests_fuzz_replay_json_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_json.c
tests_fuzz_replay_json_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/json"'
tests_fuzz_replay_json_LDADD = $(BASE_TEST_LDADD)
TESTS += tests/fuzz/replay_json
EXTRA_DIST += tests/fuzz/corpus/json
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_json
tests_fuzz_fuzz_json_SOURCES = tests/fuzz/fuzz_json.c
tests_fuzz_fuzz_json_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_json_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_json_LDADD = libbase.a -lm
endif
