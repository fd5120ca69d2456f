# gguf/ — libgguf.a: GGUF and safetensors reading, writing, tensor types, dequantization (issue [gguf]).
noinst_LIBRARIES += libgguf.a
libgguf_a_SOURCES = gguf/gguf.h gguf/internal.h gguf/file.h gguf/util.c gguf/types.c gguf/reader.c gguf/meta.c \
	gguf/model.h gguf/model.c
EXTRA_DIST += gguf/README.md
