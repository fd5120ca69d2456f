/* gguf/writer.c — the GGUF writer: metadata encoded at set time, tensors laid out with the file's alignment,
 * output through a small sink that writes to a buffered file descriptor (holes for zero data, atomic rename)
 * or to memory. It never reads back what it wrote; tests do that with the reader.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "gguf/internal.h"
#include "gguf/writer.h"

struct w_kv {
	char *key;
	uint32_t vtype;
	uint8_t *enc;
	uint64_t enc_len;
};

struct w_tensor {
	struct gguf_tensor t; /* name (owned), type, n_dims, ne, n_elements, n_bytes, offset */
	const void *data;
	gguf_fill_fn fill;
	void *fill_ctx;
};

struct gguf_writer {
	struct w_kv *kv;
	uint64_t n_kv;
	size_t cap_kv;
	struct w_tensor *t;
	uint64_t n_t;
	size_t cap_t;
	uint32_t alignment;
};

struct gguf_writer *gguf_writer_new(void)
{
	struct gguf_writer *w = calloc(1, sizeof *w);
	if (w)
		w->alignment = GGUF_DEFAULT_ALIGNMENT;
	return w;
}

void gguf_writer_free(struct gguf_writer *w)
{
	if (!w)
		return;
	for (uint64_t i = 0; i < w->n_kv; i++) {
		free(w->kv[i].key);
		free(w->kv[i].enc);
	}
	for (uint64_t i = 0; i < w->n_t; i++)
		free((char *)w->t[i].t.name);
	free(w->kv);
	free(w->t);
	free(w);
}

uint64_t gguf_writer_kv_count(const struct gguf_writer *w) { return w->n_kv; }
uint64_t gguf_writer_tensor_count(const struct gguf_writer *w) { return w->n_t; }

static int find_key(const struct gguf_writer *w, const char *key)
{
	for (uint64_t i = 0; i < w->n_kv; i++)
		if (strcmp(w->kv[i].key, key) == 0)
			return (int)i;
	return -1;
}

/* Takes ownership of enc (freed on failure too). */
static int add_kv(struct gguf_writer *w, const char *key, uint32_t vtype, uint8_t *enc, uint64_t n)
{
	int e = GGUF_OK;
	size_t klen = key ? strlen(key) : 0;
	if (!key || klen == 0)
		e = GGUF_ERR_KEY_EMPTY;
	else if (klen > GGUF_MAX_KEY_LEN)
		e = GGUF_ERR_KEY_INVALID;
	else if (find_key(w, key) >= 0)
		e = GGUF_ERR_KEY_DUP;
	else if (w->n_kv >= GGUF_MAX_KV)
		e = GGUF_ERR_COUNT;
	if (!e && OB_GROW(w->kv, w->cap_kv, w->n_kv + 1, GGUF_MAX_KV) != OB_GROW_OK)
		e = GGUF_ERR_NOMEM; /* the count was checked above: only memory can fail */
	if (!e && strcmp(key, "general.alignment") == 0) {
		/* the key decides the layout: keep the writer's alignment in step with it */
		uint32_t a = vtype == GGUF_VT_U32 && n == 4 ? gg_ld32(enc) : 0;
		if (a == 0 || (a & (a - 1)) || a > GGUF_MAX_ALIGNMENT)
			e = GGUF_ERR_ALIGNMENT;
		else
			w->alignment = a;
	}
	char *k = e ? NULL : strdup(key);
	if (!e && !k)
		e = GGUF_ERR_NOMEM;
	if (e) {
		free(enc);
		return e;
	}
	w->kv[w->n_kv++] = (struct w_kv){k, vtype, enc, n};
	return GGUF_OK;
}

static int add_fixed(struct gguf_writer *w, const char *key, uint32_t vt, uint64_t bits)
{
	size_t sz = gguf_vtype_size(vt);
	uint8_t *enc = malloc(8);
	if (!enc)
		return GGUF_ERR_NOMEM;
	gg_st64(enc, bits); /* little-endian: the first sz bytes are the value */
	return add_kv(w, key, vt, enc, sz);
}

