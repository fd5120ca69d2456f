/* tools/client.h — the CLI's HTTP client for an Ollama-compatible server (libcurl), with the error texts
 * of Ollama's Go client (api/client.go): plain requests (`do`), NDJSON streams (`stream`), raw blob
 * uploads and the heartbeat, and the request bodies more than one command sends. OLLAMA_HOST selects the
 * server as envconfig.Host() parses it.
 *
 * Used by orun's client commands (create, show, list, cp, rm; ps, run, stop). Errors come back as text in
 * a caller buffer; nothing here prints.
 */
#ifndef ORUN_TOOLS_CLIENT_H
#define ORUN_TOOLS_CLIENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLIENT_ERR_MAX 2048
#define CLIENT_MAX_RESPONSE (256u << 20) /* bytes of a non-streamed response body */
#define CLIENT_MAX_LINE (8u << 20)       /* bytes of one NDJSON line (Go's scanner buffer is 8 MiB) */

struct client {
	char base[512]; /* "http://127.0.0.1:11434" (+ path prefix), no trailing slash */
	void *curl;     /* CURL * */
	char err[CLIENT_ERR_MAX];
	/* the socket of the connection in use, -1 when none: a SIGINT handler may shutdown() it to end a
	 * stream at once (the server sees the disconnect and cancels the request) */
	volatile sig_atomic_t sock;
};

/* envconfig.Host(): [scheme://]host[:port][/path] from OLLAMA_HOST (default http://127.0.0.1:11434; port 80/443
 * for an explicit http/https scheme without one; "ollama.com" → https://ollama.com:443), with 0.0.0.0 / ::
 * turned into loopback for connecting. Writes the base URL (no trailing slash) into out. */
void client_base_url(const char *ollama_host, char *out, size_t cap);

/* 0, or -1 with c->err set. */
int client_init(struct client *c);
void client_cleanup(struct client *c);

/* A response read whole. body is NUL-terminated (free() it). */
struct client_response {
	long status;
	char *body;
	size_t len;
};

/* Client.do: sends body (JSON, may be NULL) with Content-Type/Accept application/json. A status >= 400
 * is an error whose text is the body's "error" field (or the whole body when it is not that JSON), as
 * checkError does. Returns 0 (resp filled; free resp->body) or -1 (c->err). */
int client_do(struct client *c, const char *method, const char *path, const char *body, size_t len,
	      struct client_response *resp);

/* client_do, then the body parsed as JSON into *out (ob_json_free it): 0, or -1 with c->err set (the request's
 * error, or the parser's message for a body that is not JSON). */
struct ob_json_doc;
int client_do_json(struct client *c, const char *method, const char *path, const char *body, size_t len,
		   struct ob_json_doc **out);

/* Client.stream: POSTs body and hands each NDJSON line to on_line (return non-zero to stop; put a message
 * in c->err to fail). A status >= 400 fails with "<status line>: <error>" (e.g. "400 Bad Request: invalid
 * model name"); a line {"error": "..."} after streaming began fails with that text. 0 or -1. */
int client_stream(struct client *c, const char *method, const char *path, const char *body, size_t len,
		  int (*on_line)(void *ctx, const char *line, size_t n), void *ctx);

/* HEAD / (Client.Heartbeat). When the server cannot be reached the error is Ollama's Linux text
 * "could not connect to ollama server, run 'orun serve' to start it". 0 or -1. */
int client_heartbeat(struct client *c);

/* client_init, then the heartbeat: 0, or -1 with c->err set and nothing left to clean up. */
int client_connect(struct client *c);

/* GET path's JSON over a connection of its own (connect, request, clean up): 0 with *out (ob_json_free it),
 * or -1 with the error text in err (CLIENT_ERR_MAX bytes). */
int client_get_json(const char *path, struct ob_json_doc **out, char *err);

/* {"model": model} or, with rest (already-encoded members), {"model": model, rest}: malloc'd, NULL when
 * out of memory. */
char *client_model_body(const char *model, const char *rest);

/* api.ShowRequest as Go's json.Marshal writes it: model, system "", template "", verbose, options null,
 * name. */
struct ob_jw;
void client_show_request(struct ob_jw *w, const char *model, const char *name, bool verbose);

/* HEAD /api/blobs/<digest>: *exists true on 200, false on 404. 0 or -1. */
int client_blob_exists(struct client *c, const char *digest, bool *exists);

/* POST /api/blobs/<digest> with the file's bytes as the body; progress(ctx, sent, total) is called as bytes
 * go out (may be NULL). 0 or -1 (c->err, e.g. the server's digest mismatch text). */
int client_upload_blob(struct client *c, const char *digest, const char *path,
		       void (*progress)(void *ctx, uint64_t sent, uint64_t total), void *ctx);

#endif
