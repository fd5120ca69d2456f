# tests/modelfile/ — tests of the modelfile module (owned with the module's issue). They link only the
# libraries the module depends on, so they build and run whatever state the runner is in.
MF_TEST_LDADD = libtestutil.a libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
# golden data: parse cases, the library Modelfiles' expected parses, names, parameters, a model store
EXTRA_DIST += tests/data/modelfile

check_PROGRAMS += tests/modelfile/test_parser
tests_modelfile_test_parser_SOURCES = tests/modelfile/test_parser.c tests/modelfile/mftest.h
tests_modelfile_test_parser_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_parser

check_PROGRAMS += tests/modelfile/test_params
tests_modelfile_test_params_SOURCES = tests/modelfile/test_params.c tests/modelfile/mftest.h tests/modelfile/gofmt_floats.inc
tests_modelfile_test_params_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_params

check_PROGRAMS += tests/modelfile/test_names
tests_modelfile_test_names_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_names

check_PROGRAMS += tests/modelfile/test_store
tests_modelfile_test_store_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_store

check_PROGRAMS += tests/modelfile/test_request
tests_modelfile_test_request_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_request

check_PROGRAMS += tests/modelfile/test_create
tests_modelfile_test_create_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_create

# The client commands against a stand-in server (Python).
TESTS += tests/modelfile/client.sh
EXTRA_DIST += tests/modelfile/client.sh tests/modelfile/fake_server.py

check_PROGRAMS += tests/modelfile/test_examples
tests_modelfile_test_examples_LDADD = $(MF_TEST_LDADD)
TESTS += tests/modelfile/test_examples

# a driver for the Python integration tests (tests/integration/test_modelfile_create.py)
check_PROGRAMS += tests/modelfile/create_tool
tests_modelfile_create_tool_LDADD = $(MF_TEST_LDADD)

# Fuzz target for the Modelfile parser (tests/fuzz/fuzz_modelfile.c): `make check` replays its corpus; with
# `./configure CC=clang --enable-fuzzing` the libFuzzer binary is built too (see tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_modelfile
tests_fuzz_replay_modelfile_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_modelfile.c
tests_fuzz_replay_modelfile_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/modelfile"'
tests_fuzz_replay_modelfile_LDADD = $(MF_TEST_LDADD)
TESTS += tests/fuzz/replay_modelfile
EXTRA_DIST += tests/fuzz/corpus/modelfile
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_modelfile
tests_fuzz_fuzz_modelfile_SOURCES = tests/fuzz/fuzz_modelfile.c
tests_fuzz_fuzz_modelfile_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_modelfile_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_modelfile_LDADD = libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
endif