int gguf_w_u8(struct gguf_writer *w, const char *key, uint8_t v) { return add_fixed(w, key, GGUF_VT_U8, v); }
int gguf_w_i8(struct gguf_writer *w, const char *key, int8_t v) { return add_fixed(w, key, GGUF_VT_I8, (uint8_t)v); }
int gguf_w_u16(struct gguf_writer *w, const char *key, uint16_t v) { return add_fixed(w, key, GGUF_VT_U16, v); }
int gguf_w_i16(struct gguf_writer *w, const char *key, int16_t v) { return add_fixed(w, key, GGUF_VT_I16, (uint16_t)v); }
int gguf_w_u32(struct gguf_writer *w, const char *key, uint32_t v) { return add_fixed(w, key, GGUF_VT_U32, v); }
int gguf_w_i32(struct gguf_writer *w, const char *key, int32_t v) { return add_fixed(w, key, GGUF_VT_I32, (uint32_t)v); }
int gguf_w_u64(struct gguf_writer *w, const char *key, uint64_t v) { return add_fixed(w, key, GGUF_VT_U64, v); }
int gguf_w_i64(struct gguf_writer *w, const char *key, int64_t v) { return add_fixed(w, key, GGUF_VT_I64, (uint64_t)v); }
int gguf_w_bool(struct gguf_writer *w, const char *key, bool v) { return add_fixed(w, key, GGUF_VT_BOOL, v ? 1 : 0); }

int gguf_w_f32(struct gguf_writer *w, const char *key, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	return add_fixed(w, key, GGUF_VT_F32, u);
}

int gguf_w_f64(struct gguf_writer *w, const char *key, double v)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	return add_fixed(w, key, GGUF_VT_F64, u);
}

int gguf_w_strn(struct gguf_writer *w, const char *key, const char *v, uint64_t len)
{
	if ((!v && len) || len > GGUF_MAX_STRING_LEN)
		return GGUF_ERR_INVALID_ARG;
	uint8_t *enc = malloc(8 + len);
	if (!enc)
		return GGUF_ERR_NOMEM;
	gg_st64(enc, len);
	if (len)
		memcpy(enc + 8, v, len);
	return add_kv(w, key, GGUF_VT_STRING, enc, 8 + len);
}

int gguf_w_str(struct gguf_writer *w, const char *key, const char *v)
{
	if (!v)
		return GGUF_ERR_INVALID_ARG;
	return gguf_w_strn(w, key, v, strlen(v));
}

int gguf_w_arr(struct gguf_writer *w, const char *key, uint32_t et, const void *elems, uint64_t n)
{
	size_t sz = gguf_vtype_size(et);
	if (!sz || n > GGUF_MAX_ARRAY_ELEMS || (n && !elems))
		return GGUF_ERR_INVALID_ARG;
	uint8_t *enc = malloc(12 + n * sz);
	if (!enc)
		return GGUF_ERR_NOMEM;
	gg_st32(enc, et);
	gg_st64(enc + 4, n);
	uint8_t *p = enc + 12;
	for (uint64_t i = 0; i < n; i++, p += sz) {
		switch (et) {
		case GGUF_VT_BOOL: *p = ((const bool *)elems)[i] ? 1 : 0; break;
		case GGUF_VT_U8: case GGUF_VT_I8: *p = ((const uint8_t *)elems)[i]; break;
		case GGUF_VT_U16: case GGUF_VT_I16: gg_st16(p, ((const uint16_t *)elems)[i]); break;
		case GGUF_VT_U32: case GGUF_VT_I32: case GGUF_VT_F32: {
			uint32_t u;
			memcpy(&u, (const uint8_t *)elems + 4 * i, 4);
			gg_st32(p, u);
			break;
		}
		default: {
			uint64_t u;
			memcpy(&u, (const uint8_t *)elems + 8 * i, 8);
			gg_st64(p, u);
		}
		}
	}
	return add_kv(w, key, GGUF_VT_ARRAY, enc, 12 + n * sz);
}

