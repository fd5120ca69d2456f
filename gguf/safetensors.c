/* gguf/safetensors.c — the safetensors reader (single files and sharded checkpoint directories).
 *
 * The JSON header goes through base/json.h; every entry is checked before it becomes a tensor view:
 * known dtype, at most GGUF_ST_MAX_DIMS non-negative dimensions, an element and byte count that do not
 * overflow, data_offsets inside the data, equal to the byte count, and (sorted) tiling the data exactly.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "gguf/internal.h"
#include "gguf/safetensors.h"

static const struct {
	const char *name;
	size_t size;
} dtypes[GGUF_ST__COUNT] = {
	[GGUF_ST_BOOL] = {"BOOL", 1}, [GGUF_ST_U8] = {"U8", 1},	 [GGUF_ST_I8] = {"I8", 1},
	[GGUF_ST_I16] = {"I16", 2},   [GGUF_ST_U16] = {"U16", 2},  [GGUF_ST_F16] = {"F16", 2},
	[GGUF_ST_BF16] = {"BF16", 2}, [GGUF_ST_I32] = {"I32", 4},  [GGUF_ST_U32] = {"U32", 4},
	[GGUF_ST_F32] = {"F32", 4},   [GGUF_ST_F64] = {"F64", 8},  [GGUF_ST_I64] = {"I64", 8},
	[GGUF_ST_U64] = {"U64", 8},   [GGUF_ST_F8_E4M3] = {"F8_E4M3", 1}, [GGUF_ST_F8_E5M2] = {"F8_E5M2", 1},
};

const char *gguf_st_dtype_name(uint32_t d) { return d < GGUF_ST__COUNT ? dtypes[d].name : "?"; }
size_t gguf_st_dtype_size(uint32_t d) { return d < GGUF_ST__COUNT ? dtypes[d].size : 0; }

struct gguf_st_file {
	const uint8_t *base;
	uint64_t size;
	void *map;
	size_t map_len;
	uint64_t n;
	struct gguf_st_tensor *t;
	char **meta; /* key, value pairs, NULL-terminated */
	uint32_t *hash;
	uint64_t mask;
	struct gg_arena arena;
};

/* Insert tensor i by name; returns the index of an existing tensor with that name, or -1. */
static int64_t name_insert(uint32_t *tab, uint64_t mask, const struct gguf_st_tensor *ts, uint32_t i)
{
	uint64_t h = gg_hash(ts[i].name, strlen(ts[i].name)) & mask;
	while (tab[h]) {
		if (strcmp(ts[tab[h] - 1].name, ts[i].name) == 0)
			return tab[h] - 1;
		h = (h + 1) & mask;
	}
	tab[h] = i + 1;
	return -1;
}

static const struct gguf_st_tensor *name_find(const uint32_t *tab, uint64_t mask, const struct gguf_st_tensor *ts,
					      const char *name)
{
	uint64_t h = gg_hash(name, strlen(name)) & mask;
	while (tab[h]) {
		if (strcmp(ts[tab[h] - 1].name, name) == 0)
			return &ts[tab[h] - 1];
		h = (h + 1) & mask;
	}
	return NULL;
}

static int cmp_offset(const void *a, const void *b)
{
	const struct gguf_st_tensor *x = *(const struct gguf_st_tensor *const *)a, *y = *(const struct gguf_st_tensor *const *)b;
	return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : (x->n_bytes > y->n_bytes) - (x->n_bytes < y->n_bytes);
}

