/* tests/fuzz/fuzz_request.c — splits a fuzz input into an in-memory HTTP request (fuzz_request.h). No
 * validation beyond what libmicrohttpd guarantees a handler (no NUL inside a name or value): everything
 * else is for the code under test to refuse.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/fuzz/fuzz_request.h"

/* The end of the line at p (exclusive of its LF and any CR before it); *next is after the LF. */
static char *line_end(char *p, char *end, char **next)
{
	char *lf = memchr(p, '\n', (size_t)(end - p));
	char *e = lf ? lf : end;
	*next = lf ? lf + 1 : end;
	if (e > p && e[-1] == '\r')
		e--;
	return e;
}

static void trim(char **s)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
	size_t n = strlen(*s);
	while (n && ((*s)[n - 1] == ' ' || (*s)[n - 1] == '\t'))
		(*s)[--n] = 0;
}

int fz_request_parse(struct fz_request *q, const uint8_t *data, size_t size)
{
	memset(q, 0, sizeof *q);
	/* the head: up to the first empty line */
	size_t head = size;
	for (size_t i = 0; i < size; i++) {
		if (data[i] != '\n')
			continue;
		if (i + 1 < size && data[i + 1] == '\n') {
			head = i + 2;
			break;
		}
		if (i + 2 < size && data[i + 1] == '\r' && data[i + 2] == '\n') {
			head = i + 3;
			break;
		}
	}
	if (!(q->text = malloc(head + 1)))
		return -1;
	memcpy(q->text, data, head);
	q->text[head] = 0;
	q->req.body = (const char *)data + head;
	q->req.body_len = size - head;
	q->req.headers = q->headers;

	char *p = q->text, *end = q->text + head, *next;
	char *e = line_end(p, end, &next);
	*e = 0;
	char *sp = strchr(p, ' ');
	if (!sp)
		return -1;
	*sp = 0;
	q->req.method = p;
	q->req.path = sp + 1;
	for (p = next; p < end; p = next) {
		e = line_end(p, end, &next);
		*e = 0;
		char *colon = strchr(p, ':');
		if (!colon || colon == p)
			continue;
		*colon = 0;
		char *name = p, *value = colon + 1;
		trim(&value);
		if (name[0] == '@') {
			if (q->n_settings < FZ_MAX_SETTINGS)
				q->settings[q->n_settings++] = (struct rn_http_mem_header){name + 1, value};
		} else if (q->req.n_headers < FZ_MAX_HEADERS) {
			q->headers[q->req.n_headers++] = (struct rn_http_mem_header){name, value};
		}
	}
	return 0;
}

void fz_request_free(struct fz_request *q)
{
	free(q->text);
	q->text = NULL;
}

const char *fz_setting(const struct fz_request *q, const char *name)
{
	for (size_t i = 0; i < q->n_settings; i++)
		if (strcasecmp(q->settings[i].name, name) == 0)
			return q->settings[i].value;
	return NULL;
}
