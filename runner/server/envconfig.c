/* runner/server/envconfig.c — Ollama's environment variables and Go's duration syntax.
 *
 * Mirrors envconfig/config.go: values are trimmed of spaces and quotes, invalid numbers fall back to the
 * default with a warning, durations accept Go syntax or plain integer seconds. It does not validate paths or
 * bind anything; the HTTP layer and the scheduler act on the values.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/server/envconfig.h"

char *rn_srv_env(const char *key, char *buf, size_t size)
{
	const char *v = getenv(key);
	if (size == 0)
		return buf;
	buf[0] = 0;
	if (!v)
		return buf;
	const char *b = v, *e = v + strlen(v);
	while (b < e && isspace((unsigned char)*b))
		b++;
	while (e > b && isspace((unsigned char)e[-1]))
		e--;
	/* strings.Trim(s, "\"'"): strip any run of quote characters at both ends */
	while (b < e && (*b == '"' || *b == '\''))
		b++;
	while (e > b && (e[-1] == '"' || e[-1] == '\''))
		e--;
	size_t n = (size_t)(e - b);
	if (n >= size)
		n = size - 1;
	memcpy(buf, b, n);
	buf[n] = 0;
	return buf;
}

static void add_warning(struct rn_srv_config *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warning(struct rn_srv_config *c, const char *fmt, ...)
{
	if (c->n_warnings >= RN_SRV_MAX_WARNINGS)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	char *s = strdup(buf);
	if (s)
		c->warnings[c->n_warnings++] = s;
}

/* Copies src into dst[size], truncating (a host name longer than the field is not a usable host anyway). */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

static bool is_ipv6_literal(const char *s)
{
	return strchr(s, ':') != NULL;
}

char *rn_srv_join_host_port(const char *host, int port, char *buf, size_t size)
{
	if (is_ipv6_literal(host))
		snprintf(buf, size, "[%s]:%d", host, port);
	else
		snprintf(buf, size, "%s:%d", host, port);
	return buf;
}

/* Go's net.SplitHostPort: "host:port", "[v6]:port"; fails when there is no port or too many colons. */
static bool split_host_port(const char *hp, char *host, size_t hsize, char *port, size_t psize)
{
	const char *colon = strrchr(hp, ':');
	if (!colon)
		return false;
	const char *h0 = hp, *h1 = colon;
	if (hp[0] == '[') {
		const char *rb = strchr(hp, ']');
		if (!rb || rb + 1 != colon)
			return false;
		h0 = hp + 1;
		h1 = rb;
	} else {
		for (const char *p = hp; p < colon; p++)
			if (*p == ':' || *p == '[' || *p == ']')
				return false; /* "too many colons" */
	}
	if ((size_t)(h1 - h0) >= hsize || strlen(colon + 1) >= psize)
		return false;
	memcpy(host, h0, (size_t)(h1 - h0));
	host[h1 - h0] = 0;
	strcpy(port, colon + 1);
	return true;
}

void rn_srv_parse_host(const char *value, struct rn_srv_host *out, char *warn, size_t warn_size)
{
	char s[1024];
	int default_port = RN_SRV_DEFAULT_PORT;
	memset(out, 0, sizeof *out);
	if (warn && warn_size)
		warn[0] = 0;
	/* strings.TrimSpace */
	const char *b = value ? value : "";
	while (isspace((unsigned char)*b))
		b++;
	snprintf(s, sizeof s, "%s", b);
	for (size_t n = strlen(s); n > 0 && isspace((unsigned char)s[n - 1]); n--)
		s[n - 1] = 0;

	const char *hostport = s;
	char *sep = strstr(s, "://");
	if (!sep) {
		strcpy(out->scheme, "http");
		if (strcmp(s, "ollama.com") == 0) {
			strcpy(out->scheme, "https");
			hostport = "ollama.com:443";
		}
	} else {
		*sep = 0;
		snprintf(out->scheme, sizeof out->scheme, "%s", s);
		hostport = sep + 3;
		if (strcmp(out->scheme, "http") == 0)
			default_port = 80;
		else if (strcmp(out->scheme, "https") == 0)
			default_port = 443;
	}

	char hp[512];
	snprintf(hp, sizeof hp, "%s", hostport);
	char *slash = strchr(hp, '/');
	if (slash) {
		*slash = 0;
		snprintf(out->path, sizeof out->path, "%s", slash + 1);
	}

	char host[512], port[64];
	bool have_port = split_host_port(hp, host, sizeof host, port, sizeof port);
	if (!have_port) {
		/* no port: the whole thing is the host (an IP literal may be bracketed) */
		snprintf(out->host, sizeof out->host, "127.0.0.1");
		char lit[256];
		size_t n = strlen(hp);
		const char *h = hp;
		if (n >= 2 && hp[0] == '[' && hp[n - 1] == ']') {
			h = hp + 1;
			n -= 2;
		}
		if (n < sizeof lit) {
			memcpy(lit, h, n);
			lit[n] = 0;
		} else {
			lit[0] = 0;
		}
		if (hp[0])
			copy_str(out->host, sizeof out->host, strchr(lit, ':') ? lit : hp);
		snprintf(port, sizeof port, "%d", default_port);
	} else {
		copy_str(out->host, sizeof out->host, host);
	}

	char *end = NULL;
	errno = 0;
	long long n = strtoll(port, &end, 10);
	bool ok = port[0] && end && *end == 0 && errno == 0 && n >= 0 && n <= 65535 &&
		  (isdigit((unsigned char)port[0]) || port[0] == '+' || port[0] == '-');
	if (!ok) {
		if (warn && warn_size)
			snprintf(warn, warn_size, "invalid port, using default port=%s default=%d", port, default_port);
		n = default_port;
	}
	out->port = (int)n;
}

void rn_srv_connectable_host(const struct rn_srv_host *h, struct rn_srv_host *out)
{
	*out = *h;
	if (strcmp(h->host, "0.0.0.0") == 0)
		strcpy(out->host, "127.0.0.1");
	else if (strcmp(h->host, "::") == 0 || strcmp(h->host, "0:0:0:0:0:0:0:0") == 0)
		strcpy(out->host, "::1");
}

/* ---------------------------------------------------------------------------------------------------- */
/* Go durations */

static void go_quote(const char *s, char *buf, size_t size)
{
	size_t w = 0;
	if (size < 3) {
		if (size)
			buf[0] = 0;
		return;
	}
	buf[w++] = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p && w + 5 < size; p++) {
		if (*p == '"' || *p == '\\') {
			buf[w++] = '\\';
			buf[w++] = (char)*p;
		} else if (*p < 0x20 || *p == 0x7f) {
			w += (size_t)snprintf(buf + w, size - w, "\\x%02x", *p);
		} else {
			buf[w++] = (char)*p;
		}
	}
	buf[w++] = '"';
	buf[w] = 0;
}

