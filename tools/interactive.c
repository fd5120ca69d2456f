/* tools/interactive.c — `orun run MODEL` at a terminal, as Ollama's cmd/interactive.go behaves: libedit
 * reads the lines (emacs keys, history kept in ~/.ollama/history as Ollama writes it), the slash commands
 * print Ollama's texts, answers stream from /api/chat with Ollama's word wrap and thinking display.
 *
 * Ctrl-C during an answer shuts the connection's socket down from the signal handler, so the server sees the
 * disconnect and frees the slot at once; the conversation is kept. Images and audio (multimodal paths) and
 * Ctrl-J (a newline inside the line) are not done here.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <histedit.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "base/json.h"
#include "base/unicode.h"
#include "base/utf8.h"
#include "modelfile/params.h"
#include "tools/client.h"
#include "tools/clifmt.h"
#include "tools/commands.h"
#include "tools/interactive.h"
#include "tools/wordwrap.h"

#define IA_MAX_INPUT (16u << 20)  /* bytes of one message being typed */
#define IA_MAX_REPLY (64u << 20)  /* bytes of one answer kept for the conversation */
#define IA_HISTORY_MAX 100        /* lines of history, as Ollama's History.Limit */
#define IA_MAX_FIELDS 256         /* words of a slash command */

#define IA_PROMPT ">>> "
#define IA_ALT_PROMPT "... "
#define IA_PLACEHOLDER "Send a message (/? for help)"
#define IA_ALT_PLACEHOLDER "Press Enter to send"

#define ESC "\x1b"
#define COLOR_GREY ESC "[38;5;245m"
#define COLOR_DEFAULT ESC "[0m"
#define COLOR_BOLD ESC "[1m"
#define CLEAR_TO_EOL ESC "[K"
#define START_BRACKETED_PASTE ESC "[?2004h"
#define END_BRACKETED_PASTE ESC "[?2004l"

struct ia_msg {
	char *role, *content, *thinking; /* thinking may be NULL */
};

/* A /set parameter: the name and the words after it, as typed. */
struct ia_param {
	char *name;
	char **vals;
	size_t n;
};

enum ia_multiline { IA_ML_NONE, IA_ML_PROMPT, IA_ML_SYSTEM };

enum ia_read { IA_READ_LINE, IA_READ_EOF, IA_READ_INTERRUPT, IA_READ_EDIT, IA_READ_ERROR };

struct session {
	struct client *c;
	char *model, *think, *keepalive, *format, *system, *parent_model;
	bool think_explicit, hide_thinking, verbose, wordwrap;
	void (*summary)(const struct ob_json_doc *final);
	struct ia_msg *msgs; /* opts.Messages */
	size_t n_msgs, cap_msgs;
	char *loaded; /* the model's own MESSAGEs as a JSON array text (show's "messages"), or NULL */
	struct ia_param *params;
	size_t n_params, cap_params;

	EditLine *el;
	History *hist;
	char *hist_lines[IA_HISTORY_MAX]; /* oldest first, as the history file holds them */
	size_t n_hist;
	bool hist_enabled;
	char hist_path[PATH_MAX];
	bool use_alt, pasting, interrupted, continued;
	char *edit; /* the line when Ctrl-G asked for the editor (malloc'd), else NULL */
};

/* ---------------------------------------------------------------------------------------------------- */
/* Ctrl-C during an answer */

static volatile sig_atomic_t g_cancel;
static struct client *volatile g_client;