int gguf_w_arr_str(struct gguf_writer *w, const char *key, const char *const *strs, const uint64_t *lens, uint64_t n)
{
	if (n > GGUF_MAX_ARRAY_ELEMS || (n && !strs))
		return GGUF_ERR_INVALID_ARG;
	uint64_t total = 12;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t l = lens ? lens[i] : (strs[i] ? strlen(strs[i]) : 0);
		if ((!strs[i] && l) || l > GGUF_MAX_STRING_LEN || gg_add_ovf(total, 8 + l, &total))
			return GGUF_ERR_INVALID_ARG;
	}
	if (total > SIZE_MAX)
		return GGUF_ERR_NOMEM;
	uint8_t *enc = malloc(total);
	if (!enc)
		return GGUF_ERR_NOMEM;
	gg_st32(enc, GGUF_VT_STRING);
	gg_st64(enc + 4, n);
	uint8_t *p = enc + 12;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t l = lens ? lens[i] : (strs[i] ? strlen(strs[i]) : 0);
		gg_st64(p, l);
		if (l)
			memcpy(p + 8, strs[i], l);
		p += 8 + l;
	}
	return add_kv(w, key, GGUF_VT_ARRAY, enc, total);
}

int gguf_w_raw(struct gguf_writer *w, const char *key, uint32_t vtype, const void *enc, uint64_t n)
{
	if (vtype >= GGUF_VT__COUNT || (n && !enc) || n > SIZE_MAX - 64)
		return GGUF_ERR_INVALID_ARG;
	/* validate by parsing a one-pair GGUF around it */
	uint64_t tot = 24 + 8 + 1 + 4 + n;
	uint8_t *doc = malloc(tot);
	if (!doc)
		return GGUF_ERR_NOMEM;
	gg_st32(doc, GGUF_MAGIC);
	gg_st32(doc + 4, 3);
	gg_st64(doc + 8, 0);
	gg_st64(doc + 16, 1);
	gg_st64(doc + 24, 1);
	doc[32] = 'k';
	gg_st32(doc + 33, vtype);
	if (n)
		memcpy(doc + 37, enc, n);
	struct gguf_error err;
	struct gguf_file *f = gguf_parse(doc, tot, &err);
	int e = f ? GGUF_OK : err.code;
	if (f && gguf_kv_at(f, 0)->val_size != n)
		e = GGUF_ERR_INVALID_ARG; /* trailing bytes after the value */
	gguf_close(f);
	if (e) {
		free(doc);
		return e;
	}
	memmove(doc, doc + 37, n);
	return add_kv(w, key, vtype, doc, n);
}

int gguf_w_copy_kv(struct gguf_writer *w, const struct gguf_file *src, const struct gguf_kv *kv)
{
	if (kv->val_size > SIZE_MAX)
		return GGUF_ERR_NOMEM;
	uint8_t *enc = malloc(kv->val_size ? kv->val_size : 1);
	if (!enc)
		return GGUF_ERR_NOMEM;
	memcpy(enc, gguf_file_data(src) + kv->val_offset, kv->val_size);
	return add_kv(w, kv->key, kv->val.type, enc, kv->val_size);
}

int gguf_writer_remove(struct gguf_writer *w, const char *key)
{
	int i = find_key(w, key);
	if (i < 0)
		return GGUF_OK;
	if (strcmp(key, "general.alignment") == 0)
		w->alignment = GGUF_DEFAULT_ALIGNMENT;
	free(w->kv[i].key);
	free(w->kv[i].enc);
	memmove(&w->kv[i], &w->kv[i + 1], (w->n_kv - (uint64_t)i - 1) * sizeof *w->kv);
	w->n_kv--;
	return GGUF_OK;
}

int gguf_writer_set_alignment(struct gguf_writer *w, uint32_t a)
{
	if (a == 0 || (a & (a - 1)) || a > GGUF_MAX_ALIGNMENT)
		return GGUF_ERR_ALIGNMENT;
	(void)gguf_writer_remove(w, "general.alignment");
	return gguf_w_u32(w, "general.alignment", a);
}

