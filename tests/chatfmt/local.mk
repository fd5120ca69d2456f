# tests/chatfmt/ — the chat-format parsers (runner/chatfmt): detection over the template corpus, recorded
# outputs of each family (tests/data/chatfmt) whole / byte by byte / at every split, hold-back, garbage.
if WITH_SERVER
check_PROGRAMS += tests/chatfmt/test_chatfmt
tests_chatfmt_test_chatfmt_LDADD = $(TEST_LDADD)
TESTS += tests/chatfmt/test_chatfmt
endif
EXTRA_DIST += tests/data/chatfmt

# The fuzz target (tests/fuzz/README.md): `make check` replays its corpus; with `./configure CC=clang
# --enable-fuzzing` the libFuzzer binary is built too.
if WITH_SERVER
check_PROGRAMS += tests/fuzz/replay_chatfmt
TESTS += tests/fuzz/replay_chatfmt
tests_fuzz_replay_chatfmt_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_chatfmt.c
tests_fuzz_replay_chatfmt_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/chatfmt"'
tests_fuzz_replay_chatfmt_LDADD = $(TEST_LDADD)
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_chatfmt
tests_fuzz_fuzz_chatfmt_SOURCES = tests/fuzz/fuzz_chatfmt.c
tests_fuzz_fuzz_chatfmt_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_chatfmt_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_chatfmt_LDADD = $(TEST_LDADD)
endif
endif
EXTRA_DIST += tests/fuzz/corpus/chatfmt tests/fuzz/seeds_chatfmt.py
