/* modelfile/parser.c — Ollama's Modelfile state machine (parser/parser.go) rune for rune, and its printer.
 *
 * The quirks are deliberate and match Ollama: the line counter counts every \r and \n, runes that Go's
 * strconv.IsPrint rejects are dropped (except space, tab and newlines inside a value), there is no escape
 * processing, text after a closing quote keeps the value open until EOF, and errors carry Ollama's texts.
 * It does not interpret commands (see request.c).
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "modelfile/parser.h"
#include "base/unicode.h"

static const char err_invalid_command[] =
	"command must be one of \"from\", \"license\", \"template\", \"system\", \"adapter\", \"draft\", "
	"\"renderer\", \"parser\", \"parameter\", \"message\", or \"requires\"";
static const char err_invalid_role[] = "message role must be one of \"system\", \"user\", or \"assistant\"";

/* ---------------------------------------------------------------------------------------------------- */
/* Input decoding: UTF-8 (BOM optional) or UTF-16 with a BOM, as x/text's unicode.BOMOverride. */

enum encoding { ENC_UTF8, ENC_UTF16BE, ENC_UTF16LE };

struct reader {
	const unsigned char *p;
	size_t n, pos;
	enum encoding enc;
};

static void reader_init(struct reader *r, const unsigned char *p, size_t n)
{
	r->p = p;
	r->n = n;
	r->pos = 0;
	r->enc = ENC_UTF8;
	if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
		r->pos = 3;
	} else if (n >= 2 && p[0] == 0xFE && p[1] == 0xFF) {
		r->enc = ENC_UTF16BE;
		r->pos = 2;
	} else if (n >= 2 && p[0] == 0xFF && p[1] == 0xFE) {
		r->enc = ENC_UTF16LE;
		r->pos = 2;
	}
}

static bool read_unit16(struct reader *r, uint32_t *u)
{
	if (r->n - r->pos < 2)
		return false;
	const unsigned char *q = r->p + r->pos;
	*u = r->enc == ENC_UTF16BE ? (uint32_t)q[0] << 8 | q[1] : (uint32_t)q[1] << 8 | q[0];
	r->pos += 2;
	return true;
}

