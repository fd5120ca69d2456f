# tests/tokenizer/ — tests of runner/tokenizer (owned with the tokenizer).
check_PROGRAMS += tests/tokenizer/test_tokenizer tests/tokenizer/test_golden
tests_tokenizer_test_tokenizer_SOURCES = tests/tokenizer/test_tokenizer.c tests/tokenizer/golden.h
tests_tokenizer_test_tokenizer_LDADD = $(TEST_LDADD)
tests_tokenizer_test_golden_SOURCES = tests/tokenizer/test_golden.c tests/tokenizer/golden.h
tests_tokenizer_test_golden_LDADD = $(TEST_LDADD) -lpthread
TESTS += tests/tokenizer/test_tokenizer tests/tokenizer/test_golden
EXTRA_DIST += tests/data/tokenizer/README.md tests/data/tokenizer/corpus.inp tests/data/tokenizer/make_corpus.py \
	tests/data/tokenizer/run_reference.py tests/data/tokenizer/make_synthetic.py tests/data/tokenizer/regenerate.sh \
	tests/data/tokenizer/spm-tiny.gguf
# tokenizer speed (a benchmark, not a test): tok_bench MODEL.gguf TEXT_FILE [REPEAT]
noinst_PROGRAMS += tests/tokenizer/tok_bench
tests_tokenizer_tok_bench_LDADD = $(TEST_LDADD)
