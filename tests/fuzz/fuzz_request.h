/* tests/fuzz/fuzz_request.h — the input format of the fuzz targets that run HTTP requests in memory
 * (fuzz_http, fuzz_api): the bytes read as an HTTP request,
 *
 *     METHOD SP PATH LF  { NAME ":" VALUE LF }  LF  BODY
 *
 * lines may end in CR LF; a header line without ':' is skipped; a name or value ends at a NUL byte, as
 * libmicrohttpd never hands over one. Header names starting with '@' are settings of the harness, not
 * headers. The body is everything after the blank line, left in place (an exact-size view of the input).
 */
#ifndef ORUN_TESTS_FUZZ_REQUEST_H
#define ORUN_TESTS_FUZZ_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "runner/server/http.h"

#define FZ_MAX_HEADERS 32 /* headers kept; more are dropped */
#define FZ_MAX_SETTINGS 8

struct fz_request {
	char *text; /* the request line and headers, copied with NULs placed (owned) */
	struct rn_http_mem_request req;
	struct rn_http_mem_header headers[FZ_MAX_HEADERS];
	struct rn_http_mem_header settings[FZ_MAX_SETTINGS]; /* names without the '@' */
	size_t n_settings;
};

/* Splits data[0..size) (which must outlive q: the body points into it). Returns 0, or -1 when out of memory
 * or when there is no request line. */
int fz_request_parse(struct fz_request *q, const uint8_t *data, size_t size);
void fz_request_free(struct fz_request *q);

/* The value of setting "@name", or NULL. */
const char *fz_setting(const struct fz_request *q, const char *name);

#endif
