/* runner/api/lines.h — a queue of complete NDJSON lines from a worker thread to the connection that answers
 * with them (the streamed progress of /api/create).
 *
 * The first item decides the status: an error before any line becomes the HTTP error response, an error
 * after lines went out a last {"error": msg} line. Thread-safety: one producer thread, one consumer (the
 * connection's thread); the queue is freed when both have let go.
 */
#ifndef ORUN_RUNNER_API_LINES_H
#define ORUN_RUNNER_API_LINES_H

#include <stdbool.h>
#include <stddef.h>

#include "runner/server/http.h"

struct rn_lines;

/* A queue with two references (producer and consumer), or NULL when out of memory. */
struct rn_lines *rn_lines_new(void);
/* Producer side. push copies the line; error ends the stream with {"error": msg} (status used only if no
 * line was sent yet); close ends it normally. push returns -1 when the consumer is gone (the producer should
 * stop). */
int rn_lines_push(struct rn_lines *p, const char *line, size_t len);
void rn_lines_error(struct rn_lines *p, int status, const char *msg);
void rn_lines_close(struct rn_lines *p);
/* Drops one reference (the producer's, or the consumer's when the answer could not start); NULL is fine. */
void rn_lines_release(struct rn_lines *p);
/* Consumer side: answers the request from the queue (streamed NDJSON, or, with stream false, only the last
 * line as application/json). Takes over the consumer reference. */
void rn_lines_respond(struct rn_http_req *r, struct rn_lines *p, bool stream);

#endif
