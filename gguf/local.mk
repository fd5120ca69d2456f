# gguf/ — libgguf.a: GGUF and safetensors reading, writing, tensor types, dequantization (issue [gguf]).
noinst_LIBRARIES += libgguf.a
libgguf_a_SOURCES = gguf/gguf.h gguf/internal.h gguf/file.h gguf/util.c gguf/types.c gguf/reader.c gguf/meta.c \
	gguf/model.h gguf/model.c gguf/dequant.c \
	gguf/writer.h gguf/writer.c gguf/safetensors.h gguf/safetensors.c \
	gguf/import.c gguf/quantize.h gguf/quantize.c
# bit-exact dequantization needs separate f32 multiplies and adds (no fused multiply-add)
libgguf_a_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
EXTRA_DIST += gguf/README.md
