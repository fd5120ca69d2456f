# gguf/ — libgguf.a: GGUF and safetensors reading, writing, tensor types, dequantization (issue [gguf]).
noinst_LIBRARIES += libgguf.a
libgguf_a_SOURCES =