static int parse_entry(struct gguf_st_file *f, const struct ob_json *key, const struct ob_json *val, uint64_t data0,
		       uint64_t data_len, struct gguf_st_tensor *t, struct gguf_error *err)
{
	char esc[96];
	const char *name = key->str;
	size_t nl = key->len;
	gg_escape(esc, sizeof esc, name, nl, 60);
	uint64_t at = 8 + gg_json_pos(key);
	if (nl == 0 || nl > GGUF_ST_MAX_NAME || memchr(name, 0, nl))
		return gg_fail(err, GGUF_ERR_FORMAT, at, "tensor name '%s' is empty, longer than %u bytes or contains NUL",
			       esc, GGUF_ST_MAX_NAME);
	t->name = gg_arena_alloc(&f->arena, nl + 1);
	if (!t->name)
		return gg_fail(err, GGUF_ERR_NOMEM, at, "out of memory");
	memcpy((char *)t->name, name, nl + 1);
	if (val->type != OB_JSON_OBJECT)
		return gg_fail(err, GGUF_ERR_FORMAT, at, "tensor '%s': entry is not an object", esc);
	const struct ob_json *dt = ob_json_get(val, "dtype"), *sh = ob_json_get(val, "shape"),
			     *of = ob_json_get(val, "data_offsets");
	if (!dt || !sh || !of)
		return gg_fail(err, GGUF_ERR_FORMAT, at, "tensor '%s': entry lacks %s", esc,
			       !dt ? "\"dtype\"" : !sh ? "\"shape\"" : "\"data_offsets\"");
	t->dtype = GGUF_ST__COUNT;
	for (uint32_t d = 0; d < GGUF_ST__COUNT; d++)
		if (ob_json_str_eq(dt, dtypes[d].name))
			t->dtype = d;
	if (t->dtype == GGUF_ST__COUNT) {
		char desc[48];
		bool str = dt->type == OB_JSON_STRING;
		gg_escape(desc, sizeof desc, str ? dt->str : "", str ? dt->len : 0, 20);
		return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(dt), "tensor '%s': unknown dtype '%s'", esc, desc);
	}
	if (sh->type != OB_JSON_ARRAY || sh->count > GGUF_ST_MAX_DIMS)
		return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(sh),
			       "tensor '%s': shape is not an array of at most %d dimensions", esc, GGUF_ST_MAX_DIMS);
	t->n_dims = sh->count;
	uint64_t nel = 1;
	uint32_t d = 0;
	OB_JSON_FOREACH(dim, sh)
	{
		int64_t v;
		if (!gg_json_int(dim, 0, INT64_MAX, &v))
			return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(sh),
				       "tensor '%s': shape dimension %u is not a non-negative integer", esc, d);
		t->shape[d++] = v;
		if (gg_mul_ovf(nel, (uint64_t)v, &nel) || nel > INT64_MAX)
			return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(sh), "tensor '%s': element count overflows",
				       esc);
	}
	t->n_elements = nel;
	if (gg_mul_ovf(nel, dtypes[t->dtype].size, &t->n_bytes))
		return gg_fail(err, GGUF_ERR_FORMAT, at, "tensor '%s': byte count overflows", esc);
	int64_t b, en;
	if (of->type != OB_JSON_ARRAY || of->count != 2 || !gg_json_int(ob_json_at(of, 0), 0, INT64_MAX, &b) ||
	    !gg_json_int(ob_json_at(of, 1), 0, INT64_MAX, &en))
		return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(of),
			       "tensor '%s': data_offsets is not [begin, end] of non-negative integers", esc);
	if (b > en || (uint64_t)en > data_len)
		return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(of),
			       "tensor '%s': data_offsets [%lld, %lld] outside the %llu bytes of data", esc,
			       (long long)b, (long long)en, (unsigned long long)data_len);
	if ((uint64_t)(en - b) != t->n_bytes)
		return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(of),
			       "tensor '%s': data_offsets [%lld, %lld] hold %lld bytes, the %s shape needs %llu", esc,
			       (long long)b, (long long)en, (long long)(en - b), dtypes[t->dtype].name,
			       (unsigned long long)t->n_bytes);
	t->offset = data0 + (uint64_t)b;
	t->data = f->base + t->offset;
	return 0;
}

