/* runner/api/lines.c — NDJSON lines handed from a worker thread to the connection's thread.
 *
 * The connection's thread sleeps on a condition variable (waking every 50 ms to notice a client that left
 * or the server stopping); each line goes out as one chunk through libmicrohttpd. Not the token path:
 * generations stream through runner/api/pipeline.c and runner/server/stream.c.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "base/jsonutil.h"
#include "runner/api/lines.h"

struct line_item {
	char *line;
	size_t len;
	bool error;
	int status;
	struct line_item *next;
};

struct rn_lines {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct line_item *head, *tail;
	bool closed;         /* producer finished (normally or with an error item) */
	atomic_bool consumer_gone; /* written under mu, read by the producer without it (rn_lines_gone) */
	bool producer_done;  /* the producer let go (rn_lines_release): nothing of the server is used any more */
	const atomic_bool *stopping; /* the server's flag, or NULL */
	int refs;            /* producer + consumer */
	int fd;              /* the client's socket, for disconnect checks */
	struct line_item *cur; /* item being written */
};

struct rn_lines *rn_lines_new(const atomic_bool *stopping)
{
	struct rn_lines *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->refs = 2;
	p->fd = -1;
	p->stopping = stopping;
	return p;
}

bool rn_lines_gone(struct rn_lines *p)
{
	return atomic_load(&p->consumer_gone);
}

static void lines_unref(struct rn_lines *p)
{
	pthread_mutex_lock(&p->mu);
	bool last = --p->refs == 0;
	pthread_cond_broadcast(&p->cv); /* a consumer may wait for the producer to let go */
	pthread_mutex_unlock(&p->mu);
	if (!last)
		return;
	struct line_item *it = p->head;
	while (it) {
		struct line_item *n = it->next;
		free(it->line);
		free(it);
		it = n;
	}
	if (p->cur) {
		free(p->cur->line);
		free(p->cur);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
}

static int lines_add(struct rn_lines *p, const char *line, size_t len, bool error, int status)
{
	struct line_item *it = calloc(1, sizeof *it);
	char *copy = malloc(len + 1);
	if (!it || !copy) {
		free(it);
		free(copy);
		return -1;
	}
	memcpy(copy, line, len);
	copy[len] = 0;
	it->line = copy;
	it->len = len;
	it->error = error;
	it->status = status;
	pthread_mutex_lock(&p->mu);
	bool gone = atomic_load(&p->consumer_gone);
	if (!gone && !p->closed) {
		if (p->tail)
			p->tail->next = it;
		else
			p->head = it;
		p->tail = it;
		if (error)
			p->closed = true;
		it = NULL;
	}
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (it) {
		free(it->line);
		free(it);
	}
	return gone ? -1 : 0;
}

int rn_lines_progress(struct rn_lines *p, const char *status, const char *digest, int64_t total, int64_t completed)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "status");
	ob_jw_string(&w, status ? status : "");
	if (digest && *digest) {
		ob_jw_key(&w, "digest");
		ob_jw_string(&w, digest);
	}
	if (total) {
		ob_jw_key(&w, "total");
		ob_jw_int(&w, total);
	}
	if (completed) {
		ob_jw_key(&w, "completed");
		ob_jw_int(&w, completed);
	}
	ob_jw_obj_end(&w);
	size_t n;
	char *s = ob_jw_take_line(&w, &n);
	int rc = s ? rn_lines_push(p, s, n) : 0;
	free(s);
	return rc;
}

int rn_lines_push(struct rn_lines *p, const char *line, size_t len)
{
	return lines_add(p, line, len, false, 200);
}

void rn_lines_error(struct rn_lines *p, int status, const char *msg)
{
	(void)lines_add(p, msg, strlen(msg), true, status);
}