int gguf_w_tensor(struct gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
		  const void *data, gguf_fill_fn fill, void *fill_ctx)
{
	size_t len = name ? strlen(name) : 0;
	if (len == 0 || len > GGUF_MAX_TENSOR_NAME)
		return GGUF_ERR_TENSOR_NAME;
	if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
		return GGUF_ERR_NDIMS;
	if (!ne)
		return GGUF_ERR_INVALID_ARG;
	for (uint64_t i = 0; i < w->n_t; i++)
		if (strcmp(w->t[i].t.name, name) == 0)
			return GGUF_ERR_TENSOR_DUP;
	if (w->n_t >= GGUF_MAX_TENSORS)
		return GGUF_ERR_COUNT;
	struct w_tensor wt = {0};
	wt.t.type = type;
	wt.t.n_dims = n_dims;
	for (uint32_t i = 0; i < GGUF_MAX_DIMS; i++)
		wt.t.ne[i] = i < n_dims ? ne[i] : 1;
	int e = gguf_tensor_nbytes(type, wt.t.ne, &wt.t.n_bytes);
	if (e)
		return e;
	wt.t.n_elements = (uint64_t)wt.t.ne[0] * (uint64_t)wt.t.ne[1] * (uint64_t)wt.t.ne[2] * (uint64_t)wt.t.ne[3];
	uint64_t off = 0;
	if (w->n_t) {
		const struct w_tensor *p = &w->t[w->n_t - 1];
		/* offsets are recomputed at write time for the final alignment; here only overflow is checked */
		if (gg_add_ovf(p->t.offset, p->t.n_bytes + (1u << 30), &off) || off > INT64_MAX)
			return GGUF_ERR_OVERFLOW;
		off = p->t.offset + p->t.n_bytes;
	}
	wt.t.offset = off;
	if (OB_GROW(w->t, w->cap_t, w->n_t + 1, GGUF_MAX_TENSORS) != OB_GROW_OK)
		return GGUF_ERR_NOMEM; /* the count was checked above: only memory can fail */
	char *nm = strdup(name);
	if (!nm)
		return GGUF_ERR_NOMEM;
	wt.t.name = nm;
	wt.data = data;
	wt.fill = data ? NULL : fill;
	wt.fill_ctx = fill_ctx;
	w->t[w->n_t++] = wt;
	return GGUF_OK;
}

/* ---------------------------------------------------------------- output */

#define SINK_BUF (1u << 20)

struct sink {
	int fd;              /* -1: memory */
	uint8_t *mem;        /* memory output, sized exactly in advance */
	uint64_t pos;        /* logical position */
	uint8_t *buf;        /* fd output buffer */
	size_t used;
	bool hole_at_end;
	struct gguf_error *err;
};

static int sink_flush(struct sink *s)
{
	size_t o = 0;
	while (o < s->used) {
		ssize_t n = write(s->fd, s->buf + o, s->used - o);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return gg_fail(s->err, GGUF_ERR_IO, s->pos, "write failed: %s", n < 0 ? strerror(errno) : "short write");
		o += (size_t)n;
	}
	s->used = 0;
	return 0;
}

static int sink_put(struct sink *s, const void *p, uint64_t n)
{
	const uint8_t *b = p;
	if (s->fd < 0) {
		memcpy(s->mem + s->pos, b, n);
		s->pos += n;
		return 0;
	}
	s->hole_at_end = false;
	while (n) {
		size_t room = SINK_BUF - s->used;
		size_t k = n < room ? (size_t)n : room;
		memcpy(s->buf + s->used, b, k);
		s->used += k;
		b += k;
		n -= k;
		s->pos += k;
		if (s->used == SINK_BUF && sink_flush(s))
			return s->err ? s->err->code : GGUF_ERR_IO;
	}
	return 0;
}

