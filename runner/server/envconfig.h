/* runner/server/envconfig.h — the server's settings from Ollama's environment variables, read the way Ollama's
 * envconfig reads them (OLLAMA_HOST, OLLAMA_KEEP_ALIVE, OLLAMA_NUM_PARALLEL, OLLAMA_MAX_LOADED_MODELS,
 * OLLAMA_MAX_QUEUE, OLLAMA_CONTEXT_LENGTH, OLLAMA_KV_CACHE_TYPE, OLLAMA_ORIGINS, OLLAMA_MODELS …), plus the
 * Go duration syntax those variables and the API's keep_alive use.
 *
 * Nothing here prints: invalid values fall back to the default as Ollama does and are reported as warnings.
 */
#ifndef ORUN_RUNNER_SERVER_ENVCONFIG_H
#define ORUN_RUNNER_SERVER_ENVCONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RN_SRV_DEFAULT_PORT 11434
#define RN_SRV_KEEP_FOREVER INT64_MAX        /* keep_alive "never expire", in ns (Go: math.MaxInt64) */
#define RN_SRV_DEFAULT_KEEP_ALIVE (300LL * 1000000000LL) /* 5m */
#define RN_SRV_MAX_ORIGINS 256
#define RN_SRV_MAX_WARNINGS 16
#define RN_SRV_HTTP_MAX_BODY (1u << 20) /* ORUN_HTTP_MAX_BODY's default: bodies of routes that take no prompt */

/* A listen/connect address as Ollama's envconfig.Host() yields it. */
struct rn_srv_host {
	char scheme[16]; /* "http" or "https" (or whatever the variable names) */
	char host[256];  /* a name or an IP literal without brackets; "" = every interface (OLLAMA_HOST=:port) */
	int port;        /* 0..65535 */
	char path[256];  /* anything after the first '/' of host:port, without it */
};

struct rn_srv_config {
	struct rn_srv_host host;
	int64_t keep_alive_ns;  /* OLLAMA_KEEP_ALIVE: default 5m; negative → RN_SRV_KEEP_FOREVER */
	int64_t load_timeout_ns;/* OLLAMA_LOAD_TIMEOUT: default 5m; <= 0 → RN_SRV_KEEP_FOREVER */
	unsigned num_parallel;  /* OLLAMA_NUM_PARALLEL: default 1 (0 is treated as 1 by the scheduler) */
	unsigned max_loaded;    /* OLLAMA_MAX_LOADED_MODELS: 0 = automatic (3 per GPU, 3 on CPU) */
	unsigned max_queue;     /* OLLAMA_MAX_QUEUE: default 512 */
	unsigned context_length;/* OLLAMA_CONTEXT_LENGTH: 0 = automatic */
	char kv_cache_type[16]; /* OLLAMA_KV_CACHE_TYPE, lower-cased; "" = f16 */
	int flash_attention;    /* OLLAMA_FLASH_ATTENTION: -1 unset, 0 off, 1 on */
	bool noprune;           /* OLLAMA_NOPRUNE */
	int debug;              /* OLLAMA_DEBUG: 0 info, 1 debug, 2 trace */
	char models[4096];      /* OLLAMA_MODELS, default $HOME/.ollama/models */
	/* OLLAMA_ORIGINS entries followed by Ollama's default origins (envconfig.AllowedOrigins) */
	char *origins[RN_SRV_MAX_ORIGINS];
	size_t n_origins;
	/* orun's own transport limits (Ollama has none; runner/server/http.h says what each does). Sizes accept a
	 * K, M or G suffix (powers of 1024); 0 in a field below means the transport's default. */
	size_t http_max_body;         /* ORUN_HTTP_MAX_BODY: bytes, default RN_SRV_HTTP_MAX_BODY */
	size_t http_max_prompt_body;  /* ORUN_HTTP_MAX_PROMPT_BODY: bytes (generate, chat, embed, create, /v1/...) */
	unsigned http_max_connections;        /* ORUN_HTTP_MAX_CONNECTIONS */
	unsigned http_max_connections_per_ip; /* ORUN_HTTP_MAX_CONNECTIONS_PER_IP (IPv6: per /64) */
	int http_idle_timeout_s;      /* ORUN_HTTP_IDLE_TIMEOUT: a Go duration or seconds; 0 or less there = none
				       * (-1 here) */
	/* Warnings about ignored values ("invalid port, using default" …), for the caller to log. */
	char *warnings[RN_SRV_MAX_WARNINGS];
	size_t n_warnings;
};

/* Parses an OLLAMA_HOST value as Ollama does: [scheme://]host[:port][/path]; a missing port is 11434, or 80 /
 * 443 for an explicit http / https scheme; "ollama.com" alone is https://ollama.com:443; a bad port falls
 * back to the default (warn, when not NULL, gets a sentence). Never fails. */
void rn_srv_parse_host(const char *value, struct rn_srv_host *out, char *warn, size_t warn_size);

/* The address a client should connect to for h: 0.0.0.0 → 127.0.0.1, :: → ::1 (envconfig.ConnectableHost). */
void rn_srv_connectable_host(const struct rn_srv_host *h, struct rn_srv_host *out);

/* Formats "host:port" with brackets around IPv6 literals (Go's net.JoinHostPort). Returns buf. */
char *rn_srv_join_host_port(const char *host, int port, char *buf, size_t size);

/* Fills *c from the environment. Returns 0, or -1 when out of memory. Free with rn_srv_config_free. */
int rn_srv_config_from_env(struct rn_srv_config *c);
void rn_srv_config_free(struct rn_srv_config *c);

/* Reads an environment variable the way envconfig.Var does: surrounding spaces and quotes (" ') stripped.
 * Writes at most size-1 bytes; returns buf ("" when unset). */
char *rn_srv_env(const char *key, char *buf, size_t size);

/* Go's time.ParseDuration: "300ms", "-1.5h", "2h45m", "0". Returns 0 and *ns, or -1 with Go's message in
 * msg ("time: invalid duration \"x\"", "time: missing unit in duration \"5\"", "time: unknown unit \"d\" in
 * duration \"5d\""). */
int rn_go_parse_duration(const char *s, int64_t *ns, char *msg, size_t msg_size);

/* Go's Duration.String(): "5m0s", "1h30m0s", "1.5s", "0s". Returns buf (>= 32 bytes). */
char *rn_go_format_duration(int64_t ns, char *buf, size_t size);

#endif
