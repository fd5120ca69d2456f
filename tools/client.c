/* tools/client.c — libcurl client for the orun/Ollama HTTP API (see client.h).
 *
 * One CURL easy handle per client, reused (keep-alive) across requests. Response bodies have a ceiling;
 * streamed lines are split on '\n' as they arrive and handed over one by one, never buffered whole.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "base/buf.h"
#include "base/json.h"
#include "tools/client.h"

#define USER_AGENT "orun/" PACKAGE_VERSION " (linux)"

static void set_err(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(struct client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof c->err, fmt, ap);
	va_end(ap);
}

/* ---------------------------------------------------------------------------------------------------- */
/* OLLAMA_HOST */

void client_base_url(const char *env, char *out, size_t cap)
{
	char s[512];
	const char *v = env ? env : "";
	while (isspace((unsigned char)*v))
		v++;
	snprintf(s, sizeof s, "%s", v);
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	/* envconfig.Var also trims quotes */
	char *p = s;
	while (*p == '"' || *p == '\'')
		p++;
	n = strlen(p);
	while (n && (p[n - 1] == '"' || p[n - 1] == '\''))
		p[--n] = 0;

	char scheme[16] = "http", hostport[512], path[512] = "";
	const char *def_port = "11434";
	char *sep = strstr(p, "://");
	if (!sep) {
		if (strcmp(p, "ollama.com") == 0) {
			strcpy(scheme, "https");
			snprintf(hostport, sizeof hostport, "ollama.com:443");
		} else {
			snprintf(hostport, sizeof hostport, "%s", p);
		}
	} else {
		snprintf(scheme, sizeof scheme, "%.*s", (int)(sep - p), p);
		snprintf(hostport, sizeof hostport, "%s", sep + 3);
		if (strcmp(scheme, "http") == 0)
			def_port = "80";
		else if (strcmp(scheme, "https") == 0)
			def_port = "443";
	}
	char *slash = strchr(hostport, '/');
	if (slash) {
		snprintf(path, sizeof path, "%s", slash + 1);
		*slash = 0;
	}
	/* net.SplitHostPort */
	char host[520] = "", port[32] = "";
	bool ok = false;
	if (hostport[0] == '[') {
		char *rb = strchr(hostport, ']');
		if (rb && rb[1] == ':' && !strchr(rb + 2, ':')) {
			snprintf(host, sizeof host, "%.*s", (int)(rb - hostport - 1), hostport + 1);
			snprintf(port, sizeof port, "%s", rb + 2);
			ok = true;
		}
	} else {
		char *colon = strchr(hostport, ':');
		if (colon && !strchr(colon + 1, ':')) {
			snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
			snprintf(port, sizeof port, "%s", colon + 1);
			ok = true;
		}
	}
	if (!ok) {
		snprintf(port, sizeof port, "%s", def_port);
		char trimmed[512];
		size_t hl = strlen(hostport);
		if (hl >= 2 && hostport[0] == '[' && hostport[hl - 1] == ']')
			snprintf(trimmed, sizeof trimmed, "%.*s", (int)(hl - 2), hostport + 1);
		else
			snprintf(trimmed, sizeof trimmed, "%s", hostport);
		snprintf(host, sizeof host, "%s", trimmed[0] ? trimmed : "127.0.0.1");
	}
	char *end;
	long pn = strtol(port, &end, 10);
	if (!port[0] || *end || pn < 0 || pn > 65535)
		snprintf(port, sizeof port, "%s", def_port);
	if (!host[0] || strcmp(host, "0.0.0.0") == 0)
		snprintf(host, sizeof host, "127.0.0.1");
	else if (strcmp(host, "::") == 0)
		snprintf(host, sizeof host, "::1");
	bool v6 = strchr(host, ':') != NULL;
	snprintf(out, cap, "%s://%s%s%s:%s%s%s", scheme, v6 ? "[" : "", host, v6 ? "]" : "", port, path[0] ? "/" : "",
		 path);
}

int client_init(struct client *c)
{
	memset(c, 0, sizeof *c);
	c->sock = -1;
	client_base_url(getenv("OLLAMA_HOST"), c->base, sizeof c->base);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		set_err(c, "cannot initialise libcurl");
		return -1;
	}
	c->curl = curl_easy_init();
	if (!c->curl) {
		set_err(c, "cannot initialise libcurl");
		return -1;
	}
	return 0;
}