static int dur_error(char *msg, size_t msg_size, const char *what, const char *unit, const char *orig)
{
	char q[256], qu[128];
	go_quote(orig, q, sizeof q);
	if (msg && msg_size) {
		if (unit) {
			go_quote(unit, qu, sizeof qu);
			snprintf(msg, msg_size, "time: unknown unit %s in duration %s", qu, q);
		} else {
			snprintf(msg, msg_size, "time: %s %s", what, q);
		}
	}
	return -1;
}

int rn_go_parse_duration(const char *orig, int64_t *ns, char *msg, size_t msg_size)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {
		{"ns", 1ULL},		 {"us", 1000ULL},	     {"\xc2\xb5s", 1000ULL}, /* µs U+00B5 */
		{"\xce\xbcs", 1000ULL}, /* μs U+03BC */
		{"ms", 1000000ULL},	 {"s", 1000000000ULL},	     {"m", 60000000000ULL},
		{"h", 3600000000000ULL},
	};
	const char *s = orig;
	uint64_t d = 0;
	bool neg = false;
	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (strcmp(s, "0") == 0) {
		*ns = 0;
		return 0;
	}
	if (*s == 0)
		return dur_error(msg, msg_size, "invalid duration", NULL, orig);
	while (*s) {
		uint64_t v = 0, f = 0;
		double scale = 1.0;
		if (!(*s == '.' || (*s >= '0' && *s <= '9')))
			return dur_error(msg, msg_size, "invalid duration", NULL, orig);
		const char *p0 = s;
		while (*s >= '0' && *s <= '9') {
			if (v > (UINT64_C(1) << 63) / 10)
				return dur_error(msg, msg_size, "invalid duration", NULL, orig);
			v = v * 10 + (uint64_t)(*s - '0');
			if (v > (UINT64_C(1) << 63))
				return dur_error(msg, msg_size, "invalid duration", NULL, orig);
			s++;
		}
		bool pre = s != p0, post = false;
		if (*s == '.') {
			s++;
			const char *f0 = s;
			bool overflow = false;
			while (*s >= '0' && *s <= '9') {
				if (!overflow) {
					if (f > (UINT64_C(1) << 63) / 10) {
						overflow = true;
					} else {
						uint64_t y = f * 10 + (uint64_t)(*s - '0');
						if (y > (UINT64_C(1) << 63))
							overflow = true;
						else {
							f = y;
							scale *= 10;
						}
					}
				}
				s++;
			}
			post = s != f0;
		}
		if (!pre && !post)
			return dur_error(msg, msg_size, "invalid duration", NULL, orig);
		const char *u0 = s;
		while (*s && *s != '.' && !(*s >= '0' && *s <= '9'))
			s++;
		if (s == u0)
			return dur_error(msg, msg_size, "missing unit in duration", NULL, orig);
		char unit[32];
		size_t ul = (size_t)(s - u0);
		if (ul >= sizeof unit)
			ul = sizeof unit - 1;
		memcpy(unit, u0, ul);
		unit[ul] = 0;
		uint64_t un = 0;
		for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
			if ((size_t)(s - u0) == strlen(units[i].name) && memcmp(u0, units[i].name, (size_t)(s - u0)) == 0)
				un = units[i].ns;
		if (!un)
			return dur_error(msg, msg_size, NULL, unit, orig);
		if (v > (UINT64_C(1) << 63) / un)
			return dur_error(msg, msg_size, "invalid duration", NULL, orig);
		v *= un;
		if (f > 0) {
			v += (uint64_t)((double)f * ((double)un / scale));
			if (v > (UINT64_C(1) << 63))
				return dur_error(msg, msg_size, "invalid duration", NULL, orig);
		}
		d += v;
		if (d > (UINT64_C(1) << 63))
			return dur_error(msg, msg_size, "invalid duration", NULL, orig);
	}
	if (neg) {
		*ns = d == (UINT64_C(1) << 63) ? INT64_MIN : -(int64_t)d;
		return 0;
	}
	if (d > (uint64_t)INT64_MAX)
		return dur_error(msg, msg_size, "invalid duration", NULL, orig);
	*ns = (int64_t)d;
	return 0;
}