static int sink_zero(struct sink *s, uint64_t n, bool hole)
{
	if (s->fd < 0) {
		memset(s->mem + s->pos, 0, n);
		s->pos += n;
		return 0;
	}
	if (!hole || n < 65536) {
		static const uint8_t z[4096];
		while (n) {
			uint64_t k = n < sizeof z ? n : sizeof z;
			int e = sink_put(s, z, k);
			if (e)
				return e;
			n -= k;
		}
		return 0;
	}
	int e = sink_flush(s);
	if (e)
		return e;
	if (lseek(s->fd, (off_t)n, SEEK_CUR) < 0)
		return gg_fail(s->err, GGUF_ERR_IO, s->pos, "seek failed: %s", strerror(errno));
	s->pos += n;
	s->hole_at_end = true;
	return 0;
}

static int sink_u32(struct sink *s, uint32_t v)
{
	uint8_t b[4];
	gg_st32(b, v);
	return sink_put(s, b, 4);
}

static int sink_u64(struct sink *s, uint64_t v)
{
	uint8_t b[8];
	gg_st64(b, v);
	return sink_put(s, b, 8);
}

/* Total size and the final data offsets for the writer's alignment. */
static int plan(const struct gguf_writer *w, uint64_t *header_end, uint64_t *total, struct gguf_error *err)
{
	uint64_t n = 24;
	for (uint64_t i = 0; i < w->n_kv; i++)
		n += 8 + strlen(w->kv[i].key) + 4 + w->kv[i].enc_len;
	for (uint64_t i = 0; i < w->n_t; i++)
		n += 8 + strlen(w->t[i].t.name) + 4 + 8 * (uint64_t)w->t[i].t.n_dims + 4 + 8;
	*header_end = n;
	uint64_t data = 0, d0;
	if (gg_align_up(n, w->alignment, &d0))
		return gg_fail(err, GGUF_ERR_OVERFLOW, 0, "file size overflows");
	for (uint64_t i = 0; i < w->n_t; i++) {
		uint64_t padded;
		w->t[i].t.offset = data; /* final offset (the writer keeps the field up to date for callbacks) */
		if (gg_align_up(w->t[i].t.n_bytes, w->alignment, &padded) || gg_add_ovf(data, padded, &data))
			return gg_fail(err, GGUF_ERR_OVERFLOW, 0, "file size overflows");
	}
	if (gg_add_ovf(d0, data, total) || *total > INT64_MAX)
		return gg_fail(err, GGUF_ERR_OVERFLOW, 0, "file size overflows");
	return 0;
}

