/* tools/cmd_gguf.c — `orun gguf FILE [--json] [--full]`: validate a GGUF file and print its version,
 * metadata (long arrays and strings summarised unless --full), every tensor (name, type, shape, offset,
 * bytes) and the totals; --json prints the same as one JSON object. An invalid file prints
 * `FILE: offset N: reason` on stderr and exits 1. It reads only the header and metadata pages.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"
#include "gguf/gguf.h"
#include "gguf/model.h"
#include "tools/argnum.h"
#include "tools/commands.h"

#define SHOW_ELEMS 8     /* array elements shown without --full */
#define SHOW_CHARS 72    /* string bytes shown without --full */

struct opts {
	bool json, full;
};

/* ---------------------------------------------------------------- text */

/* A string quoted as JSON (valid for the text output too): control characters escaped, invalid UTF-8 bytes
 * replaced by U+FFFD. max > 0 cuts after max bytes and appends an ellipsis note. */
static void put_str(FILE *o, const char *s, uint64_t n, uint64_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	uint64_t lim = max && n > max ? max : n;
	fputc('"', o);
	for (uint64_t i = 0; i < lim;) {
		unsigned c = p[i];
		if (c == '"' || c == '\\') {
			fputc('\\', o);
			fputc((int)c, o);
			i++;
		} else if (c == '\n') {
			fputs("\\n", o);
			i++;
		} else if (c == '\t') {
			fputs("\\t", o);
			i++;
		} else if (c == '\r') {
			fputs("\\r", o);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(o, "\\u%04x", c);
			i++;
		} else {
			size_t l = ob_utf8_valid_len(p + i, (size_t)(n - i));
			if (l == 0) {
				fputs("\\ufffd", o);
				i++;
			} else {
				fwrite(p + i, 1, l, o);
				i += l;
			}
		}
	}
	fputc('"', o);
	if (lim < n && max)
		fprintf(o, "... (%" PRIu64 " bytes)", n);
}