void client_cleanup(struct client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Transfers */

struct sink {
	char *buf;
	size_t len, cap, max;
	bool over;
	/* streaming: lines go to on_line as they complete */
	int (*on_line)(void *ctx, const char *line, size_t n);
	void *ctx;
	bool stopped;
	long status; /* known once the headers are in */
	struct client *c;
	char status_line[128];
	/* an error seen in the stream (a {"error"} line) */
	char *stream_error;
};

static bool sink_add(struct sink *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->max) {
		s->over = true;
		return false;
	}
	if (ob_grow(&s->buf, &s->cap, s->len + n + 1, 1, 4096, 0) != OB_GROW_OK)
		return false;
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = 0;
	return true;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
	struct sink *s = ud;
	size_t len = size * n;
	if (len > 5 && memcmp(data, "HTTP/", 5) == 0) {
		/* "HTTP/1.1 400 Bad Request\r\n" -> "400 Bad Request" (Go's Response.Status) */
		const char *sp = memchr(data, ' ', len);
		if (sp) {
			size_t rest = len - (size_t)(sp + 1 - data);
			while (rest && (sp[rest] == '\r' || sp[rest] == '\n' || sp[rest] == 0))
				rest--;
			snprintf(s->status_line, sizeof s->status_line, "%.*s", (int)rest, sp + 1);
			size_t k = strlen(s->status_line);
			while (k && (s->status_line[k - 1] == '\r' || s->status_line[k - 1] == '\n'))
				s->status_line[--k] = 0;
		}
	}
	return len;
}

/* The "error" member of a JSON object, or NULL. malloc'd. */
static char *json_error_field(const char *p, size_t n, bool *is_json)
{
	struct ob_json_error je;
	struct ob_json_doc *d = ob_json_parse(p, n, &je);
	*is_json = d != NULL;
	if (!d)
		return NULL;
	const struct ob_json *e = ob_json_get_fold(ob_json_root(d), "error");
	char *r = e && e->type == OB_JSON_STRING ? strndup(e->str, e->len) : NULL;
	ob_json_free(d);
	return r;
}

static int deliver_line(struct sink *s, const char *line, size_t n)
{
	if (n == 0)
		return 0;
	bool is_json;
	char *e = json_error_field(line, n, &is_json);
	if (s->status >= 400) {
		/* StatusError{Status, ErrorMessage}: "400 Bad Request: <error>" (the raw line when not JSON) */
		if (is_json)
			set_err(s->c, "%s%s%s", s->status_line, e && *e ? ": " : "", e ? e : "");
		else
			set_err(s->c, "%s: %.*s", s->status_line, (int)n, line);
		free(e);
		return -1;
	}
	if (!is_json) {
		set_err(s->c, "%.*s", (int)n, line);
		return -1;
	}
	if (e && *e) {
		set_err(s->c, "%s", e);
		free(e);
		return -1;
	}
	free(e);
	return s->on_line(s->ctx, line, n) ? -1 : 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
	struct sink *s = ud;
	size_t len = size * n;
	if (!s->on_line) {
		if (!sink_add(s, data, len))
			return 0;
		return len;
	}
	if (s->stopped)
		return 0;
	if (!s->status)
		curl_easy_getinfo(s->c->curl, CURLINFO_RESPONSE_CODE, &s->status);
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n')
			continue;
		if (s->len) {
			if (!sink_add(s, data + start, i - start)) {
				set_err(s->c, "bufio.Scanner: token too long");
				s->stopped = true;
				return 0;
			}
			if (deliver_line(s, s->buf, s->len)) {
				s->stopped = true;
				return 0;
			}
			s->len = 0;
		} else if (deliver_line(s, data + start, i - start)) {
			s->stopped = true;
			return 0;
		}
		start = i + 1;
	}
	if (start < len && !sink_add(s, data + start, len - start)) {
		set_err(s->c, "bufio.Scanner: token too long");
		s->stopped = true;
		return 0;
	}
	return len;
}

static struct curl_slist *headers(const char *accept, bool json_body)
{
	struct curl_slist *h = NULL;
	if (json_body)
		h = curl_slist_append(h, "Content-Type: application/json");
	char a[96];
	snprintf(a, sizeof a, "Accept: %s", accept);
	h = curl_slist_append(h, a);
	h = curl_slist_append(h, "Expect:");
	return h;
}

static bool connect_failure(CURLcode rc)
{
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;
}

/* Keep the socket of the connection in c->sock (curl's socket callbacks). */
static int on_sockopt(void *ud, curl_socket_t fd, curlsocktype purpose)
{
	((struct client *)ud)->sock = fd;
	return CURL_SOCKOPT_OK;
}

