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

#include "modelfile/buf.h"
#include "modelfile/json.h"
#include "runner/server_config.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

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
	struct mf_buf reply;    /* assistant content of this turn */
	struct mf_buf thinking; /* assistant thinking of this turn */
	struct mf_json_doc *final;
};

static int on_line(void *ctx, const char *line, size_t n)
{
	struct run_state *st = ctx;
	struct mf_json_error je;
	struct mf_json_doc *d = mf_json_parse(line, n, &je);
	if (!d)
		return 0;
	const struct mf_json *root = mf_json_root(d);
	const struct mf_json *msg = mf_json_get(root, "message");
	const struct mf_json *content = msg ? mf_json_get(msg, "content") : NULL;
	const struct mf_json *thinking = msg ? mf_json_get(msg, "thinking") : NULL;
	if (thinking && thinking->type == MF_JSON_STRING && thinking->len) {
		mf_buf_append(&st->thinking, thinking->str, thinking->len);
		if (!st->hide_thinking) {
			if (!st->in_thinking) {
				fputs("Thinking...\n", stdout);
				st->in_thinking = true;
				st->any_thinking = true;
			}
			fwrite(thinking->str, 1, thinking->len, stdout);
		}
	}
	if (content && content->type == MF_JSON_STRING && content->len) {
		if (st->in_thinking) {
			fputs("\n...done thinking.\n\n", stdout);
			st->in_thinking = false;
		}
		fwrite(content->str, 1, content->len, stdout);
		mf_buf_append(&st->reply, content->str, content->len);
	}
	fflush(stdout);
	const struct mf_json *done = mf_json_get(root, "done");
	if (done && done->type == MF_JSON_BOOL && done->boolean) {
		mf_json_free(st->final);
		st->final = d;
		return 0;
	}
	mf_json_free(d);
	return 0;
}

static void print_duration(const char *label, int64_t ns)
{
	char buf[48];
	fprintf(stderr, "%s%s\n", label, rn_go_format_duration(ns, buf, sizeof buf));
}

