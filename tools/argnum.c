/* tools/argnum.c — command-line flags for the engine commands: getopt_long with one wording of its errors,
 * and numeric values (whole-string strtol/strtoll/strtof with range checks). */
#include "config.h"

#include "tools/argnum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int argopt_next(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts,
		char *flag, size_t flag_size)
{
	char opts[64];
	snprintf(opts, sizeof opts, ":%s", shortopts); /* ':' first: a missing value is told apart */
	int li = -1;
	opterr = 0;
	int c = getopt_long(argc, argv, opts, longopts, &li);
	if (c == -1)
		return -1;
	if (c == ':') { /* only the last argument can lack its value */
		fprintf(stderr, "%s: %s needs a value\n", cmd, argv[optind - 1]);
		return '?';
	}
	if (c == '?') {
		/* an unknown letter (getopt leaves optind on its group, -xv, until the group's last letter); otherwise
		 * an unknown long option, or one given a value it does not take, and optind has passed it */
		if (optopt > 0 && optopt < 128 && !strchr(shortopts, optopt))
			fprintf(stderr, "%s: unknown option '-%c' (see %s --help)\n", cmd, optopt, cmd);
		else
			fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, argv[optind - 1], cmd);
		return '?';
	}
	if (li >= 0)
		snprintf(flag, flag_size, "--%s", longopts[li].name);
	else
		snprintf(flag, flag_size, "-%c", c);
	return c;
}

int argopt_no_operands(const char *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, argv[optind], cmd);
	return -1;
}

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