static int emit(const struct gguf_writer *w, struct sink *s, uint64_t header_end)
{
	int e;
	static const uint8_t magic[4] = {'G', 'G', 'U', 'F'};
	if ((e = sink_put(s, magic, 4)) || (e = sink_u32(s, 3)) || (e = sink_u64(s, w->n_t)) || (e = sink_u64(s, w->n_kv)))
		return e;
	for (uint64_t i = 0; i < w->n_kv; i++) {
		const struct w_kv *kv = &w->kv[i];
		uint64_t kl = strlen(kv->key);
		if ((e = sink_u64(s, kl)) || (e = sink_put(s, kv->key, kl)) || (e = sink_u32(s, kv->vtype)) ||
		    (e = sink_put(s, kv->enc, kv->enc_len)))
			return e;
	}
	for (uint64_t i = 0; i < w->n_t; i++) {
		const struct gguf_tensor *t = &w->t[i].t;
		uint64_t nl = strlen(t->name);
		if ((e = sink_u64(s, nl)) || (e = sink_put(s, t->name, nl)) || (e = sink_u32(s, t->n_dims)))
			return e;
		for (uint32_t j = 0; j < t->n_dims; j++)
			if ((e = sink_u64(s, (uint64_t)t->ne[j])))
				return e;
		if ((e = sink_u32(s, t->type)) || (e = sink_u64(s, t->offset)))
			return e;
	}
	uint64_t d0;
	gg_align_up(header_end, w->alignment, &d0);
	if ((e = sink_zero(s, d0 - header_end, false)))
		return e;
	for (uint64_t i = 0; i < w->n_t; i++) {
		const struct w_tensor *wt = &w->t[i];
		uint64_t nb = wt->t.n_bytes, padded;
		gg_align_up(nb, w->alignment, &padded);
		if (wt->data) {
			e = sink_put(s, wt->data, nb);
		} else if (wt->fill) {
			if (nb > SIZE_MAX)
				return gg_fail(s->err, GGUF_ERR_NOMEM, s->pos, "tensor '%s' too large", wt->t.name);
			uint8_t *buf = malloc(nb ? nb : 1);
			if (!buf)
				return gg_fail(s->err, GGUF_ERR_NOMEM, s->pos, "out of memory for tensor '%s' (%llu bytes)",
					       wt->t.name, (unsigned long long)nb);
			struct gguf_error ferr = {0};
			e = wt->fill(wt->fill_ctx, &wt->t, buf, nb, &ferr);
			if (e) {
				free(buf);
				if (s->err) {
					*s->err = ferr;
					s->err->code = e;
					if (!ferr.msg[0])
						snprintf(s->err->msg, sizeof s->err->msg, "producing tensor '%s' failed: %s",
							 wt->t.name, gguf_strerror(e));
				}
				return e;
			}
			e = sink_put(s, buf, nb);
			free(buf);
		} else {
			e = sink_zero(s, nb, true);
		}
		if (e || (e = sink_zero(s, padded - nb, wt->data == NULL && wt->fill == NULL)))
			return e;
	}
	return 0;
}

int gguf_writer_write_mem(const struct gguf_writer *w, uint8_t **out, size_t *size, struct gguf_error *err)
{
	uint64_t he, total;
	int e = plan(w, &he, &total, err);
	if (e)
		return e;
	if (total > SIZE_MAX)
		return gg_fail(err, GGUF_ERR_NOMEM, 0, "file of %llu bytes does not fit in memory", (unsigned long long)total);
	struct sink s = {.fd = -1, .err = err};
	s.mem = malloc(total ? total : 1);
	if (!s.mem)
		return gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory for %llu bytes", (unsigned long long)total);
	e = emit(w, &s, he);
	if (e) {
		free(s.mem);
		return e;
	}
	*out = s.mem;
	*size = (size_t)total;
	return GGUF_OK;
}

int gguf_writer_write_file(const struct gguf_writer *w, const char *path, struct gguf_error *err)
{
	uint64_t he, total;
	int e = plan(w, &he, &total, err);
	if (e)
		return e;
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 16);
	if (!tmp)
		return gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".tmp-XXXXXX", 12);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		e = gg_fail(err, GGUF_ERR_IO, 0, "cannot create a temporary file beside %s: %s", path, strerror(errno));
		free(tmp);
		return e;
	}
	(void)fchmod(fd, 0644);
	struct sink s = {.fd = fd, .err = err};
	s.buf = malloc(SINK_BUF);
	if (!s.buf)
		e = gg_fail(err, GGUF_ERR_NOMEM, 0, "out of memory");
	if (!e)
		e = emit(w, &s, he);
	if (!e)
		e = sink_flush(&s) ? GGUF_ERR_IO : 0;
	if (!e && s.hole_at_end && ftruncate(fd, (off_t)total) != 0)
		e = gg_fail(err, GGUF_ERR_IO, total, "cannot extend %s: %s", tmp, strerror(errno));
	if (!e && fsync(fd) != 0)
		e = gg_fail(err, GGUF_ERR_IO, 0, "fsync failed: %s", strerror(errno));
	if (close(fd) != 0 && !e)
		e = gg_fail(err, GGUF_ERR_IO, 0, "close failed: %s", strerror(errno));
	if (!e && rename(tmp, path) != 0)
		e = gg_fail(err, GGUF_ERR_IO, 0, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
	if (e)
		unlink(tmp);
	free(s.buf);
	free(tmp);
	return e;
}