/* __metadata__: its string members, copied as key, value pairs (other values are skipped). */
static int parse_meta(struct gguf_st_file *f, const struct ob_json *obj, struct gguf_error *err)
{
	if (obj->type != OB_JSON_OBJECT)
		return gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(obj), "__metadata__ is not an object");
	f->meta = gg_arena_alloc(&f->arena, (2 * (size_t)obj->count + 1) * sizeof *f->meta);
	if (!f->meta)
		return gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
	size_t m = 0;
	OB_JSON_FOREACH_MEMBER(k, v, obj)
	{
		if (v->type != OB_JSON_STRING)
			continue;
		char *kc = gg_arena_alloc(&f->arena, k->len + 1), *vc = gg_arena_alloc(&f->arena, v->len + 1);
		if (kc && vc) {
			memcpy(kc, k->str, k->len + 1);
			memcpy(vc, v->str, v->len + 1);
			f->meta[m++] = kc;
			f->meta[m++] = vc;
		}
	}
	f->meta[m] = NULL;
	return 0;
}

static struct gguf_st_file *parse_into(struct gguf_st_file *f, struct gguf_error *err)
{
	struct ob_json_doc *doc = NULL;
	if (f->size < 8) {
		gg_fail(err, GGUF_ERR_TRUNCATED, 0, "file is %llu bytes, too short for a safetensors header length",
			(unsigned long long)f->size);
		goto fail;
	}
	uint64_t hl = gg_ld64(f->base);
	if (hl > GGUF_ST_MAX_HEADER) {
		gg_fail(err, GGUF_ERR_COUNT, 0, "header length %llu exceeds the limit %u", (unsigned long long)hl,
			GGUF_ST_MAX_HEADER);
		goto fail;
	}
	if (hl > f->size - 8) {
		gg_fail(err, GGUF_ERR_TRUNCATED, 0, "header length %llu exceeds the %llu bytes after it",
			(unsigned long long)hl, (unsigned long long)(f->size - 8));
		goto fail;
	}
	if (gg_json_parse("header JSON", (const char *)f->base + 8, (size_t)hl, 8, &doc, err))
		goto fail;
	const struct ob_json *root = ob_json_root(doc);
	if (root->type != OB_JSON_OBJECT) {
		gg_fail(err, GGUF_ERR_FORMAT, 8, "header JSON is not an object");
		goto fail;
	}
	uint64_t data0 = 8 + hl, data_len = f->size - data0;
	uint32_t nkeys = root->count;
	if ((uint64_t)nkeys > GGUF_ST_MAX_TENSORS + 1) {
		gg_fail(err, GGUF_ERR_COUNT, 8, "%u header entries exceed the limit %u", nkeys, GGUF_ST_MAX_TENSORS);
		goto fail;
	}
	f->t = gg_arena_alloc(&f->arena, (size_t)(nkeys ? nkeys : 1) * sizeof *f->t);
	f->hash = gg_hash_table(&f->arena, (uint64_t)nkeys, &f->mask);
	if (!f->t || !f->hash) {
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory for %u tensors", nkeys);
		goto fail;
	}
	OB_JSON_FOREACH_MEMBER(k, v, root)
	{
		if (ob_json_str_eq(k, "__metadata__")) {
			if (f->meta) {
				gg_fail(err, GGUF_ERR_FORMAT, 8 + gg_json_pos(k), "__metadata__ appears twice");
				goto fail;
			}
			if (parse_meta(f, v, err))
				goto fail;
			continue;
		}
		struct gguf_st_tensor *t = &f->t[f->n];
		memset(t, 0, sizeof *t);
		if (parse_entry(f, k, v, data0, data_len, t, err))
			goto fail;
		int64_t dup = name_insert(f->hash, f->mask, f->t, (uint32_t)f->n);
		if (dup >= 0) {
			char esc[96];
			gg_fail(err, GGUF_ERR_TENSOR_DUP, 8 + gg_json_pos(k), "duplicate tensor name '%s'",
				gg_escape(esc, sizeof esc, t->name, strlen(t->name), 60));
			goto fail;
		}
		f->n++;
	}
	/* the ranges, sorted, must tile [0, data_len) exactly (as the safetensors library requires) */
	{
		const struct gguf_st_tensor **ord = malloc((f->n ? f->n : 1) * sizeof *ord);
		if (!ord) {
			gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
			goto fail;
		}
		for (uint64_t k = 0; k < f->n; k++)
			ord[k] = &f->t[k];
		qsort(ord, f->n, sizeof *ord, cmp_offset);
		uint64_t pos = data0;
		for (uint64_t k = 0; k < f->n; k++) {
			if (ord[k]->offset != pos) {
				char esc[96];
				gg_escape(esc, sizeof esc, ord[k]->name, strlen(ord[k]->name), 60);
				gg_fail(err, GGUF_ERR_FORMAT, ord[k]->offset,
					"tensor '%s' starts at data byte %llu, expected %llu: the tensors %s", esc,
					(unsigned long long)(ord[k]->offset - data0), (unsigned long long)(pos - data0),
					ord[k]->offset < pos ? "overlap" : "leave a gap");
				free(ord);
				goto fail;
			}
			pos += ord[k]->n_bytes;
		}
		free(ord);
		if (pos != f->size) {
			gg_fail(err, GGUF_ERR_FORMAT, pos, "%llu bytes after the last tensor's data",
				(unsigned long long)(f->size - pos));
			goto fail;
		}
	}
	ob_json_free(doc);
	return f;
fail:
	ob_json_free(doc);
	gguf_st_close(f);
	return NULL;
}