void rn_lines_close(struct rn_lines *p)
{
	pthread_mutex_lock(&p->mu);
	p->closed = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void rn_lines_release(struct rn_lines *p)
{
	if (!p)
		return;
	/* the producer's release (the consumer never calls this once it answers) */
	pthread_mutex_lock(&p->mu);
	p->producer_done = true;
	pthread_mutex_unlock(&p->mu);
	lines_unref(p);
}

static void deadline_in(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* The server is stopping: the consumer leaves, after giving the producer a little time to stop using the
 * server (the producer notices consumer_gone at its next check). Called with mu held. */
static void wait_producer(struct rn_lines *p)
{
	struct timespec end;
	deadline_in(&end, RN_LINES_STOP_WAIT_MS);
	while (!p->producer_done && pthread_cond_timedwait(&p->cv, &p->mu, &end) == 0)
		;
}

/* Next item (blocking); NULL at the end. Marks the consumer gone when the socket closes or the server
 * stops. */
static struct line_item *lines_pop(struct rn_lines *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->head && !p->closed) {
		struct timespec ts;
		deadline_in(&ts, 50);
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
		bool stopping = p->stopping && atomic_load(p->stopping);
		if (!p->head && (stopping || rn_http_fd_gone(p->fd))) {
			atomic_store(&p->consumer_gone, true);
			if (stopping)
				wait_producer(p);
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
	}
	struct line_item *it = p->head;
	if (it) {
		p->head = it->next;
		if (!p->head)
			p->tail = NULL;
		it->next = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	return it;
}

static int lines_next(void *ctx, const char **data, size_t *len)
{
	struct rn_lines *p = ctx;
	if (p->cur) {
		free(p->cur->line);
		free(p->cur);
		p->cur = NULL;
	}
	struct line_item *it = lines_pop(p);
	if (!it)
		return 0;
	if (it->error) {
		/* after streaming started: a final {"error"} line */
		struct ob_jw w;
		ob_jw_init(&w, 0, 0);
		ob_jw_obj(&w);
		ob_jw_key(&w, "error");
		ob_jw_stringn(&w, it->line, it->len);
		ob_jw_obj_end(&w);
		size_t n;
		char *line = ob_jw_take_line(&w, &n); /* json.Encoder's line: the object and "\n" */
		free(it->line);
		if (!line) {
			free(it);
			return -1;
		}
		it->line = line;
		it->len = n;
	}
	p->cur = it;
	*data = it->line;
	*len = it->len;
	return 1;
}

static void lines_stream_close(void *ctx, bool completed)
{
	struct rn_lines *p = ctx;
	if (!completed) {
		pthread_mutex_lock(&p->mu);
		atomic_store(&p->consumer_gone, true);
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	lines_unref(p);
}

void rn_lines_respond(struct rn_http_req *r, struct rn_lines *p, bool stream)
{
	p->fd = rn_http_req_fd(r);
	struct line_item *first = lines_pop(p);
	if (!first) {
		if (rn_http_req_client_gone(r))
			rn_http_respond_error(r, 499, "request canceled");
		else
			rn_http_respond_error(r, 500, "unexpected end of response");
		lines_unref(p);
		return;
	}
	if (first->error) {
		char *msg = first->line;
		rn_http_respond_error(r, first->status ? first->status : 500, msg);
		free(first->line);
		free(first);
		lines_unref(p);
		return;
	}
	if (!stream) {
		/* waitForStream: the last progress object, or the error */
		struct line_item *last = first;
		for (;;) {
			struct line_item *it = lines_pop(p);
			if (!it)
				break;
			if (it->error) {
				rn_http_respond_error(r, it->status ? it->status : 500, it->line);
				free(it->line);
				free(it);
				free(last->line);
				free(last);
				lines_unref(p);
				return;
			}
			free(last->line);
			free(last);
			last = it;
		}
		size_t n = last->len;
		while (n && last->line[n - 1] == '\n')
			n--;
		rn_http_respond_json(r, 200, last->line, n);
		free(last->line);
		free(last);
		lines_unref(p);
		return;
	}
	struct rn_http_source src = {lines_next, lines_stream_close, p};
	rn_http_respond_stream(r, 200, "application/x-ndjson", first->line, first->len, &src);
	free(first->line);
	free(first);
}

