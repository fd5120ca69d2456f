/* modelfile/name.c — model name parsing, validation and display (types/model/name.go semantics).
 *
 * Parsing never fails: like Ollama, it always produces a Name and validity is a separate question, so that
 * error messages can quote what the user wrote. Digests ("@sha256:…") are not parsed, as in Ollama's HEAD.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/gofmt.h"
#include "modelfile/name.h"

enum kind { K_HOST, K_NAMESPACE, K_MODEL, K_TAG };

/* Copies s[0..n) into dst (cap bytes incl. NUL); flags overlong names. */
static void set_part(struct mf_name *nm, char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap) {
		nm->overlong = true;
		n = cap - 1;
	}
	memcpy(dst, s, n);
	dst[n] = 0;
}

/* cutPromised on s[0..*len) at the last sep: the part after goes to after[0..alen); *len becomes the length
 * of the part before. Empty parts read as MISSING. Returns false when sep is absent. */
static bool cut_last(const char *s, size_t *len, char sep, const char **after, size_t *alen)
{
	for (size_t i = *len; i-- > 0;)
		if (s[i] == sep) {
			*after = s + i + 1;
			*alen = *len - i - 1;
			*len = i;
			return true;
		}
	return false;
}

#define SET(field, p, n)                                                                                 \
	((n) == 0 ? set_part(nm, nm->field, sizeof nm->field, MF_NAME_MISSING, strlen(MF_NAME_MISSING))  \
		  : set_part(nm, nm->field, sizeof nm->field, (p), (n)))

void mf_name_parse_bare(const char *s, struct mf_name *nm)
{
	memset(nm, 0, sizeof *nm);
	size_t len = strlen(s);
	const char *last_colon = strrchr(s, ':'), *last_slash = strrchr(s, '/');
	const char *a = NULL;
	size_t alen = 0;
	if (last_colon && (!last_slash || last_colon > last_slash)) {
		cut_last(s, &len, ':', &a, &alen);
		SET(tag, a, alen);
	}
	/* an empty part before the tag was promised too: the model is then MISSING */
	bool before_missing = last_colon && (!last_slash || last_colon > last_slash) && len == 0;
	if (!cut_last(s, &len, '/', &a, &alen)) {
		if (before_missing)
			SET(model, "", 0);
		else
			set_part(nm, nm->model, sizeof nm->model, s, len);
		return;
	}
	SET(model, a, alen);
	if (len == 0) { /* "/model": namespace promised but empty */
		SET(ns, "", 0);
		return;
	}
	if (!cut_last(s, &len, '/', &a, &alen)) {
		set_part(nm, nm->ns, sizeof nm->ns, s, len);
		return;
	}
	SET(ns, a, alen);
	const char *h = s;
	size_t hl = len;
	if (hl == 0) {
		h = MF_NAME_MISSING;
		hl = strlen(MF_NAME_MISSING);
	}
	/* scheme://host */
	for (size_t i = 0; i + 3 <= hl; i++)
		if (memcmp(h + i, "://", 3) == 0) {
			snprintf(nm->scheme, sizeof nm->scheme, "%.*s", (int)i, h);
			set_part(nm, nm->host, sizeof nm->host, h + i + 3, hl - i - 3);
			return;
		}
	set_part(nm, nm->host, sizeof nm->host, h, hl);
}

void mf_name_parse(const char *s, struct mf_name *n)
{
	mf_name_parse_n(s, strlen(s), n);
}

void mf_name_parse_n(const char *s, size_t len, struct mf_name *n)
{
	bool nul = memchr(s, 0, len) != NULL;
	mf_name_parse_bare(s, n);
	n->nul = nul;
	if (!n->host[0])
		strcpy(n->host, MF_NAME_DEFAULT_HOST);
	if (!n->ns[0])
		strcpy(n->ns, MF_NAME_DEFAULT_NAMESPACE);
	if (!n->tag[0])
		strcpy(n->tag, MF_NAME_DEFAULT_TAG);
	if (!n->scheme[0])
		strcpy(n->scheme, "https");
}

