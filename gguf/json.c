/* gguf/json.c — the private JSON layer (gguf/json.h): jsmn in strict mode with a two-pass token count, plus
 * walking helpers and a string unescaper that handles \uXXXX surrogate pairs. Only what the safetensors
 * reader and the importer need.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define JSMN_STATIC
#define JSMN_STRICT
#include <jsmn.h>

#include "gguf/json.h"

#define GG_JSON_MAX_DEPTH 256

/* Index after the well-formed value at i, or -1: object keys are strings followed by a value, counts fit. */
static int check_tree(const struct gg_json *j, int i, int depth)
{
	if (i < 0 || i >= j->nt || depth > GG_JSON_MAX_DEPTH)
		return -1;
	const struct gg_jtok *t = &j->t[i];
	if (t->type == GG_J_STRING || t->type == GG_J_PRIMITIVE)
		return i + 1;
	if (t->type != GG_J_OBJECT && t->type != GG_J_ARRAY)
		return -1;
	int k = i + 1;
	for (int m = 0; m < t->size; m++) {
		if (t->type == GG_J_OBJECT) {
			if (k >= j->nt || j->t[k].type != GG_J_STRING)
				return -1;
			k++;
		}
		k = check_tree(j, k, depth + 1);
		if (k < 0)
			return -1;
	}
	return k;
}

int gg_json_parse(struct gg_json *j, const char *s, size_t n, size_t *where, const char **why)
{
	memset(j, 0, sizeof *j);
	*where = 0;
	if (n > GG_JSON_MAX_BYTES) {
		*why = "document larger than the JSON size limit";
		return -1;
	}
	jsmn_parser p;
	jsmn_init(&p);
	int cnt = jsmn_parse(&p, s, n, NULL, 0);
	if (cnt < 0 || cnt > (int)GG_JSON_MAX_TOKENS) {
		*where = p.pos;
		*why = cnt == JSMN_ERROR_PART ? "unexpected end of the JSON document"
		       : cnt < 0         ? "invalid JSON"
					 : "too many JSON tokens";
		return -1;
	}
	if (cnt == 0) {
		*why = "empty JSON document";
		return -1;
	}
	jsmntok_t *t = malloc((size_t)cnt * sizeof *t);
	j->t = malloc((size_t)cnt * sizeof *j->t);
	if (!t || !j->t) {
		free(t);
		free(j->t);
		j->t = NULL;
		*why = "out of memory";
		return -1;
	}
	jsmn_init(&p);
	int got = jsmn_parse(&p, s, n, t, (unsigned)cnt);
	if (got != cnt) {
		free(t);
		gg_json_free(j);
		*where = p.pos;
		*why = "invalid JSON";
		return -1;
	}
	for (int i = 0; i < cnt; i++)
		j->t[i] = (struct gg_jtok){(int)t[i].type, t[i].start, t[i].end, t[i].size};
	free(t);
	/* jsmn is lenient about some malformed objects (a key without a value): check the tree's shape so the
	 * walking helpers can trust it, and that the document is one value followed by whitespace only */
	j->nt = cnt;
	int end = check_tree(j, 0, 0);
	if (end < 0) {
		free(j->t);
		j->t = NULL;
		j->nt = 0;
		*why = "invalid JSON structure (object key without value, or nested deeper than 256 levels)";
		return -1;
	}
	for (size_t k = (size_t)j->t[0].end + (j->t[0].type == GG_J_STRING); k < n || end != cnt; k++)
		if (k >= n || (s[k] != ' ' && s[k] != '\n' && s[k] != '\r' && s[k] != '\t')) {
			free(j->t);
			j->t = NULL;
			*where = k < n ? k : n;
			*why = "trailing characters after the JSON value";
			return -1;
		}
	j->s = s;
	j->n = n;
	j->nt = cnt;
	return 0;
}

void gg_json_free(struct gg_json *j)
{
	free(j->t);
	j->t = NULL;
	j->nt = 0;
}

int gg_json_skip(const struct gg_json *j, int i)
{
	/* iterative: count the tokens still owed by the containers entered */
	int owed = 1;
	while (owed > 0 && i < j->nt) {
		const struct gg_jtok *t = &j->t[i];
		owed--;
		if (t->type == GG_J_OBJECT)
			owed += 2 * t->size;
		else if (t->type == GG_J_ARRAY)
			owed += t->size;
		i++;
	}
	return i;
}

static int hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex4(const char *p, const char *e, uint32_t *v)
{
	if (e - p < 4)
		return -1;
	*v = 0;
	for (int k = 0; k < 4; k++) {
		int h = hexv(p[k]);
		if (h < 0)
			return -1;
		*v = (*v << 4) | (uint32_t)h;
	}
	return 0;
}

