/* tools/interactive.h — the interactive session of `orun run MODEL` (Ollama's generateInteractive): the
 * ">>> " prompt with libedit line editing and the ~/.ollama/history file, Ollama's slash commands and
 * messages, """ multi-line input and bracketed paste, and the streamed answers with word wrap, thinking
 * display and Ctrl-C cancelling the stream on the server.
 *
 * Needs a terminal on stdin and stdout; the caller (tools/cmd_run.c) decides that and parses the flags.
 */
#ifndef ORUN_TOOLS_INTERACTIVE_H
#define ORUN_TOOLS_INTERACTIVE_H

#include <stdbool.h>

struct client;
struct ob_json_doc;

/* The run flags the session starts with (borrowed for the duration of interactive_run; the commands
 * change the session's own copies). */
struct interactive_opts {
	const char *model;     /* the model to chat with (cmd_run has checked it exists) */
	const char *think;     /* NULL when --think was not given, else "true", "false", "low", "medium",
				  "high" or "max" */
	bool hide_thinking;    /* --hidethinking */
	const char *keepalive; /* --keepalive (a Go duration, already checked) or NULL */
	const char *format;    /* --format ("json") or NULL */
	bool verbose;          /* --verbose: the timings after each answer */
	bool wordwrap;         /* wrap words at the terminal width (false with --nowordwrap) */
	/* prints Ollama's Metrics.Summary of an answer's final line (on stderr); may be NULL */
	void (*summary)(const struct ob_json_doc *final);
};

/* Runs the session on c (connected; its server has the model) until /bye, Ctrl-D or an error that ends
 * Ollama's session too. Returns the exit status: 0, or 1 after printing "Error: ..." on stderr. */
int interactive_run(struct client *c, const struct interactive_opts *o);

#endif
