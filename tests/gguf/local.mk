# tests/gguf/ — tests of the gguf module (owned with the module's issue). They link only libgguf.a (which
# depends on libc alone) and the test helpers, so they build whatever state the other libraries are in.
GGUF_TEST_LDADD = libtestutil.a libgguf.a -lm

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