/* Go's fmtFrac: writes the fraction of v / 10^prec (trailing zeros dropped, no '.' when zero) backwards. */
static size_t fmt_frac(char *buf, size_t w, uint64_t v, int prec, uint64_t *nv)
{
	bool print = false;
	for (int i = 0; i < prec; i++) {
		int digit = (int)(v % 10);
		print = print || digit != 0;
		if (print)
			buf[--w] = (char)('0' + digit);
		v /= 10;
	}
	if (print)
		buf[--w] = '.';
	*nv = v;
	return w;
}

static size_t fmt_int(char *buf, size_t w, uint64_t v)
{
	if (v == 0) {
		buf[--w] = '0';
	} else {
		while (v > 0) {
			buf[--w] = (char)('0' + v % 10);
			v /= 10;
		}
	}
	return w;
}

char *rn_go_format_duration(int64_t d, char *out, size_t size)
{
	char buf[40];
	size_t w = sizeof buf;
	uint64_t u = (uint64_t)d;
	bool neg = d < 0;
	if (neg)
		u = -u;
	if (u < 1000000000ULL) {
		int prec = 0;
		buf[--w] = 's';
		w--;
		if (u == 0) {
			buf[w] = '0';
			snprintf(out, size, "0s");
			return out;
		} else if (u < 1000ULL) {
			prec = 0;
			buf[w] = 'n';
		} else if (u < 1000000ULL) {
			prec = 3;
			/* "µ" is two bytes */
			buf[w] = (char)0xb5;
			buf[--w] = (char)0xc2;
		} else {
			prec = 6;
			buf[w] = 'm';
		}
		w = fmt_frac(buf, w, u, prec, &u);
		w = fmt_int(buf, w, u);
	} else {
		buf[--w] = 's';
		w = fmt_frac(buf, w, u, 9, &u);
		w = fmt_int(buf, w, u % 60);
		u /= 60;
		if (u > 0) {
			buf[--w] = 'm';
			w = fmt_int(buf, w, u % 60);
			u /= 60;
			if (u > 0) {
				buf[--w] = 'h';
				w = fmt_int(buf, w, u);
			}
		}
	}
	if (neg)
		buf[--w] = '-';
	snprintf(out, size, "%.*s", (int)(sizeof buf - w), buf + w);
	return out;
}

