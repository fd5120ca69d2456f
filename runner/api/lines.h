/* runner/api/lines.h — a queue of complete NDJSON lines from a worker thread to the connection that answers
 * with them (the streamed progress of /api/create).
 *
 * The first item decides the status: an error before any line becomes the HTTP error response, an error
 * after lines went out a last {"error": msg} line. The producer learns that nobody listens any more (the
 * client left, or the server is stopping) from rn_lines_gone and from push, and is expected to stop soon.
 * Thread-safety: one producer thread, one consumer (the connection's thread); the queue is freed when both
 * have let go.
 */
#ifndef ORUN_RUNNER_API_LINES_H
#define ORUN_RUNNER_API_LINES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runner/server/http.h"

struct rn_lines;

/* How long a consumer that sees the server stopping waits for its producer to wind up (so that a cancelled
 * create removes its temporary files before the process exits). */
#define RN_LINES_STOP_WAIT_MS 10000

/* A queue with two references (producer and consumer), or NULL when out of memory. stopping (may be NULL;
 * must outlive the consumer) is the server's flag: once it is set the consumer stops waiting, marks itself
 * gone and gives the producer up to RN_LINES_STOP_WAIT_MS to finish. */
struct rn_lines *rn_lines_new(const atomic_bool *stopping);
/* Producer side. push copies the line; error ends the stream with {"error": msg} (status used only if no
 * line was sent yet); close ends it normally. push returns -1 when the consumer is gone (the producer should
 * stop). */
int rn_lines_push(struct rn_lines *p, const char *line, size_t len);
/* Producer side: true once the consumer is gone (client left, answer failed, server stopping). Cheap enough
 * to ask between the chunks of a long job. */
bool rn_lines_gone(struct rn_lines *p);
/* Producer side: pushes Ollama's api.ProgressResponse {"status", "digest"?, "total"?, "completed"?} (empty
 * digest and zero counts left out, as omitempty does). Returns as push (-1: the consumer is gone). */
int rn_lines_progress(struct rn_lines *p, const char *status, const char *digest, int64_t total, int64_t completed);
void rn_lines_error(struct rn_lines *p, int status, const char *msg);
void rn_lines_close(struct rn_lines *p);
/* Drops one reference (the producer's, or the consumer's when the answer could not start); NULL is fine. */
void rn_lines_release(struct rn_lines *p);
/* Consumer side: answers the request from the queue (streamed NDJSON, or, with stream false, only the last
 * line as application/json). Takes over the consumer reference. */
void rn_lines_respond(struct rn_http_req *r, struct rn_lines *p, bool stream);

#endif
