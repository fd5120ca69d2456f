# tests/gguf/ — tests of the gguf module (owned with the module's issue). They link only libgguf.a (which
# depends on libc alone) and the test helpers, so they build whatever state the other libraries are in.
GGUF_TEST_LDADD = libtestutil.a libgguf.a libbase.a -lm

check_PROGRAMS += tests/gguf/test_reader
tests_gguf_test_reader_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_reader

check_PROGRAMS += tests/gguf/test_dequant
tests_gguf_test_dequant_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_dequant
EXTRA_DIST += tests/gguf/make_golden.py tests/data/gguf/dequant-blocks.bin tests/data/gguf/dequant-models.tsv

check_PROGRAMS += tests/gguf/test_writer
tests_gguf_test_writer_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_writer

check_PROGRAMS += tests/gguf/test_badfiles
tests_gguf_test_badfiles_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_badfiles

# Fuzz targets (tests/fuzz/): `make check` replays each corpus through the target without libFuzzer; with
# `./configure CC=clang --enable-fuzzing` the real libFuzzer binaries are built as well (see tests/fuzz/README.md).
check_PROGRAMS += tests/fuzz/replay_gguf
tests_fuzz_replay_gguf_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_gguf.c
tests_fuzz_replay_gguf_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/gguf"'
tests_fuzz_replay_gguf_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/fuzz/replay_gguf
check_PROGRAMS += tests/fuzz/replay_safetensors
tests_fuzz_replay_safetensors_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_safetensors.c
tests_fuzz_replay_safetensors_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/safetensors"'
tests_fuzz_replay_safetensors_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/fuzz/replay_safetensors
EXTRA_DIST += tests/fuzz/corpus tests/fuzz/README.md

if ENABLE_FUZZING
libgguf_a_CFLAGS += -fsanitize=fuzzer-no-link
noinst_PROGRAMS += tests/fuzz/fuzz_gguf
tests_fuzz_fuzz_gguf_SOURCES = tests/fuzz/fuzz_gguf.c
tests_fuzz_fuzz_gguf_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_gguf_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_gguf_LDADD = libgguf.a libbase.a -lm
noinst_PROGRAMS += tests/fuzz/fuzz_safetensors
tests_fuzz_fuzz_safetensors_SOURCES = tests/fuzz/fuzz_safetensors.c
tests_fuzz_fuzz_safetensors_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_safetensors_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_safetensors_LDADD = libgguf.a libbase.a -lm
endif

check_PROGRAMS += tests/gguf/test_bigfile
tests_gguf_test_bigfile_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_bigfile

# a driver for the Python integration tests (tests/integration/test_gguf_*.py)
check_PROGRAMS += tests/gguf/gguf_tool
tests_gguf_gguf_tool_LDADD = $(GGUF_TEST_LDADD)

check_PROGRAMS += tests/gguf/test_safetensors
tests_gguf_test_safetensors_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_safetensors

check_PROGRAMS += tests/gguf/test_quantize
tests_gguf_test_quantize_LDADD = $(GGUF_TEST_LDADD)
TESTS += tests/gguf/test_quantize
EXTRA_DIST += tests/gguf/make_quant_golden.sh tests/data/gguf/quantize-golden.tsv
