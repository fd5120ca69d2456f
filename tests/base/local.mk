# tests/base/ — tests of libbase.a (owned with base/).
BASE_TEST_LDADD = libtestutil.a libbase.a -lm
check_PROGRAMS += tests/base/test_json
tests_base_test_json_LDADD = $(BASE_TEST_LDADD)
TESTS += tests/base/test_json
