# tests/server/ — tests of the server module (owned with the module's issue).
if WITH_SERVER
check_PROGRAMS += tests/server/test_http
tests_server_test_http_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_http
check_PROGRAMS += tests/server/test_parsers
tests_server_test_parsers_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_parsers
check_PROGRAMS += tests/server/test_sched
tests_server_test_sched_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_sched
endif