struct gguf_st_file *gguf_st_parse(const void *data, size_t size, struct gguf_error *err)
{
	struct gguf_st_file *f = calloc(1, sizeof *f);
	if (!f) {
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
		return NULL;
	}
	f->base = data ? data : (const uint8_t *)"";
	f->size = data ? size : 0;
	return parse_into(f, err);
}

struct gguf_st_file *gguf_st_open(const char *path, struct gguf_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		gg_fail(err, GGUF_ERR_IO, 0, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SIZE_MAX) {
		gg_fail(err, GGUF_ERR_IO, 0, "%s is not a readable regular file", path);
		close(fd);
		return NULL;
	}
	struct gguf_st_file *f = calloc(1, sizeof *f);
	if (!f) {
		close(fd);
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
		return NULL;
	}
	f->base = (const uint8_t *)"";
	f->size = (uint64_t)st.st_size;
	if (st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			gg_fail(err, GGUF_ERR_IO, 0, "cannot map %s: %s", path, strerror(errno));
			close(fd);
			free(f);
			return NULL;
		}
		f->map = m;
		f->map_len = (size_t)st.st_size;
		f->base = m;
	}
	close(fd);
	return parse_into(f, err);
}

void gguf_st_close(struct gguf_st_file *f)
{
	if (!f)
		return;
	if (f->map)
		munmap(f->map, f->map_len);
	gg_arena_free(&f->arena);
	free(f);
}

uint64_t gguf_st_count(const struct gguf_st_file *f) { return f->n; }

const struct gguf_st_tensor *gguf_st_at(const struct gguf_st_file *f, uint64_t i)
{
	if (i >= f->n)
		abort();
	return &f->t[i];
}

const struct gguf_st_tensor *gguf_st_find(const struct gguf_st_file *f, const char *name)
{
	return name_find(f->hash, f->mask, f->t, name);
}

const char *gguf_st_meta(const struct gguf_st_file *f, const char *key)
{
	for (char **p = f->meta; p && *p; p += 2)
		if (strcmp(p[0], key) == 0)
			return p[1];
	return NULL;
}

