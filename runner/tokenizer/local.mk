# runner/tokenizer/ — text to token ids and back: byte-level BPE with PCRE2 pre-tokenizers, SentencePiece,
# streaming decode.
librunner_a_SOURCES += runner/tokenizer/tokenizer.c runner/tokenizer/tokenizer.h runner/tokenizer/internal.h \
	runner/tokenizer/bpe.c runner/tokenizer/spm.c runner/tokenizer/stream.c
