/* gguf/reader.c — parse and validate a GGUF file (v2/v3) from a read-only mapping or a caller's buffer.
 *
 * The parser always knows how many bytes remain: every count is checked against a named cap and against the
 * bytes left before anything is allocated, every size sum is overflow-checked, and the result is either a
 * complete struct gguf_file or NULL with an error naming the offset and the bad values. Tensor data is never
 * read here (opening a many-GB file touches only its header pages).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/file.h"

struct rd {
	const uint8_t *base;
	uint64_t size;
	uint64_t pos;
	struct gguf_error *err;
	struct gg_arena *arena;
};

static uint64_t left(const struct rd *r) { return r->size - r->pos; }

static int need(struct rd *r, uint64_t n, const char *what)
{
	if (left(r) < n)
		return gg_fail(r->err, GGUF_ERR_TRUNCATED, r->pos,
			       "file ends inside %s: need %llu bytes at offset %llu, only %llu left", what,
			       (unsigned long long)n, (unsigned long long)r->pos, (unsigned long long)left(r));
	return 0;
}

static int rd_u32(struct rd *r, uint32_t *v, const char *what)
{
	int e = need(r, 4, what);
	if (e)
		return e;
	*v = gg_ld32(r->base + r->pos);
	r->pos += 4;
	return 0;
}

static int rd_u64(struct rd *r, uint64_t *v, const char *what)
{
	int e = need(r, 8, what);
	if (e)
		return e;
	*v = gg_ld64(r->base + r->pos);
	r->pos += 8;
	return 0;
}

/* Minimum encoded size of one value of this type (for count-versus-bytes-left checks). */
static uint64_t min_size(uint32_t vt)
{
	if (vt == GGUF_VT_STRING)
		return 8;
	if (vt == GGUF_VT_ARRAY)
		return 12;
	return gguf_vtype_size(vt);
}

/* A string value: u64 length + bytes. ctx names the owner for messages. */
static int rd_str(struct rd *r, struct gguf_str *s, const char *ctx)
{
	uint64_t at = r->pos, len;
	int e = rd_u64(r, &len, "a string length");
	if (e)
		return e;
	if (len > GGUF_MAX_STRING_LEN)
		return gg_fail(r->err, GGUF_ERR_STRING, at, "%s: string length %llu exceeds the limit %u", ctx,
			       (unsigned long long)len, GGUF_MAX_STRING_LEN);
	if (len > left(r))
		return gg_fail(r->err, GGUF_ERR_STRING, at,
			       "%s: string length %llu exceeds the %llu bytes left in the file", ctx,
			       (unsigned long long)len, (unsigned long long)left(r));
	s->ptr = (const char *)r->base + r->pos;
	s->len = len;
	r->pos += len;
	return 0;
}

static int rd_array(struct rd *r, struct gguf_array *a, uint32_t depth, const char *ctx);

/* A value of type vt (already validated < GGUF_VT__COUNT) at the cursor. */
static int rd_value(struct rd *r, uint32_t vt, struct gguf_value *v, const char *ctx)
{
	v->type = vt;
	if (vt == GGUF_VT_STRING)
		return rd_str(r, &v->v.str, ctx);
	if (vt == GGUF_VT_ARRAY)
		return rd_array(r, &v->v.arr, 1, ctx);
	size_t sz = gguf_vtype_size(vt);
	int e = need(r, sz, "a metadata value");
	if (e)
		return e;
	const uint8_t *p = r->base + r->pos;
	switch (vt) {
	case GGUF_VT_U8: v->v.u = p[0]; break;
	case GGUF_VT_I8: v->v.i = (int8_t)p[0]; break;
	case GGUF_VT_U16: v->v.u = gg_ld16(p); break;
	case GGUF_VT_I16: v->v.i = (int16_t)gg_ld16(p); break;
	case GGUF_VT_U32: v->v.u = gg_ld32(p); break;
	case GGUF_VT_I32: v->v.i = (int32_t)gg_ld32(p); break;
	case GGUF_VT_U64: v->v.u = gg_ld64(p); break;
	case GGUF_VT_I64: v->v.i = (int64_t)gg_ld64(p); break;
	case GGUF_VT_F32: v->v.f = gg_ldf32(p); break;
	case GGUF_VT_F64: v->v.f = gg_ldf64(p); break;
	case GGUF_VT_BOOL:
		if (p[0] > 1)
			return gg_fail(r->err, GGUF_ERR_BOOL, r->pos, "%s: bool value is %u, must be 0 or 1", ctx, p[0]);
		v->v.b = p[0] != 0;
		break;
	}
	r->pos += sz;
	return 0;
}