float gguf_st_get_f32(const struct gguf_st_tensor *t, uint64_t i)
{
	const uint8_t *p = t->data;
	switch (t->dtype) {
	case GGUF_ST_F32: return gg_ldf32(p + 4 * i);
	case GGUF_ST_F16: return gguf_f16_to_f32(gg_ld16(p + 2 * i));
	case GGUF_ST_BF16: return gguf_bf16_to_f32(gg_ld16(p + 2 * i));
	case GGUF_ST_F64: return (float)gg_ldf64(p + 8 * i);
	case GGUF_ST_F8_E4M3: return gguf_e4m3_to_f32(p[i]);
	default: abort();
	}
}

/* ---------------------------------------------------------------- checkpoint directories */

struct gguf_st_model {
	struct gguf_st_file **shards;
	uint64_t n_shards;
	size_t cap_shards;
	const struct gguf_st_tensor **all;
	uint64_t n;
	uint32_t *hash;
	uint64_t mask;
	struct gg_arena arena;
};

void gguf_st_model_close(struct gguf_st_model *m)
{
	if (!m)
		return;
	for (uint64_t i = 0; i < m->n_shards; i++)
		gguf_st_close(m->shards[i]);
	free(m->shards);
	free(m->all);
	gg_arena_free(&m->arena);
	free(m);
}

uint64_t gguf_st_model_count(const struct gguf_st_model *m) { return m->n; }

const struct gguf_st_tensor *gguf_st_model_at(const struct gguf_st_model *m, uint64_t i)
{
	if (i >= m->n)
		abort();
	return m->all[i];
}

const struct gguf_st_tensor *gguf_st_model_find(const struct gguf_st_model *m, const char *name)
{
	uint64_t h = gg_hash(name, strlen(name)) & m->mask;
	while (m->hash[h]) {
		const struct gguf_st_tensor *t = m->all[m->hash[h] - 1];
		if (strcmp(t->name, name) == 0)
			return t;
		h = (h + 1) & m->mask;
	}
	return NULL;
}

char *gg_read_file(const char *path, size_t max, size_t *len, struct gguf_error *err)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		gg_fail(err, GGUF_ERR_IO, 0, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fileno(fp), &st) != 0 || (uint64_t)st.st_size > max) {
		fclose(fp);
		gg_fail(err, GGUF_ERR_FORMAT, 0, "%s is larger than %zu bytes", path, max);
		return NULL;
	}
	char *b = malloc((size_t)st.st_size + 1);
	if (!b) {
		fclose(fp);
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory reading %s", path);
		return NULL;
	}
	size_t n = fread(b, 1, (size_t)st.st_size, fp);
	fclose(fp);
	if (n != (size_t)st.st_size) {
		free(b);
		gg_fail(err, GGUF_ERR_IO, 0, "short read on %s", path);
		return NULL;
	}
	b[n] = 0;
	*len = n;
	return b;
}

static int add_shard(struct gguf_st_model *m, const char *dir, const char *file, struct gguf_error *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	struct gguf_st_file *f = gguf_st_open(path, err);
	if (!f) {
		if (err) {
			char msg[2 * sizeof err->msg];
			snprintf(msg, sizeof msg, "%s: %s", file, err->msg);
			msg[sizeof err->msg - 1] = 0;
			memcpy(err->msg, msg, sizeof err->msg);
		}
		return err ? err->code : GGUF_ERR_FORMAT;
	}
	if (OB_GROW(m->shards, m->cap_shards, m->n_shards + 1, GGUF_ST_MAX_SHARDS) != OB_GROW_OK) {
		gguf_st_close(f);
		return gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
	}
	m->shards[m->n_shards++] = f;
	return 0;
}

