/* runner/api/api.c — the few helpers every API handler shares: its context, its cancellation test, its
 * request body and its JSON and error replies. Nothing here knows an endpoint.
 */
#include "config.h"

#include "runner/api/api.h"
#include "runner/api/decode.h"

struct rn_api *rn_api_of(struct rn_http_req *r)
{
	return rn_http_req_app(r);
}

bool rn_api_req_gone(void *req)
{
	const struct rn_api *a = rn_http_req_app(req);
	return atomic_load(&a->stopping) || rn_http_req_client_gone(req);
}

void rn_api_send_jw(struct rn_http_req *r, int status, struct ob_jw *w)
{
	const char *s = ob_jw_str(w);
	if (s)
		rn_http_respond_json(r, status, s, w->len);
	else
		rn_http_respond_error(r, 500, ob_jw_status(w) == OB_JW_NOMEM ? "out of memory" : "json: unsupported value");
	ob_jw_free(w);
}

void rn_api_respond_error(struct rn_http_req *r, int status, const char *msg)
{
	rn_http_respond_error(r, status, msg);
}

struct ob_json_doc *rn_api_decode(struct rn_http_req *r, struct rn_dec *d, const char *go_struct,
				  const struct ob_json **root,
				  void (*respond_error)(struct rn_http_req *r, int status, const char *msg))
{
	*d = (struct rn_dec){.go_struct = go_struct, .prefix = ""};
	size_t len;
	const char *body = rn_http_req_body(r, &len);
	struct ob_json_doc *doc = rn_dec_parse(d, body, len, root);
	if (!doc)
		respond_error(r, 400, d->err);
	return doc;
}