static int on_close_socket(void *ud, curl_socket_t fd)
{
	struct client *c = ud;
	if (c->sock == fd)
		c->sock = -1;
	return close(fd);
}

/* Sets up a request on the handle. */
static void prepare(struct client *c, const char *method, const char *path, struct sink *s, struct curl_slist *h)
{
	CURL *cu = c->curl;
	char url[2048];
	snprintf(url, sizeof url, "%s%s", c->base, path);
	curl_easy_reset(cu);
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(cu, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(cu, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(cu, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	curl_easy_setopt(cu, CURLOPT_SOCKOPTDATA, c);
	curl_easy_setopt(cu, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
	curl_easy_setopt(cu, CURLOPT_CLOSESOCKETDATA, c);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(cu, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
		curl_easy_setopt(cu, CURLOPT_CUSTOMREQUEST, method);
}

static void transport_error(struct client *c, const char *method, const char *path, CURLcode rc, const char *detail)
{
	if (connect_failure(rc))
		set_err(c, "could not connect to ollama server, run 'orun serve' to start it");
	else
		set_err(c, "%s \"%s%s\": %s", method, c->base, path, detail && *detail ? detail : curl_easy_strerror(rc));
}

int client_do(struct client *c, const char *method, const char *path, const char *body, size_t len,
	      struct client_response *resp)
{
	memset(resp, 0, sizeof *resp);
	struct sink s = {.max = CLIENT_MAX_RESPONSE, .c = c};
	struct curl_slist *h = headers("application/json", true);
	prepare(c, method, path, &s, h);
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, ebuf);
	if (body || strcmp(method, "POST") == 0 || strcmp(method, "DELETE") == 0) {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	}
	CURLcode rc = curl_easy_perform(c->curl);
	curl_slist_free_all(h);
	if (rc != CURLE_OK) {
		if (s.over)
			set_err(c, "response from %s is larger than %u bytes", path, CLIENT_MAX_RESPONSE);
		else
			transport_error(c, method, path, rc, ebuf);
		free(s.buf);
		return -1;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &resp->status);
	if (!s.buf)
		sink_add(&s, "", 0);
	resp->body = s.buf;
	resp->len = s.len;
	if (resp->status >= 400) {
		bool is_json;
		char *e = json_error_field(s.buf ? s.buf : "", s.len, &is_json);
		if (e)
			set_err(c, "%s", e);
		else if (is_json || !s.len)
			set_err(c, "something went wrong, please see the ollama server logs for details");
		else
			set_err(c, "%s", s.buf);
		free(e);
		free(resp->body);
		resp->body = NULL;
		return -1;
	}
	return 0;
}

int client_do_json(struct client *c, const char *method, const char *path, const char *body, size_t len,
		   struct ob_json_doc **out)
{
	*out = NULL;
	struct client_response resp;
	if (client_do(c, method, path, body, len, &resp) != 0)
		return -1;
	struct ob_json_error je;
	*out = ob_json_parse(resp.body, resp.len, &je);
	free(resp.body);
	if (!*out) {
		set_err(c, "%s", je.message);
		return -1;
	}
	return 0;
}

int client_stream(struct client *c, const char *method, const char *path, const char *body, size_t len,
		  int (*on_line)(void *ctx, const char *line, size_t n), void *ctx)
{
	struct sink s = {.max = CLIENT_MAX_LINE, .c = c, .on_line = on_line, .ctx = ctx};
	struct curl_slist *h = headers("application/x-ndjson", true);
	prepare(c, method, path, &s, h);
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
	if (strcmp(method, "POST") != 0)
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
	c->err[0] = 0;
	CURLcode rc = curl_easy_perform(c->curl);
	curl_slist_free_all(h);
	if (rc == CURLE_OK && s.len && !s.stopped) { /* a last line without its newline */
		if (!s.status)
			curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &s.status);
		if (deliver_line(&s, s.buf, s.len))
			s.stopped = true;
	}
	free(s.buf);
	if (s.stopped)
		return c->err[0] ? -1 : 0;
	if (rc != CURLE_OK) {
		transport_error(c, method, path, rc, ebuf);
		return -1;
	}
	long status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 400) { /* an error status with an empty body */
		set_err(c, "%s", s.status_line);
		return -1;
	}
	return 0;
}

int client_heartbeat(struct client *c)
{
	struct client_response r;
	if (client_do(c, "HEAD", "/", NULL, 0, &r) != 0)
		return -1;
	free(r.body);
	return 0;
}

int client_connect(struct client *c)
{
	if (client_init(c) != 0)
		return -1;
	if (client_heartbeat(c) != 0) {
		client_cleanup(c);
		return -1;
	}
	return 0;
}

int client_get_json(const char *path, struct ob_json_doc **out, char *err)
{
	struct client c;
	int rc = client_connect(&c);
	if (rc == 0) {
		rc = client_do_json(&c, "GET", path, NULL, 0, out);
		client_cleanup(&c);
	}
	if (rc != 0)
		snprintf(err, CLIENT_ERR_MAX, "%s", c.err);
	return rc;
}

char *client_model_body(const char *model, const char *rest)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, model);
	ob_jw_obj_end(&w);
	size_t n;
	char *s = ob_jw_take(&w, &n);
	ob_jw_free(&w);
	if (!s || !rest)
		return s;
	char *out = malloc(n + strlen(rest) + 2);
	if (out)
		sprintf(out, "%.*s,%s}", (int)(n - 1), s, rest);
	free(s);
	return out;
}