/* ---------------------------------------------------------------------------------------------------- */

static int64_t env_duration(struct rn_srv_config *c, const char *key, int64_t dflt)
{
	char v[256];
	rn_srv_env(key, v, sizeof v);
	if (!v[0])
		return dflt;
	int64_t ns;
	if (rn_go_parse_duration(v, &ns, NULL, 0) == 0)
		return ns;
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (*end == 0 && errno == 0) {
		if (n > INT64_MAX / 1000000000LL || n < INT64_MIN / 1000000000LL)
			return n < 0 ? INT64_MIN : INT64_MAX;
		return (int64_t)n * 1000000000LL;
	}
	add_warning(c, "invalid duration in %s=%s, using the default", key, v);
	return dflt;
}

static unsigned env_uint(struct rn_srv_config *c, const char *key, unsigned dflt)
{
	char v[128];
	rn_srv_env(key, v, sizeof v);
	if (!v[0])
		return dflt;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (*end || errno || v[0] == '-' || n > UINT32_MAX) {
		add_warning(c, "invalid environment variable, using default key=%s value=%s default=%u", key, v, dflt);
		return dflt;
	}
	return (unsigned)n;
}

/* strconv.ParseBool; an unparsable non-empty value counts as true (envconfig.BoolWithDefault). */
static int env_bool(const char *key, int dflt)
{
	char v[64];
	rn_srv_env(key, v, sizeof v);
	if (!v[0])
		return dflt;
	static const char *t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *f[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (size_t i = 0; i < 6; i++)
		if (strcmp(v, f[i]) == 0)
			return 0;
	for (size_t i = 0; i < 6; i++)
		if (strcmp(v, t[i]) == 0)
			return 1;
	return 1;
}

/* ---------------------------------------------------------------------------------------------------- */
/* orun's transport limits (ORUN_HTTP_*) */

/* A size in bytes: digits with an optional K, M or G (powers of 1024, "MiB" and "MB" too). 0 or unset gives
 * dflt; an invalid value gives dflt with a warning. */
static size_t env_size(struct rn_srv_config *c, const char *key, size_t dflt)
{
	char v[64];
	rn_srv_env(key, v, sizeof v);
	if (!v[0])
		return dflt;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (shift && (*end == 'b' || *end == 'B'))
		end++;
	if (*end || errno || !isdigit((unsigned char)v[0]) || n > (SIZE_MAX >> shift)) {
		add_warning(c, "invalid environment variable, using default key=%s value=%s default=%zu", key, v, dflt);
		return dflt;
	}
	return n ? (size_t)n << shift : dflt;
}

static void http_limits_from_env(struct rn_srv_config *c)
{
	c->http_max_body = env_size(c, "ORUN_HTTP_MAX_BODY", RN_SRV_HTTP_MAX_BODY);
	c->http_max_prompt_body = env_size(c, "ORUN_HTTP_MAX_PROMPT_BODY", 0);
	c->http_max_connections = env_uint(c, "ORUN_HTTP_MAX_CONNECTIONS", 0);
	c->http_max_connections_per_ip = env_uint(c, "ORUN_HTTP_MAX_CONNECTIONS_PER_IP", 0);
	int64_t t = env_duration(c, "ORUN_HTTP_IDLE_TIMEOUT", INT64_MIN);
	if (t == INT64_MIN)
		c->http_idle_timeout_s = 0;
	else if (t <= 0)
		c->http_idle_timeout_s = -1;
	else /* whole seconds, rounded up */
		c->http_idle_timeout_s = t >= (int64_t)INT32_MAX * 1000000000LL ? INT32_MAX : (int)((t + 999999999) / 1000000000);
}

static int add_origin(struct rn_srv_config *c, const char *o, size_t n)
{
	if (c->n_origins >= RN_SRV_MAX_ORIGINS)
		return 0;
	char *s = strndup(o, n);
	if (!s)
		return -1;
	c->origins[c->n_origins++] = s;
	return 0;
}

int rn_srv_config_from_env(struct rn_srv_config *c)
{
	memset(c, 0, sizeof *c);
	char v[4096], warn[256];

	rn_srv_env("OLLAMA_HOST", v, sizeof v);
	rn_srv_parse_host(v, &c->host, warn, sizeof warn);
	if (warn[0])
		add_warning(c, "%s", warn);

	c->keep_alive_ns = env_duration(c, "OLLAMA_KEEP_ALIVE", RN_SRV_DEFAULT_KEEP_ALIVE);
	if (c->keep_alive_ns < 0)
		c->keep_alive_ns = RN_SRV_KEEP_FOREVER;
	c->load_timeout_ns = env_duration(c, "OLLAMA_LOAD_TIMEOUT", RN_SRV_DEFAULT_KEEP_ALIVE);
	if (c->load_timeout_ns <= 0)
		c->load_timeout_ns = RN_SRV_KEEP_FOREVER;
	c->num_parallel = env_uint(c, "OLLAMA_NUM_PARALLEL", 1);
	c->max_loaded = env_uint(c, "OLLAMA_MAX_LOADED_MODELS", 0);
	c->max_queue = env_uint(c, "OLLAMA_MAX_QUEUE", 512);
	c->context_length = env_uint(c, "OLLAMA_CONTEXT_LENGTH", 0);
	http_limits_from_env(c);

	rn_srv_env("OLLAMA_KV_CACHE_TYPE", v, sizeof v);
	for (size_t i = 0; v[i] && i + 1 < sizeof c->kv_cache_type; i++)
		c->kv_cache_type[i] = (char)tolower((unsigned char)v[i]);

	c->flash_attention = env_bool("OLLAMA_FLASH_ATTENTION", -1);
	c->noprune = env_bool("OLLAMA_NOPRUNE", 0) == 1;

	rn_srv_env("OLLAMA_DEBUG", v, sizeof v);
	if (v[0]) {
		int b = env_bool("OLLAMA_DEBUG", 0);
		char *end;
		long n = strtol(v, &end, 10);
		if (*end == 0 && n != 0)
			c->debug = n > 0 ? (int)n : 0;
		else
			c->debug = (strcmp(v, "0") != 0 && b == 1 && *end != 0) ? 1 : 0;
	}

	rn_srv_env("OLLAMA_MODELS", v, sizeof v);
	if (v[0]) {
		snprintf(c->models, sizeof c->models, "%s", v);
	} else {
		const char *home = getenv("HOME");
		snprintf(c->models, sizeof c->models, "%s/.ollama/models", home && home[0] ? home : ".");
	}

	rn_srv_env("OLLAMA_ORIGINS", v, sizeof v);
	if (v[0]) {
		/* strings.Split(s, ","): every piece, empty ones included */
		const char *p = v;
		for (;;) {
			const char *comma = strchr(p, ',');
			size_t n = comma ? (size_t)(comma - p) : strlen(p);
			if (add_origin(c, p, n) < 0)
				goto nomem;
			if (!comma)
				break;
			p = comma + 1;
		}
	}
	static const char *local[] = {"localhost", "127.0.0.1", "0.0.0.0"};
	for (size_t i = 0; i < 3; i++) {
		char o[64];
		const char *fmts[] = {"http://%s", "https://%s", "http://%s:*", "https://%s:*"};
		for (size_t k = 0; k < 4; k++) {
			snprintf(o, sizeof o, fmts[k], local[i]);
			if (add_origin(c, o, strlen(o)) < 0)
				goto nomem;
		}
	}
	static const char *schemes[] = {"app://*", "file://*", "tauri://*", "vscode-webview://*", "vscode-file://*"};
	for (size_t i = 0; i < 5; i++)
		if (add_origin(c, schemes[i], strlen(schemes[i])) < 0)
			goto nomem;
	return 0;
nomem:
	rn_srv_config_free(c);
	return -1;
}

void rn_srv_config_free(struct rn_srv_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_origins; i++)
		free(c->origins[i]);
	for (size_t i = 0; i < c->n_warnings; i++)
		free(c->warnings[i]);
	c->n_origins = c->n_warnings = 0;
}
