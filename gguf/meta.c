/* gguf/meta.c — metadata and tensor look-ups on an opened struct gguf_file: hash look-up by key or name,
 * typed getters with range checks and defaults, and O(1) array element accessors. Values are decoded
 * little-endian from the mapping on each access; nothing is copied.
 */
#include "config.h"

#include "gguf/file.h"

static const char *const vtype_names[GGUF_VT__COUNT] = {
	"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

const char *gguf_vtype_name(uint32_t vt) { return vt < GGUF_VT__COUNT ? vtype_names[vt] : "?"; }

size_t gguf_vtype_size(uint32_t vt)
{
	switch (vt) {
	case GGUF_VT_U8: case GGUF_VT_I8: case GGUF_VT_BOOL: return 1;
	case GGUF_VT_U16: case GGUF_VT_I16: return 2;
	case GGUF_VT_U32: case GGUF_VT_I32: case GGUF_VT_F32: return 4;
	case GGUF_VT_U64: case GGUF_VT_I64: case GGUF_VT_F64: return 8;
	default: return 0;
	}
}

uint32_t gguf_version(const struct gguf_file *f) { return f->version; }
uint32_t gguf_alignment(const struct gguf_file *f) { return f->alignment; }
uint64_t gguf_data_offset(const struct gguf_file *f) { return f->data_offset; }
uint64_t gguf_file_size(const struct gguf_file *f) { return f->size; }
const uint8_t *gguf_file_data(const struct gguf_file *f) { return f->base; }
const char *gguf_path(const struct gguf_file *f) { return f->path; }
uint64_t gguf_kv_count(const struct gguf_file *f) { return f->n_kv; }
uint64_t gguf_tensor_count(const struct gguf_file *f) { return f->n_tensors; }

const struct gguf_kv *gguf_kv_at(const struct gguf_file *f, uint64_t i)
{
	GG_ASSERT(i < f->n_kv);
	return &f->kv[i];
}

const struct gguf_tensor *gguf_tensor_at(const struct gguf_file *f, uint64_t i)
{
	GG_ASSERT(i < f->n_tensors);
	return &f->tensors[i];
}

const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key)
{
	size_t len = strlen(key);
	uint64_t h = gg_hash(key, len) & f->kv_hash_mask;
	while (f->kv_hash[h]) {
		const struct gguf_kv *kv = &f->kv[f->kv_hash[h] - 1];
		if (kv->key_len == len && memcmp(kv->key, key, len) == 0)
			return kv;
		h = (h + 1) & f->kv_hash_mask;
	}
	return NULL;
}

const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name)
{
	size_t len = strlen(name);
	uint64_t h = gg_hash(name, len) & f->t_hash_mask;
	while (f->t_hash[h]) {
		const struct gguf_tensor *t = &f->tensors[f->t_hash[h] - 1];
		if (strcmp(t->name, name) == 0)
			return t;
		h = (h + 1) & f->t_hash_mask;
	}
	return NULL;
}

static bool is_unsigned(uint32_t t) { return t == GGUF_VT_U8 || t == GGUF_VT_U16 || t == GGUF_VT_U32 || t == GGUF_VT_U64; }
static bool is_signed(uint32_t t) { return t == GGUF_VT_I8 || t == GGUF_VT_I16 || t == GGUF_VT_I32 || t == GGUF_VT_I64; }

/* An integer value in [lo, hi] (as int64 / uint64 ranges). */
static int find_int(const struct gguf_file *f, const char *key, int64_t lo, uint64_t hi, uint64_t *u, int64_t *s)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return GGUF_ERR_NOT_FOUND;
	if (is_unsigned(kv->val.type)) {
		if (kv->val.v.u > hi)
			return GGUF_ERR_TYPE_MISMATCH;
		*u = kv->val.v.u;
		*s = (int64_t)kv->val.v.u; /* only used when it fits */
		return GGUF_OK;
	}
	if (is_signed(kv->val.type)) {
		int64_t v = kv->val.v.i;
		if (v < lo || (v >= 0 && (uint64_t)v > hi))
			return GGUF_ERR_TYPE_MISMATCH;
		*u = (uint64_t)v;
		*s = v;
		return GGUF_OK;
	}
	return GGUF_ERR_TYPE_MISMATCH;
}

int gguf_find_u32(const struct gguf_file *f, const char *key, uint32_t *out)
{
	uint64_t u;
	int64_t s;
	int e = find_int(f, key, 0, UINT32_MAX, &u, &s);
	if (!e)
		*out = (uint32_t)u;
	return e;
}

int gguf_find_i32(const struct gguf_file *f, const char *key, int32_t *out)
{
	uint64_t u;
	int64_t s;
	int e = find_int(f, key, INT32_MIN, INT32_MAX, &u, &s);
	if (!e)
		*out = (int32_t)s;
	return e;
}

int gguf_find_u64(const struct gguf_file *f, const char *key, uint64_t *out)
{
	uint64_t u;
	int64_t s;
	int e = find_int(f, key, 0, UINT64_MAX, &u, &s);
	if (!e)
		*out = u;
	return e;
}

int gguf_find_i64(const struct gguf_file *f, const char *key, int64_t *out)
{
	uint64_t u;
	int64_t s;
	int e = find_int(f, key, INT64_MIN, INT64_MAX, &u, &s);
	if (!e)
		*out = s;
	return e;
}

int gguf_find_f32(const struct gguf_file *f, const char *key, float *out)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return GGUF_ERR_NOT_FOUND;
	if (kv->val.type != GGUF_VT_F32 && kv->val.type != GGUF_VT_F64)
		return GGUF_ERR_TYPE_MISMATCH;
	*out = (float)kv->val.v.f;
	return GGUF_OK;
}