void client_show_request(struct ob_jw *w, const char *model, const char *name, bool verbose)
{
	ob_jw_obj(w);
	ob_jw_key(w, "model");
	ob_jw_string(w, model);
	ob_jw_key(w, "system");
	ob_jw_string(w, "");
	ob_jw_key(w, "template");
	ob_jw_string(w, "");
	ob_jw_key(w, "verbose");
	ob_jw_bool(w, verbose);
	ob_jw_key(w, "options");
	ob_jw_null(w);
	ob_jw_key(w, "name");
	ob_jw_string(w, name);
	ob_jw_obj_end(w);
}

int client_blob_exists(struct client *c, const char *digest, bool *exists)
{
	char path[128];
	snprintf(path, sizeof path, "/api/blobs/%s", digest);
	struct sink s = {.max = CLIENT_MAX_RESPONSE, .c = c};
	struct curl_slist *h = headers("application/json", false);
	prepare(c, "HEAD", path, &s, h);
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, ebuf);
	CURLcode rc = curl_easy_perform(c->curl);
	curl_slist_free_all(h);
	free(s.buf);
	if (rc != CURLE_OK) {
		transport_error(c, "HEAD", path, rc, ebuf);
		return -1;
	}
	long status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status == 200 || status == 404) {
		*exists = status == 200;
		return 0;
	}
	set_err(c, "%s", s.status_line[0] ? s.status_line : "unexpected response");
	return -1;
}

struct upload {
	FILE *f;
	uint64_t sent, total;
	void (*progress)(void *ctx, uint64_t sent, uint64_t total);
	void *ctx;
};

static size_t on_read(char *buf, size_t size, size_t n, void *ud)
{
	struct upload *u = ud;
	size_t r = fread(buf, size, n, u->f);
	u->sent += r;
	if (u->progress)
		u->progress(u->ctx, u->sent, u->total);
	return r;
}

int client_upload_blob(struct client *c, const char *digest, const char *path,
		       void (*progress)(void *ctx, uint64_t sent, uint64_t total), void *ctx)
{
	char url_path[128];
	snprintf(url_path, sizeof url_path, "/api/blobs/%s", digest);
	FILE *f = fopen(path, "rb");
	if (!f) {
		set_err(c, "open %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) != 0) {
		set_err(c, "stat %s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	struct upload u = {f, 0, (uint64_t)st.st_size, progress, ctx};
	struct sink s = {.max = CLIENT_MAX_RESPONSE, .c = c};
	struct curl_slist *h = headers("application/json", true);
	prepare(c, "POST", url_path, &s, h);
	char ebuf[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, ebuf);
	curl_easy_setopt(c->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(c->curl, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(c->curl, CURLOPT_READDATA, &u);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
	CURLcode rc = curl_easy_perform(c->curl);
	curl_slist_free_all(h);
	fclose(f);
	if (rc != CURLE_OK) {
		transport_error(c, "POST", url_path, rc, ebuf);
		free(s.buf);
		return -1;
	}
	long status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 400) {
		bool is_json;
		char *e = json_error_field(s.buf ? s.buf : "", s.len, &is_json);
		set_err(c, "%s", e ? e : s.buf && s.len ? s.buf : "something went wrong, please see the ollama server logs for details");
		free(e);
		free(s.buf);
		return -1;
	}
	free(s.buf);
	return 0;
}
