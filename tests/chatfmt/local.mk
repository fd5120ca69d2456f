# tests/chatfmt/ — the chat-format parsers (runner/chatfmt): detection over the template corpus, recorded
# outputs of each family (tests/data/chatfmt) whole / byte by byte / at every split, hold-back, garbage.
if WITH_SERVER
check_PROGRAMS += tests/chatfmt/test_chatfmt
tests_chatfmt_test_chatfmt_LDADD = $(TEST_LDADD)
TESTS += tests/chatfmt/test_chatfmt
endif
EXTRA_DIST += tests/data/chatfmt
