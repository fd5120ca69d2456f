/* modelfile/parser.h — the Modelfile parser and printer, byte-for-byte as Ollama's parser/parser.go.
 *
 * A Modelfile is a list of commands (FROM, PARAMETER, TEMPLATE, SYSTEM, ADAPTER, LICENSE, MESSAGE,
 * REQUIRES, RENDERER, PARSER, DRAFT). The parser keeps them in order as (name, args) pairs exactly as
 * Ollama's Command struct does: FROM becomes name "model", keywords are lower-cased, a PARAMETER's name is
 * kept as written, and a MESSAGE is stored as "<role>: <content>". Interpretation of the commands (files,
 * parameters, messages) is in modelfile/request.h.
 */
#ifndef ORUN_MODELFILE_PARSER_H
#define ORUN_MODELFILE_PARSER_H

#include <stddef.h>

#include "modelfile/error.h"

#define MF_MAX_MODELFILE_SIZE (64u << 20) /* bytes: larger Modelfiles are refused */
#define MF_MAX_COMMANDS 100000            /* commands in one Modelfile */

struct mf_command {
	char *name; /* "model", "adapter", "license", "template", "system", "renderer", "parser", "requires",
		       "draft", "message", or a PARAMETER name as written (may be empty) */
	char *args; /* the value, unquoted; never NULL */
};

struct mf_modelfile {
	struct mf_command *cmds;
	size_t n_cmds, cap;
};

/* Parses data[0..size) (UTF-8, or UTF-8/UTF-16 with a byte-order mark). On success stores a new
 * Modelfile in *out and returns MF_OK. On failure returns MF_ERR_PARSE with Ollama's message in err->msg
 * ("(line N): command must be one of ...", "unexpected EOF", "unexpected EOF: <text>", "no FROM line"),
 * MF_ERR_LIMIT for inputs over the limits above, or MF_ERR_NOMEM. */
int mf_parse(const void *data, size_t size, struct mf_modelfile **out, struct mf_error *err) MF_WUR;

/* An empty Modelfile to build with mf_modelfile_add (e.g. for `show --modelfile`); NULL when out of memory. */
struct mf_modelfile *mf_modelfile_new(void) MF_WUR;

/* Appends a command (copies both strings); MF_OK or MF_ERR_NOMEM. */
int mf_modelfile_add(struct mf_modelfile *mf, const char *name, const char *args) MF_WUR;

/* Frees the Modelfile; NULL is fine. */
void mf_modelfile_free(struct mf_modelfile *mf);

/* Ollama's quote(): s unchanged unless it contains a newline or starts or ends with a space; then wrapped
 * in """ if it contains a double quote, else in ". Returns a new string (free() it) or NULL. */
char *mf_quote(const char *s) MF_WUR;

/* One command as Ollama's Command.String() prints it ("FROM x", "SYSTEM <quoted>", "MESSAGE user <quoted>",
 * "PARAMETER name <quoted>"), without a newline. New string or NULL. */
char *mf_command_string(const struct mf_command *c) MF_WUR;

/* The whole Modelfile as Modelfile.String(): each command followed by "\n". New string or NULL. */
char *mf_modelfile_string(const struct mf_modelfile *mf) MF_WUR;

#endif
