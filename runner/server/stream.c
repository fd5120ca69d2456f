/* runner/server/stream.c — streamed answers: pieces straight to the socket as HTTP chunks, the rest through
 * libmicrohttpd's content reader.
 *
 * Writing to the socket past libmicrohttpd is sound only while libmicrohttpd has sent everything it was given
 * and waits in the content reader for more (our next()), and only with chunked framing, which this file then
 * writes itself. It knows nothing about JSON, models or jobs.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/buf.h"
#include "runner/server/stream.h"

#define CHUNK_HEADER_MAX 24 /* "<hex size>\r\n" */

struct rn_stream {
	struct rn_http_req *r;
	int fd;
	bool chunked;          /* HTTP/1.1: the body is chunked */
	bool direct;           /* libmicrohttpd waits in next(): pieces go straight to the socket */
	bool ended;            /* the producer said the body is complete */
	struct ob_buf pending; /* whole pieces for libmicrohttpd to send (before the start; HTTP/1.0) */
	struct ob_buf tail;    /* direct: bytes of chunks the socket did not take at once, framed */
	struct rn_stream_producer p;
};

struct rn_stream *rn_stream_new(struct rn_http_req *r)
{
	struct rn_stream *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->r = r;
	w->fd = rn_http_req_fd(r);
	w->chunked = rn_http_req_chunked(r);
	ob_buf_init(&w->pending, 0);
	ob_buf_init(&w->tail, 0);
	return w;
}

void rn_stream_free(struct rn_stream *w)
{
	if (!w)
		return;
	ob_buf_free(&w->pending);
	ob_buf_free(&w->tail);
	free(w);
}

bool rn_stream_direct(const struct rn_stream *w)
{
	return w->direct;
}

/* Keeps n bytes of a framed chunk, from byte `from` on (what a short write left). */
static void keep_frame(struct rn_stream *w, const char *hdr, size_t hn, const char *data, size_t len, size_t from)
{
	if (from < hn)
		ob_buf_append(&w->tail, hdr + from, hn - from);
	size_t off = from > hn ? from - hn : 0;
	if (off < len)
		ob_buf_append(&w->tail, data + off, len - off);
	size_t toff = from > hn + len ? from - hn - len : 0;
	ob_buf_append(&w->tail, "\r\n" + toff, 2 - toff);
}

enum rn_stream_status rn_stream_write(struct rn_stream *w, const char *data, size_t len)
{
	if (!len)
		return RN_STREAM_SENT;
	if (!w->direct) {
		ob_buf_append(&w->pending, data, len);
		return w->pending.failed ? RN_STREAM_GONE : RN_STREAM_HELD;
	}
	char hdr[CHUNK_HEADER_MAX];
	size_t hn = (size_t)snprintf(hdr, sizeof hdr, "%zx\r\n", len);
	size_t sent = 0;
	if (w->tail.len == 0) {
		/* the whole chunk in one sendmsg: one segment on the wire for the client to read */
		struct iovec iov[3] = {{hdr, hn}, {(void *)data, len}, {"\r\n", 2}};
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = 3};
		ssize_t k = sendmsg(w->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return RN_STREAM_GONE;
		sent = k > 0 ? (size_t)k : 0;
		if (sent == hn + len + 2)
			return RN_STREAM_SENT;
	}
	/* behind an earlier tail, or a short write: the connection's thread writes the rest in order */
	keep_frame(w, hdr, hn, data, len, sent);
	return w->tail.failed ? RN_STREAM_GONE : RN_STREAM_HELD;
}

int rn_stream_flush(struct rn_stream *w)
{
	const char *p = w->tail.p;
	size_t len = w->tail.len;
	while (len) {
		ssize_t k = send(w->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k > 0) {
			p += k;
			len -= (size_t)k;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		struct pollfd pf = {.fd = w->fd, .events = POLLOUT};
		if (poll(&pf, 1, RN_STREAM_WRITE_POLL_MS) < 0 && errno != EINTR)
			return -1;
		if (pf.revents & (POLLERR | POLLHUP | POLLNVAL))
			return -1;
	}
	ob_buf_reset(&w->tail);
	w->tail.failed = false;
	return 0;
}

/* libmicrohttpd's content reader asks for the next piece: everything before is on the wire. */
static int stream_next(void *ctx, const char **data, size_t *len)
{
	struct rn_stream *w = ctx;
	ob_buf_reset(&w->pending); /* sent by libmicrohttpd */
	w->pending.failed = false;
	w->direct = w->fd >= 0 && w->chunked;
	for (;;) {
		if (rn_stream_flush(w) < 0)
			return -1;
		if (w->pending.len) {
			*data = w->pending.p;
			*len = w->pending.len;
			return 1;
		}
		if (w->ended)
			return 0;
		int rc = w->p.next(w->p.ctx, w);
		if (rc < 0)
			return -1;
		if (rc == 0)
			w->ended = true;
	}
}

static void stream_close(void *ctx, bool completed)
{
	struct rn_stream *w = ctx;
	w->p.close(w->p.ctx, completed);
	rn_stream_free(w);
}

int rn_stream_start(struct rn_stream *w, int status, const char *content_type, const struct rn_stream_producer *p)
{
	w->p = *p;
	struct rn_http_source src = {stream_next, stream_close, w};
	/* rn_http_respond_stream copies the first piece; on failure it calls stream_close */
	return rn_http_respond_stream(w->r, status, content_type, w->pending.p ? w->pending.p : "", w->pending.len, &src);
}
