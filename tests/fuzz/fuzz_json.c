/* tests/fuzz/fuzz_json.c — libFuzzer target for base/json: parse (data, size); an error must carry a message
 * and an offset inside the input; a document must have consistent spans and counts, re-encode (document
 * order and sorted as Go's maps) into JSON that parses to the same tree, and survive the Go re-encoding.
 * Built as a real fuzzer with --enable-fuzzing and replayed over its corpus in `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/jsonutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* spans and counts agree with the layout: returns the node after v's subtree, or NULL when broken */
static const struct ob_json *check_tree(const struct ob_json *v)
{
	if (v->span < 1)
		return NULL;
	if (v->type != OB_JSON_ARRAY && v->type != OB_JSON_OBJECT)
		return v->span == 1 && v->count == 0 ? v + 1 : NULL;
	const struct ob_json *k = v + 1, *end = v + v->span;
	uint32_t n = 0;
	while (k < end) {
		if (v->type == OB_JSON_OBJECT) {
			if (k->type != OB_JSON_STRING || k->span != 1)
				return NULL;
			k++;
		}
		k = check_tree(k);
		if (!k || k > end)
			return NULL;
		n++;
	}
	return n == v->count ? end : NULL;
}

static bool same(const struct ob_json *a, const struct ob_json *b)
{
	if (a->type != b->type || a->span != b->span || a->count != b->count)
		return false;
	for (uint32_t i = 0; i < a->span; i++) {
		const struct ob_json *x = a + i, *y = b + i;
		if (x->type != y->type || x->boolean != y->boolean || x->len != y->len)
			return false;
		if ((x->type == OB_JSON_STRING || x->type == OB_JSON_NUMBER) && memcmp(x->str, y->str, x->len) != 0)
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ob_json_error err;
	struct ob_json_doc *d = ob_json_parse((const char *)data, size, &err);
	if (!d) {
		if (!err.message[0] || !memchr(err.message, 0, sizeof err.message) || err.offset > size)
			abort();
		return 0;
	}
	const struct ob_json *root = ob_json_root(d);
	if (check_tree(root) != root + root->span)
		abort();
	for (int sorted = 0; sorted < 2; sorted++) {
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_value(&w, root, sorted);
		size_t n;
		char *out = ob_jw_take(&w, &n);
		ob_jw_free(&w);
		if (!out)
			continue; /* out of memory */
		struct ob_json_doc *d2 = ob_json_parse(out, n, &err);
		if (!d2)
			abort(); /* the writer wrote JSON the reader refuses */
		if (!sorted && !same(root, ob_json_root(d2)))
			abort();
		ob_json_free(d2);
		free(out);
	}
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	(void)ob_jw_go_value(&w, root);
	ob_jw_free(&w);
	ob_json_free(d);
	return 0;
}
