/* tools/cmd_run.c — `orun run MODEL [PROMPT]`: chat with a model through the server, as `ollama run` does.
 *
 * With a prompt (arguments, or stdin when it is not a terminal) it answers once and exits; otherwise it
 * reads lines at a ">>> " prompt, keeping the conversation (/bye ends, /clear forgets, """ starts and ends a
 * multi-line message). The answer streams token by token from /api/chat; thinking is shown between
 * "Thinking..." and "...done thinking." unless --hidethinking; --verbose prints the timings as Ollama's
 * Metrics.Summary. Word wrapping is left to the terminal. Models are not pulled: a missing model is an error.
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

#define RUN_MAX_INPUT (16u << 20) /* bytes of one prompt */

static void usage(FILE *f)
{
	fprintf(f, "Run a model\n\n"
		   "Usage:\n  orun run MODEL [PROMPT] [flags]\n\n"
		   "Flags:\n"
		   "      --format string      Response format (e.g. json) (not supported by orun yet)\n"
		   "  -h, --help               help for run\n"
		   "      --hidethinking       Hide thinking output (if provided)\n"
		   "      --insecure           Use an insecure registry (ignored)\n"
		   "      --keepalive string   Duration to keep a model loaded (e.g. 5m)\n"
		   "      --nowordwrap         Don't wrap words to the next line automatically (orun never wraps)\n"
		   "      --think string       Enable thinking mode: true/false or high/medium/low for supported models\n"
		   "      --verbose            Show timings for response\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

struct run_state {
	bool hide_thinking, in_thinking, any_thinking;
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
			fwrite(thinking->str, 1, thinking->len, stdout);
		}
	}
	if (content && content->type == OB_JSON_STRING && content->len) {
		if (st->in_thinking) {
			fputs("\n...done thinking.\n\n", stdout);
			st->in_thinking = false;
		}
		fwrite(content->str, 1, content->len, stdout);
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
	struct run_state st = {.hide_thinking = hide};
	ob_buf_init(&st.reply, RUN_MAX_INPUT * 4u);
	ob_buf_init(&st.thinking, RUN_MAX_INPUT * 4u);
	int rc = client_stream(c, "POST", "/api/chat", body, strlen(body), on_line, &st);
	free(body);
	if (st.in_thinking)
		fputs("\n...done thinking.\n\n", stdout);
	fputs(interactive ? "\n\n" : "\n", stdout);
	fflush(stdout);
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

int cmd_run(int argc, char **argv)
{
	struct cli_flag flags[] = {
		{"verbose", 0, false, NULL},	{"keepalive", 0, true, NULL}, {"think", 0, true, NULL},
		{"hidethinking", 0, false, NULL}, {"nowordwrap", 0, false, NULL}, {"format", 0, true, NULL},
		{"insecure", 0, false, NULL},
	};
	const char *pos[64];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, flags, sizeof flags / sizeof flags[0], pos, 64, &n_pos, usage, &rc))
		return rc;
	if (cli_min_args(n_pos, 1) != 0)
		return 1;
	if (flags[5].value && *flags[5].value)
		return cli_error("--format (JSON mode) is not supported by orun yet");
	const char *model = pos[0];
	bool verbose = flags[0].value != NULL, hide = flags[3].value != NULL;
	const char *keepalive = flags[1].value, *think = flags[2].value;
	if (keepalive) {
		int64_t ns;
		char msg[128];
		if (rn_go_parse_duration(keepalive, &ns, msg, sizeof msg) != 0)
			return cli_error("%s", msg);
	}
	if (think && strcmp(think, "true") && strcmp(think, "false") && strcmp(think, "low") && strcmp(think, "medium") &&
	    strcmp(think, "high") && strcmp(think, "max"))
		return cli_error("invalid value for --think: %s (true, false, low, medium, high or max)", think);

	struct client c;
	if (client_init(&c) != 0)
		return cli_error("%s", c.err);
	/* the model must exist (orun does not pull) */
	char *show = client_model_body(model, NULL);
	struct client_response resp = {0};
	if (client_heartbeat(&c) != 0 || client_do(&c, "POST", "/api/show", show, show ? strlen(show) : 0, &resp) != 0) {
		free(show);
		if (strstr(c.err, "not found"))
			rc = cli_error("model '%s' not found (orun does not pull models: create it with `orun create`)", model);
		else
			rc = cli_error("%s", c.err);
		client_cleanup(&c);
		return rc;
	}
	free(resp.body);
	free(show);

	struct convo cv = {0};
	ob_jw_init(&cv.msgs, 0, 0);
	bool tty = isatty(0);
	if (n_pos > 1 || !tty) {
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
		for (size_t i = 1; i < n_pos && i < 64; i++) {
			if (p.len)
				ob_buf_putc(&p, ' ');
			ob_buf_puts(&p, pos[i]);
		}
		convo_add(&cv, "user", p.p ? p.p : "", p.len);
		ob_buf_free(&p);
		rc = one_turn(&c, model, &cv, keepalive, think, hide, verbose, false);
		ob_jw_free(&cv.msgs);
		client_cleanup(&c);
		return rc;
	}
	/* interactive */
	struct interactive_opts io = {.model = model, .think = think, .hide_thinking = hide, .keepalive = keepalive,
				      .format = flags[5].value, .verbose = verbose, .wordwrap = !flags[4].value,
				      .summary = summary};
	rc = interactive_run(&c, &io);
	ob_jw_free(&cv.msgs);
	client_cleanup(&c);
	return rc;
}
