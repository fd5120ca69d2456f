/* gguf/file.h — the private layout of struct gguf_file, shared by reader.c and meta.c only. */
#ifndef ORUN_GGUF_FILE_H
#define ORUN_GGUF_FILE_H

#include <stdlib.h>

#include "gguf/internal.h"

struct gguf_file {
	const uint8_t *base; /* whole file (mapping or caller's buffer) */
	uint64_t size;
	void *map;           /* non-NULL when we own a mapping of map_len bytes */
	size_t map_len;
	char *path;          /* "" for buffers; arena-owned */
	uint32_t version;
	uint32_t alignment;
	uint64_t data_offset;
	uint64_t n_kv;
	struct gguf_kv *kv;
	uint64_t n_tensors;
	struct gguf_tensor *tensors;
	uint32_t *kv_hash;   /* open addressing, entries are index + 1, 0 = empty; kv_hash_mask + 1 slots */
	uint64_t kv_hash_mask;
	uint32_t *t_hash;
	uint64_t t_hash_mask;
	struct gg_arena arena;
};

#define GG_ASSERT(c)                                                                                     \
	do {                                                                                             \
		if (!(c))                                                                                \
			abort();                                                                \
	} while (0)

#endif
