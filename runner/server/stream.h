/* runner/server/stream.h — the streaming writer: how every streamed answer's pieces reach the socket.
 *
 * All streamed generations (Ollama's NDJSON, OpenAI's and llama-server's SSE) go out through one rn_stream.
 * libmicrohttpd sends the status line, the headers and the first piece. After that, while libmicrohttpd waits
 * in the producer's next() for more, each piece is written straight to the socket as one HTTP chunk (one
 * non-blocking sendmsg on a TCP_NODELAY socket) by whichever thread produced it: the connection's own thread,
 * or the engine's thread through a job sink while the connection's thread sleeps. The bytes the socket does
 * not take at once are kept and written by the connection's thread (which may block; the engine never does).
 * Without chunked framing (an HTTP/1.0 client) the pieces go through libmicrohttpd instead, unframed.
 *
 * Thread-safety: rn_stream_write may run on another thread only while the connection's thread is inside the
 * producer's next() and does not touch the writer (the job's lock orders the two: runner/server/sched.h).
 */
#ifndef ORUN_RUNNER_SERVER_STREAM_H
#define ORUN_RUNNER_SERVER_STREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "runner/server/http.h"

#define RN_STREAM_WRITE_POLL_MS 1000 /* rn_stream_flush: wait for room in the socket this long between tries */

struct rn_stream;

/* What fills a started stream. */
struct rn_stream_producer {
	/* Connection thread, may block: produces more of the body with rn_stream_write. Returns 1 (go on), 0 at
	 * the end of the body, -1 to cut the connection. */
	int (*next)(void *ctx, struct rn_stream *w);
	/* Runs exactly once, when the response is finished or the connection is gone (completed false); frees
	 * ctx. */
	void (*close)(void *ctx, bool completed);
	void *ctx;
};

enum rn_stream_status {
	RN_STREAM_SENT, /* on the wire */
	RN_STREAM_HELD, /* kept for the connection's thread: a tail the socket did not take (written by the next
			 * rn_stream_flush), or a piece libmicrohttpd sends once next() returns */
	RN_STREAM_GONE, /* the client is gone, or out of memory: stop producing */
};

/* A writer for r's streamed answer, not started: what is written before rn_stream_start becomes the first
 * bytes of the body. NULL when out of memory. */
struct rn_stream *rn_stream_new(struct rn_http_req *r);
/* Frees a writer that was not started; NULL is fine. */
void rn_stream_free(struct rn_stream *w);

/* Answers r with status and content type, the pieces written so far, then what p produces. Takes over w and
 * p, also when it fails (p->close then runs with completed false). Returns 0, or -1 when out of memory (a 500
 * is answered). */
int rn_stream_start(struct rn_stream *w, int status, const char *content_type, const struct rn_stream_producer *p);

/* True while pieces go straight to the socket (libmicrohttpd waits in next(), the framing is chunked). */
bool rn_stream_direct(const struct rn_stream *w);

/* Writes one piece as one chunk, never blocking (see the enum). Before the start, and without chunked
 * framing, the piece is kept for libmicrohttpd (RN_STREAM_HELD): next() should then return. */
enum rn_stream_status rn_stream_write(struct rn_stream *w, const char *data, size_t len);

/* Connection thread: writes the tail kept by rn_stream_write (blocking, polling for room). Returns 0, or -1
 * when the client is gone. */
int rn_stream_flush(struct rn_stream *w);

#endif
