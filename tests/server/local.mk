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
check_PROGRAMS += tests/server/test_ls_flags
tests_server_test_ls_flags_SOURCES = tests/server/test_ls_flags.c tools/llama_server_flags.c
tests_server_test_ls_flags_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_ls_flags
endif
