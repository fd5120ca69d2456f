/* tools/cmd_run.c — `orun run MODEL [PROMPT]`: chat with a model through the server, as `ollama run` does.
 *
 * With a prompt (arguments, or stdin when it is not a terminal) it answers once and exits; otherwise it
 * runs Ollama's interactive session (tools/interactive.c: line editing, history, the slash commands). The
 * answer streams token by token from /api/chat; thinking is shown between
 * "Thinking..." and "...done thinking." unless --hidethinking; --verbose prints the timings as Ollama's
 * Metrics.Summary. The flags are Ollama's: a bare --think is true, --format sends "format" as given, and a
 * model with the embedding capability prints the prompt's embedding (/api/embed, --truncate, --dimensions)
 * instead of chatting. Models are not pulled: a missing model is an error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/json.h"
#include "runner/server/envconfig.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"
#include "tools/interactive.h"
#include "tools/wordwrap.h"

#define RUN_MAX_INPUT (16u << 20) /* bytes of one prompt */

static void usage(FILE *f)
{
	fprintf(f, "Run a model\n\n"
		   "Usage:\n  orun run MODEL [PROMPT] [flags]\n\n"
		   "Flags:\n"
		   "      --dimensions int         Truncate output embeddings to specified dimension (embedding models "
		   "only)\n"
		   "      --format string          Response format (e.g. json)\n"
		   "  -h, --help                   help for run\n"
		   "      --hidethinking           Hide thinking output (if provided)\n"
		   "      --insecure               Use an insecure registry (ignored: orun run does not pull)\n"
		   "      --keepalive string       Duration to keep a model loaded (e.g. 5m)\n"
		   "      --nowordwrap             Don't wrap words to the next line automatically\n"
		   "      --think string[=\"true\"]  Enable thinking mode: true/false or high/medium/low for supported "
		   "models\n"
		   "      --truncate               For embedding models: truncate inputs exceeding context length "
		   "(default: true). Set --truncate=false to error instead\n"
		   "      --verbose                Show timings for response\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

struct run_state {
	bool hide_thinking, in_thinking, any_thinking;
	bool wordwrap;          /* Ollama's opts.WordWrap: not --nowordwrap, and stdout a terminal */
	struct wrap wr;         /* the answer's word wrap state */
	struct ob_buf reply;    /* assistant content of this turn */
	struct ob_buf thinking; /* assistant thinking of this turn */
	struct ob_json_doc *final;
};

static int on_line(void *ctx, const char *line, size_t n)
{
	struct run_state *st = ctx;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(line, n, &je);
	if (!d)
		return 0;
	const struct ob_json *root = ob_json_root(d);
	const struct ob_json *msg = ob_json_get(root, "message");
	const struct ob_json *content = msg ? ob_json_get(msg, "content") : NULL;
	const struct ob_json *thinking = msg ? ob_json_get(msg, "thinking") : NULL;
	if (thinking && thinking->type == OB_JSON_STRING && thinking->len) {
		ob_buf_append(&st->thinking, thinking->str, thinking->len);
		if (!st->hide_thinking) {
			if (!st->in_thinking) {
				fputs("Thinking...\n", stdout);
				st->in_thinking = true;
				st->any_thinking = true;
			}
			wrap_print(&st->wr, thinking->str, thinking->len, st->wordwrap);
		}
	}
	if (content && content->type == OB_JSON_STRING && content->len) {
		if (st->in_thinking) {
			fputs("\n...done thinking.\n\n", stdout);
			st->in_thinking = false;
			wrap_reset(&st->wr); /* Ollama: state = &displayResponseState{} */
		}
		wrap_print(&st->wr, content->str, content->len, st->wordwrap);
		ob_buf_append(&st->reply, content->str, content->len);
	}
	fflush(stdout);
	const struct ob_json *done = ob_json_get(root, "done");
	if (done && done->type == OB_JSON_BOOL && done->boolean) {
		ob_json_free(st->final);
		st->final = d;
		return 0;
	}
	ob_json_free(d);
	return 0;
}

static void print_duration(const char *label, int64_t ns)
{
	char buf[48];
	fprintf(stderr, "%s%s\n", label, rn_go_format_duration(ns, buf, sizeof buf));
}

/* Metrics.Summary */
static void summary(const struct ob_json_doc *d)
{
	const struct ob_json *r = ob_json_root(d);
	int64_t v[6] = {0};
	static const char *keys[] = {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
				     "eval_count", "eval_duration"};
	for (int i = 0; i < 6; i++) {
		const struct ob_json *x = ob_json_get(r, keys[i]);
		if (x)
			(void)ob_json_int(x, &v[i]);
	}
	if (v[0] > 0)
		print_duration("total duration:       ", v[0]);
	if (v[1] > 0)
		print_duration("load duration:        ", v[1]);
	if (v[2] > 0)
		fprintf(stderr, "prompt eval count:    %lld token(s)\n", (long long)v[2]);
	if (v[3] > 0) {
		print_duration("prompt eval duration: ", v[3]);
		fprintf(stderr, "prompt eval rate:     %.2f tokens/s\n", (double)v[2] / ((double)v[3] / 1e9));
	}
	if (v[4] > 0)
		fprintf(stderr, "eval count:           %lld token(s)\n", (long long)v[4]);
	if (v[5] > 0) {
		print_duration("eval duration:        ", v[5]);
		fprintf(stderr, "eval rate:            %.2f tokens/s\n", (double)v[4] / ((double)v[5] / 1e9));
	}
}

struct convo {
	struct ob_jw msgs; /* the messages array being built (open) */
	size_t n;
	const char *format; /* "format" of every request: JSON text ("\"json\"" or a schema), or NULL */
	bool wordwrap;      /* wrap words at the terminal width: not --nowordwrap, and stdout a terminal */
};

static void convo_add(struct convo *cv, const char *role, const char *content, size_t len)
{
	if (cv->n == 0)
		ob_jw_arr(&cv->msgs);
	ob_jw_obj(&cv->msgs);
	ob_jw_key(&cv->msgs, "role");
	ob_jw_string(&cv->msgs, role);
	ob_jw_key(&cv->msgs, "content");
	ob_jw_stringn(&cv->msgs, content, len);
	ob_jw_obj_end(&cv->msgs);
	cv->n++;
}

/* Builds the body by closing a copy of the messages array. */
static char *build_body(const char *model, struct convo *cv, const char *keepalive, const char *think)
{
	const char *msgs = ob_jw_str(&cv->msgs);
	if (!msgs)
		return NULL;
	struct ob_buf b; /* the members after "model" */
	ob_buf_init(&b, 0);
	ob_buf_puts(&b, "\"messages\":");
	ob_buf_append(&b, msgs, cv->msgs.len);
	ob_buf_puts(&b, "]");
	if (keepalive) {
		ob_buf_puts(&b, ",\"keep_alive\":");
		struct ob_jw k;
		ob_jw_init(&k, 0, 0);
		ob_jw_string(&k, keepalive);
		const char *ks = ob_jw_str(&k);
		if (ks)
			ob_buf_append(&b, ks, k.len);
		ob_jw_free(&k);
	}
	if (cv->format) {
		ob_buf_puts(&b, ",\"format\":");
		ob_buf_puts(&b, cv->format);
	}
	if (think) {
		ob_buf_puts(&b, ",\"think\":");
		if (!strcmp(think, "true") || !strcmp(think, "false"))
			ob_buf_puts(&b, think);
		else
			ob_buf_printf(&b, "\"%s\"", think);
	}
	char *body = b.failed ? NULL : client_model_body(model, b.p);
	ob_buf_free(&b);
	return body;
}

static int one_turn(struct client *c, const char *model, struct convo *cv, const char *keepalive, const char *think,
		    bool hide, bool verbose, bool interactive)
{
	char *body = build_body(model, cv, keepalive, think);
	if (!body)
		return cli_error("out of memory");
	struct run_state st = {.hide_thinking = hide, .wordwrap = cv->wordwrap};
	ob_buf_init(&st.reply, RUN_MAX_INPUT * 4u);
	ob_buf_init(&st.thinking, RUN_MAX_INPUT * 4u);
	wrap_init(&st.wr);
	int rc = client_stream(c, "POST", "/api/chat", body, strlen(body), on_line, &st);
	free(body);
	if (st.in_thinking)
		fputs("\n...done thinking.\n\n", stdout);
	fputs(interactive ? "\n\n" : "\n", stdout);
	fflush(stdout);
	wrap_free(&st.wr);
	if (rc != 0) {
		ob_buf_free(&st.reply);
		ob_buf_free(&st.thinking);
		ob_json_free(st.final);
		return cli_error("%s", c->err);
	}
	if (verbose && st.final)
		summary(st.final);
	convo_add(cv, "assistant", st.reply.p ? st.reply.p : "", st.reply.len);
	ob_buf_free(&st.reply);
	ob_buf_free(&st.thinking);
	ob_json_free(st.final);
	return 0;
}

static char *read_all_stdin(size_t *len)
{
	struct ob_buf b;
	ob_buf_init(&b, RUN_MAX_INPUT);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
		if (!ob_buf_append(&b, buf, n))
			break;
	if (b.failed) {
		ob_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	char *s = ob_buf_take(&b);
	return s ? s : strdup("");
}

/* --format as Ollama sends it: "json" as the JSON string "json", anything else as JSON text of its own (a
 * schema); "" sends nothing. NULL after the error Go's json.Marshal gives for a RawMessage that is not JSON. */
static const char *format_value(const char *format, int *rc)
{
	*rc = 0;
	if (!format || !*format)
		return NULL;
	if (!strcmp(format, "json"))
		return "\"json\"";
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(format, strlen(format), &je);
	if (!d) {
		*rc = cli_error("json: error calling MarshalJSON for type json.RawMessage: %s", je.message);
		return NULL;
	}
	ob_json_free(d);
	return format;
}

/* The capabilities array of an /api/show answer names cap. */
static bool has_capability(const struct ob_json_doc *show, const char *cap)
{
	const struct ob_json *caps = show ? ob_json_get(ob_json_root(show), "capabilities") : NULL;
	if (!caps || caps->type != OB_JSON_ARRAY)
		return false;
	for (const struct ob_json *c = ob_json_first(caps); c; c = ob_json_after(caps, c))
		if (ob_json_str_eq(c, cap))
			return true;
	return false;
}

/* Ollama's generateEmbedding: /api/embed with the prompt, printing the first vector as JSON on one line. */
static int embed_prompt(struct client *c, const char *model, const char *prompt, size_t len, const char *keepalive,
			const bool *truncate, int dimensions)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "input");
	ob_jw_stringn(&w, prompt, len);
	if (truncate) {
		ob_jw_key(&w, "truncate");
		ob_jw_bool(&w, *truncate);
	}
	if (dimensions > 0) {
		ob_jw_key(&w, "dimensions");
		ob_jw_int(&w, dimensions);
	}
	if (keepalive) {
		ob_jw_key(&w, "keep_alive");
		ob_jw_string(&w, keepalive);
	}
	ob_jw_obj_end(&w);
	const char *rest = ob_jw_str(&w);
	/* client_model_body wants the members after "model": drop the braces */
	char *inner = rest && w.len >= 2 ? strndup(rest + 1, w.len - 2) : NULL;
	ob_jw_free(&w);
	char *body = inner ? client_model_body(model, inner) : NULL;
	free(inner);
	if (!body)
		return cli_error("out of memory");
	struct ob_json_doc *d;
	int rc = client_do_json(c, "POST", "/api/embed", body, strlen(body), &d);
	free(body);
	if (rc != 0)
		return cli_error("%s", c->err);
	const struct ob_json *e = ob_json_get(ob_json_root(d), "embeddings");
	const struct ob_json *v = e && e->type == OB_JSON_ARRAY ? ob_json_at(e, 0) : NULL;
	if (!v || v->type != OB_JSON_ARRAY) {
		ob_json_free(d);
		return cli_error("no embeddings returned");
	}
	/* the numbers as the server wrote them: Go's encoding of the float32 values, as json.Marshal would */
	putchar('[');
	for (const struct ob_json *x = ob_json_first(v); x; x = ob_json_after(v, x))
		printf("%s%s", x == ob_json_first(v) ? "" : ",", x->type == OB_JSON_NUMBER ? x->str : "null");
	puts("]");
	ob_json_free(d);
	return 0;
}

/* The one-shot prompt: stdin when it is not a terminal, then the arguments, joined by spaces. */
static char *gather_prompt(bool tty, const char *const *args, size_t n_args, size_t *len)
{
	struct ob_buf p;
	ob_buf_init(&p, RUN_MAX_INPUT);
	if (!tty) {
		size_t n;
		char *in = read_all_stdin(&n);
		if (in) {
			ob_buf_append(&p, in, n);
			free(in);
		}
	}
	for (size_t i = 0; i < n_args; i++) {
		if (p.len)
			ob_buf_putc(&p, ' ');
		ob_buf_puts(&p, args[i]);
	}
	if (p.failed) {
		ob_buf_free(&p);
		return NULL;
	}
	*len = p.len;
	char *s = ob_buf_take(&p);
	return s ? s : strdup("");
}

enum { F_VERBOSE, F_KEEPALIVE, F_THINK, F_HIDE, F_NOWRAP, F_FORMAT, F_INSECURE, F_TRUNCATE, F_DIMENSIONS, F_N };

int cmd_run(int argc, char **argv)
{
	/* think takes no separate value: bare --think is "true" (pflag's NoOptDefVal), --think=high sets it */
	struct cli_flag flags[F_N] = {
		[F_VERBOSE] = {"verbose", 0, false, NULL},	 [F_KEEPALIVE] = {"keepalive", 0, true, NULL},
		[F_THINK] = {"think", 0, false, NULL},		 [F_HIDE] = {"hidethinking", 0, false, NULL},
		[F_NOWRAP] = {"nowordwrap", 0, false, NULL},	 [F_FORMAT] = {"format", 0, true, NULL},
		[F_INSECURE] = {"insecure", 0, false, NULL},	 [F_TRUNCATE] = {"truncate", 0, false, NULL},
		[F_DIMENSIONS] = {"dimensions", 0, true, NULL},
	};
	const char *pos[64];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, flags, F_N, pos, 64, &n_pos, usage, &rc))
		return rc;
	if (cli_min_args(n_pos, 1) != 0)
		return 1;
	bool verbose, hide, nowrap, insecure, truncate = true;
	int dimensions = 0;
	if ((rc = cli_flag_bool(&flags[F_VERBOSE], &verbose)) || (rc = cli_flag_bool(&flags[F_HIDE], &hide)) ||
	    (rc = cli_flag_bool(&flags[F_NOWRAP], &nowrap)) || (rc = cli_flag_bool(&flags[F_INSECURE], &insecure)) ||
	    (rc = cli_flag_bool(&flags[F_TRUNCATE], &truncate)) || (rc = cli_flag_int(&flags[F_DIMENSIONS], &dimensions)))
		return rc;
	(void)insecure; /* Ollama's is for pulling a missing model; orun run does not pull */
	const char *model = pos[0];
	const char *keepalive = flags[F_KEEPALIVE].value, *think = flags[F_THINK].value;
	if (keepalive && *keepalive) {
		int64_t ns;
		char msg[128];
		if (rn_go_parse_duration(keepalive, &ns, msg, sizeof msg) != 0)
			return cli_error("%s", msg);
	} else {
		keepalive = NULL;
	}
	if (think && !*think)
		think = "true";
	if (think && strcmp(think, "true") && strcmp(think, "false") && strcmp(think, "low") && strcmp(think, "medium") &&
	    strcmp(think, "high") && strcmp(think, "max"))
		return cli_error("invalid value for --think: \"%s\" (must be true, false, high, medium, low, or max)", think);
	const char *format = format_value(flags[F_FORMAT].value, &rc);
	if (rc)
		return rc;

	struct client c;
	if (client_init(&c) != 0)
		return cli_error("%s", c.err);
	/* the model must exist (orun run does not pull a missing model; orun pull does) */
	char *show = client_model_body(model, NULL);
	struct ob_json_doc *info = NULL;
	if (client_heartbeat(&c) != 0 || client_do_json(&c, "POST", "/api/show", show, show ? strlen(show) : 0, &info)) {
		free(show);
		if (strstr(c.err, "not found"))
			rc = cli_error("model '%s' not found (orun run does not pull: `orun pull %s` first, or `orun create` it)",
				       model, model);
		else
			rc = cli_error("%s", c.err);
		client_cleanup(&c);
		return rc;
	}
	free(show);
	bool embedding = has_capability(info, "embedding");
	if (!think && has_capability(info, "thinking"))
		think = "true"; /* Ollama's inferThinkingOption: a thinking model thinks unless told otherwise */
	ob_json_free(info);

	/* Ollama's RunHandler sets opts.WordWrap = !nowrap for a one-shot run too, and its displayResponse
	 * then wraps at 80 columns with cursor movement when stdout is no terminal (issue ollama#16785, which
	 * its maintainers call a bug); orun wraps only on a terminal, so piped and redirected output stays
	 * plain text. */
	struct convo cv = {.format = format, .wordwrap = !nowrap && isatty(STDOUT_FILENO)};
	ob_jw_init(&cv.msgs, 0, 0);
	bool tty = isatty(0);
	if (n_pos > 1 || !tty || embedding) {
		size_t plen = 0;
		char *prompt = gather_prompt(tty, pos + 1, n_pos - 1 < 63 ? n_pos - 1 : 63, &plen);
		if (!prompt)
			rc = cli_error("out of memory");
		else if (embedding && !plen)
			rc = cli_error("embedding models require input text. Usage: orun run %s \"your text here\"", model);
		else if (embedding)
			rc = embed_prompt(&c, model, prompt, plen, keepalive, flags[F_TRUNCATE].value ? &truncate : NULL,
					  dimensions);
		else {
			convo_add(&cv, "user", prompt, plen);
			rc = one_turn(&c, model, &cv, keepalive, think, hide, verbose, false);
		}
		free(prompt);
		ob_jw_free(&cv.msgs);
		client_cleanup(&c);
		return rc;
	}
	/* interactive */
	struct interactive_opts io = {.model = model, .think = think, .hide_thinking = hide, .keepalive = keepalive,
				      .format = flags[F_FORMAT].value, .verbose = verbose, .wordwrap = !nowrap,
				      .summary = summary};
	rc = interactive_run(&c, &io);
	ob_jw_free(&cv.msgs);
	client_cleanup(&c);
	return rc;
}