static int rd_array(struct rd *r, struct gguf_array *a, uint32_t depth, const char *ctx)
{
	uint64_t at = r->pos;
	uint32_t et;
	uint64_t n;
	int e;
	if (depth > GGUF_MAX_ARRAY_DEPTH)
		return gg_fail(r->err, GGUF_ERR_ARRAY, at, "%s: arrays nested deeper than %u levels", ctx,
			       GGUF_MAX_ARRAY_DEPTH);
	if ((e = rd_u32(r, &et, "an array element type")) || (e = rd_u64(r, &n, "an array length")))
		return e;
	if (et >= GGUF_VT__COUNT)
		return gg_fail(r->err, GGUF_ERR_VALUE_TYPE, at, "%s: array element type %u is not a GGUF value type (0..%d)",
			       ctx, et, GGUF_VT__COUNT - 1);
	if (n > GGUF_MAX_ARRAY_ELEMS)
		return gg_fail(r->err, GGUF_ERR_ARRAY, at, "%s: array of %llu elements exceeds the limit %u", ctx,
			       (unsigned long long)n, GGUF_MAX_ARRAY_ELEMS);
	uint64_t need_bytes = n * min_size(et); /* n <= 2^30, min_size <= 12: no overflow */
	if (need_bytes > left(r))
		return gg_fail(r->err, GGUF_ERR_ARRAY, at,
			       "%s: array of %llu %s elements needs at least %llu bytes, only %llu left", ctx,
			       (unsigned long long)n, gguf_vtype_name(et), (unsigned long long)need_bytes,
			       (unsigned long long)left(r));
	a->type = et;
	a->n = n;
	a->data = r->base + r->pos;
	a->offs_ = NULL;
	a->sub_ = NULL;
	uint64_t start = r->pos;
	if (et == GGUF_VT_STRING) {
		uint64_t *offs = n ? gg_arena_alloc(r->arena, n * sizeof *offs) : NULL;
		if (n && !offs)
			return gg_fail(r->err, GGUF_ERR_NOMEM, at, "%s: out of memory indexing %llu strings", ctx,
				       (unsigned long long)n);
		for (uint64_t i = 0; i < n; i++) {
			struct gguf_str s;
			offs[i] = r->pos - start;
			if ((e = rd_str(r, &s, ctx)))
				return e;
		}
		a->offs_ = offs;
	} else if (et == GGUF_VT_ARRAY) {
		struct gguf_array *sub = n ? gg_arena_alloc(r->arena, n * sizeof *sub) : NULL;
		if (n && !sub)
			return gg_fail(r->err, GGUF_ERR_NOMEM, at, "%s: out of memory indexing %llu arrays", ctx,
				       (unsigned long long)n);
		for (uint64_t i = 0; i < n; i++)
			if ((e = rd_array(r, &sub[i], depth + 1, ctx)))
				return e;
		a->sub_ = sub;
	} else {
		if (et == GGUF_VT_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (a->data[i] > 1)
					return gg_fail(r->err, GGUF_ERR_BOOL, r->pos + i,
						       "%s: bool array element %llu is %u, must be 0 or 1", ctx,
						       (unsigned long long)i, a->data[i]);
		r->pos += need_bytes;
	}
	return 0;
}

/* Insert name into an open-addressing table; returns the index already there (a duplicate) or -1. */
static int64_t hash_insert(uint32_t *tab, uint64_t mask, const char *name, size_t len, uint32_t idx,
			   const char *(*name_of)(const struct gguf_file *, uint32_t), const struct gguf_file *f)
{
	uint64_t h = gg_hash(name, len) & mask;
	while (tab[h]) {
		const char *o = name_of(f, tab[h] - 1);
		if (strlen(o) == len && memcmp(o, name, len) == 0)
			return tab[h] - 1;
		h = (h + 1) & mask;
	}
	tab[h] = idx + 1;
	return -1;
}

static const char *kv_name(const struct gguf_file *f, uint32_t i) { return f->kv[i].key; }
static const char *t_name(const struct gguf_file *f, uint32_t i) { return f->tensors[i].name; }

static int parse_header(struct gguf_file *f, struct rd *r)
{
	char esc[64];
	int e;
	if (r->size < 4)
		return gg_fail(r->err, GGUF_ERR_TRUNCATED, 0, "file is %llu bytes, too short for the GGUF magic",
			       (unsigned long long)r->size);
	uint32_t magic = gg_ld32(r->base);
	if (magic != GGUF_MAGIC)
		return gg_fail(r->err, GGUF_ERR_MAGIC, 0, "bad magic '%s', expected 'GGUF'",
			       gg_escape(esc, sizeof esc, r->base, 4, 4));
	r->pos = 4;
	if ((e = rd_u32(r, &f->version, "the header (version)")))
		return e;
	uint32_t v = f->version;
	if (v < GGUF_VERSION_MIN || v > GGUF_VERSION_MAX) {
		uint32_t sw = __builtin_bswap32(v);
		if (sw >= 1 && sw <= GGUF_VERSION_MAX)
			return gg_fail(r->err, GGUF_ERR_VERSION, 4,
				       "version field reads %u (0x%08x); byte-swapped it is %u: a big-endian GGUF file, "
				       "which this little-endian reader does not support",
				       v, v, sw);
		if (v == 1)
			return gg_fail(r->err, GGUF_ERR_VERSION, 4,
				       "GGUF version 1 is not supported (versions %u..%u are)", GGUF_VERSION_MIN,
				       GGUF_VERSION_MAX);
		return gg_fail(r->err, GGUF_ERR_VERSION, 4, "GGUF version %u is not supported (versions %u..%u are)", v,
			       GGUF_VERSION_MIN, GGUF_VERSION_MAX);
	}
	uint64_t nt, nkv;
	if ((e = rd_u64(r, &nt, "the header (tensor count)")) || (e = rd_u64(r, &nkv, "the header (key/value count)")))
		return e;
	if (nt > GGUF_MAX_TENSORS)
		return gg_fail(r->err, GGUF_ERR_COUNT, 8, "tensor count %llu exceeds the limit %u",
			       (unsigned long long)nt, GGUF_MAX_TENSORS);
	if (nkv > GGUF_MAX_KV)
		return gg_fail(r->err, GGUF_ERR_COUNT, 16, "key/value count %llu exceeds the limit %u",
			       (unsigned long long)nkv, GGUF_MAX_KV);
	/* a pair takes at least 8+1+4+1 bytes, a tensor record at least 8+1+4+4+8 */
	uint64_t min_bytes = nkv * 14 + nt * 25;
	if (min_bytes > left(r))
		return gg_fail(r->err, GGUF_ERR_COUNT, 8,
			       "%llu tensors and %llu key/value pairs need at least %llu bytes, the file has %llu left",
			       (unsigned long long)nt, (unsigned long long)nkv, (unsigned long long)min_bytes,
			       (unsigned long long)left(r));
	f->n_tensors = nt;
	f->n_kv = nkv;
	return 0;
}

static int parse_kv(struct gguf_file *f, struct rd *r)
{
	char esc[96], ctx[160];
	int e;
	f->kv = gg_arena_alloc(&f->arena, (f->n_kv ? f->n_kv : 1) * sizeof *f->kv);
	f->kv_hash = gg_hash_table(&f->arena, f->n_kv, &f->kv_hash_mask);
	if (!f->kv || !f->kv_hash)
		return gg_fail(r->err, GGUF_ERR_NOMEM, r->pos, "out of memory for %llu key/value pairs",
			       (unsigned long long)f->n_kv);
	for (uint64_t i = 0; i < f->n_kv; i++) {
		struct gguf_kv *kv = &f->kv[i];
		uint64_t at = r->pos, len;
		if ((e = rd_u64(r, &len, "a metadata key length")))
			return e;
		if (len == 0)
			return gg_fail(r->err, GGUF_ERR_KEY_EMPTY, at, "key/value pair %llu has an empty key",
				       (unsigned long long)i);
		if (len > GGUF_MAX_KEY_LEN)
			return gg_fail(r->err, GGUF_ERR_KEY_INVALID, at,
				       "key/value pair %llu: key length %llu exceeds the limit %u", (unsigned long long)i,
				       (unsigned long long)len, GGUF_MAX_KEY_LEN);
		if (len > left(r))
			return gg_fail(r->err, GGUF_ERR_STRING, at,
				       "key/value pair %llu: key length %llu exceeds the %llu bytes left in the file",
				       (unsigned long long)i, (unsigned long long)len, (unsigned long long)left(r));
		const char *kp = (const char *)r->base + r->pos;
		if (memchr(kp, 0, len))
			return gg_fail(r->err, GGUF_ERR_KEY_INVALID, at, "key/value pair %llu: key '%s' contains a NUL byte",
				       (unsigned long long)i, gg_escape(esc, sizeof esc, kp, len, 60));
		char *key = gg_arena_alloc(&f->arena, len + 1);
		if (!key)
			return gg_fail(r->err, GGUF_ERR_NOMEM, at, "out of memory");
		memcpy(key, kp, len);
		key[len] = 0;
		r->pos += len;
		kv->key = key;
		kv->key_len = len;
		kv->offset = at;
		int64_t dup = hash_insert(f->kv_hash, f->kv_hash_mask, key, len, (uint32_t)i, kv_name, f);
		if (dup >= 0)
			return gg_fail(r->err, GGUF_ERR_KEY_DUP, at, "duplicate key '%s' (pairs %lld and %llu)",
				       gg_escape(esc, sizeof esc, kp, len, 60), (long long)dup, (unsigned long long)i);
		uint32_t vt;
		uint64_t tat = r->pos;
		if ((e = rd_u32(r, &vt, "a metadata value type")))
			return e;
		snprintf(ctx, sizeof ctx, "key '%s'", gg_escape(esc, sizeof esc, kp, len, 60));
		if (vt >= GGUF_VT__COUNT)
			return gg_fail(r->err, GGUF_ERR_VALUE_TYPE, tat, "%s: value type %u is not a GGUF value type (0..%d)",
				       ctx, vt, GGUF_VT__COUNT - 1);
		kv->val_offset = r->pos;
		if ((e = rd_value(r, vt, &kv->val, ctx)))
			return e;
		kv->val_size = r->pos - kv->val_offset;
	}
	return 0;
}

static int parse_alignment(struct gguf_file *f, struct rd *r)
{
	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	const struct gguf_kv *kv = gguf_find_kv(f, "general.alignment");
	if (!kv)
		return 0;
	if (kv->val.type != GGUF_VT_U32)
		return gg_fail(r->err, GGUF_ERR_ALIGNMENT, kv->offset, "general.alignment has type %s, must be u32",
			       gguf_vtype_name(kv->val.type));
	uint64_t a = kv->val.v.u;
	if (a == 0 || (a & (a - 1)))
		return gg_fail(r->err, GGUF_ERR_ALIGNMENT, kv->offset, "general.alignment %llu is not a power of two",
			       (unsigned long long)a);
	if (a > GGUF_MAX_ALIGNMENT)
		return gg_fail(r->err, GGUF_ERR_ALIGNMENT, kv->offset, "general.alignment %llu exceeds the limit %u",
			       (unsigned long long)a, GGUF_MAX_ALIGNMENT);
	f->alignment = (uint32_t)a;
	return 0;
}

static int parse_tensors(struct gguf_file *f, struct rd *r)
{
	char esc[96];
	int e;
	f->tensors = gg_arena_alloc(&f->arena, (f->n_tensors ? f->n_tensors : 1) * sizeof *f->tensors);
	f->t_hash = gg_hash_table(&f->arena, f->n_tensors, &f->t_hash_mask);
	if (!f->tensors || !f->t_hash)
		return gg_fail(r->err, GGUF_ERR_NOMEM, r->pos, "out of memory for %llu tensors",
			       (unsigned long long)f->n_tensors);
	for (uint64_t i = 0; i < f->n_tensors; i++) {
		struct gguf_tensor *t = &f->tensors[i];
		uint64_t at = r->pos, len;
		t->info_offset = at;
		if ((e = rd_u64(r, &len, "a tensor name length")))
			return e;
		if (len == 0)
			return gg_fail(r->err, GGUF_ERR_TENSOR_NAME, at, "tensor %llu has an empty name",
				       (unsigned long long)i);
		if (len > left(r))
			return gg_fail(r->err, GGUF_ERR_STRING, at,
				       "tensor %llu: name length %llu exceeds the %llu bytes left in the file",
				       (unsigned long long)i, (unsigned long long)len, (unsigned long long)left(r));
		const char *np = (const char *)r->base + r->pos;
		if (len > GGUF_MAX_TENSOR_NAME)
			return gg_fail(r->err, GGUF_ERR_TENSOR_NAME, at,
				       "tensor %llu: name '%s' is %llu bytes, longer than the limit %u",
				       (unsigned long long)i, gg_escape(esc, sizeof esc, np, len, 60),
				       (unsigned long long)len, GGUF_MAX_TENSOR_NAME);
		if (memchr(np, 0, len))
			return gg_fail(r->err, GGUF_ERR_TENSOR_NAME, at, "tensor %llu: name '%s' contains a NUL byte",
				       (unsigned long long)i, gg_escape(esc, sizeof esc, np, len, 60));
		char *name = gg_arena_alloc(&f->arena, len + 1);
		if (!name)
			return gg_fail(r->err, GGUF_ERR_NOMEM, at, "out of memory");
		memcpy(name, np, len);
		name[len] = 0;
		t->name = name;
		r->pos += len;
		int64_t dup = hash_insert(f->t_hash, f->t_hash_mask, name, len, (uint32_t)i, t_name, f);
		if (dup >= 0)
			return gg_fail(r->err, GGUF_ERR_TENSOR_DUP, at, "duplicate tensor name '%s' (tensors %lld and %llu)",
				       gg_escape(esc, sizeof esc, np, len, 60), (long long)dup, (unsigned long long)i);
		gg_escape(esc, sizeof esc, np, len, 60);
		uint64_t dat = r->pos;
		if ((e = rd_u32(r, &t->n_dims, "a tensor's dimension count")))
			return e;
		if (t->n_dims > GGUF_MAX_DIMS)
			return gg_fail(r->err, GGUF_ERR_NDIMS, dat, "tensor '%s': %u dimensions, at most %d allowed", esc,
				       t->n_dims, GGUF_MAX_DIMS);
		for (int j = 0; j < GGUF_MAX_DIMS; j++)
			t->ne[j] = 1;
		for (uint32_t j = 0; j < t->n_dims; j++) {
			uint64_t d;
			uint64_t dpos = r->pos;
			if ((e = rd_u64(r, &d, "a tensor dimension")))
				return e;
			if ((int64_t)d < 0)
				return gg_fail(r->err, GGUF_ERR_DIM, dpos, "tensor '%s': dimension %u is %lld, must be >= 0",
					       esc, j, (long long)(int64_t)d);
			t->ne[j] = (int64_t)d;
		}
		uint64_t tpos = r->pos;
		if ((e = rd_u32(r, &t->type, "a tensor type")) || (e = rd_u64(r, &t->offset, "a tensor offset")))
			return e;
		const struct gguf_type_info *ti = gguf_type_get(t->type);
		if (!ti)
			return gg_fail(r->err, GGUF_ERR_TENSOR_TYPE, tpos, "tensor '%s': unknown tensor type %u", esc,
				       t->type);
		e = gguf_tensor_nbytes(t->type, t->ne, &t->n_bytes);
		if (e == GGUF_ERR_BLOCK)
			return gg_fail(r->err, e, dat, "tensor '%s': row length ne[0]=%lld is not a multiple of %s's block size %u",
				       esc, (long long)t->ne[0], ti->name, ti->block_elems);
		if (e)
			return gg_fail(r->err, GGUF_ERR_OVERFLOW, dat,
				       "tensor '%s': shape (%lld, %lld, %lld, %lld) of type %s overflows int64 elements or bytes",
				       esc, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
				       (long long)t->ne[3], ti->name);
		t->n_elements = (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * (uint64_t)t->ne[2] * (uint64_t)t->ne[3];
	}
	return 0;
}

static int layout(struct gguf_file *f, struct rd *r)
{
	char esc[96];
	if (gg_align_up(r->pos, f->alignment, &f->data_offset))
		return gg_fail(r->err, GGUF_ERR_OVERFLOW, r->pos, "data section offset overflows");
	uint64_t expect = 0;
	for (uint64_t i = 0; i < f->n_tensors; i++) {
		struct gguf_tensor *t = &f->tensors[i];
		gg_escape(esc, sizeof esc, t->name, strlen(t->name), 60);
		if (t->offset != expect)
			return gg_fail(r->err, GGUF_ERR_OFFSET, t->info_offset,
				       "tensor '%s': data offset %llu, expected %llu (previous tensors aligned to %u)", esc,
				       (unsigned long long)t->offset, (unsigned long long)expect, f->alignment);
		uint64_t end;
		if (gg_add_ovf(f->data_offset, t->offset, &t->file_offset) || gg_add_ovf(t->file_offset, t->n_bytes, &end))
			return gg_fail(r->err, GGUF_ERR_OVERFLOW, t->info_offset, "tensor '%s': data end overflows", esc);
		if (end > r->size)
			return gg_fail(r->err, GGUF_ERR_DATA_BOUNDS, t->info_offset,
				       "tensor '%s': data [%llu, %llu) extends past the end of the file (%llu bytes)", esc,
				       (unsigned long long)t->file_offset, (unsigned long long)end,
				       (unsigned long long)r->size);
		t->data = r->base + t->file_offset;
		uint64_t padded;
		if (gg_align_up(t->n_bytes, f->alignment, &padded) || gg_add_ovf(expect, padded, &expect))
			return gg_fail(r->err, GGUF_ERR_OVERFLOW, t->info_offset, "tensor '%s': data layout overflows", esc);
	}
	return 0;
}

static struct gguf_file *parse_into(struct gguf_file *f, struct gguf_error *err)
{
	struct rd r = {.base = f->base, .size = f->size, .pos = 0, .err = err, .arena = &f->arena};
	if (parse_header(f, &r) || parse_kv(f, &r) || parse_alignment(f, &r) || parse_tensors(f, &r) || layout(f, &r)) {
		gguf_close(f);
		return NULL;
	}
	return f;
}

static struct gguf_file *new_file(const char *path, struct gguf_error *err)
{
	struct gguf_file *f = calloc(1, sizeof *f);
	if (!f) {
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
		return NULL;
	}
	size_t n = strlen(path);
	f->path = gg_arena_alloc(&f->arena, n + 1);
	if (!f->path) {
		free(f);
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
		return NULL;
	}
	memcpy(f->path, path, n + 1);
	return f;
}

struct gguf_file *gguf_parse(const void *data, size_t size, struct gguf_error *err)
{
	if (!data && size)
		return gg_fail(err, GGUF_ERR_INVALID_ARG, 0, "NULL buffer of %zu bytes", size), NULL;
	struct gguf_file *f = new_file("", err);
	if (!f)
		return NULL;
	f->base = data ? data : (const uint8_t *)"";
	f->size = size;
	f->arena.chunk = size / 4 < 4096 ? 4096 : size / 4 > (256u << 10) ? 0 : size / 4;
	return parse_into(f, err);
}

struct gguf_file *gguf_open(const char *path, struct gguf_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		gg_fail(err, GGUF_ERR_IO, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		gg_fail(err, GGUF_ERR_IO, 0, "cannot stat: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		gg_fail(err, GGUF_ERR_IO, 0, "not a regular file");
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > SIZE_MAX) {
		gg_fail(err, GGUF_ERR_IO, 0, "file of %lld bytes does not fit in the address space", (long long)st.st_size);
		close(fd);
		return NULL;
	}
	struct gguf_file *f = new_file(path, err);
	if (!f) {
		close(fd);
		return NULL;
	}
	f->size = (uint64_t)st.st_size;
	f->base = (const uint8_t *)"";
	if (st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			gg_fail(err, GGUF_ERR_IO, 0, "cannot map %lld bytes: %s", (long long)st.st_size, strerror(errno));
			close(fd);
			gguf_close(f);
			return NULL;
		}
		f->map = m;
		f->map_len = (size_t)st.st_size;
		f->base = m;
	}
	close(fd);
	return parse_into(f, err);
}

void gguf_close(struct gguf_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap(f->map, f->map_len);
	gg_arena_free(&f->arena);
	free(f);
}

void gguf_tensor_release(const struct gguf_file *f, const struct gguf_tensor *t)
{
	if (!f->map || !t->n_bytes)
		return;
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t s = ((uintptr_t)t->data + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	uintptr_t e = ((uintptr_t)t->data + t->n_bytes) & ~(uintptr_t)(pg - 1);
	if (e > s)
		(void)madvise((void *)s, e - s, MADV_DONTNEED);
}
