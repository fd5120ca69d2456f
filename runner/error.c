/* runner/error.c — status strings and the error-filling helper of runner/error.h. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include "runner/error.h"

const char *rn_strerror(int code)
{
	switch (code) {
	case RN_OK: return "success";
	case RN_ERR_NOMEM: return "out of memory";
	case RN_ERR_IO: return "i/o error";
	case RN_ERR_FORMAT: return "invalid model file";
	case RN_ERR_ARCH: return "unsupported architecture or hyperparameter";
	case RN_ERR_TENSOR: return "missing or mis-shaped tensor";
	case RN_ERR_TYPE: return "unsupported tensor type";
	case RN_ERR_VOCAB: return "vocabulary does not match the model";
	case RN_ERR_INVALID_ARG: return "invalid argument";
	case RN_ERR_CONTEXT: return "context window exceeded";
	case RN_ERR_BACKEND: return "backend error";
	case RN_ERR_CANCELLED: return "cancelled";
	case RN_ERR_BUSY: return "no free slot";
	default: return "unknown error";
	}
}

int rn_error_set(struct rn_error *e, int code, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		e->code = code;
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}
