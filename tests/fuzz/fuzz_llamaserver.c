/* tests/fuzz/fuzz_llamaserver.c — libFuzzer target for the llama-server runner's request bodies
 * (runner/api/llamaserver.c): /completion (sampling fields, stop strings, the prompt as text, ids or an
 * object), /v1/chat/completions and /apply-template (messages rendered with a Go template, then tokenized;
 * /apply-template also through a Jinja template with tools, tool calls and keyword arguments:
 * rn_ls_render_jinja), /tokenize and /detokenize, without a model: a SentencePiece tokenizer from tests/data
 * and three bundled templates stand in for the loaded model's.
 *
 * Input: one byte (its low six bits b: endpoint = b % 5, template = b / 5 % 4: chatml, llama3-instruct,
 * command-r or none; bit 7 clears --keep, bit 6 sets --no-context-shift), then the body. Checks: a step that accepts the body
 * leaves what the handler relies on (at least one prompt token, every id in the vocabulary once tokenized, a
 * stop string per string given, a rendered prompt), a refusal carries a message, and the JSON answers of
 * /tokenize and /detokenize parse.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "gguf/gguf.h"
#include "modelfile/jinja/jinja.h"
#include "modelfile/template.h"
#include "runner/api/llamaserver.h"
#include "runner/engine.h"
#include "runner/tokenizer/tokenizer.h"
#include "tests/testmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT 8192

enum { EP_COMPLETION, EP_CHAT, EP_APPLY_TEMPLATE, EP_TOKENIZE, EP_DETOKENIZE };

static struct gguf_file *tok_file;
static struct rn_tok *tok;
static struct mf_tpl *tpls[4]; /* the last stays NULL: no template matched */
static struct mf_jinja *jinja;  /* a Qwen-like Jinja template: tools, tool calls, kwargs */
static struct ob_json_doc *kwargs;

static const char jinja_src[] =
	"{% if tools %}<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>{% endif %}"
	"{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content if m.content is string else '' }}"
	"{% for c in m.tool_calls or [] %}<tool_call>{{ c.function.name }} {{ c.function.arguments | tojson }}"
	"</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
	"{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is false %}<think></think>"
	"{% endif %}{% endif %}";

static void die(const char *what)
{
	fprintf(stderr, "fuzz_llamaserver: %s\n", what);
	abort();
}

static void setup(void)
{
	struct gguf_error gerr;
	struct rn_tok_error terr;
	tok_file = gguf_open(tm_srcpath("tests/data/tokenizer/spm-tiny.gguf"), &gerr);
	if (!tok_file || rn_tok_load(tok_file, NULL, &tok, &terr) != RN_TOK_OK)
		die("cannot load tests/data/tokenizer/spm-tiny.gguf (ORUN_SRCDIR?)");
	static const char *const names[] = {"chatml", "llama3-instruct", "command-r"};
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < mf_tpl_named_count(); i++) {
			const struct mf_tpl_named *nt = mf_tpl_named_at(i);
			struct mf_tpl_error te;
			if (strcmp(nt->name, names[k]) == 0 && mf_tpl_parse(nt->text, nt->text_len, &tpls[k], &te) != MF_TPL_OK)
				die(te.msg);
		}
		if (!tpls[k])
			die("a bundled template is missing");
	}
	struct mf_jinja_error je;
	struct ob_json_error oe;
	if (mf_jinja_parse(jinja_src, sizeof jinja_src - 1, &jinja, &je) != MF_JINJA_OK)
		die(je.message);
	static const char kw[] = "{\"enable_thinking\":false}";
	if (!(kwargs = ob_json_parse(kw, sizeof kw - 1, &oe)))
		die("kwargs");
}

static void check_ids(const int32_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || (uint32_t)ids[i] >= rn_tok_n_vocab(tok))
			die("a tokenized id outside the vocabulary");
}

static void check_refusal(int st, const char *err)
{
	if (st && (st < 400 || st > 599 || !err[0]))
		die("a refusal without a status or a message");
}