/* Metrics.Summary */
static void summary(const struct mf_json_doc *d)
{
	const struct mf_json *r = mf_json_root(d);
	int64_t v[6] = {0};
	static const char *keys[] = {"total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
				     "eval_count", "eval_duration"};
	for (int i = 0; i < 6; i++) {
		const struct mf_json *x = mf_json_get(r, keys[i]);
		if (x)
			(void)mf_json_int(x, &v[i]);
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
	struct mf_jw msgs; /* the messages array being built (open) */
	size_t n;
};

static void convo_add(struct convo *cv, const char *role, const char *content, size_t len)
{
	if (cv->n == 0)
		mf_jw_arr(&cv->msgs);
	mf_jw_obj(&cv->msgs);
	mf_jw_key(&cv->msgs, "role");
	mf_jw_string(&cv->msgs, role);
	mf_jw_key(&cv->msgs, "content");
	mf_jw_stringn(&cv->msgs, content, len);
	mf_jw_obj_end(&cv->msgs);
	cv->n++;
}

/* Builds the body by closing a copy of the messages array. */
static char *build_body(const char *model, struct convo *cv, const char *keepalive, const char *think)
{
	struct mf_buf b;
	mf_buf_init(&b, 0);
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	mf_jw_obj(&w);
	mf_jw_key(&w, "model");
	mf_jw_string(&w, model);
	mf_jw_obj_end(&w);
	const char *head = mf_jw_str(&w);
	const char *msgs = mf_jw_str(&cv->msgs);
	if (!head || !msgs) {
		mf_jw_free(&w);
		return NULL;
	}
	mf_buf_append(&b, head, w.len - 1); /* without the closing brace */
	mf_buf_puts(&b, ",\"messages\":");
	mf_buf_append(&b, msgs, cv->msgs.len);
	mf_buf_puts(&b, "]");
	if (keepalive) {
		mf_buf_puts(&b, ",\"keep_alive\":");
		struct mf_jw k;
		mf_jw_init(&k, 0, 0);
		mf_jw_string(&k, keepalive);
		const char *ks = mf_jw_str(&k);
		if (ks)
			mf_buf_append(&b, ks, k.len);
		mf_jw_free(&k);
	}
	if (think) {
		mf_buf_puts(&b, ",\"think\":");
		if (!strcmp(think, "true") || !strcmp(think, "false"))
			mf_buf_puts(&b, think);
		else
			mf_buf_printf(&b, "\"%s\"", think);
	}
	mf_buf_puts(&b, "}");
	mf_jw_free(&w);
	return mf_buf_take(&b);
}

static int one_turn(struct client *c, const char *model, struct convo *cv, const char *keepalive, const char *think,
		    bool hide, bool verbose, bool interactive)
{
	char *body = build_body(model, cv, keepalive, think);
	if (!body)
		return cli_error("out of memory");
	struct run_state st = {.hide_thinking = hide};
	mf_buf_init(&st.reply, RUN_MAX_INPUT * 4u);
	mf_buf_init(&st.thinking, RUN_MAX_INPUT * 4u);
	int rc = client_stream(c, "POST", "/api/chat", body, strlen(body), on_line, &st);
	free(body);
	if (st.in_thinking)
		fputs("\n...done thinking.\n\n", stdout);
	fputs(interactive ? "\n\n" : "\n", stdout);
	fflush(stdout);
	if (rc != 0) {
		mf_buf_free(&st.reply);
		mf_buf_free(&st.thinking);
		mf_json_free(st.final);
		return cli_error("%s", c->err);
	}
	if (verbose && st.final)
		summary(st.final);
	convo_add(cv, "assistant", st.reply.p ? st.reply.p : "", st.reply.len);
	mf_buf_free(&st.reply);
	mf_buf_free(&st.thinking);
	mf_json_free(st.final);
	return 0;
}

static char *read_all_stdin(size_t *len)
{
	struct mf_buf b;
	mf_buf_init(&b, RUN_MAX_INPUT);
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
		if (!mf_buf_append(&b, buf, n))
			break;
	if (b.failed) {
		mf_buf_free(&b);
		return NULL;
	}
	*len = b.len;
	char *s = mf_buf_take(&b);
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
	bool help;
	int rc = cli_parse(argc, argv, flags, sizeof flags / sizeof flags[0], pos, 64, &n_pos, &help);
	if (rc)
		return rc;
	if (help) {
		usage(stdout);
		return 0;
	}
	if (n_pos < 1) {
		fprintf(stderr, "Error: requires at least 1 arg(s), only received 0\n");
		return 1;
	}
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
	struct mf_jw w;
	mf_jw_init(&w, 0, 0);
	mf_jw_obj(&w);
	mf_jw_key(&w, "model");
	mf_jw_string(&w, model);
	mf_jw_obj_end(&w);
	struct client_response resp = {0};
	const char *show = mf_jw_str(&w);
	if (client_heartbeat(&c) != 0 || client_do(&c, "POST", "/api/show", show, show ? strlen(show) : 0, &resp) != 0) {
		mf_jw_free(&w);
		if (strstr(c.err, "not found"))
			rc = cli_error("model '%s' not found (orun does not pull models: create it with `orun create`)", model);
		else
			rc = cli_error("%s", c.err);
		client_cleanup(&c);
		return rc;
	}
	free(resp.body);
	mf_jw_free(&w);

	struct convo cv = {0};
	mf_jw_init(&cv.msgs, 0, 0);
	bool tty = isatty(0);
	if (n_pos > 1 || !tty) {
		struct mf_buf p;
		mf_buf_init(&p, RUN_MAX_INPUT);
		if (!tty) {
			size_t n;
			char *in = read_all_stdin(&n);
			if (in) {
				mf_buf_append(&p, in, n);
				free(in);
			}
		}
		for (size_t i = 1; i < n_pos && i < 64; i++) {
			if (p.len)
				mf_buf_putc(&p, ' ');
			mf_buf_puts(&p, pos[i]);
		}
		convo_add(&cv, "user", p.p ? p.p : "", p.len);
		mf_buf_free(&p);
		rc = one_turn(&c, model, &cv, keepalive, think, hide, verbose, false);
		mf_jw_free(&cv.msgs);
		client_cleanup(&c);
		return rc;
	}
	/* interactive */
	char line[8192];
	struct mf_buf multi;
	mf_buf_init(&multi, RUN_MAX_INPUT);
	bool in_multi = false;
	rc = 0;
	for (;;) {
		fputs(in_multi ? "... " : ">>> ", stdout);
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin)) {
			fputs("\n", stdout);
			break;
		}
		size_t ln = strlen(line);
		while (ln && (line[ln - 1] == '\n' || line[ln - 1] == '\r'))
			line[--ln] = 0;
		if (in_multi) {
			char *end = strstr(line, "\"\"\"");
			if (end) {
				mf_buf_append(&multi, line, (size_t)(end - line));
				in_multi = false;
			} else {
				mf_buf_puts(&multi, line);
				mf_buf_putc(&multi, '\n');
				continue;
			}
		} else if (!strncmp(line, "\"\"\"", 3)) {
			multi.len = 0;
			const char *rest = line + 3;
			char *end = strstr(rest, "\"\"\"");
			if (end) {
				mf_buf_append(&multi, rest, (size_t)(end - rest));
			} else {
				mf_buf_puts(&multi, rest);
				mf_buf_putc(&multi, '\n');
				in_multi = true;
				continue;
			}
		} else if (!strcmp(line, "/bye") || !strcmp(line, "/exit")) {
			break;
		} else if (!strcmp(line, "/clear")) {
			mf_jw_free(&cv.msgs);
			mf_jw_init(&cv.msgs, 0, 0);
			cv.n = 0;
			fputs("Cleared session context\n", stdout);
			continue;
		} else if (!strcmp(line, "/?") || !strcmp(line, "/help")) {
			fputs("Available Commands:\n  /clear          Clear session context\n  /bye            Exit\n"
			      "  /?, /help       Help for a command\n\nUse \"\"\" to begin a multi-line message.\n\n",
			      stdout);
			continue;
		} else if (line[0] == '/') {
			fprintf(stdout, "Unknown command '%s'. Type /? for help\n", line);
			continue;
		} else if (!ln) {
			continue;
		} else {
			multi.len = 0;
			mf_buf_append(&multi, line, ln);
		}
		convo_add(&cv, "user", multi.p ? multi.p : "", multi.len);
		if (one_turn(&c, model, &cv, keepalive, think, hide, verbose, true) != 0)
			rc = 1;
	}
	mf_buf_free(&multi);
	mf_jw_free(&cv.msgs);
	client_cleanup(&c);
	return rc;
}