int gguf_find_bool(const struct gguf_file *f, const char *key, bool *out)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return GGUF_ERR_NOT_FOUND;
	if (kv->val.type != GGUF_VT_BOOL)
		return GGUF_ERR_TYPE_MISMATCH;
	*out = kv->val.v.b;
	return GGUF_OK;
}

int gguf_find_str(const struct gguf_file *f, const char *key, struct gguf_str *out)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return GGUF_ERR_NOT_FOUND;
	if (kv->val.type != GGUF_VT_STRING)
		return GGUF_ERR_TYPE_MISMATCH;
	*out = kv->val.v.str;
	return GGUF_OK;
}

int gguf_find_arr(const struct gguf_file *f, const char *key, const struct gguf_array **out)
{
	const struct gguf_kv *kv = gguf_find_kv(f, key);
	if (!kv)
		return GGUF_ERR_NOT_FOUND;
	if (kv->val.type != GGUF_VT_ARRAY)
		return GGUF_ERR_TYPE_MISMATCH;
	*out = &kv->val.v.arr;
	return GGUF_OK;
}

uint32_t gguf_get_u32(const struct gguf_file *f, const char *key, uint32_t def)
{
	uint32_t v;
	return gguf_find_u32(f, key, &v) ? def : v;
}

int32_t gguf_get_i32(const struct gguf_file *f, const char *key, int32_t def)
{
	int32_t v;
	return gguf_find_i32(f, key, &v) ? def : v;
}

uint64_t gguf_get_u64(const struct gguf_file *f, const char *key, uint64_t def)
{
	uint64_t v;
	return gguf_find_u64(f, key, &v) ? def : v;
}

float gguf_get_f32(const struct gguf_file *f, const char *key, float def)
{
	float v;
	return gguf_find_f32(f, key, &v) ? def : v;
}

bool gguf_get_bool(const struct gguf_file *f, const char *key, bool def)
{
	bool v;
	return gguf_find_bool(f, key, &v) ? def : v;
}

struct gguf_str gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str def)
{
	struct gguf_str v;
	return gguf_find_str(f, key, &v) ? def : v;
}

int gguf_get_str_buf(const struct gguf_file *f, const char *key, char *buf, size_t cap)
{
	struct gguf_str s;
	int e = gguf_find_str(f, key, &s);
	if (cap)
		buf[0] = 0;
	if (e)
		return e;
	if (cap == 0)
		return GGUF_ERR_INVALID_ARG;
	size_t n = s.len < cap ? (size_t)s.len : cap - 1;
	memcpy(buf, s.ptr, n);
	buf[n] = 0;
	return s.len < cap ? GGUF_OK : GGUF_ERR_INVALID_ARG;
}

bool gguf_str_eq(struct gguf_str s, const char *z)
{
	size_t n = strlen(z);
	return s.len == n && memcmp(s.ptr, z, n) == 0;
}

/* ---------------------------------------------------------------- arrays */

struct gguf_str gguf_arr_str(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(a->type == GGUF_VT_STRING && i < a->n);
	const uint8_t *p = a->data + a->offs_[i];
	struct gguf_str s = {(const char *)p + 8, gg_ld64(p)};
	return s;
}

const struct gguf_array *gguf_arr_arr(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(a->type == GGUF_VT_ARRAY && i < a->n);
	return &a->sub_[i];
}

int64_t gguf_arr_int(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(i < a->n);
	const uint8_t *p = a->data + i * gguf_vtype_size(a->type);
	switch (a->type) {
	case GGUF_VT_U8: case GGUF_VT_BOOL: return p[0];
	case GGUF_VT_I8: return (int8_t)p[0];
	case GGUF_VT_U16: return gg_ld16(p);
	case GGUF_VT_I16: return (int16_t)gg_ld16(p);
	case GGUF_VT_U32: return gg_ld32(p);
	case GGUF_VT_I32: return (int32_t)gg_ld32(p);
	case GGUF_VT_U64: { uint64_t u = gg_ld64(p); return u > INT64_MAX ? INT64_MAX : (int64_t)u; }
	case GGUF_VT_I64: return (int64_t)gg_ld64(p);
	default: GG_ASSERT(0); return 0;
	}
}

double gguf_arr_float(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(i < a->n);
	if (a->type == GGUF_VT_F32)
		return gg_ldf32(a->data + i * 4);
	if (a->type == GGUF_VT_F64)
		return gg_ldf64(a->data + i * 8);
	if (a->type == GGUF_VT_U64)
		return (double)gg_ld64(a->data + i * 8);
	return (double)gguf_arr_int(a, i);
}

float gguf_arr_f32(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(a->type == GGUF_VT_F32 && i < a->n);
	return gg_ldf32(a->data + i * 4);
}

int32_t gguf_arr_i32(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(a->type == GGUF_VT_I32 && i < a->n);
	return (int32_t)gg_ld32(a->data + i * 4);
}

uint32_t gguf_arr_u32(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(a->type == GGUF_VT_U32 && i < a->n);
	return gg_ld32(a->data + i * 4);
}

uint64_t gguf_arr_u64(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT(a->type == GGUF_VT_U64 && i < a->n);
	return gg_ld64(a->data + i * 8);
}

uint8_t gguf_arr_u8(const struct gguf_array *a, uint64_t i)
{
	GG_ASSERT((a->type == GGUF_VT_U8 || a->type == GGUF_VT_I8 || a->type == GGUF_VT_BOOL) && i < a->n);
	return a->data[i];
}