static void completion(const struct rn_ls_opts *o, const struct ob_json *root, bool chat, const struct mf_tpl *tpl)
{
	struct rn_ls_req q = {0};
	struct rn_request rq;
	char err[512] = "";
	int st = rn_ls_read_params(o, &q, root, &rq, err, sizeof err);
	check_refusal(st, err);
	if (!st) {
		if (rq.n_stop != (int)q.n_stops || (q.n_stops && rq.stop != (const char *const *)q.stops))
			die("the request's stop strings are not q's");
		for (size_t i = 0; i < q.n_stops; i++)
			if (!q.stops[i])
				die("a missing stop string");
		if (rq.logprobs && (rq.top_logprobs < 0 || rq.top_logprobs > RN_LOGPROB_TOP_MAX))
			die("top_logprobs out of range");
		st = rn_ls_read_grammar(root, chat, &q, &rq, err, sizeof err);
		check_refusal(st, err);
		if (!st && (rq.grammar != q.grammar || (q.grammar && rq.grammar_len != strlen(q.grammar))))
			die("the request's grammar is not q's");
		if (!st)
			st = rn_ls_read_preserved(tok, root, &q, &rq, err, sizeof err);
		check_refusal(st, err);
		if (!st && (rq.n_preserved != q.n_preserved || q.n_preserved > RN_ENGINE_MAX_PRESERVED))
			die("the request's preserved tokens are not q's");
		check_ids(q.preserved, q.n_preserved);
	}
	if (!st && !chat) {
		st = rn_ls_read_prompt(tok, root, &q, err, sizeof err);
		check_refusal(st, err);
		if (!st && !q.n_tokens)
			die("an accepted prompt without tokens");
	} else if (!st) {
		char *p = NULL;
		size_t pl = 0;
		st = rn_ls_render_chat(tpl, root, &p, &pl, err, sizeof err);
		check_refusal(st, err);
		if (!st) {
			struct rn_tok_error te;
			if (!p || rn_tok_encode_alloc(tok, p, pl, true, true, &q.tokens, &q.n_tokens, &te) != RN_TOK_OK)
				die("the rendered prompt does not tokenize");
			check_ids(q.tokens, q.n_tokens);
		}
		free(p);
	}
	rn_ls_req_clear(&q);
}

static void answer(int ep, const struct ob_json *root)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, OB_JW_NO_HTML_ESCAPE);
	char err[512] = "";
	int st = ep == EP_TOKENIZE ? rn_ls_tokenize(tok, root, &w, err, sizeof err)
				   : rn_ls_detokenize(tok, root, &w, err, sizeof err);
	check_refusal(st, err);
	if (!st) {
		size_t n;
		char *s = ob_jw_take(&w, &n);
		struct ob_json_error je;
		struct ob_json_doc *d = s ? ob_json_parse(s, n, &je) : NULL;
		if (s && !d)
			die("an answer that is not JSON");
		if (d && ep == EP_TOKENIZE) {
			const struct ob_json *t = ob_json_get(ob_json_root(d), "tokens");
			const struct ob_json *c = ob_json_get(root, "content");
			if (!t || t->type != OB_JSON_ARRAY)
				die("/tokenize without tokens");
			OB_JSON_FOREACH(e, t)
			{
				const struct ob_json *id = e->type == OB_JSON_OBJECT ? ob_json_get(e, "id") : e;
				int64_t x;
				if (c && c->type == OB_JSON_STRING &&
				    (!id || !ob_json_int(id, &x) || x < 0 || x >= (int64_t)rn_tok_n_vocab(tok)))
					die("/tokenize gave an id outside the vocabulary");
			}
		}
		ob_json_free(d);
		free(s);
	}
	ob_jw_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!tok)
		setup();
	if (size < 1 || size > MAX_INPUT)
		return 0;
	int ep = (data[0] & 0x3f) % 5, ti = (data[0] & 0x3f) / 5 % 4;
	struct rn_ls_opts o;
	rn_ls_opts_default(&o);
	o.keep = data[0] & 0x80 ? 0 : 16;
	o.no_context_shift = data[0] & 0x40;
	const struct ob_json *root;
	char err[512] = "";
	struct ob_json_doc *doc = rn_ls_parse_body((const char *)data + 1, size - 1, &root, err, sizeof err);
	if (!doc) {
		check_refusal(400, err);
		return 0;
	}
	if (ep == EP_COMPLETION || ep == EP_CHAT)
		completion(&o, root, ep == EP_CHAT, tpls[ti]);
	else if (ep == EP_APPLY_TEMPLATE) {
		char *p = NULL;
		size_t pl = 0;
		int st = rn_ls_render_chat(tpls[ti], root, &p, &pl, err, sizeof err);
		check_refusal(st, err);
		if (!st && !p)
			die("an accepted chat without a prompt");
		free(p);
		p = NULL;
		st = rn_ls_render_jinja(jinja, tok, ob_json_root(kwargs), root, &p, &pl, err, sizeof err);
		check_refusal(st, err);
		if (!st && !p)
			die("an accepted Jinja chat without a prompt");
		free(p);
	} else {
		answer(ep, root);
	}
	ob_json_free(doc);
	return 0;
}
