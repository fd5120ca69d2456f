/* runner/api/jinja_chat.c — a GGUF Jinja chat template on the request path: capabilities from the template,
 * Ollama's messages and think in the shapes transformers' apply_chat_template takes, the render.
 *
 * It does not parse the model's output (runner/chatfmt does, started by start_chatfmt in api/pipeline.c) and
 * keeps no state: the parsed template belongs to the stored model or the runner.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/api/jinja_chat.h"
#include "runner/tokenizer/tokenizer.h"

static bool has_text(const char *src, size_t len, const char *needle)
{
	return src && memmem(src, len, needle, strlen(needle)) != NULL;
}

void rn_jchat_caps(const struct mf_jinja *t, const char *src, size_t len, bool *tools, bool *thinking)
{
	*tools = mf_jinja_uses(t, "tools");
	*thinking = mf_jinja_uses(t, "enable_thinking") || mf_jinja_uses(t, "reasoning_effort") ||
		    mf_jinja_uses(t, "thinking_budget") || has_text(src, len, "reasoning_content") ||
		    has_text(src, len, "<think>");
}

static void put_str(struct ob_jw *w, const char *key, struct mf_tpl_str s, bool always)
{
	if (!always && s.n == 0)
		return;
	ob_jw_key(w, key);
	ob_jw_stringn(w, s.p ? s.p : "", s.n);
}

void rn_jchat_write_messages(const struct mf_tpl_message *v, size_t n, struct ob_jw *w)
{
	ob_jw_arr(w);
	for (size_t i = 0; i < n; i++) {
		const struct mf_tpl_message *m = &v[i];
		ob_jw_obj(w);
		put_str(w, "role", m->role, true);
		put_str(w, "content", m->content, true);
		put_str(w, "reasoning_content", m->thinking, false);
		if (m->n_tool_calls) {
			ob_jw_key(w, "tool_calls");
			ob_jw_arr(w);
			for (size_t k = 0; k < m->n_tool_calls; k++) {
				const struct mf_tpl_tool_call *tc = &m->tool_calls[k];
				ob_jw_obj(w);
				put_str(w, "id", tc->id, false);
				ob_jw_key(w, "type");
				ob_jw_string(w, "function");
				ob_jw_key(w, "function");
				ob_jw_obj(w);
				put_str(w, "name", tc->name, true);
				ob_jw_key(w, "arguments");
				if (tc->arguments && tc->arguments->type == OB_JSON_OBJECT)
					ob_jw_value(w, tc->arguments, false);
				else
					ob_jw_raw(w, "{}", 2);
				ob_jw_obj_end(w);
				ob_jw_obj_end(w);
			}
			ob_jw_arr_end(w);
		}
		put_str(w, "tool_call_id", m->tool_call_id, false);
		put_str(w, "name", m->tool_name, false);
		ob_jw_obj_end(w);
	}
	ob_jw_arr_end(w);
}

bool rn_jchat_write_think(bool set, bool on, const char *level, struct ob_jw *w)
{
	if (!set)
		return false;
	ob_jw_obj(w);
	ob_jw_key(w, "enable_thinking");
	ob_jw_bool(w, on);
	if (on && level && *level) {
		ob_jw_key(w, "reasoning_effort");
		ob_jw_string(w, level);
	}
	ob_jw_obj_end(w);
	return true;
}

/* The text of a special token as llama.cpp's common_token_to_piece(special) gives it; "" when absent. */
static char *token_text(const struct rn_tok *tok, int32_t id)
{
	const char *p = NULL;
	size_t n = 0;
	if (!tok || id < 0 || rn_tok_piece(tok, id, true, &p, &n) != RN_TOK_OK)
		p = "", n = 0;
	return strndup(p, n);
}

int rn_jchat_render(const struct mf_jinja *t, const struct rn_jchat_in *in, char **out, size_t *len, char *err,
		    size_t err_size)
{
	*out = NULL;
	*len = 0;
	char *bos = token_text(in->tok, in->tok ? rn_tok_bos(in->tok) : -1);
	char *eos = token_text(in->tok, in->tok ? rn_tok_eos(in->tok) : -1);
	struct mf_jinja_vars *vars = bos && eos ? mf_jinja_vars_new() : NULL;
	if (!vars) {
		free(bos);
		free(eos);
		snprintf(err, err_size, "out of memory");
		return 500;
	}
	struct mf_jinja_chat chat = {
		.messages = in->messages,
		.tools = in->tools && in->tools->type == OB_JSON_ARRAY && in->tools->count ? in->tools : NULL,
		.add_generation_prompt = in->add_generation_prompt,
		.bos_token = bos,
		.eos_token = eos,
		.extra = in->extra && in->extra->type == OB_JSON_OBJECT ? in->extra : NULL,
	};
	struct mf_jinja_error je = {0};
	int rc = mf_jinja_vars_set_chat(vars, &chat);
	if (rc != MF_JINJA_OK) {
		je.status = rc;
		snprintf(je.message, sizeof je.message, "%s", mf_jinja_strerror(rc));
	} else {
		rc = mf_jinja_render(t, vars, NULL, out, len, &je);
	}
	mf_jinja_vars_free(vars);
	int status = 0;
	if (rc != MF_JINJA_OK) {
		status = rc == MF_JINJA_ENOMEM || rc == MF_JINJA_EINVAL ? 500 : 400;
		snprintf(err, err_size, "%s", je.message[0] ? je.message : mf_jinja_strerror(rc));
	} else if (in->tok) {
		size_t bl = strlen(bos), el = strlen(eos);
		if (rn_tok_add_bos(in->tok) && bl && *len >= bl && memcmp(*out, bos, bl) == 0) {
			memmove(*out, *out + bl, *len - bl + 1);
			*len -= bl;
		}
		if (rn_tok_add_eos(in->tok) && el && *len >= el && memcmp(*out + *len - el, eos, el) == 0) {
			*len -= el;
			(*out)[*len] = 0;
		}
	}
	free(bos);
	free(eos);
	return status;
}

int rn_jchat_append(char **out, size_t *len, const char *s, size_t n)
{
	if (!n)
		return 0;
	char *p = realloc(*out, *len + n + 1);
	if (!p)
		return -1;
	memcpy(p + *len, s, n);
	*len += n;
	p[*len] = 0;
	*out = p;
	return 0;
}
