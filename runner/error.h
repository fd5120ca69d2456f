/* runner/error.h — status codes and the error detail struct shared by the runner's engine modules
 * (model, backend, KV cache, sampler, engine).
 *
 * Fallible runner functions return 0 (RN_OK) or an RN_ERR_* code and, when given a struct rn_error, fill it
 * with the code and one sentence that quotes the offending values. Nothing in these modules prints or exits.
 */
#ifndef ORUN_RUNNER_ERROR_H
#define ORUN_RUNNER_ERROR_H

#if defined(__GNUC__)
#define RN_WUR __attribute__((warn_unused_result))
#define RN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RN_WUR
#define RN_PRINTF(f, a)
#endif

enum rn_status {
	RN_OK = 0,
	RN_ERR_NOMEM,       /* an allocation failed (KV cache, scratch buffers) */
	RN_ERR_IO,          /* the model file could not be opened or mapped */
	RN_ERR_FORMAT,      /* the model file is not valid GGUF (the message carries the gguf library's detail) */
	RN_ERR_ARCH,        /* unsupported architecture, or a missing/invalid hyperparameter */
	RN_ERR_TENSOR,      /* a tensor missing, or of the wrong shape */
	RN_ERR_TYPE,        /* a tensor type this build cannot compute with */
	RN_ERR_VOCAB,       /* the vocabulary does not match the embedding / output matrix */
	RN_ERR_INVALID_ARG, /* a caller-supplied value out of range (batch, position, sequence id, option) */
	RN_ERR_CONTEXT,     /* the prompt or the generation does not fit the context window */
	RN_ERR_BACKEND,     /* the backend is unknown, has no device, or failed at run time */
	RN_ERR_CANCELLED,   /* the caller asked to stop */
	RN_ERR_BUSY,        /* no free slot for a request */
	RN_ERR__COUNT
};

/* Detail of a failure: code is the enum rn_status value, msg a NUL-terminated sentence. */
struct rn_error {
	int code;
	char msg[512];
};

/* A short fixed description of a status code; never NULL. */
const char *rn_strerror(int code);

/* Fill *e (when e is not NULL) with code and a printf-formatted message; returns code, so that
 * `return rn_error_set(err, RN_ERR_TENSOR, "...", ...);` reads naturally. */
int rn_error_set(struct rn_error *e, int code, const char *fmt, ...) RN_PRINTF(3, 4);

#endif