static void on_sigint(int sig)
{
	(void)sig;
	g_cancel = 1;
	struct client *c = g_client;
	if (c && c->sock >= 0)
		shutdown(c->sock, SHUT_RDWR);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Ollama's spinner on stderr while a request waits for its first line */

struct spinner {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool running, stop;
};

static void *spinner_main(void *arg)
{
	static const char *const frames[] = {"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"};
	struct spinner *sp = arg;
	pthread_mutex_lock(&sp->mu);
	for (size_t i = 0; !sp->stop; i = (i + 1) % 10) {
		fprintf(stderr, ESC "[?25l" ESC "[1G%s " CLEAR_TO_EOL ESC "[?25h", frames[i]);
		fflush(stderr);
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100 * 1000 * 1000;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (!sp->stop && pthread_cond_timedwait(&sp->cv, &sp->mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&sp->mu);
	return NULL;
}

static void spinner_start(struct spinner *sp)
{
	sp->stop = false;
	pthread_mutex_init(&sp->mu, NULL);
	pthread_cond_init(&sp->cv, NULL);
	sp->running = pthread_create(&sp->thread, NULL, spinner_main, sp) == 0;
}

/* Stops the spinner and clears its line (StopAndClear); a stopped spinner is left alone. */
static void spinner_stop(struct spinner *sp)
{
	if (!sp->running)
		return;
	pthread_mutex_lock(&sp->mu);
	sp->stop = true;
	pthread_cond_signal(&sp->cv);
	pthread_mutex_unlock(&sp->mu);
	pthread_join(sp->thread, NULL);
	pthread_mutex_destroy(&sp->mu);
	pthread_cond_destroy(&sp->cv);
	sp->running = false;
	fputs(ESC "[2K" ESC "[1G", stderr);
	fflush(stderr);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Small helpers */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = xstrdup(s);
}

/* strings.Fields over ASCII white space: splits s in place into at most max words. */
static size_t fields(char *s, char **out, size_t max)
{
	size_t n = 0;
	char *save = NULL;
	for (char *t = strtok_r(s, " \t\r\n\v\f", &save); t && n < max; t = strtok_r(NULL, " \t\r\n\v\f", &save))
		out[n++] = t;
	return n;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool has_suffix(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The conversation */

static bool msg_add(struct session *s, const char *role, const char *content, const char *thinking)
{
	if (s->n_msgs == s->cap_msgs) {
		size_t cap = s->cap_msgs ? s->cap_msgs * 2 : 16;
		struct ia_msg *m = realloc(s->msgs, cap * sizeof *m);
		if (!m)
			return false;
		s->msgs = m;
		s->cap_msgs = cap;
	}
	struct ia_msg *m = &s->msgs[s->n_msgs];
	m->role = strdup(role);
	m->content = strdup(content);
	m->thinking = thinking && *thinking ? strdup(thinking) : NULL;
	if (!m->role || !m->content) {
		free(m->role);
		free(m->content);
		free(m->thinking);
		return false;
	}
	s->n_msgs++;
	return true;
}

static void msgs_clear(struct session *s)
{
	for (size_t i = 0; i < s->n_msgs; i++) {
		free(s->msgs[i].role);
		free(s->msgs[i].content);
		free(s->msgs[i].thinking);
	}
	s->n_msgs = 0;
}

static void msgs_write(const struct session *s, struct ob_jw *w)
{
	for (size_t i = 0; i < s->n_msgs; i++) {
		ob_jw_obj(w);
		ob_jw_key(w, "role");
		ob_jw_string(w, s->msgs[i].role);
		ob_jw_key(w, "content");
		ob_jw_string(w, s->msgs[i].content);
		if (s->msgs[i].thinking) {
			ob_jw_key(w, "thinking");
			ob_jw_string(w, s->msgs[i].thinking);
		}
		ob_jw_obj_end(w);
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* Parameters (/set parameter) */

static void param_free(struct ia_param *p)
{
	free(p->name);
	for (size_t i = 0; i < p->n; i++)
		free(p->vals[i]);
	free(p->vals);
}

/* api.FormatParams of one name: stop takes every word, the others the first. 0, or -1 with the error text. */
static int param_apply(struct mf_params *out, const char *name, char *const *vals, size_t n, char *err, size_t cap)
{
	struct mf_error e = {0};
	struct mf_warnings w = {0};
	int rc = 0;
	size_t use = strcmp(name, "stop") == 0 ? n : 1;
	for (size_t i = 0; i < use && rc == 0; i++)
		if (mf_params_set(out, name, vals[i], &w, &e) != MF_OK) {
			snprintf(err, cap, "%s", e.msg);
			rc = -1;
		}
	mf_warnings_free(&w);
	return rc;
}

/* The session's parameters as one mf_params (each name once, the last /set winning). */
static int params_build(const struct session *s, struct mf_params *out)
{
	char err[MF_ERROR_MSG_MAX];
	for (size_t i = 0; i < s->n_params; i++)
		if (param_apply(out, s->params[i].name, s->params[i].vals, s->params[i].n, err, sizeof err) != 0)
			return -1;
	return 0;
}

static bool params_write(const struct session *s, struct ob_jw *w)
{
	struct mf_params p = {0};
	struct mf_error e = {0};
	bool ok = params_build(s, &p) == 0 && mf_params_write_json(&p, w, &e) == MF_OK;
	mf_params_free(&p);
	return ok;
}

/* /set parameter NAME VALUE...: replaces an earlier value of NAME. */
static void set_parameter(struct session *s, char **args, size_t n)
{
	const char *name = args[2];
	struct mf_params check = {0};
	char err[MF_ERROR_MSG_MAX];
	int rc = param_apply(&check, name, args + 3, n - 3, err, sizeof err);
	mf_params_free(&check);
	if (rc != 0) {
		struct ob_buf q;
		ob_buf_init(&q, 4096);
		ob_go_quote(&q, err, strlen(err));
		printf("Couldn't set parameter: %s\n", q.p ? q.p : "\"\"");
		ob_buf_free(&q);
		return;
	}
	struct ia_param np = {.name = strdup(name), .vals = calloc(n - 3, sizeof(char *)), .n = n - 3};
	bool ok = np.name && np.vals;
	for (size_t i = 0; ok && i < np.n; i++)
		ok = (np.vals[i] = strdup(args[3 + i])) != NULL;
	size_t at = s->n_params;
	for (size_t i = 0; i < s->n_params; i++)
		if (strcmp(s->params[i].name, name) == 0)
			at = i;
	if (ok && at == s->n_params && s->n_params == s->cap_params) {
		size_t cap = s->cap_params ? s->cap_params * 2 : 8;
		struct ia_param *p = realloc(s->params, cap * sizeof *p);
		ok = p != NULL;
		if (ok) {
			s->params = p;
			s->cap_params = cap;
		}
	}
	if (!ok) {
		param_free(&np);
		printf("Couldn't set parameter: \"out of memory\"\n");
		return;
	}
	if (at < s->n_params)
		param_free(&s->params[at]);
	else
		s->n_params++;
	s->params[at] = np;
	printf("Set parameter '%s' to '", name);
	for (size_t i = 3; i < n; i++)
		printf("%s%s", i > 3 ? ", " : "", args[i]);
	printf("'\n");
}

/* Go's %v of a typed parameter value. */
static void param_print_value(const struct mf_param *p)
{
	char num[64];
	switch (p->type) {
	case MF_OPT_INT:
	case MF_OPT_INT_PTR:
		printf("%lld", (long long)p->i);
		break;
	case MF_OPT_FLOAT:
		ob_go_format_float_as(num, p->f, 'g', 32);
		printf("%s", num);
		break;
	case MF_OPT_BOOL:
	case MF_OPT_BOOL_PTR:
		printf("%s", p->b ? "true" : "false");
		break;
	case MF_OPT_STRINGS:
		putchar('[');
		for (size_t i = 0; i < p->n_strs; i++)
			printf("%s%s", i ? " " : "", p->strs[i]);
		putchar(']');
		break;
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* History: Ollama's file format (one line per entry, the last 100, rewritten after each entry) */

static void history_save(struct session *s)
{
	if (!s->hist_enabled || !s->hist_path[0])
		return;
	char tmp[PATH_MAX + 8];
	int k = snprintf(tmp, sizeof tmp, "%s.tmp", s->hist_path);
	if (k < 0 || (size_t)k >= sizeof tmp)
		return;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	for (size_t i = 0; i < s->n_hist; i++)
		fprintf(f, "%s\n", s->hist_lines[i]);
	if (fclose(f) == 0)
		(void)rename(tmp, s->hist_path);
	else
		(void)unlink(tmp);
}

static void history_add(struct session *s, const char *line, bool save)
{
	char *copy = strdup(line);
	if (!copy)
		return;
	if (s->n_hist == IA_HISTORY_MAX) {
		free(s->hist_lines[0]);
		memmove(s->hist_lines, s->hist_lines + 1, (IA_HISTORY_MAX - 1) * sizeof s->hist_lines[0]);
		s->n_hist--;
	}
	s->hist_lines[s->n_hist++] = copy;
	HistEvent ev;
	history(s->hist, &ev, H_ENTER, line);
	if (save)
		history_save(s);
}

/* Reads ~/.ollama/history (creating the folder and the file as Ollama does). */
static void history_load(struct session *s)
{
	const char *home = getenv("HOME");
	if (!home || !*home)
		return;
	char dir[PATH_MAX];
	int k = snprintf(dir, sizeof dir, "%s/.ollama", home);
	if (k < 0 || (size_t)k >= sizeof dir)
		return;
	(void)mkdir(dir, 0755);
	k = snprintf(s->hist_path, sizeof s->hist_path, "%s/history", dir);
	if (k < 0 || (size_t)k >= sizeof s->hist_path) {
		s->hist_path[0] = 0;
		return;
	}
	FILE *f = fopen(s->hist_path, "a+");
	if (!f)
		return;
	rewind(f);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *p = line, *e = line + n;
		while (p < e && (*p == ' ' || (*p >= '\t' && *p <= '\r')))
			p++;
		while (e > p && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r')))
			e--;
		*e = 0;
		if (*p)
			history_add(s, p, false);
	}
	free(line);
	fclose(f);
}

/* ---------------------------------------------------------------------------------------------------- */
/* libedit: prompt, placeholder, keys */

static struct session *session_of(EditLine *el)
{
	struct session *s = NULL;
	el_get(el, EL_CLIENTDATA, &s);
	return s;
}

static char *prompt_fn(EditLine *el)
{
	struct session *s = session_of(el);
	return (s->use_alt || s->pasting) ? IA_ALT_PROMPT : IA_PROMPT;
}

static bool input_pending(void)
{
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	return poll(&p, 1, 0) > 0;
}

static int read_byte(unsigned char *b)
{
	for (;;) {
		ssize_t n = read(STDIN_FILENO, b, 1);
		if (n == 1)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return -1;
	}
}

/* libedit's character reader: Ollama's placeholder is drawn in grey after the prompt while the line is
 * empty and cleared by the next key; UTF-8 is decoded here. */
static int getc_fn(EditLine *el, wchar_t *wc)
{
	struct session *s = session_of(el);
	const LineInfo *li = el_line(el);
	bool empty = li->lastchar == li->buffer;
	if (empty && (!s->pasting || s->use_alt) && !input_pending()) {
		const char *ph = s->use_alt ? IA_ALT_PLACEHOLDER : IA_PLACEHOLDER;
		fprintf(stdout, COLOR_GREY "%s" ESC "[%zuD" COLOR_DEFAULT, ph, strlen(ph));
		fflush(stdout);
	}
	unsigned char b[4];
	int rc = read_byte(&b[0]);
	if (empty) {
		fputs(CLEAR_TO_EOL, stdout);
		fflush(stdout);
	}
	if (rc != 1)
		return rc;
	size_t need = ob_utf8_lead_len(b[0]);
	if (need < 2 || need > 4) {
		*wc = b[0];
		return 1;
	}
	for (size_t i = 1; i < need; i++) {
		rc = read_byte(&b[i]);
		if (rc != 1)
			return rc;
	}
	size_t used;
	*wc = (wchar_t)ob_utf8_decode(b, need, &used);
	return 1;
}

/* Ctrl-C: ends el_gets with the interrupt noted. */
static unsigned char key_interrupt(EditLine *el, int ch)
{
	session_of(el)->interrupted = true;
	return CC_EOF;
}

/* Ctrl-J: ends this line of the message; the next one follows after a newline (Ollama's CharCtrlJ). */
static unsigned char key_newline(EditLine *el, int ch)
{
	session_of(el)->continued = true;
	return CC_NEWLINE;
}

/* Ctrl-G: ends el_gets with the line kept for the external editor. */
static unsigned char key_edit(EditLine *el, int ch)
{
	struct session *s = session_of(el);
	const LineInfo *li = el_line(el);
	free(s->edit);
	s->edit = strndup(li->buffer, (size_t)(li->lastchar - li->buffer));
	s->interrupted = true;
	return CC_EOF;
}

/* Ctrl-D: deletes the character under the cursor; on an empty line it is EOF (Ollama's CharDelete). */
static unsigned char key_delete(EditLine *el, int ch)
{
	const LineInfo *li = el_line(el);
	if (li->lastchar == li->buffer)
		return CC_EOF;
	if (li->cursor == li->lastchar)
		return CC_NORM;
	el_cursor(el, 1);
	el_deletestr(el, 1);
	return CC_REFRESH;
}

static unsigned char key_paste_start(EditLine *el, int ch)
{
	session_of(el)->pasting = true;
	return CC_NORM;
}

static unsigned char key_paste_end(EditLine *el, int ch)
{
	session_of(el)->pasting = false;
	return CC_NORM;
}

static int editor_open(struct session *s)
{
	s->el = el_init("orun", stdin, stdout, stderr);
	s->hist = history_init();
	if (!s->el || !s->hist)
		return -1;
	HistEvent ev;
	history(s->hist, &ev, H_SETSIZE, IA_HISTORY_MAX);
	el_set(s->el, EL_CLIENTDATA, s);
	el_set(s->el, EL_EDITOR, "emacs");
	el_set(s->el, EL_SIGNAL, 1);
	el_set(s->el, EL_PROMPT, prompt_fn);
	el_set(s->el, EL_HIST, history, s->hist);
	el_set(s->el, EL_GETCFN, getc_fn);
	/* Ctrl-C is a key while editing (no SIGINT), so that it can end the line as Ollama's CharInterrupt */
	el_set(s->el, EL_SETTY, "-d", "-isig", NULL);
	/* Enter is CR and Ctrl-J is LF, told apart as Ollama's raw mode does (libedit maps CR to LF) */
	el_set(s->el, EL_SETTY, "-d", "-icrnl", "-inlcr", NULL);
	/* el_wset with static wide names: el_set's converted copies of them are never freed by libedit */
	el_wset(s->el, EL_ADDFN, L"orun-interrupt", L"Interrupt the line", key_interrupt);
	el_wset(s->el, EL_ADDFN, L"orun-delete", L"Delete the character under the cursor or exit", key_delete);
	el_wset(s->el, EL_ADDFN, L"orun-paste-start", L"Bracketed paste begins", key_paste_start);
	el_wset(s->el, EL_ADDFN, L"orun-paste-end", L"Bracketed paste ends", key_paste_end);
	el_wset(s->el, EL_ADDFN, L"orun-edit", L"Compose the prompt in an editor", key_edit);
	el_set(s->el, EL_BIND, "^C", "orun-interrupt", NULL);
	el_set(s->el, EL_BIND, "^G", "orun-edit", NULL);
	el_wset(s->el, EL_ADDFN, L"orun-newline", L"Continue the message on a new line", key_newline);
	el_set(s->el, EL_BIND, "^J", "orun-newline", NULL);
	el_set(s->el, EL_BIND, "^D", "orun-delete", NULL);
	el_set(s->el, EL_BIND, "\\e[200~", "orun-paste-start", NULL);
	el_set(s->el, EL_BIND, "\\e[201~", "orun-paste-end", NULL);
	/* Ollama's shortcuts where libedit's emacs map differs: Ctrl-W deletes the word before the cursor,
	 * Ctrl-U the text before the cursor */
	el_set(s->el, EL_BIND, "^W", "ed-delete-prev-word", NULL);
	el_set(s->el, EL_BIND, "^U", "vi-kill-line-prev", NULL);
	history_load(s);
	return 0;
}

static void editor_close(struct session *s)
{
	if (s->el)
		el_end(s->el);
	if (s->hist)
		history_end(s->hist);
	for (size_t i = 0; i < s->n_hist; i++)
		free(s->hist_lines[i]);
}

/* One line into *out (malloc'd, no newline); lines ended with Ctrl-J are joined to it with newlines. */
static enum ia_read read_line(struct session *s, char **out)
{
	*out = NULL;
	struct ob_buf joined;
	ob_buf_init(&joined, IA_MAX_INPUT);
	bool alt = s->use_alt;
	enum ia_read r = IA_READ_LINE;
	for (;;) {
		s->interrupted = s->continued = false;
		int n = 0;
		const char *line = el_gets(s->el, &n);
		if (s->interrupted) {
			s->pasting = false;
			s->use_alt = false;
			if (s->edit) {
				fputs("\r" CLEAR_TO_EOL, stdout); /* the lines go to the editor */
				ob_buf_puts(&joined, s->edit);
				free(s->edit);
				s->edit = NULL;
				r = IA_READ_EDIT;
				break;
			}
			ob_buf_free(&joined);
			return IA_READ_INTERRUPT;
		}
		if (!line || n <= 0) {
			ob_buf_free(&joined);
			return IA_READ_EOF;
		}
		size_t len = (size_t)n;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		ob_buf_append(&joined, line, len);
		if (!s->continued)
			break;
		ob_buf_putc(&joined, '\n');
		s->use_alt = true;
	}
	if (r == IA_READ_LINE)
		s->use_alt = alt;
	*out = ob_buf_take(&joined);
	ob_buf_free(&joined);
	if (!*out)
		return IA_READ_ERROR;
	if (r == IA_READ_LINE && **out)
		history_add(s, *out, true);
	return r;
}

/* ---------------------------------------------------------------------------------------------------- */
/* One answer (chat) */

struct turn {
	struct session *s;
	struct spinner *spin;
	struct wrap wr;
	bool thinking_open;
	struct ob_buf content, thinking;
	char role[32];
	struct ob_json_doc *final;
};

static void close_thinking(struct turn *t)
{
	if (t->thinking.len && t->thinking.p[t->thinking.len - 1] != '\n')
		putchar('\n');
	fputs(COLOR_GREY COLOR_BOLD "...done thinking.\n\n" COLOR_DEFAULT, stdout);
	t->thinking_open = false;
	wrap_reset(&t->wr);
}

static int on_chat_line(void *ctx, const char *line, size_t n)
{
	struct turn *t = ctx;
	if (g_cancel)
		return 1;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(line, n, &je);
	if (!d)
		return 0;
	const struct ob_json *root = ob_json_root(d);
	const struct ob_json *msg = ob_json_get(root, "message");
	const struct ob_json *role = msg ? ob_json_get(msg, "role") : NULL;
	const struct ob_json *content = msg ? ob_json_get(msg, "content") : NULL;
	const struct ob_json *thinking = msg ? ob_json_get(msg, "thinking") : NULL;
	const struct ob_json *calls = msg ? ob_json_get(msg, "tool_calls") : NULL;
	bool has_content = content && content->type == OB_JSON_STRING && content->len;
	if (has_content || !t->s->hide_thinking)
		spinner_stop(t->spin);
	if (role && role->type == OB_JSON_STRING && role->len && role->len < sizeof t->role)
		memcpy(t->role, role->str, role->len + 1);
	if (thinking && thinking->type == OB_JSON_STRING && thinking->len) {
		ob_buf_append(&t->thinking, thinking->str, thinking->len);
		if (!t->s->hide_thinking) {
			if (!t->thinking_open) {
				fputs(COLOR_GREY COLOR_BOLD "Thinking...\n" COLOR_DEFAULT COLOR_GREY, stdout);
				t->thinking_open = true;
			}
			wrap_print(&t->wr, thinking->str, thinking->len, t->s->wordwrap);
		}
	}
	if (t->thinking_open && (has_content || (calls && calls->type == OB_JSON_ARRAY && calls->count)))
		close_thinking(t);
	if (has_content) {
		ob_buf_append(&t->content, content->str, content->len);
		wrap_print(&t->wr, content->str, content->len, t->s->wordwrap);
	}
	fflush(stdout);
	const struct ob_json *done = ob_json_get(root, "done");
	if (done && done->type == OB_JSON_BOOL && done->boolean) {
		ob_json_free(t->final);
		t->final = d;
		return 0;
	}
	ob_json_free(d);
	return 0;
}

static void write_think(struct ob_jw *w, const char *think)
{
	ob_jw_key(w, "think");
	if (!strcmp(think, "true") || !strcmp(think, "false"))
		ob_jw_bool(w, !strcmp(think, "true"));
	else
		ob_jw_string(w, think);
}

static char *chat_body(const struct session *s)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, s->model);
	ob_jw_key(&w, "messages");
	ob_jw_arr(&w);
	msgs_write(s, &w);
	ob_jw_arr_end(&w);
	if (s->format && *s->format) {
		ob_jw_key(&w, "format");
		ob_jw_string(&w, s->format);
	}
	if (s->keepalive) {
		ob_jw_key(&w, "keep_alive");
		ob_jw_string(&w, s->keepalive);
	}
	if (s->n_params) {
		ob_jw_key(&w, "options");
		if (!params_write(s, &w)) {
			ob_jw_free(&w);
			return NULL;
		}
	}
	if (s->think)
		write_think(&w, s->think);
	ob_jw_obj_end(&w);
	size_t len;
	char *body = ob_jw_status(&w) == 0 ? ob_jw_take(&w, &len) : NULL;
	ob_jw_free(&w);
	return body;
}

/* Terminal echo off while an answer streams, so that keys typed meanwhile do not land in it; they wait for
 * the next prompt, Enter kept as CR (so that it sends the line there rather than continuing it). */
static bool echo_off(struct termios *saved)
{
	if (tcgetattr(STDIN_FILENO, saved) != 0)
		return false;
	struct termios t = *saved;
	t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	t.c_iflag &= ~(tcflag_t)ICRNL;
	return tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
}

/* Streams one POST with Ctrl-C armed and the spinner turning until on_line stops it: 0 done, 1 cancelled by Ctrl-C, -1 failed (c->err). */
static int stream_cancellable(struct session *s, const char *path, const char *body,
			      int (*on_line)(void *, const char *, size_t), void *ctx, struct spinner *spin)
{
	struct termios saved;
	bool restore = echo_off(&saved);
	g_cancel = 0;
	g_client = s->c;
	spinner_start(spin);
	int rc = client_stream(s->c, "POST", path, body, strlen(body), on_line, ctx);
	spinner_stop(spin);
	g_client = NULL;
	bool cancelled = g_cancel != 0;
	g_cancel = 0;
	if (cancelled) {
		tcflush(STDIN_FILENO, TCIFLUSH); /* what was typed during the answer goes with it */
		/* Ollama leaves echo on, so the terminal draws "^C" where the answer stopped and Ollama itself
		 * prints nothing more before ">>> "; draw the same with echo off */
		if (restore && (saved.c_lflag & ECHO) && (saved.c_lflag & ECHOCTL))
			fputs("^C", stdout);
	}
	if (restore)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	if (cancelled)
		return 1;
	return rc == 0 ? 0 : -1;
}

/* chat(): 0 answered (the answer joins the conversation), 1 cancelled or a thinking error already shown
 * (the session goes on), -1 failed (c->err). */
static int chat(struct session *s)
{
	char *body = chat_body(s);
	if (!body) {
		snprintf(s->c->err, sizeof s->c->err, "out of memory");
		return -1;
	}
	struct spinner spin = {0};
	struct turn t = {.s = s, .spin = &spin};
	snprintf(t.role, sizeof t.role, "assistant");
	ob_buf_init(&t.content, IA_MAX_REPLY);
	ob_buf_init(&t.thinking, IA_MAX_REPLY);
	wrap_init(&t.wr);
	int rc = stream_cancellable(s, "/api/chat", body, on_chat_line, &t, &spin);
	free(body);
	if (t.thinking_open)
		fputs(COLOR_DEFAULT, stdout);
	if (rc == 0) {
		if (s->n_msgs)
			fputs("\n\n", stdout);
		fflush(stdout);
		if (s->verbose && t.final && s->summary)
			s->summary(t.final);
		if (!msg_add(s, t.role, t.content.p ? t.content.p : "", t.thinking.p)) {
			snprintf(s->c->err, sizeof s->c->err, "out of memory");
			rc = -1;
		}
	} else if (strstr(s->c->err, "does not support thinking") || strstr(s->c->err, "invalid think value")) {
		printf("error: %s\n", s->c->err);
		rc = 1;
	}
	fflush(stdout);
	ob_buf_free(&t.content);
	ob_buf_free(&t.thinking);
	wrap_free(&t.wr);
	ob_json_free(t.final);
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The model: /api/show, loading, thinking support */

static int ignore_line(void *ctx, const char *line, size_t n)
{
	return 0;
}

static int show(struct session *s, const char *model, bool with_system, struct ob_json_doc **out)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, model);
	if (with_system && s->system) {
		ob_jw_key(&w, "system");
		ob_jw_string(&w, s->system);
	}
	ob_jw_obj_end(&w);
	size_t len = 0;
	char *body = ob_jw_status(&w) == 0 ? ob_jw_take(&w, &len) : NULL;
	ob_jw_free(&w);
	if (!body) {
		snprintf(s->c->err, sizeof s->c->err, "out of memory");
		return -1;
	}
	int rc = client_do_json(s->c, "POST", "/api/show", body, len, out);
	free(body);
	return rc;
}

static bool has_capability(const struct ob_json *r, const char *cap)
{
	const struct ob_json *caps = ob_json_get(r, "capabilities");
	if (!caps || caps->type != OB_JSON_ARRAY)
		return false;
	for (const struct ob_json *c = ob_json_first(caps); c; c = ob_json_after(caps, c))
		if (ob_json_str_eq(c, cap))
			return true;
	return false;
}

/* applyShowResponseToRunOptions + inferThinkingOption */
static void apply_show(struct session *s, const struct ob_json *r)
{
	const struct ob_json *details = ob_json_get(r, "details");
	const struct ob_json *parent = details ? ob_json_get(details, "parent_model") : NULL;
	set_str(&s->parent_model, parent && parent->type == OB_JSON_STRING ? parent->str : NULL);
	free(s->loaded);
	s->loaded = NULL;
	const struct ob_json *msgs = ob_json_get(r, "messages");
	if (msgs && msgs->type == OB_JSON_ARRAY && msgs->count) {
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_value(&w, msgs, false);
		size_t len;
		s->loaded = ob_jw_status(&w) == 0 ? ob_jw_take(&w, &len) : NULL;
		ob_jw_free(&w);
	}
	if (!s->think_explicit)
		set_str(&s->think, has_capability(r, "thinking") ? "true" : NULL);
}

/* loadOrUnloadModel: an empty generate request loads the model (and fails early on a think the model
 * does not support). 0, 1 cancelled, -1 (c->err). */
static int load_model(struct session *s)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, s->model);
	if (s->keepalive) {
		ob_jw_key(&w, "keep_alive");
		ob_jw_string(&w, s->keepalive);
	}
	if (s->think)
		write_think(&w, s->think);
	ob_jw_obj_end(&w);
	size_t len;
	char *body = ob_jw_status(&w) == 0 ? ob_jw_take(&w, &len) : NULL;
	ob_jw_free(&w);
	if (!body) {
		snprintf(s->c->err, sizeof s->c->err, "out of memory");
		return -1;
	}
	struct spinner spin = {0};
	int rc = stream_cancellable(s, "/api/generate", body, ignore_line, NULL, &spin);
	free(body);
	return rc;
}

/* ensureThinkingSupport */
static void check_thinking(struct session *s)
{
	struct ob_json_doc *d = NULL;
	if (show(s, s->model, false, &d) != 0)
		return;
	if (!has_capability(ob_json_root(d), "thinking"))
		fprintf(stderr, "warning: model \"%s\" does not support thinking output\n", s->model);
	ob_json_free(d);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Help texts (on stderr, as Ollama prints them) */

static void usage(void)
{
	fputs("Available Commands:\n"
	      "  /set            Set session variables\n"
	      "  /show           Show model information\n"
	      "  /load <model>   Load a session or model\n"
	      "  /save <model>   Save your current session\n"
	      "  /clear          Clear session context\n"
	      "  /bye            Exit\n"
	      "  /?, /help       Help for a command\n"
	      "  /? shortcuts    Help for keyboard shortcuts\n"
	      "\n"
	      "Use \"\"\" to begin a multi-line message.\n"
	      "\n",
	      stderr);
}

static void usage_set(void)
{
	fputs("Available Commands:\n"
	      "  /set parameter ...     Set a parameter\n"
	      "  /set system <string>   Set system message\n"
	      "  /set history           Enable history\n"
	      "  /set nohistory         Disable history\n"
	      "  /set wordwrap          Enable wordwrap\n"
	      "  /set nowordwrap        Disable wordwrap\n"
	      "  /set format json       Enable JSON mode\n"
	      "  /set noformat          Disable formatting\n"
	      "  /set verbose           Show LLM stats\n"
	      "  /set quiet             Disable LLM stats\n"
	      "  /set think             Enable thinking\n"
	      "  /set nothink           Disable thinking\n"
	      "\n",
	      stderr);
}

static void usage_shortcuts(void)
{
	fputs("Available keyboard shortcuts:\n"
	      "  Ctrl + a            Move to the beginning of the line (Home)\n"
	      "  Ctrl + e            Move to the end of the line (End)\n"
	      "   Alt + b            Move back (left) one word\n"
	      "   Alt + f            Move forward (right) one word\n"
	      "  Ctrl + k            Delete the sentence after the cursor\n"
	      "  Ctrl + u            Delete the sentence before the cursor\n"
	      "  Ctrl + w            Delete the word before the cursor\n"
	      "\n"
	      "  Ctrl + l            Clear the screen\n"
	      "  Ctrl + g            Open default editor to compose a prompt\n"
	      "  Ctrl + c            Stop the model from responding\n"
	      "  Ctrl + d            Exit orun (/bye)\n"
	      "\n",
	      stderr);
}

static void usage_show(void)
{
	fputs("Available Commands:\n"
	      "  /show info         Show details for this model\n"
	      "  /show license      Show model license\n"
	      "  /show modelfile    Show Modelfile for this model\n"
	      "  /show parameters   Show parameters for this model\n"
	      "  /show system       Show system message\n"
	      "  /show template     Show prompt template\n"
	      "\n",
	      stderr);
}

static void usage_parameters(void)
{
	fputs("Available Parameters:\n"
	      "  /set parameter seed <int>             Random number seed\n"
	      "  /set parameter num_predict <int>      Max number of tokens to predict\n"
	      "  /set parameter top_k <int>            Pick from top k num of tokens\n"
	      "  /set parameter top_p <float>          Pick token based on sum of probabilities\n"
	      "  /set parameter min_p <float>          Pick token based on top token probability * min_p\n"
	      "  /set parameter num_ctx <int>          Set the context size\n"
	      "  /set parameter temperature <float>    Set creativity level\n"
	      "  /set parameter repeat_penalty <float> How strongly to penalize repetitions\n"
	      "  /set parameter repeat_last_n <int>    Set how far back to look for repetitions\n"
	      "  /set parameter num_gpu <int>          The number of layers to send to the GPU\n"
	      "  /set parameter stop <string> <string> ...   Set the stop parameters\n"
	      "\n",
	      stderr);
}

/* ---------------------------------------------------------------------------------------------------- */
/* The commands */

/* The outcome of a command: go on reading, send what was gathered, or end the session. */
enum ia_next { IA_NEXT_READ, IA_NEXT_SEND, IA_NEXT_EXIT, IA_NEXT_FAIL };

/* /set system TEXT: replaces a system message that is the last message, else appends one. */
static bool set_system(struct session *s, const char *text, bool replace_last)
{
	set_str(&s->system, text);
	if (replace_last && s->n_msgs && strcmp(s->msgs[s->n_msgs - 1].role, "system") == 0) {
		char *c = strdup(text);
		if (!c)
			return false;
		free(s->msgs[s->n_msgs - 1].content);
		s->msgs[s->n_msgs - 1].content = c;
	} else if (!msg_add(s, "system", text, NULL)) {
		return false;
	}
	printf("Set system message.\n");
	return true;
}

static enum ia_next do_set(struct session *s, char **a, size_t n, struct ob_buf *sb, enum ia_multiline *ml)
{
	if (n < 2) {
		usage_set();
		return IA_NEXT_READ;
	}
	const char *what = a[1];
	/* the switches that say "Set '<word>' mode." */
	static const struct {
		const char *word;
		bool wordwrap, value; /* which switch (wordwrap, else verbose) and its new value */
	} modes[] = {{"wordwrap", true, true}, {"nowordwrap", true, false}, {"verbose", false, true}, {"quiet", false, false}};
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
		if (!strcmp(what, modes[i].word)) {
			*(modes[i].wordwrap ? &s->wordwrap : &s->verbose) = modes[i].value;
			printf("Set '%s' mode.\n", what);
			return IA_NEXT_READ;
		}
	if (!strcmp(what, "history")) {
		s->hist_enabled = true;
	} else if (!strcmp(what, "nohistory")) {
		s->hist_enabled = false;
	} else if (!strcmp(what, "think")) {
		set_str(&s->think, n > 2 ? a[2] : "true");
		s->think_explicit = true;
		check_thinking(s);
		if (n > 2)
			printf("Set 'think' mode to '%s'.\n", a[2]);
		else
			printf("Set 'think' mode.\n");
	} else if (!strcmp(what, "nothink")) {
		set_str(&s->think, "false");
		s->think_explicit = true;
		check_thinking(s);
		printf("Set 'nothink' mode.\n");
	} else if (!strcmp(what, "format")) {
		if (n < 3 || strcmp(a[2], "json") != 0) {
			printf("Invalid or missing format. For 'json' mode use '/set format json'\n");
		} else {
			set_str(&s->format, a[2]);
			printf("Set format to '%s' mode.\n", a[2]);
		}
	} else if (!strcmp(what, "noformat")) {
		set_str(&s->format, NULL);
		printf("Disabled format.\n");
	} else if (!strcmp(what, "parameter")) {
		if (n < 4)
			usage_parameters();
		else
			set_parameter(s, a, n);
	} else if (!strcmp(what, "system")) {
		if (n < 3) {
			usage_set();
			return IA_NEXT_READ;
		}
		struct ob_buf text; /* the words after "system", joined by one space as Ollama joins them */
		ob_buf_init(&text, IA_MAX_INPUT);
		for (size_t i = 2; i < n; i++) {
			if (i > 2)
				ob_buf_putc(&text, ' ');
			ob_buf_puts(&text, a[i]);
		}
		const char *t = text.p ? text.p : "";
		size_t tl = text.len;
		*ml = IA_ML_NONE;
		if (has_prefix(t, "\"\"\"")) {
			t += 3;
			tl -= 3;
			*ml = IA_ML_SYSTEM;
			if (has_suffix(t, tl, "\"\"\"")) {
				tl -= 3;
				*ml = IA_ML_NONE;
			}
		}
		ob_buf_append(sb, t, tl);
		ob_buf_free(&text);
		if (*ml != IA_ML_NONE) {
			/* no newline after this first line: Ollama's sb.WriteString(line) then continue, so that
			 * "You are" and "a cat.\"\"\"" make "You area cat." */
			s->use_alt = true;
			return IA_NEXT_READ;
		}
		bool ok = set_system(s, sb->p ? sb->p : "", true);
		ob_buf_reset(sb);
		return ok ? IA_NEXT_READ : IA_NEXT_FAIL;
	} else {
		printf("Unknown command '/set %s'. Type /? for help\n", what);
	}
	return IA_NEXT_READ;
}

static void print_lines_indented(const char *text)
{
	const char *p = text;
	for (;;) {
		const char *nl = strchr(p, '\n');
		if (!nl) {
			printf("  %s\n", p);
			return;
		}
		printf("  %.*s\n", (int)(nl - p), p);
		p = nl + 1;
	}
}

static const char *str_member(const struct ob_json *r, const char *key)
{
	const struct ob_json *v = ob_json_get(r, key);
	return v && v->type == OB_JSON_STRING ? v->str : "";
}

static enum ia_next do_show(struct session *s, char **a, size_t n)
{
	if (n < 2) {
		usage_show();
		return IA_NEXT_READ;
	}
	struct ob_json_doc *d = NULL;
	if (show(s, s->model, true, &d) != 0) {
		printf("error: couldn't get model\n");
		return IA_NEXT_FAIL;
	}
	const struct ob_json *r = ob_json_root(d);
	const char *what = a[1];
	if (!strcmp(what, "info")) {
		cmd_show_info(r, false, stderr); /* Ollama: showInfo(resp, false, os.Stderr) */
	} else if (!strcmp(what, "license")) {
		const struct ob_json *lic = ob_json_get(r, "license");
		if (!lic || lic->type != OB_JSON_STRING || !lic->len)
			printf("No license was specified for this model.\n");
		else
			printf("%s\n", lic->str);
	} else if (!strcmp(what, "modelfile")) {
		printf("%s\n", str_member(r, "modelfile"));
	} else if (!strcmp(what, "parameters")) {
		const char *params = str_member(r, "parameters");
		printf("Model defined parameters:\n");
		if (!*params)
			printf("  No additional parameters were specified for this model.\n");
		else
			print_lines_indented(params);
		printf("\n");
		struct mf_params p = {0};
		if (s->n_params && params_build(s, &p) == 0 && p.n) {
			printf("User defined parameters:\n");
			for (size_t i = 0; i < p.n; i++) {
				printf("  %-30s ", p.items[i].name);
				param_print_value(&p.items[i]);
				printf("\n");
			}
			printf("\n");
		}
		mf_params_free(&p);
	} else if (!strcmp(what, "system")) {
		const char *sys = str_member(r, "system");
		if (s->system && *s->system)
			printf("%s\n\n", s->system);
		else if (*sys)
			printf("%s\n\n", sys);
		else
			printf("No system message was specified for this model.\n");
	} else if (!strcmp(what, "template")) {
		const char *tpl = str_member(r, "template");
		if (*tpl)
			printf("%s\n", tpl);
		else
			printf("No prompt template was specified for this model.\n");
	} else {
		printf("Unknown command '/show %s'. Type /? for help\n", what);
	}
	ob_json_free(d);
	return IA_NEXT_READ;
}

static enum ia_next do_load(struct session *s, char **a, size_t n)
{
	if (n != 2) {
		printf("Usage:\n  /load <modelname>\n");
		return IA_NEXT_READ;
	}
	printf("Loading model '%s'\n", a[1]);
	fflush(stdout);
	struct ob_json_doc *d = NULL;
	if (show(s, a[1], false, &d) != 0) {
		if (strstr(s->c->err, "not found")) {
			printf("Couldn't find model '%s'\n", a[1]);
			return IA_NEXT_READ;
		}
		return IA_NEXT_FAIL;
	}
	/* the new model, with its own messages; the system message and parameters stay */
	set_str(&s->model, a[1]);
	msgs_clear(s);
	apply_show(s, ob_json_root(d));
	ob_json_free(d);
	int rc = load_model(s);
	if (rc < 0) {
		if (strstr(s->c->err, "not found")) {
			printf("Couldn't find model '%s'\n", a[1]);
			return IA_NEXT_READ;
		}
		if (strstr(s->c->err, "does not support thinking")) {
			printf("error: %s\n", s->c->err);
			return IA_NEXT_READ;
		}
		return IA_NEXT_FAIL;
	}
	return IA_NEXT_READ;
}

/* NewCreateRequest: the session as a model (FROM, SYSTEM, PARAMETERs and the conversation as MESSAGEs). */
static char *create_body(const struct session *s, const char *name)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, name);
	ob_jw_key(&w, "from");
	ob_jw_string(&w, s->parent_model && *s->parent_model ? s->parent_model : s->model);
	if (s->system && *s->system) {
		ob_jw_key(&w, "system");
		ob_jw_string(&w, s->system);
	}
	bool ok = true;
	if (s->n_params) {
		ob_jw_key(&w, "parameters");
		ok = params_write(s, &w);
	}
	if (ok && (s->loaded || s->n_msgs)) {
		ob_jw_key(&w, "messages");
		ob_jw_arr(&w);
		if (s->loaded) {
			struct ob_json_error je;
			struct ob_json_doc *d = ob_json_parse(s->loaded, strlen(s->loaded), &je);
			const struct ob_json *arr = d ? ob_json_root(d) : NULL;
			for (const struct ob_json *m = arr ? ob_json_first(arr) : NULL; m; m = ob_json_after(arr, m))
				ob_jw_value(&w, m, false);
			ob_json_free(d);
		}
		msgs_write(s, &w);
		ob_jw_arr_end(&w);
	}
	ob_jw_obj_end(&w);
	size_t len;
	char *body = ok && ob_jw_status(&w) == 0 ? ob_jw_take(&w, &len) : NULL;
	ob_jw_free(&w);
	return body;
}

static enum ia_next do_save(struct session *s, char **a, size_t n)
{
	if (n != 2) {
		printf("Usage:\n  /save <modelname>\n");
		return IA_NEXT_READ;
	}
	char *body = create_body(s, a[1]);
	if (!body) {
		snprintf(s->c->err, sizeof s->c->err, "out of memory");
		return IA_NEXT_FAIL;
	}
	int rc = client_stream(s->c, "POST", "/api/create", body, strlen(body), ignore_line, NULL);
	free(body);
	if (rc != 0) {
		if (strstr(s->c->err, "invalid model name")) {
			printf("error: The model name '%s' is invalid\n", a[1]);
			return IA_NEXT_READ;
		}
		return IA_NEXT_FAIL;
	}
	printf("Created new model '%s'\n", a[1]);
	return IA_NEXT_READ;
}

static enum ia_next do_list(struct session *s, char **a, size_t n)
{
	char *argv[IA_MAX_FIELDS + 1];
	argv[0] = "list";
	for (size_t i = 1; i < n; i++)
		argv[i] = a[i];
	argv[n] = NULL;
	fflush(stdout);
	(void)cmd_list((int)n, argv); /* prints its own error */
	return IA_NEXT_READ;
}

/* A slash command (line starts with "/"), matched by prefix in Ollama's order. */
static enum ia_next command(struct session *s, const char *line, struct ob_buf *sb, enum ia_multiline *ml)
{
	char *copy = strdup(line);
	if (!copy) {
		snprintf(s->c->err, sizeof s->c->err, "out of memory");
		return IA_NEXT_FAIL;
	}
	char *a[IA_MAX_FIELDS];
	size_t n = fields(copy, a, IA_MAX_FIELDS);
	enum ia_next next = IA_NEXT_READ;
	if (n == 0)
		next = IA_NEXT_READ;
	else if (has_prefix(line, "/list"))
		next = do_list(s, a, n);
	else if (has_prefix(line, "/load"))
		next = do_load(s, a, n);
	else if (has_prefix(line, "/save"))
		next = do_save(s, a, n);
	else if (has_prefix(line, "/clear")) {
		msgs_clear(s);
		if (s->system && *s->system && !msg_add(s, "system", s->system, NULL))
			next = IA_NEXT_FAIL;
		printf("Cleared session context\n");
	} else if (has_prefix(line, "/set"))
		next = do_set(s, a, n, sb, ml);
	else if (has_prefix(line, "/show"))
		next = do_show(s, a, n);
	else if (has_prefix(line, "/help") || has_prefix(line, "/?")) {
		if (n < 2)
			usage();
		else if (!strcmp(a[1], "set") || !strcmp(a[1], "/set"))
			usage_set();
		else if (!strcmp(a[1], "show") || !strcmp(a[1], "/show"))
			usage_show();
		else if (!strcmp(a[1], "shortcut") || !strcmp(a[1], "shortcuts"))
			usage_shortcuts();
	} else if (has_prefix(line, "/exit") || has_prefix(line, "/bye"))
		next = IA_NEXT_EXIT;
	else
		printf("Unknown command '%s'. Type /? for help\n", a[0]);
	free(copy);
	return next;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Ctrl-G: the prompt composed in an editor (editInExternalEditor) */

/* exec.LookPath: name itself when it holds a slash, else the first executable PATH entry. */
static bool on_path(const char *name)
{
	if (strchr(name, '/'))
		return access(name, X_OK) == 0;
	const char *path = getenv("PATH");
	char dir[PATH_MAX];
	for (const char *p = path ? path : ""; *p;) {
		size_t n = strcspn(p, ":");
		int k = snprintf(dir, sizeof dir, "%.*s/%s", (int)n, p, name);
		if (k > 0 && (size_t)k < sizeof dir && access(dir, X_OK) == 0)
			return true;
		p += n + (p[n] == ':');
	}
	return false;
}

/* Runs the editor on a temporary file holding text; 0 with *out (malloc'd, trailing newlines cut) or -1
 * with the message in err. */
static int edit_in_editor(const char *text, char **out, char *err, size_t cap)
{
	const char *editor = getenv("OLLAMA_EDITOR");
	if (!editor || !*editor)
		editor = getenv("VISUAL");
	if (!editor || !*editor)
		editor = getenv("EDITOR");
	if (!editor || !*editor)
		editor = "vi";
	char *words = strdup(editor);
	char *argv[IA_MAX_FIELDS + 2];
	size_t n = words ? fields(words, argv, IA_MAX_FIELDS) : 0;
	int rc = -1;
	const char *tmpdir = getenv("TMPDIR"); /* os.CreateTemp("", "ollama-prompt-*.txt") */
	char path[PATH_MAX];
	int k = snprintf(path, sizeof path, "%s/ollama-prompt-XXXXXX.txt", tmpdir && *tmpdir ? tmpdir : "/tmp");
	int fd = -1;
	bool made = false; /* the temporary file exists */
	if (n == 0) {
		snprintf(err, cap, "editor %s not found, set OLLAMA_EDITOR to the path of your preferred editor", editor);
		goto out;
	}
	if (!on_path(argv[0])) {
		snprintf(err, cap, "editor \"%s\" not found, set OLLAMA_EDITOR to the path of your preferred editor",
			 argv[0]);
		goto out;
	}
	fd = k > 0 && (size_t)k < sizeof path ? mkstemps(path, 4) : -1;
	made = fd >= 0;
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		snprintf(err, cap, "creating temp file: %s", strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	argv[n] = path;
	argv[n + 1] = NULL;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		execvp(argv[0], argv);
		_exit(127);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, cap, "editor exited with error: exit status %d", WIFEXITED(status) ? WEXITSTATUS(status) : 1);
		goto out;
	}
	struct ob_buf b;
	ob_buf_init(&b, IA_MAX_INPUT);
	if (!ob_buf_read_file(&b, path)) {
		ob_buf_free(&b);
		snprintf(err, cap, "reading temp file: %s", strerror(errno));
		goto out;
	}
	while (b.len && b.p[b.len - 1] == '\n')
		b.len--;
	*out = ob_buf_take(&b);
	ob_buf_free(&b);
	rc = *out ? 0 : -1;
	if (rc != 0)
		snprintf(err, cap, "out of memory");
out:
	if (fd >= 0)
		close(fd);
	if (made)
		(void)unlink(path);
	free(words);
	return rc;
}

/* Prefill: the edited text goes back to the prompt as if pasted, its last line left to edit and send. */
static void prefill(struct session *s, const char *text)
{
	struct ob_buf b;
	ob_buf_init(&b, IA_MAX_INPUT + 16);
	if (strchr(text, '\n')) {
		ob_buf_puts(&b, "\x1b[200~");
		for (const char *p = text; *p; p++)
			ob_buf_putc(&b, *p == '\n' ? '\r' : *p);
		ob_buf_puts(&b, "\x1b[201~");
	} else {
		ob_buf_puts(&b, text);
	}
	if (!b.failed && b.p)
		el_push(s->el, b.p);
	ob_buf_free(&b);
}

/* ---------------------------------------------------------------------------------------------------- */
/* The session */

/* envconfig.NoHistory: OLLAMA_NOHISTORY as strconv.ParseBool reads it, an unparsable value counting as true. */
static bool no_history(void)
{
	const char *v = getenv("OLLAMA_NOHISTORY");
	bool b;
	if (!v || !*v)
		return false;
	return ob_go_parse_bool(v, &b) ? b : true;
}

/* The model's own messages, shown before the first prompt as Ollama shows them. */
static void print_loaded(struct session *s)
{
	if (!s->loaded)
		return;
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(s->loaded, strlen(s->loaded), &je);
	const struct ob_json *arr = d ? ob_json_root(d) : NULL;
	for (const struct ob_json *m = arr ? ob_json_first(arr) : NULL; m; m = ob_json_after(arr, m)) {
		const char *role = str_member(m, "role"), *content = str_member(m, "content");
		if (!strcmp(role, "user")) {
			printf(IA_PROMPT "%s\n", content);
		} else if (!strcmp(role, "assistant")) {
			struct wrap w;
			wrap_init(&w);
			wrap_print(&w, content, strlen(content), s->wordwrap);
			wrap_free(&w);
			printf("\n\n");
		}
	}
	ob_json_free(d);
}

/* The read loop of generateInteractive. 0, or -1 with the error in c->err. */
static int session_loop(struct session *s)
{
	struct ob_buf sb; /* the message being gathered */
	ob_buf_init(&sb, IA_MAX_INPUT);
	enum ia_multiline ml = IA_ML_NONE;
	int rc = 0;
	for (;;) {
		char *line = NULL;
		enum ia_read r = read_line(s, &line);
		if (r == IA_READ_EOF) {
			putchar('\n');
			break;
		}
		if (r == IA_READ_INTERRUPT) {
			/* the text gathered so far goes, but a """ block stays open (Ollama resets sb, not
			 * multiline): the next lines still gather until the closing """ */
			printf("\nUse Ctrl + d or /bye to exit.\n");
			ob_buf_reset(&sb);
			continue;
		}
		if (r == IA_READ_EDIT) {
			ob_buf_reset(&sb);
			char *text = NULL, err[512];
			if (edit_in_editor(line, &text, err, sizeof err) != 0)
				fprintf(stderr, "error: %s\n", err);
			else if (text[strspn(text, " \t\r\n\v\f")])
				prefill(s, text);
			free(text);
			free(line);
			continue;
		}
		if (r == IA_READ_ERROR) {
			snprintf(s->c->err, sizeof s->c->err, "out of memory");
			rc = -1;
			break;
		}
		size_t len = strlen(line);
		enum ia_next next = IA_NEXT_SEND;
		if (ml != IA_ML_NONE) {
			bool end = has_suffix(line, len, "\"\"\"");
			ob_buf_append(&sb, line, end ? len - 3 : len);
			if (!end) {
				ob_buf_putc(&sb, '\n');
				s->use_alt = true;
				next = IA_NEXT_READ;
			} else {
				if (ml == IA_ML_SYSTEM) {
					if (!set_system(s, sb.p ? sb.p : "", false))
						next = IA_NEXT_FAIL;
					ob_buf_reset(&sb);
				}
				ml = IA_ML_NONE;
				s->use_alt = false;
			}
		} else if (has_prefix(line, "\"\"\"")) {
			const char *t = line + 3;
			size_t tl = len - 3;
			bool end = has_suffix(t, tl, "\"\"\"");
			ob_buf_append(&sb, t, end ? tl - 3 : tl);
			if (!end) {
				ob_buf_putc(&sb, '\n');
				ml = IA_ML_PROMPT;
				s->use_alt = true;
			}
		} else if (s->pasting) {
			ob_buf_append(&sb, line, len);
			ob_buf_putc(&sb, '\n');
			next = IA_NEXT_READ;
		} else if (line[0] == '/') {
			next = command(s, line, &sb, &ml);
		} else {
			ob_buf_append(&sb, line, len);
		}
		free(line);
		fflush(stdout);
		if (next == IA_NEXT_EXIT)
			break;
		if (next == IA_NEXT_FAIL || sb.failed) {
			if (sb.failed)
				snprintf(s->c->err, sizeof s->c->err, "message too long (the limit is %u bytes)", IA_MAX_INPUT);
			rc = -1;
			break;
		}
		if (next != IA_NEXT_SEND || !sb.len || ml != IA_ML_NONE)
			continue;
		if (!msg_add(s, "user", sb.p, NULL)) {
			snprintf(s->c->err, sizeof s->c->err, "out of memory");
			rc = -1;
			break;
		}
		ob_buf_reset(&sb);
		if (chat(s) < 0) {
			rc = -1;
			break;
		}
	}
	ob_buf_free(&sb);
	return rc;
}

static void session_free(struct session *s)
{
	editor_close(s);
	free(s->edit);
	msgs_clear(s);
	free(s->msgs);
	for (size_t i = 0; i < s->n_params; i++)
		param_free(&s->params[i]);
	free(s->params);
	free(s->model);
	free(s->think);
	free(s->keepalive);
	free(s->format);
	free(s->system);
	free(s->parent_model);
	free(s->loaded);
}

int interactive_run(struct client *c, const struct interactive_opts *o)
{
	struct session s = {
		.c = c,
		.think_explicit = o->think != NULL,
		.hide_thinking = o->hide_thinking,
		.verbose = o->verbose,
		.wordwrap = o->wordwrap,
		.summary = o->summary,
		.hist_enabled = !no_history(),
	};
	s.model = strdup(o->model);
	s.think = xstrdup(o->think);
	s.keepalive = xstrdup(o->keepalive);
	s.format = xstrdup(o->format);
	if (!s.model || (o->think && !s.think) || (o->keepalive && !s.keepalive) || (o->format && !s.format)) {
		session_free(&s);
		return cli_error("out of memory");
	}
	struct sigaction sa = {.sa_handler = on_sigint}, old_sa;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_sa); /* no SA_RESTART: a read blocked in curl returns at once */

	int rc = 0;
	struct ob_json_doc *d = NULL;
	if (show(&s, s.model, false, &d) != 0) {
		rc = cli_error("%s", c->err);
		goto out;
	}
	apply_show(&s, ob_json_root(d));
	ob_json_free(d);
	int lr = load_model(&s);
	if (lr != 0) {
		rc = lr > 0 ? 130 : cli_error("%s", c->err);
		goto out;
	}
	print_loaded(&s);
	if (editor_open(&s) != 0) {
		rc = cli_error("cannot set up line editing (libedit) on this terminal");
		goto out;
	}
	fputs(START_BRACKETED_PASTE, stdout);
	fflush(stdout);
	if (session_loop(&s) != 0)
		rc = cli_error("%s", c->err);
	fputs(END_BRACKETED_PASTE, stdout);
	fflush(stdout);
out:
	sigaction(SIGINT, &old_sa, NULL);
	session_free(&s);
	return rc;
}