char *gg_json_str(const struct gg_json *j, int i, size_t *len)
{
	if (i < 0 || i >= j->nt || j->t[i].type != GG_J_STRING)
		return NULL;
	const char *p = j->s + j->t[i].start, *e = j->s + j->t[i].end;
	char *out = malloc((size_t)(e - p) + 1), *o = out;
	if (!out)
		return NULL;
	while (p < e) {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		p++;
		if (p >= e)
			goto bad;
		char c = *p++;
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u': {
			uint32_t cp, lo;
			if (hex4(p, e, &cp))
				goto bad;
			p += 4;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, e, &lo) || lo < 0xdc00 || lo > 0xdfff)
					goto bad;
				p += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp <= 0xdfff) {
				goto bad;
			}
			/* a \u escape never yields more bytes than its 6 (or 12) source characters */
			if (cp < 0x80) {
				*o++ = (char)cp;
			} else if (cp < 0x800) {
				*o++ = (char)(0xc0 | (cp >> 6));
				*o++ = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				*o++ = (char)(0xe0 | (cp >> 12));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*o++ = (char)(0x80 | (cp & 0x3f));
			} else {
				*o++ = (char)(0xf0 | (cp >> 18));
				*o++ = (char)(0x80 | ((cp >> 12) & 0x3f));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
				*o++ = (char)(0x80 | (cp & 0x3f));
			}
			break;
		}
		default: goto bad;
		}
	}
	*o = 0;
	if (len)
		*len = (size_t)(o - out);
	return out;
bad:
	free(out);
	return NULL;
}

bool gg_json_streq(const struct gg_json *j, int i, const char *z)
{
	if (i < 0 || i >= j->nt || j->t[i].type != GG_J_STRING)
		return false;
	size_t n = (size_t)(j->t[i].end - j->t[i].start), zl = strlen(z);
	const char *p = j->s + j->t[i].start;
	if (!memchr(p, '\\', n))
		return n == zl && memcmp(p, z, n) == 0;
	size_t l;
	char *u = gg_json_str(j, i, &l);
	bool eq = u && l == zl && memcmp(u, z, l) == 0;
	free(u);
	return eq;
}

int gg_json_get(const struct gg_json *j, int obj, const char *key)
{
	if (obj < 0 || obj >= j->nt || j->t[obj].type != GG_J_OBJECT)
		return -1;
	int i = obj + 1;
	for (int k = 0; k < j->t[obj].size && i < j->nt; k++) {
		if (gg_json_streq(j, i, key))
			return i + 1 < j->nt ? i + 1 : -1;
		i = gg_json_skip(j, i + 1);
	}
	return -1;
}

int gg_json_at(const struct gg_json *j, int arr, int k)
{
	if (arr < 0 || arr >= j->nt || j->t[arr].type != GG_J_ARRAY || k < 0 || k >= j->t[arr].size)
		return -1;
	int i = arr + 1;
	for (int m = 0; m < k; m++)
		i = gg_json_skip(j, i);
	return i < j->nt ? i : -1;
}

int gg_json_int(const struct gg_json *j, int i, int64_t lo, int64_t hi, int64_t *out)
{
	if (i < 0 || i >= j->nt || j->t[i].type != GG_J_PRIMITIVE)
		return -1;
	const char *p = j->s + j->t[i].start, *e = j->s + j->t[i].end;
	bool neg = false;
	if (p < e && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= e)
		return -1;
	uint64_t v = 0;
	for (; p < e; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return -1;
	int64_t s = neg ? -(int64_t)v : (int64_t)v;
	if (s < lo || s > hi)
		return -1;
	*out = s;
	return 0;
}

int gg_json_num(const struct gg_json *j, int i, double *out)
{
	if (i < 0 || i >= j->nt || j->t[i].type != GG_J_PRIMITIVE)
		return -1;
	size_t n = (size_t)(j->t[i].end - j->t[i].start);
	char buf[64];
	const char *p = j->s + j->t[i].start;
	if (n == 0 || n >= sizeof buf || !((p[0] >= '0' && p[0] <= '9') || p[0] == '-'))
		return -1;
	memcpy(buf, p, n);
	buf[n] = 0;
	char *end;
	errno = 0;
	double d = strtod(buf, &end);
	if (*end)
		return -1;
	*out = d;
	return 0;
}

int gg_json_bool(const struct gg_json *j, int i, bool *out)
{
	if (i < 0 || i >= j->nt || j->t[i].type != GG_J_PRIMITIVE)
		return -1;
	const char *p = j->s + j->t[i].start;
	size_t n = (size_t)(j->t[i].end - j->t[i].start);
	if (n == 4 && memcmp(p, "true", 4) == 0)
		*out = true;
	else if (n == 5 && memcmp(p, "false", 5) == 0)
		*out = false;
	else
		return -1;
	return 0;
}

bool gg_json_is_null(const struct gg_json *j, int i)
{
	return i >= 0 && i < j->nt && j->t[i].type == GG_J_PRIMITIVE && j->t[i].end - j->t[i].start == 4 &&
	       memcmp(j->s + j->t[i].start, "null", 4) == 0;
}
