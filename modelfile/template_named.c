/* modelfile/template_named.c — Ollama's template.Named(): pick the bundled template whose reference Jinja
 * template (index.json) is closest to a GGUF's tokenizer.chat_template.
 *
 * Distance is Levenshtein over runes, as Ollama computes it; only distances below 100 count, so a banded
 * computation bounded by the best distance so far gives the same answer as the full one at a fraction of
 * the cost. The corpus is embedded at build time and decoded once (pthread_once).
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/jsonutil.h"
#include "base/utf8.h"
#include "modelfile/template.h"
#include "modelfile/template_corpus.h"

#define NAMED_MAX_DISTANCE 100 /* Ollama: a match needs a distance below 100 */

struct index_entry {
	uint32_t *runes; /* the Jinja template as runes */
	size_t n;
	char *jinja;     /* the Jinja template as text (NUL-terminated) */
	size_t jinja_len;
	size_t named;    /* index into named[] */
};

static struct {
	struct mf_tpl_named *named; /* one per corpus file */
	size_t nnamed;
	struct index_entry *index;
	size_t nindex;
	bool ok;
} corpus;

static pthread_once_t corpus_once = PTHREAD_ONCE_INIT;

/* UTF-8 → runes as Go's []rune(s) converts (an invalid byte becomes U+FFFD). */
static uint32_t *to_runes(const char *s, size_t n, size_t *out_n)
{
	uint32_t *r = malloc((n ? n : 1) * sizeof *r);
	if (!r)
		return NULL;
	size_t k = 0, w;
	for (size_t i = 0; i < n; i += w)
		r[k++] = ob_utf8_decode((const unsigned char *)s + i, n - i, &w);
	*out_n = k;
	return r;
}

static void corpus_load(void)
{
	struct ob_json_error jerr;
	corpus.named = calloc(tpl_corpus_nfiles, sizeof *corpus.named);
	if (!corpus.named)
		return;
	for (size_t i = 0; i < tpl_corpus_nfiles; i++) {
		const struct tpl_corpus_file *f = &tpl_corpus_files[i];
		struct mf_tpl_named *t = &corpus.named[i];
		t->name = f->name;
		/* normalise CRLF to LF, as Ollama does when loading */
		char *text = malloc(f->gotmpl_len + 1);
		if (!text)
			return;
		size_t k = 0;
		for (size_t j = 0; j < f->gotmpl_len; j++) {
			if (f->gotmpl[j] == '\r' && j + 1 < f->gotmpl_len && f->gotmpl[j + 1] == '\n')
				continue;
			text[k++] = f->gotmpl[j];
		}
		text[k] = 0;
		t->text = text;
		t->text_len = k;
		corpus.nnamed++;
		if (!f->params)
			continue;
		struct ob_json_doc *doc = ob_json_parse(f->params, f->params_len, &jerr);
		if (!doc)
			return;
		t->has_params = true;
		const struct ob_json *stop = ob_json_get(ob_json_root(doc), "stop");
		if (stop && stop->type == OB_JSON_ARRAY && stop->count) {
			char **list = calloc(stop->count, sizeof *list);
			if (!list) {
				ob_json_free(doc);
				return;
			}
			size_t n = 0;
			OB_JSON_FOREACH(e, stop)
			{
				if (e->type != OB_JSON_STRING)
					continue;
				list[n] = malloc(e->len + 1);
				if (!list[n]) {
					ob_json_free(doc);
					return;
				}
				memcpy(list[n], e->str, e->len + 1);
				n++;
			}
			t->stop = (const char *const *)list;
			t->n_stop = n;
		}
		ob_json_free(doc);
	}
	struct ob_json_doc *doc = ob_json_parse(tpl_corpus_index, tpl_corpus_index_len, &jerr);
	if (!doc)
		return;
	const struct ob_json *root = ob_json_root(doc);
	corpus.index = calloc(root->count ? root->count : 1, sizeof *corpus.index);
	if (!corpus.index) {
		ob_json_free(doc);
		return;
	}
	OB_JSON_FOREACH(e, root)
	{
		const struct ob_json *name = ob_json_get(e, "name");
		const struct ob_json *tmpl = ob_json_get(e, "template");
		if (!name || !tmpl || name->type != OB_JSON_STRING || tmpl->type != OB_JSON_STRING)
			continue;
		size_t which = SIZE_MAX;
		for (size_t i = 0; i < corpus.nnamed; i++)
			if (strcmp(corpus.named[i].name, name->str) == 0)
				which = i;
		if (which == SIZE_MAX)
			continue; /* Ollama would fail to load; the embedded data never does this */
		struct index_entry *ie = &corpus.index[corpus.nindex];
		ie->runes = to_runes(tmpl->str, tmpl->len, &ie->n);
		ie->jinja = malloc(tmpl->len + 1);
		if (ie->jinja) {
			memcpy(ie->jinja, tmpl->str, tmpl->len + 1);
			ie->jinja_len = tmpl->len;
		}
		if (!ie->runes || !ie->jinja) {
			ob_json_free(doc);
			return;
		}
		ie->named = which;
		corpus.nindex++;
	}
	ob_json_free(doc);
	corpus.ok = true;
}

