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
check_PROGRAMS += tests/base/test_unicode tests/base/test_buf
tests_base_test_unicode_LDADD = $(BASE_TEST_LDADD)
tests_base_test_buf_LDADD = $(BASE_TEST_LDADD)
TESTS += tests/base/test_unicode tests/base/test_buf
