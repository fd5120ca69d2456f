/* tools/argnum.h — numeric command-line values for the engine commands (generate, bench, mkmodel).
 *
 * Each function parses the whole string or fails with one line on stderr naming the command, the flag and
 * the value ("orun bench: -p wants an integer in [1, 1048576], got 'x'"), so every command words it alike.
 */
#ifndef ORUN_TOOLS_ARGNUM_H
#define ORUN_TOOLS_ARGNUM_H

#include <stdbool.h>
#include <stdint.h>

/* An integer in [lo, hi] into *out. 0, or -1 after the message. */
int argnum_int(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out);

/* Any 64-bit integer into *out. 0, or -1 after the message. */
int argnum_i64(const char *cmd, const char *flag, const char *s, int64_t *out);

/* A number (not NaN; when positive, > 0) into *out. 0, or -1 after the message. */
int argnum_float(const char *cmd, const char *flag, const char *s, bool positive, float *out);

#endif