static void put_float(FILE *o, double v, bool f32)
{
	if (isnan(v))
		fputs("\"NaN\"", o);
	else if (isinf(v))
		fputs(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", o);
	else if (f32)
		fprintf(o, "%.9g", v);
	else
		fprintf(o, "%.17g", v);
}

static void put_array(FILE *o, const struct gguf_array *a, const struct opts *op);

static void put_elem(FILE *o, const struct gguf_array *a, uint64_t i, const struct opts *op)
{
	switch (a->type) {
	case GGUF_VT_STRING: {
		struct gguf_str s = gguf_arr_str(a, i);
		put_str(o, s.ptr, s.len, 0);
		break;
	}
	case GGUF_VT_ARRAY: put_array(o, gguf_arr_arr(a, i), op); break;
	case GGUF_VT_F32: put_float(o, gguf_arr_float(a, i), true); break;
	case GGUF_VT_F64: put_float(o, gguf_arr_float(a, i), false); break;
	case GGUF_VT_BOOL: fputs(gguf_arr_u8(a, i) ? "true" : "false", o); break;
	case GGUF_VT_U64: fprintf(o, "%" PRIu64, gguf_arr_u64(a, i)); break;
	default: fprintf(o, "%" PRId64, gguf_arr_int(a, i));
	}
}

static void put_array(FILE *o, const struct gguf_array *a, const struct opts *op)
{
	uint64_t show = op->full || a->n <= SHOW_ELEMS ? a->n : SHOW_ELEMS;
	fputc('[', o);
	for (uint64_t i = 0; i < show; i++) {
		if (i)
			fputs(", ", o);
		put_elem(o, a, i, op);
	}
	if (show < a->n)
		fprintf(o, "%s...", show ? ", " : "");
	fputc(']', o);
}

static void put_value(FILE *o, const struct gguf_value *v, const struct opts *op)
{
	switch (v->type) {
	case GGUF_VT_U8: case GGUF_VT_U16: case GGUF_VT_U32: case GGUF_VT_U64: fprintf(o, "%" PRIu64, v->v.u); break;
	case GGUF_VT_I8: case GGUF_VT_I16: case GGUF_VT_I32: case GGUF_VT_I64: fprintf(o, "%" PRId64, v->v.i); break;
	case GGUF_VT_F32: put_float(o, v->v.f, true); break;
	case GGUF_VT_F64: put_float(o, v->v.f, false); break;
	case GGUF_VT_BOOL: fputs(v->v.b ? "true" : "false", o); break;
	case GGUF_VT_STRING: put_str(o, v->v.str.ptr, v->v.str.len, op->json || op->full ? 0 : SHOW_CHARS); break;
	case GGUF_VT_ARRAY: put_array(o, &v->v.arr, op); break;
	}
}

static void shape(char *buf, size_t cap, const struct gguf_tensor *t, bool json)
{
	size_t o = (size_t)snprintf(buf, cap, json ? "[" : "[");
	uint32_t nd = t->n_dims ? t->n_dims : 1;
	for (uint32_t i = 0; i < nd && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", t->ne[i]);
	if (o < cap)
		snprintf(buf + o, cap - o, "]");
}

static void totals(const struct gguf_file *f, uint64_t *params, uint64_t *bytes)
{
	*params = *bytes = 0;
	for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
		*params += gguf_tensor_at(f, i)->n_elements;
		*bytes += gguf_tensor_at(f, i)->n_bytes;
	}
}

static void print_text(FILE *o, const char *path, const struct gguf_file *f, const struct opts *op)
{
	fprintf(o, "%s: GGUF version %u, %" PRIu64 " bytes, alignment %u, data section at offset %" PRIu64 "\n", path,
		gguf_version(f), gguf_file_size(f), gguf_alignment(f), gguf_data_offset(f));
	fprintf(o, "\nmetadata (%" PRIu64 " keys):\n", gguf_kv_count(f));
	size_t w = 0;
	for (uint64_t i = 0; i < gguf_kv_count(f); i++)
		if (gguf_kv_at(f, i)->key_len > w)
			w = (size_t)gguf_kv_at(f, i)->key_len;
	if (w > 48)
		w = 48;
	for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		char ty[48];
		if (kv->val.type == GGUF_VT_ARRAY)
			snprintf(ty, sizeof ty, "%s[%" PRIu64 "]", gguf_vtype_name(kv->val.v.arr.type), kv->val.v.arr.n);
		else
			snprintf(ty, sizeof ty, "%s", gguf_vtype_name(kv->val.type));
		fprintf(o, "  %-*s %-16s ", (int)w, kv->key, ty);
		put_value(o, &kv->val, op);
		fputc('\n', o);
	}
	fprintf(o, "\ntensors (%" PRIu64 "):\n", gguf_tensor_count(f));
	fprintf(o, "  %-40s %-8s %-24s %14s %12s\n", "name", "type", "shape", "offset", "bytes");
	for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		char sh[96];
		shape(sh, sizeof sh, t, false);
		fprintf(o, "  %-40s %-8s %-24s %14" PRIu64 " %12" PRIu64 "\n", t->name, gguf_type_name(t->type), sh,
			t->file_offset, t->n_bytes);
	}
	uint64_t params, bytes;
	totals(f, &params, &bytes);
	fprintf(o, "\ntotals: %" PRIu64 " parameters, %" PRIu64 " bytes of tensor data, %.4f bits per weight\n", params,
		bytes, params ? (double)bytes * 8.0 / (double)params : 0.0);
	struct gguf_model_info mi;
	struct gguf_error err;
	if (gguf_model_check(f, &mi, &err) == GGUF_OK)
		fprintf(o, "model: %s, %u layers, %u wide, %u/%u heads of %u, %u vocabulary, context %u: all tensors present\n",
			mi.arch_name, mi.n_layer, mi.n_embd, mi.n_head, mi.n_head_kv, mi.head_dim_k, mi.n_vocab,
			mi.n_ctx_train);
	else
		fprintf(o, "model: not runnable by orun: %s\n", err.msg);
}

