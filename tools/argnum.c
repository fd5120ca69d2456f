/* tools/argnum.c — numeric command-line values for the engine commands: whole-string strtol/strtoll/strtof
 * with range checks and one shared wording of the error. */
#include "config.h"

#include "tools/argnum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int argnum_int(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < lo || v > hi) {
		fprintf(stderr, "%s: %s wants an integer in [%ld, %ld], got '%s'\n", cmd, flag, lo, hi, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int argnum_i64(const char *cmd, const char *flag, const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || end == s) {
		fprintf(stderr, "%s: %s wants an integer, got '%s'\n", cmd, flag, s);
		return -1;
	}
	*out = v;
	return 0;
}

int argnum_float(const char *cmd, const char *flag, const char *s, bool positive, float *out)
{
	char *end;
	errno = 0;
	float v = strtof(s, &end);
	if (errno || *end || end == s || v != v || (positive && !(v > 0))) {
		fprintf(stderr, "%s: %s wants a %s, got '%s'\n", cmd, flag, positive ? "positive number" : "number", s);
		return -1;
	}
	*out = v;
	return 0;
}
