# tests/fuzz/ — fuzz targets not owned with one module's tests (tests/fuzz/README.md): `make check` replays each
# corpus through its target; with `./configure CC=clang --enable-fuzzing` the libFuzzer binaries are built too.

# JSON schema -> GBNF -> compiled grammar (runner/grammar/json_schema.c, gbnf.c).
check_PROGRAMS += tests/fuzz/replay_schema
TESTS += tests/fuzz/replay_schema
tests_fuzz_replay_schema_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_schema.c
tests_fuzz_replay_schema_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/schema"'
tests_fuzz_replay_schema_LDADD = $(TEST_LDADD)
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_schema
tests_fuzz_fuzz_schema_SOURCES = tests/fuzz/fuzz_schema.c
tests_fuzz_fuzz_schema_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_schema_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_schema_LDADD = $(TEST_LDADD)
endif
EXTRA_DIST += tests/fuzz/corpus/schema
