/* tests/fuzz/fuzz_schema.c — libFuzzer target for the JSON schema converter (runner/grammar/json_schema.c):
 * input whose first byte is even is schema text as it is; odd, the bytes drive a generator of random schemas
 * (types, bounds, patterns made of regex pieces, objects, arrays, anyOf/allOf, $ref into $defs, unsupported
 * keywords). Each schema must convert or be refused cleanly (RN_ERR_INVALID_ARG or RN_ERR_NOMEM, a message
 * starting "json schema: "), and every grammar produced must be within the size limit and compile with
 * rn_grammar_compile, with a matcher that survives the input's bytes. Built as a real fuzzer with
 * --enable-fuzzing and replayed over its corpus in `make check`.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/grammar/grammar.h"
#include "runner/grammar/json_schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct gen {
	const uint8_t *p;
	size_t n, i;
	struct ob_buf out;
};

static unsigned take(struct gen *g, unsigned mod)
{
	return g->i < g->n ? g->p[g->i++] % mod : 0;
}

static const char *const regex_pieces[] = {
	"a", "[a-z]", "\\d", ".", "(", ")", "|", "*", "+", "?", "{2,3}", "{0}", "^", "$", "\\", "[^x]", "(?:", "\\w",
	"\"", "\xc3\xa9", "\\s", "[", "]", "-", "{", "}", "(?=", "\\1", "\\u00e9", "\\.", "[\\d\\-]", "{1,}",
};

static void gen_pattern(struct gen *g)
{
	ob_buf_puts(&g->out, "\"");
	unsigned n = take(g, 8);
	for (unsigned k = 0; k < n; k++) {
		const char *piece = regex_pieces[take(g, sizeof regex_pieces / sizeof regex_pieces[0])];
		for (const char *c = piece; *c; c++) {
			if (*c == '"' || *c == '\\')
				ob_buf_putc(&g->out, '\\');
			ob_buf_putc(&g->out, *c);
		}
	}
	ob_buf_puts(&g->out, "\"");
}

static void gen_bound(struct gen *g, const char *kw)
{
	static const char *const v[] = {"0", "1", "-1", "9", "10", "-10", "99", "100", "-1234", "0.5", "1e20", "7"};
	ob_buf_printf(&g->out, ",\"%s\":%s", kw, v[take(g, sizeof v / sizeof v[0])]);
}

static void gen_schema(struct gen *g, int depth)
{
	static const char *const unsupported[] = {"not", "if", "patternProperties", "multipleOf", "uniqueItems",
						  "minProperties", "maxProperties", "contains"};
	unsigned kind = depth > 5 ? take(g, 6) : take(g, 15);
	switch (kind) {
	case 0:
		ob_buf_puts(&g->out, "{\"type\":\"string\"");
		if (take(g, 2))
			gen_bound(g, "minLength");
		if (take(g, 2))
			gen_bound(g, "maxLength");
		if (take(g, 3) == 0) {
			ob_buf_puts(&g->out, ",\"pattern\":");
			gen_pattern(g);
		}
		if (take(g, 4) == 0) {
			static const char *const f[] = {"date", "time", "date-time", "uuid", "email"};
			ob_buf_printf(&g->out, ",\"format\":\"%s\"", f[take(g, 5)]);
		}
		ob_buf_putc(&g->out, '}');
		return;
	case 1:
	case 2:
		ob_buf_printf(&g->out, "{\"type\":\"%s\"", kind == 1 ? "integer" : "number");
		if (take(g, 2))
			gen_bound(g, take(g, 2) ? "minimum" : "exclusiveMinimum");
		if (take(g, 2))
			gen_bound(g, take(g, 2) ? "maximum" : "exclusiveMaximum");
		ob_buf_putc(&g->out, '}');
		return;
	case 3:
		ob_buf_puts(&g->out, take(g, 2) ? "{\"type\":\"boolean\"}" : "{\"type\":\"null\"}");
		return;
	case 4:
		ob_buf_puts(&g->out, take(g, 2) ? "{\"enum\":[\"a\",1,null,{\"x\":[2]}]}" : "{\"type\":\"string\",\"enum\":[\"a\",\"b\\\"c\"]}");
		return;
	case 5:
		ob_buf_puts(&g->out, take(g, 2) ? "true" : "{\"const\":\"c\"}");
		return;
	case 6:
	case 7: {
		unsigned n = take(g, 4);
		ob_buf_puts(&g->out, "{\"type\":\"object\",\"properties\":{");
		for (unsigned k = 0; k < n; k++) {
			ob_buf_printf(&g->out, "%s\"p%u%s\":", k ? "," : "", k, take(g, 4) == 0 ? "\xc3\xa9" : "");
			gen_schema(g, depth + 1);
		}
		ob_buf_puts(&g->out, "}");
		if (n && take(g, 2))
			ob_buf_puts(&g->out, ",\"required\":[\"p0\",\"q\"]");
		unsigned a = take(g, 4);
		if (a == 1)
			ob_buf_puts(&g->out, ",\"additionalProperties\":false");
		else if (a == 2)
			ob_buf_puts(&g->out, ",\"additionalProperties\":true");
		else if (a == 3) {
			ob_buf_puts(&g->out, ",\"additionalProperties\":");
			gen_schema(g, depth + 1);
		}
		ob_buf_putc(&g->out, '}');
		return;
	}
	case 8:
		ob_buf_puts(&g->out, "{\"type\":\"array\",\"items\":");
		gen_schema(g, depth + 1);
		if (take(g, 2))
			gen_bound(g, "minItems");
		if (take(g, 2))
			gen_bound(g, "maxItems");
		if (take(g, 3) == 0) {
			ob_buf_puts(&g->out, ",\"prefixItems\":[");
			gen_schema(g, depth + 1);
			ob_buf_puts(&g->out, "]");
		}
		ob_buf_putc(&g->out, '}');
		return;
	case 9:
	case 10:
		ob_buf_puts(&g->out, kind == 9 ? "{\"anyOf\":[" : "{\"allOf\":[");
		gen_schema(g, depth + 1);
		ob_buf_puts(&g->out, ",");
		gen_schema(g, depth + 1);
		ob_buf_puts(&g->out, "]}");
		return;
	case 11:
		ob_buf_printf(&g->out, "{\"$ref\":\"#/$defs/d%u\"}", take(g, 4));
		return;
	case 12:
		ob_buf_printf(&g->out, "{\"type\":[\"string\",\"null\"%s],\"maxLength\":3}", take(g, 2) ? ",\"integer\"" : "");
		return;
	case 13:
		ob_buf_printf(&g->out, "{\"%s\":", unsupported[take(g, sizeof unsupported / sizeof unsupported[0])]);
		gen_schema(g, depth + 1);
		ob_buf_putc(&g->out, '}');
		return;
	default:
		ob_buf_puts(&g->out, "{\"nullable\":true,\"type\":\"string\"}");
		return;
	}
}

static void check_schema(const char *text, size_t len, const uint8_t *data, size_t size)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(text, len, &je);
	if (!d)
		return;
	struct rn_error err = {0};
	char *gbnf = rn_json_schema_to_gbnf(ob_json_root(d), &err);
	if (!gbnf) {
		if ((err.code != RN_ERR_INVALID_ARG && err.code != RN_ERR_NOMEM) || strncmp(err.msg, "json schema: ", 13) != 0) {
			fprintf(stderr, "refusal without a proper error: code %d \"%s\"\n", err.code, err.msg);
			abort();
		}
		ob_json_free(d);
		return;
	}
	size_t glen = strlen(gbnf);
	if (glen > (1u << 20)) {
		fprintf(stderr, "grammar of %zu bytes\n", glen);
		abort();
	}
	struct rn_grammar *g = rn_grammar_compile(gbnf, glen, NULL, &err);
	if (!g) {
		fprintf(stderr, "the converter's grammar does not compile: %s\nschema: %.*s\ngrammar:\n%s\n", err.msg, (int)len,
			text, gbnf);
		abort();
	}
	struct rn_grammar_state *st = rn_grammar_state_new(g, NULL, &err);
	if (st) {
		(void)rn_grammar_state_accept_bytes(st, (const char *)data, size > 64 ? 64 : size);
		(void)rn_grammar_state_can_end(st, NULL);
		rn_grammar_state_free(st);
	}
	rn_grammar_free(g);
	free(gbnf);
	ob_json_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (!(data[0] & 1)) {
		check_schema((const char *)data + 1, size - 1, data + 1, size - 1);
		return 0;
	}
	struct gen g = {.p = data + 1, .n = size - 1};
	ob_buf_init(&g.out, 1u << 20);
	ob_buf_puts(&g.out, "{\"$defs\":{");
	for (unsigned k = 0; k < 3; k++) {
		ob_buf_printf(&g.out, "%s\"d%u\":", k ? "," : "", k);
		gen_schema(&g, 1);
	}
	ob_buf_puts(&g.out, "},\"allOf\":[");
	gen_schema(&g, 0);
	ob_buf_puts(&g.out, "]}");
	if (!g.out.failed)
		check_schema(g.out.p, g.out.len, data, size);
	ob_buf_free(&g.out);
	return 0;
}