/* Levenshtein distance of a and b if it is below `bound`, else `bound`. A cell (i, j) with |i - j| >= bound
 * cannot hold a smaller distance, so only the band |i - j| < bound is computed; cells outside it count as
 * `bound`, and every value is capped there. */
static size_t distance_below(const uint32_t *a, size_t n, const uint32_t *b, size_t m, size_t bound)
{
	if (bound == 0 || n >= m + bound || m >= n + bound)
		return bound;
	size_t *prev = malloc((m + 1) * sizeof *prev), *cur = malloc((m + 1) * sizeof *cur);
	if (!prev || !cur) {
		free(prev);
		free(cur);
		return bound;
	}
	for (size_t j = 0; j <= m; j++)
		prev[j] = j < bound ? j : bound;
	for (size_t i = 1; i <= n; i++) {
		size_t lo = i >= bound ? i - bound + 1 : 0;
		size_t hi = i + bound - 1 < m ? i + bound - 1 : m;
		size_t j = lo, row_min = bound;
		if (lo == 0) {
			cur[0] = i;
			row_min = i;
			j = 1;
		} else
			cur[lo - 1] = bound;
		for (; j <= hi; j++) {
			size_t v = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < v)
				v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (v > bound)
				v = bound;
			cur[j] = v;
			if (v < row_min)
				row_min = v;
		}
		if (hi < m)
			cur[hi + 1] = bound;
		size_t *t = prev;
		prev = cur;
		cur = t;
		if (row_min >= bound) {
			free(prev);
			free(cur);
			return bound;
		}
	}
	size_t d = prev[m] < bound ? prev[m] : bound;
	free(prev);
	free(cur);
	return d;
}

const struct mf_tpl_named *mf_tpl_named_match(const char *jinja, size_t len)
{
	pthread_once(&corpus_once, corpus_load);
	if (!corpus.ok)
		return NULL;
	size_t n;
	uint32_t *r = to_runes(jinja ? jinja : "", jinja ? len : 0, &n);
	if (!r)
		return NULL;
	size_t best = NAMED_MAX_DISTANCE;
	const struct mf_tpl_named *pick = NULL;
	for (size_t i = 0; i < corpus.nindex && best > 0; i++) {
		size_t d = distance_below(r, n, corpus.index[i].runes, corpus.index[i].n, best);
		if (d < best) {
			best = d;
			pick = &corpus.named[corpus.index[i].named];
		}
	}
	free(r);
	return pick;
}

char *mf_tpl_named_params_json(const struct mf_tpl_named *t, size_t *len)
{
	if (!t || !t->has_params)
		return NULL;
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "stop");
	if (!t->stop)
		ob_jw_null(&w);
	else {
		ob_jw_arr(&w);
		for (size_t i = 0; i < t->n_stop; i++)
			ob_jw_string(&w, t->stop[i]);
		ob_jw_arr_end(&w);
	}
	ob_jw_obj_end(&w);
	return ob_jw_take_line(&w, len); /* json.Encoder ends each value with a newline */
}

size_t mf_tpl_named_count(void)
{
	pthread_once(&corpus_once, corpus_load);
	return corpus.ok ? corpus.nnamed : 0;
}

const struct mf_tpl_named *mf_tpl_named_at(size_t i)
{
	pthread_once(&corpus_once, corpus_load);
	return corpus.ok && i < corpus.nnamed ? &corpus.named[i] : NULL;
}

const char *mf_tpl_named_jinja(const struct mf_tpl_named *t, size_t *len)
{
	pthread_once(&corpus_once, corpus_load);
	for (size_t i = 0; t && corpus.ok && i < corpus.nindex; i++)
		if (&corpus.named[corpus.index[i].named] == t) {
			*len = corpus.index[i].jinja_len;
			return corpus.index[i].jinja;
		}
	return NULL;
}
