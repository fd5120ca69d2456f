/* tools/argnum.h — command-line flags for the engine commands (generate, bench, mkmodel, gguf): getopt_long
 * with one wording of its errors, and numeric values.
 *
 * Each function fails with one line on stderr naming the command, the flag and the value ("orun bench: -p
 * wants an integer in [1, 1048576], got 'x'"), so every command words it alike.
 */
#ifndef ORUN_TOOLS_ARGNUM_H
#define ORUN_TOOLS_ARGNUM_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* getopt_long (GNU: operands may come between the options) with these messages on stderr:
 * "CMD: FLAG needs a value" and "CMD: unknown option 'ARG' (see CMD --help)". Returns the next option's val,
 * '?' after such a message, or -1 after the last option (optind then indexes the operands). flag receives
 * the option as the user named it ("-c", "--ctx") for messages about its value. Set optind = 1 before the
 * first call of a command. */
int argopt_next(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts,
		char *flag, size_t flag_size);

/* For a command that takes no operands, after argopt_next's last option: 0, or -1 after "CMD: unknown option
 * 'ARG' (see CMD --help)" naming the first one. */
int argopt_no_operands(const char *cmd, int argc, char **argv);

/* An integer in [lo, hi] into *out. 0, or -1 after the message. */
int argnum_int(const char *cmd, const char *flag, const char *s, long lo, long hi, int *out);

/* Any 64-bit integer into *out. 0, or -1 after the message. */
int argnum_i64(const char *cmd, const char *flag, const char *s, int64_t *out);

/* A number (not NaN; when positive, > 0) into *out. 0, or -1 after the message. */
int argnum_float(const char *cmd, const char *flag, const char *s, bool positive, float *out);

#endif