static int index_model(struct gguf_st_model *m, struct gguf_error *err)
{
	for (uint64_t s = 0; s < m->n_shards; s++)
		m->n += m->shards[s]->n;
	m->all = malloc((m->n ? m->n : 1) * sizeof *m->all);
	m->hash = gg_hash_table(&m->arena, m->n, &m->mask);
	if (!m->all || !m->hash)
		return gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
	uint64_t k = 0;
	for (uint64_t s = 0; s < m->n_shards; s++)
		for (uint64_t i = 0; i < m->shards[s]->n; i++) {
			const struct gguf_st_tensor *t = &m->shards[s]->t[i];
			uint64_t h = gg_hash(t->name, strlen(t->name)) & m->mask;
			while (m->hash[h]) {
				if (strcmp(m->all[m->hash[h] - 1]->name, t->name) == 0)
					return gg_fail(err, GGUF_ERR_FORMAT, 0, "tensor '%s' appears in two shards", t->name);
				h = (h + 1) & m->mask;
			}
			m->all[k] = t;
			m->hash[h] = (uint32_t)(k + 1);
			k++;
		}
	return 0;
}

static bool plain_name(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

struct gguf_st_model *gguf_st_model_open(const char *dir, struct gguf_error *err)
{
	struct gguf_st_model *m = calloc(1, sizeof *m);
	if (!m) {
		gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
		return NULL;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
	struct stat st;
	int e = 0;
	if (stat(path, &st) != 0) {
		e = add_shard(m, dir, "model.safetensors", err);
		if (!e)
			e = index_model(m, err);
		if (e) {
			gguf_st_model_close(m);
			return NULL;
		}
		return m;
	}
	size_t len;
	char *js = gg_read_file(path, GG_JSON_MAX_BYTES, &len, err);
	if (!js) {
		gguf_st_model_close(m);
		return NULL;
	}
	struct ob_json_doc *doc;
	if (gg_json_parse("model.safetensors.index.json", js, len, 0, &doc, err)) {
		free(js);
		gguf_st_model_close(m);
		return NULL;
	}
	const struct ob_json *wm = ob_json_get(ob_json_root(doc), "weight_map");
	char **names = NULL;
	uint64_t nn = 0;
	size_t cap_names = 0;
	if (!wm || wm->type != OB_JSON_OBJECT) {
		e = gg_fail(err, GGUF_ERR_FORMAT, 0, "model.safetensors.index.json has no weight_map object");
		goto done;
	}
	/* open each distinct shard once, in order of first mention */
	int k = 0;
	OB_JSON_FOREACH_MEMBER(tn, fv, wm)
	{
		if (e)
			break;
		if (fv->type != OB_JSON_STRING || !plain_name(fv->str) || memchr(fv->str, 0, fv->len)) {
			e = gg_fail(err, GGUF_ERR_FORMAT, gg_json_pos(tn),
				    "model.safetensors.index.json: weight_map entry %d is not a \"tensor\": \"file\" pair with a plain file name", k);
			break;
		}
		const char *file = fv->str, *tname = tn->str;
		uint64_t s = 0;
		while (s < nn && strcmp(names[s], file) != 0)
			s++;
		if (s == nn) {
			if (nn >= GGUF_ST_MAX_SHARDS) {
				e = gg_fail(err, GGUF_ERR_FORMAT, 0, "more than %u shards", GGUF_ST_MAX_SHARDS);
			} else {
				char *copy = NULL;
				if (OB_GROW(names, cap_names, nn + 1, GGUF_ST_MAX_SHARDS) == OB_GROW_OK)
					copy = strdup(file);
				if (!copy) {
					e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
				} else {
					names[nn++] = copy;
					e = add_shard(m, dir, names[s], err);
				}
			}
		}
		if (!e && !gguf_st_find(m->shards[s], tname))
			e = gg_fail(err, GGUF_ERR_FORMAT, 0, "weight_map names tensor '%s' in %s, which does not hold it",
				    tname, names[s]);
		k++;
	}
	for (uint64_t s = 0; s < nn; s++)
		free(names[s]);
	free(names);
	if (!e)
		e = index_model(m, err);
done:
	ob_json_free(doc);
	free(js);
	if (e) {
		gguf_st_model_close(m);
		return NULL;
	}
	return m;
}