/* Next rune, or false at the end of the input. */
static bool reader_next(struct reader *r, uint32_t *out)
{
	if (r->pos >= r->n)
		return false;
	if (r->enc == ENC_UTF8) {
		size_t size;
		*out = ob_utf8_decode(r->p + r->pos, r->n - r->pos, &size);
		r->pos += size;
		return true;
	}
	uint32_t u;
	if (!read_unit16(r, &u)) { /* a lone trailing byte */
		r->pos = r->n;
		*out = OB_RUNE_ERROR;
		return true;
	}
	if (u >= 0xD800 && u <= 0xDBFF) {
		size_t save = r->pos;
		uint32_t lo;
		if (read_unit16(r, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
			*out = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
			return true;
		}
		r->pos = save;
		*out = OB_RUNE_ERROR;
		return true;
	}
	*out = (u >= 0xDC00 && u <= 0xDFFF) ? OB_RUNE_ERROR : u;
	return true;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The state machine. */

enum state { ST_NIL, ST_NAME, ST_VALUE, ST_PARAMETER, ST_MESSAGE, ST_COMMENT };
enum rune_err { RE_NONE, RE_INVALID_COMMAND, RE_UNEXPECTED_EOF };

static bool is_alpha(uint32_t r) { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'); }
static bool is_number(uint32_t r) { return r >= '0' && r <= '9'; }
static bool is_space(uint32_t r) { return r == ' ' || r == '\t'; }
static bool is_newline(uint32_t r) { return r == '\r' || r == '\n'; }

/* parseRuneForState: the next state and the rune to keep (0 = none). */
static enum rune_err step(uint32_t r, enum state cs, enum state *next, uint32_t *keep)
{
	*keep = 0;
	switch (cs) {
	case ST_NIL:
		if (r == '#') {
			*next = ST_COMMENT;
		} else if (is_space(r) || is_newline(r)) {
			*next = ST_NIL;
		} else {
			*next = ST_NAME;
			*keep = r;
		}
		return RE_NONE;
	case ST_NAME:
		if (is_alpha(r)) {
			*next = ST_NAME;
			*keep = r;
			return RE_NONE;
		}
		if (is_space(r)) {
			*next = ST_VALUE;
			return RE_NONE;
		}
		*next = ST_NIL;
		return RE_INVALID_COMMAND;
	case ST_VALUE:
		*next = (is_newline(r) || is_space(r)) ? ST_NIL : ST_VALUE;
		*keep = r;
		return RE_NONE;
	case ST_PARAMETER:
		if (is_alpha(r) || is_number(r) || r == '_') {
			*next = ST_PARAMETER;
			*keep = r;
			return RE_NONE;
		}
		if (is_space(r)) {
			*next = ST_VALUE;
			return RE_NONE;
		}
		*next = ST_NIL;
		return RE_UNEXPECTED_EOF;
	case ST_MESSAGE:
		if (is_alpha(r)) {
			*next = ST_MESSAGE;
			*keep = r;
			return RE_NONE;
		}
		if (is_space(r)) {
			*next = ST_VALUE;
			return RE_NONE;
		}
		*next = ST_NIL;
		return RE_UNEXPECTED_EOF;
	case ST_COMMENT:
		*next = is_newline(r) ? ST_NIL : ST_COMMENT;
		return RE_NONE;
	}
	*next = ST_NIL;
	return RE_NONE;
}

static const char *const commands[] = {"from",   "license", "template",  "system",  "adapter",  "draft",
				       "renderer", "parser", "parameter", "message", "requires", NULL};

/* The lower-cased command if s is one (case-insensitively), else NULL. */
static const char *valid_command(const char *s)
{
	for (int i = 0; commands[i]; i++)
		if (strcasecmp(s, commands[i]) == 0)
			return commands[i];
	return NULL;
}

static bool valid_role(const char *s)
{
	return strcmp(s, "system") == 0 || strcmp(s, "user") == 0 || strcmp(s, "assistant") == 0;
}

/* strings.TrimSpace restricted to what a value buffer can hold (space, tab, \r, \n), then unquote().
 * On success stores the [start, end) range of the unquoted text. */
static bool trim_unquote(const char *s, size_t len, size_t *start, size_t *end)
{
	size_t a = 0, b = len;
	while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r' || s[a] == '\n'))
		a++;
	while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n'))
		b--;
	size_t n = b - a;
	const char *t = s + a;
	if (n >= 3 && memcmp(t, "\"\"\"", 3) == 0) {
		if (n >= 6 && memcmp(t + n - 3, "\"\"\"", 3) == 0) {
			*start = a + 3;
			*end = b - 3;
			return true;
		}
		return false;
	}
	if (n >= 1 && t[0] == '"') {
		if (n >= 2 && t[n - 1] == '"') {
			*start = a + 1;
			*end = b - 1;
			return true;
		}
		return false;
	}
	*start = a;
	*end = b;
	return true;
}

struct mf_modelfile *mf_modelfile_new(void)
{
	return calloc(1, sizeof(struct mf_modelfile));
}

void mf_modelfile_free(struct mf_modelfile *mf)
{
	if (!mf)
		return;
	for (size_t i = 0; i < mf->n_cmds; i++) {
		free(mf->cmds[i].name);
		free(mf->cmds[i].args);
	}
	free(mf->cmds);
	free(mf);
}

static int add_command(struct mf_modelfile *mf, char *name, char *args)
{
	if (mf->n_cmds == mf->cap && OB_GROW(mf->cmds, mf->cap, mf->n_cmds + 1, 0) != OB_GROW_OK)
		return MF_ERR_NOMEM;
	mf->cmds[mf->n_cmds].name = name;
	mf->cmds[mf->n_cmds].args = args;
	mf->n_cmds++;
	return MF_OK;
}

int mf_modelfile_add(struct mf_modelfile *mf, const char *name, const char *args)
{
	char *n = strdup(name), *a = strdup(args ? args : "");
	if (!n || !a || add_command(mf, n, a) != MF_OK) {
		free(n);
		free(a);
		return MF_ERR_NOMEM;
	}
	return MF_OK;
}

/* Appends the finished command (name, role-prefixed value) to mf. */
static int emit(struct mf_modelfile *mf, const char *name, const char *role, const char *v, size_t n)
{
	if (mf->n_cmds >= MF_MAX_COMMANDS)
		return MF_ERR_LIMIT;
	size_t rl = role && *role ? strlen(role) + 2 : 0;
	char *args = malloc(rl + n + 1);
	char *nm = strdup(name);
	if (!args || !nm) {
		free(args);
		free(nm);
		return MF_ERR_NOMEM;
	}
	if (rl) {
		memcpy(args, role, rl - 2);
		memcpy(args + rl - 2, ": ", 2);
	}
	memcpy(args + rl, v, n);
	args[rl + n] = 0;
	if (add_command(mf, nm, args) != MF_OK) {
		free(args);
		free(nm);
		return MF_ERR_NOMEM;
	}
	return MF_OK;
}

int mf_parse(const void *data, size_t size, struct mf_modelfile **out, struct mf_error *err)
{
	*out = NULL;
	if (size > MF_MAX_MODELFILE_SIZE)
		return mf_error_set(err, MF_ERR_LIMIT, "Modelfile is %zu bytes, more than the limit of %u bytes", size,
				    MF_MAX_MODELFILE_SIZE);
	struct mf_modelfile *mf = mf_modelfile_new();
	if (!mf)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");

	struct reader rd;
	reader_init(&rd, data, size);
	struct ob_buf b;
	ob_buf_init(&b, (size_t)MF_MAX_MODELFILE_SIZE * 3 + 16);
	char name[64] = "";  /* the current command's name (a keyword or a PARAMETER name) */
	char *pname = NULL;  /* a PARAMETER name, which has no length limit */
	char role[16] = "";
	enum state curr = ST_NIL;
	int line = 1;
	int rc = MF_OK;
	uint32_t r;

	while (reader_next(&rd, &r)) {
		if (is_newline(r))
			line++;
		enum state next;
		uint32_t keep;
		enum rune_err re = step(r, curr, &next, &keep);
		if (re == RE_UNEXPECTED_EOF) {
			rc = mf_error_set(err, MF_ERR_PARSE, "unexpected EOF: %s", b.p ? b.p : "");
			goto out;
		}
		if (re == RE_INVALID_COMMAND) {
			rc = mf_error_set(err, MF_ERR_PARSE, "(line %d): %s", line, err_invalid_command);
			goto out;
		}
		if (next != curr) {
			const char *s = b.p ? b.p : "";
			switch (curr) {
			case ST_NAME: {
				const char *kw = valid_command(s);
				if (!kw) {
					rc = mf_error_set(err, MF_ERR_PARSE, "(line %d): %s", line, err_invalid_command);
					goto out;
				}
				if (strcmp(kw, "from") == 0) {
					strcpy(name, "model");
				} else if (strcmp(kw, "parameter") == 0) {
					next = ST_PARAMETER;
				} else {
					if (strcmp(kw, "message") == 0)
						next = ST_MESSAGE;
					strcpy(name, kw);
				}
				free(pname);
				pname = NULL;
				break;
			}
			case ST_PARAMETER:
				free(pname);
				pname = strdup(s);
				if (!pname) {
					rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
					goto out;
				}
				break;
			case ST_MESSAGE:
				if (!valid_role(s)) {
					rc = mf_error_set(err, MF_ERR_PARSE, "(line %d): %s", line, err_invalid_role);
					goto out;
				}
				strcpy(role, s);
				break;
			case ST_COMMENT:
			case ST_NIL:
				break;
			case ST_VALUE: {
				size_t a, e;
				if (!trim_unquote(s, b.len, &a, &e) || is_space(keep)) {
					if (!ob_buf_put_rune(&b, keep)) {
						rc = mf_error_set(err, b.over ? MF_ERR_LIMIT : MF_ERR_NOMEM,
								  "Modelfile value too large");
						goto out;
					}
					continue;
				}
				rc = emit(mf, pname ? pname : name, role, s + a, e - a);
				if (rc != MF_OK) {
					mf_error_set(err, rc, rc == MF_ERR_LIMIT ? "Modelfile has more than %d commands"
										 : "out of memory",
						     MF_MAX_COMMANDS);
					goto out;
				}
				role[0] = 0;
				break;
			}
			}
			ob_buf_reset(&b);
			curr = next;
		}
		if (keep && ob_rune_is_print(keep) && !ob_buf_put_rune(&b, keep)) {
			rc = mf_error_set(err, b.over ? MF_ERR_LIMIT : MF_ERR_NOMEM, "Modelfile value too large");
			goto out;
		}
	}

	switch (curr) {
	case ST_COMMENT:
	case ST_NIL:
		break;
	case ST_VALUE: {
		size_t a, e;
		const char *s = b.p ? b.p : "";
		if (!trim_unquote(s, b.len, &a, &e)) {
			rc = mf_error_set(err, MF_ERR_PARSE, "unexpected EOF");
			goto out;
		}
		rc = emit(mf, pname ? pname : name, role, s + a, e - a);
		if (rc != MF_OK) {
			mf_error_set(err, rc, rc == MF_ERR_LIMIT ? "Modelfile has more than %d commands" : "out of memory",
				     MF_MAX_COMMANDS);
			goto out;
		}
		break;
	}
	default:
		rc = mf_error_set(err, MF_ERR_PARSE, "unexpected EOF");
		goto out;
	}

	rc = mf_error_set(err, MF_ERR_PARSE, "no FROM line");
	for (size_t i = 0; i < mf->n_cmds; i++)
		if (strcmp(mf->cmds[i].name, "model") == 0) {
			rc = MF_OK;
			break;
		}
out:
	ob_buf_free(&b);
	free(pname);
	if (rc != MF_OK) {
		mf_modelfile_free(mf);
		return rc;
	}
	if (err) {
		err->code = MF_OK;
		err->msg[0] = 0;
	}
	*out = mf;
	return MF_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Printer. */

char *mf_quote(const char *s)
{
	size_t n = strlen(s);
	if (strchr(s, '\n') || (n && (s[0] == ' ' || s[n - 1] == ' '))) {
		const char *q = strchr(s, '"') ? "\"\"\"" : "\"";
		size_t ql = strlen(q);
		char *o = malloc(n + 2 * ql + 1);
		if (!o)
			return NULL;
		memcpy(o, q, ql);
		memcpy(o + ql, s, n);
		memcpy(o + ql + n, q, ql);
		o[n + 2 * ql] = 0;
		return o;
	}
	return strdup(s);
}

static bool append_command(struct ob_buf *b, const struct mf_command *c)
{
	static const char *const keyword_cmds[] = {"license", "template", "system", "adapter", "renderer",
						   "parser",  "requires", "draft",  NULL};
	if (strcmp(c->name, "model") == 0)
		return ob_buf_puts(b, "FROM ") && ob_buf_puts(b, c->args);
	for (int i = 0; keyword_cmds[i]; i++) {
		if (strcmp(c->name, keyword_cmds[i]) != 0)
			continue;
		char *q = mf_quote(c->args);
		if (!q)
			return false;
		for (const char *k = c->name; *k; k++)
			ob_buf_putc(b, (char)(*k - 'a' + 'A'));
		bool ok = ob_buf_putc(b, ' ') && ob_buf_puts(b, q);
		free(q);
		return ok;
	}
	if (strcmp(c->name, "message") == 0) {
		const char *sep = strstr(c->args, ": ");
		size_t rl = sep ? (size_t)(sep - c->args) : strlen(c->args);
		char *q = mf_quote(sep ? sep + 2 : "");
		if (!q)
			return false;
		bool ok = ob_buf_puts(b, "MESSAGE ") && ob_buf_append(b, c->args, rl) && ob_buf_putc(b, ' ') &&
			  ob_buf_puts(b, q);
		free(q);
		return ok;
	}
	char *q = mf_quote(c->args);
	if (!q)
		return false;
	bool ok = ob_buf_puts(b, "PARAMETER ") && ob_buf_puts(b, c->name) && ob_buf_putc(b, ' ') && ob_buf_puts(b, q);
	free(q);
	return ok;
}

char *mf_command_string(const struct mf_command *c)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	if (!append_command(&b, c)) {
		ob_buf_free(&b);
		return NULL;
	}
	return ob_buf_take(&b);
}

char *mf_modelfile_string(const struct mf_modelfile *mf)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	for (size_t i = 0; i < mf->n_cmds; i++)
		if (!append_command(&b, &mf->cmds[i]) || !ob_buf_putc(&b, '\n')) {
			ob_buf_free(&b);
			return NULL;
		}
	char *s = ob_buf_take(&b);
	if (!s)
		ob_buf_free(&b);
	return s;
}
