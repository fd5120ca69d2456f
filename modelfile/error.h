/* modelfile/error.h — status codes, the error detail struct and the warning list shared by the modelfile
 * library (parser, parameters, names, store, create).
 *
 * Fallible functions return 0 (MF_OK) or an MF_ERR_* code and fill a caller-supplied struct mf_error with
 * the code, the HTTP status the server should answer with and Ollama's own message text. Nothing in this
 * library prints or exits: warnings go back to the caller in a struct mf_warnings.
 */
#ifndef ORUN_MODELFILE_ERROR_H
#define ORUN_MODELFILE_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define MF_WUR __attribute__((warn_unused_result))
#define MF_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MF_WUR
#define MF_PRINTF(f, a)
#endif

enum mf_status {
	MF_OK = 0,
	MF_ERR_NOMEM,     /* an allocation failed */
	MF_ERR_PARSE,     /* a Modelfile, name, digest or request could not be parsed */
	MF_ERR_INVALID,   /* a value of the wrong type or out of range (parameters, request fields) */
	MF_ERR_NOT_FOUND, /* a model, manifest or blob does not exist */
	MF_ERR_IO,        /* a file could not be read, written, synced or renamed */
	MF_ERR_DIGEST,    /* content does not match its sha256 digest */
	MF_ERR_LIMIT,     /* an input passed one of the library's named limits */
	MF_ERR_FORMAT,    /* a stored file (manifest, config, GGUF) is malformed */
	MF_ERR_CANCELLED, /* the progress callback asked to stop */
	MF_ERR__COUNT
};

#define MF_ERROR_MSG_MAX 2048

/* Detail of a failure. msg is Ollama's text where Ollama has one (e.g. "(line 3): command must be one
 * of ..."), truncated to MF_ERROR_MSG_MAX-1 bytes. http_status is what the /api endpoints answer with (400, 404, 500). */
struct mf_error {
	int code;
	int http_status;
	char msg[MF_ERROR_MSG_MAX];
};

/* A short fixed description of a status code; never NULL. */
const char *mf_strerror(int code);

/* Fill *e (when e is not NULL) with code, an HTTP status chosen from the code, and a printf-formatted
 * message; returns code. */
int mf_error_set(struct mf_error *e, int code, const char *fmt, ...) MF_PRINTF(3, 4);

/* Same, with an explicit HTTP status. */
int mf_error_set_http(struct mf_error *e, int code, int http_status, const char *fmt, ...) MF_PRINTF(4, 5);

/* Warnings collected for the caller to print (e.g. "parameter mirostat is deprecated"). */
struct mf_warnings {
	char **items;
	size_t n, cap;
};

/* Appends a printf-formatted warning; returns MF_OK or MF_ERR_NOMEM. w may be NULL (the warning is dropped). */
int mf_warn(struct mf_warnings *w, const char *fmt, ...) MF_PRINTF(2, 3);

/* Frees the items and resets the list; NULL is fine. */
void mf_warnings_free(struct mf_warnings *w);

#endif