static bool alnum_(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static bool valid_part(enum kind k, const char *s)
{
	size_t n = strlen(s), max = k == K_HOST ? MF_NAME_HOST_MAX : MF_NAME_PART_MAX;
	if (n < 1 || n > max)
		return false;
	if (!alnum_(s[0]))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (c == '_' || c == '-' || alnum_(c))
			continue;
		if (c == '.' && k != K_NAMESPACE)
			continue;
		if (c == ':' && k == K_HOST)
			continue;
		return false;
	}
	return true;
}

bool mf_name_is_valid(const struct mf_name *n)
{
	return !n->overlong && !n->nul && valid_part(K_HOST, n->host) && valid_part(K_NAMESPACE, n->ns) &&
	       valid_part(K_MODEL, n->model) && valid_part(K_TAG, n->tag);
}

bool mf_name_valid_namespace(const char *s)
{
	return valid_part(K_NAMESPACE, s);
}

bool mf_name_from_filepath(const char *rel, struct mf_name *n)
{
	memset(n, 0, sizeof *n);
	const char *p[4];
	size_t l[4];
	const char *s = rel;
	for (int i = 0; i < 4; i++) {
		const char *e = strchr(s, '/');
		if (i < 3 && !e)
			return false;
		if (i == 3 && e)
			return false;
		p[i] = s;
		l[i] = e ? (size_t)(e - s) : strlen(s);
		s = e ? e + 1 : s + l[i];
	}
	set_part(n, n->host, sizeof n->host, p[0], l[0]);
	set_part(n, n->ns, sizeof n->ns, p[1], l[1]);
	set_part(n, n->model, sizeof n->model, p[2], l[2]);
	set_part(n, n->tag, sizeof n->tag, p[3], l[3]);
	if (!mf_name_is_valid(n)) {
		memset(n, 0, sizeof *n);
		return false;
	}
	return true;
}

char *mf_name_string(const struct mf_name *n, char *buf)
{
	char *o = buf;
	if (n->host[0])
		o += sprintf(o, "%s/", n->host);
	if (n->ns[0])
		o += sprintf(o, "%s/", n->ns);
	o += sprintf(o, "%s", n->model);
	if (n->tag[0])
		sprintf(o, ":%s", n->tag);
	return buf;
}

char *mf_name_display(const struct mf_name *n, char *buf)
{
	char *o = buf;
	if (strcasecmp(n->host, MF_NAME_DEFAULT_HOST) != 0)
		o += sprintf(o, "%s/%s/", n->host, n->ns);
	else if (strcasecmp(n->ns, MF_NAME_DEFAULT_NAMESPACE) != 0)
		o += sprintf(o, "%s/", n->ns);
	sprintf(o, "%s:%s", n->model, n->tag);
	return buf;
}

char *mf_name_filepath(const struct mf_name *n, char *buf)
{
	if (!mf_name_is_valid(n)) {
		buf[0] = 0;
		return buf;
	}
	sprintf(buf, "%s/%s/%s/%s", n->host, n->ns, n->model, n->tag);
	return buf;
}

bool mf_name_equal_fold(const struct mf_name *a, const struct mf_name *b)
{
	return strcasecmp(a->host, b->host) == 0 && strcasecmp(a->ns, b->ns) == 0 &&
	       strcasecmp(a->model, b->model) == 0 && strcasecmp(a->tag, b->tag) == 0;
}

char *mf_name_quote(const char *s, size_t n, char out[MF_NAME_QUOTE_MAX])
{
	/* a quoted byte takes at most 4 bytes (\xNN): quote only what fits, so the text stays whole */
	size_t fit = (MF_NAME_QUOTE_MAX - 3) / 4;
	struct ob_buf b;
	ob_buf_init(&b, MF_NAME_QUOTE_MAX - 1);
	if (!ob_go_quote(&b, s, n < fit ? n : fit) || !b.p) {
		ob_buf_free(&b);
		snprintf(out, MF_NAME_QUOTE_MAX, "\"\"");
		return out;
	}
	snprintf(out, MF_NAME_QUOTE_MAX, "%s", b.p);
	ob_buf_free(&b);
	return out;
}
