# tests/runner/ — tests of the runner module (owned with the module's issue).
check_PROGRAMS += tests/runner/test_model tests/runner/test_sampler tests/runner/test_kvcache tests/runner/test_forward \
	tests/runner/test_engine tests/runner/test_synthetic tests/runner/test_load tests/runner/test_logprob \
	tests/runner/test_grammar tests/runner/test_kvpool tests/runner/test_prefix_engine tests/runner/test_determinism
tests_runner_test_kvpool_LDADD = $(TEST_LDADD)
tests_runner_test_prefix_engine_LDADD = $(TEST_LDADD)
tests_runner_test_determinism_LDADD = $(TEST_LDADD)
tests_runner_test_grammar_LDADD = $(TEST_LDADD)
tests_runner_test_load_LDADD = $(TEST_LDADD)
tests_runner_test_logprob_LDADD = $(TEST_LDADD)
tests_runner_test_synthetic_LDADD = $(TEST_LDADD)
tests_runner_test_forward_LDADD = $(TEST_LDADD)
tests_runner_test_engine_LDADD = $(TEST_LDADD)
tests_runner_test_model_LDADD = $(TEST_LDADD)
tests_runner_test_sampler_LDADD = $(TEST_LDADD)
tests_runner_test_kvcache_LDADD = $(TEST_LDADD)
TESTS += tests/runner/test_model tests/runner/test_sampler tests/runner/test_kvcache tests/runner/test_forward \
	tests/runner/test_engine tests/runner/test_synthetic tests/runner/test_load tests/runner/test_logprob \
	tests/runner/test_grammar tests/runner/test_kvpool tests/runner/test_prefix_engine tests/runner/test_determinism
EXTRA_DIST += tests/data/engine
EXTRA_DIST += tests/data/grammar/json.gbnf tests/data/grammar/nested.gbnf
EXTRA_DIST += tests/runner/tinymodel.h
TESTS += tests/runner/test_mkmodel.sh
EXTRA_DIST += tests/runner/test_mkmodel.sh
TESTS += tests/runner/test_generate.sh
EXTRA_DIST += tests/runner/test_generate.sh
# JSON schema to GBNF (runner/grammar/json_schema.c): golden grammars, refusals, limits, and the schema corpus
# matched through the GBNF compiler.
check_PROGRAMS += tests/runner/test_json_schema
tests_runner_test_json_schema_LDADD = $(TEST_LDADD)
TESTS += tests/runner/test_json_schema
EXTRA_DIST += tests/data/schemas tests/data/schema_golden tests/data/schema_refusals.json
EXTRA_DIST += tests/runner/json_schema_differential.py
# Fuzz target for the grammar compiler and matcher (tests/fuzz/fuzz_grammar.c): `make check` replays its corpus;
# with `./configure CC=clang --enable-fuzzing` the libFuzzer binary is built too (tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_grammar
tests_fuzz_replay_grammar_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_grammar.c
tests_fuzz_replay_grammar_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/grammar"'
tests_fuzz_replay_grammar_LDADD = $(TEST_LDADD)
TESTS += tests/fuzz/replay_grammar
EXTRA_DIST += tests/fuzz/corpus/grammar
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_grammar
tests_fuzz_fuzz_grammar_SOURCES = tests/fuzz/fuzz_grammar.c
tests_fuzz_fuzz_grammar_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_grammar_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_grammar_LDADD = $(TEST_LDADD)
endif
# Fuzz target for JSON schema -> GBNF -> compiled grammar (tests/fuzz/fuzz_schema.c): `make check` replays its
# corpus; with `./configure CC=clang --enable-fuzzing` the libFuzzer binary is built too.
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