static void print_json(FILE *o, const char *path, const struct gguf_file *f, const struct opts *op)
{
	fputs("{\"file\": ", o);
	put_str(o, path, strlen(path), 0);
	fprintf(o, ", \"version\": %u, \"size\": %" PRIu64 ", \"alignment\": %u, \"data_offset\": %" PRIu64
		   ",\n \"metadata\": [",
		gguf_version(f), gguf_file_size(f), gguf_alignment(f), gguf_data_offset(f));
	for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		fputs(i ? ",\n  {\"key\": " : "\n  {\"key\": ", o);
		put_str(o, kv->key, kv->key_len, 0);
		fprintf(o, ", \"type\": \"%s\"", gguf_vtype_name(kv->val.type));
		if (kv->val.type == GGUF_VT_ARRAY) {
			const struct gguf_array *a = &kv->val.v.arr;
			fprintf(o, ", \"element_type\": \"%s\", \"length\": %" PRIu64 ", \"complete\": %s", gguf_vtype_name(a->type),
				a->n, op->full || a->n <= SHOW_ELEMS ? "true" : "false");
		}
		fputs(", \"value\": ", o);
		put_value(o, &kv->val, op);
		fputc('}', o);
	}
	fputs("],\n \"tensors\": [", o);
	for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		char sh[96];
		shape(sh, sizeof sh, t, true);
		fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", o);
		put_str(o, t->name, strlen(t->name), 0);
		fprintf(o, ", \"type\": \"%s\", \"type_id\": %u, \"shape\": %s, \"offset\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			gguf_type_name(t->type), t->type, sh, t->file_offset, t->n_bytes);
	}
	uint64_t params, bytes;
	totals(f, &params, &bytes);
	fprintf(o, "],\n \"totals\": {\"parameters\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"bits_per_weight\": %.6f},\n",
		params, bytes, params ? (double)bytes * 8.0 / (double)params : 0.0);
	struct gguf_model_info mi;
	struct gguf_error err;
	if (gguf_model_check(f, &mi, &err) == GGUF_OK) {
		fprintf(o, " \"model\": {\"ok\": true, \"architecture\": \"%s\", \"layers\": %u, \"embedding\": %u, "
			   "\"heads\": %u, \"kv_heads\": %u, \"head_dim\": %u, \"vocab\": %u, \"context\": %u}}\n",
			mi.arch_name, mi.n_layer, mi.n_embd, mi.n_head, mi.n_head_kv, mi.head_dim_k, mi.n_vocab, mi.n_ctx_train);
	} else {
		fputs(" \"model\": {\"ok\": false, \"error\": ", o);
		put_str(o, err.msg, strlen(err.msg), 0);
		fputs("}}\n", o);
	}
}

static void usage(FILE *o)
{
	fprintf(o, "Usage: orun gguf FILE [--json] [--full]\n\n"
		   "Validates a GGUF file and prints its version, metadata, tensors (name, type, shape, file offset,\n"
		   "bytes) and totals (parameters, bytes, bits per weight).\n\n"
		   "Flags:\n"
		   "  --json   print one JSON object instead of text\n"
		   "  --full   print every array element and whole strings (default: first %d elements, %d bytes)\n"
		   "  -h, --help\n\n"
		   "An invalid file prints 'FILE: offset N: reason' on stderr and exits 1.\n",
		SHOW_ELEMS, SHOW_CHARS);
}

int cmd_gguf(int argc, char **argv)
{
	struct opts op = {0};
	const char *path = NULL;
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"json", no_argument, NULL, 'j'},
		{"full", no_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	char flag[64];
	int c;
	optind = 1;
	while ((c = argopt_next("orun gguf", argc, argv, "h", longopts, flag, sizeof flag)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		} else if (c == 'j') {
			op.json = true;
		} else if (c == 'f') {
			op.full = true;
		} else { /* '?': argopt_next said why */
			fputc('\n', stderr);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind];
	if (optind + 1 < argc) {
		fprintf(stderr, "orun gguf: one FILE only ('%s' and '%s' given)\n", path, argv[optind + 1]);
		return 2;
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	struct gguf_error err;
	struct gguf_file *f = gguf_open(path, &err);
	if (!f) {
		fprintf(stderr, "%s: offset %" PRIu64 ": %s\n", path, err.offset, err.msg);
		return 1;
	}
	if (op.json)
		print_json(stdout, path, f, &op);
	else
		print_text(stdout, path, f, &op);
	gguf_close(f);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "orun gguf: write error on standard output\n");
		return 1;
	}
	return 0;
}
