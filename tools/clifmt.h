/* tools/clifmt.h — output helpers shared by the client commands, matching the ollama CLI: tables as the
 * tablewriter package draws them (no borders, left aligned, four spaces between columns, cells wrapped at
 * word boundaries to a column width), format.HumanBytes / HumanTime / HumanNumber, RFC 3339 timestamps,
 * `Error: ...` reporting, and the small flag parser the commands use.
 */
#ifndef ORUN_TOOLS_CLIFMT_H
#define ORUN_TOOLS_CLIFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define TABLE_DEFAULT_WIDTH 30 /* tablewriter's MAX_ROW_WIDTH */

struct table {
	size_t ncols;
	char **cells; /* nrows * ncols strings, row-major (owned) */
	size_t nrows;
	const char *const *header; /* ncols strings or NULL */
	size_t wrap;               /* column width for wrapping (TABLE_DEFAULT_WIDTH) */
};

void table_init(struct table *t, size_t ncols, const char *const *header);
/* Appends a row of ncols strings (copied). */
void table_add(struct table *t, const char *const *row);
void table_render(const struct table *t, FILE *out);
void table_free(struct table *t);

/* Display width in terminal cells: East Asian wide and fullwidth characters count 2, controls and combining
 * marks 0 (base/unicode.h's ob_utf8_width, go-runewidth's rule). */
size_t display_width(const char *s);

char *human_bytes(int64_t b, char buf[32]);
/* HumanTime against now; zero_value when sec is 0. */
char *human_time(time_t sec, long nsec, const char *zero_value, char buf[64]);
/* RFC 3339 with optional fractional seconds; false when malformed. */
bool parse_rfc3339(const char *s, time_t *sec, long *nsec);

/* Prints "Error: <message>" on stderr; returns 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cobra's ExactArgs(want): 0, or 2 after printing "Error: accepts N arg(s), received M". */
int cli_exact_args(size_t got, size_t want);
/* cobra's MinimumNArgs(min): 0, or 2 after printing "Error: requires at least N arg(s), only received M". */
int cli_min_args(size_t got, size_t min);

/* A command-line flag. */
struct cli_flag {
	const char *name;  /* long name without dashes */
	char shorthand;    /* 0 = none */
	bool takes_value;
	const char *value; /* set by cli_parse: the value, or "true" for a boolean flag */
};

/* Parses argv[1..] against flags (cobra semantics: flags anywhere, --name=value, --name value, -x value,
 * -xvalue, -- ends flags); positional arguments go to pos (at most max_pos kept, *n_pos counts all). Returns
 * true to go on; false when the command is to exit now with *status: 0 after -h / --help printed
 * usage(stdout), 2 after cobra's error ("unknown flag: --x", "unknown shorthand flag: 'x' in -x", "flag needs
 * an argument: --x"), which wins over the help. */
bool cli_parse(int argc, char **argv, struct cli_flag *flags, size_t n_flags, const char **pos, size_t max_pos,
	       size_t *n_pos, void (*usage)(FILE *f), int *status);

/* A boolean flag's value as pflag reads it (strconv.ParseBool: 1 t T TRUE true True, 0 f F FALSE false
 * False; absent = false): 0, or 2 after pflag's error ("invalid argument "x" for "--verbose" flag:
 * strconv.ParseBool: parsing "x": invalid syntax"). */
int cli_flag_bool(const struct cli_flag *f, bool *out);

/* An integer flag's value (decimal, optional sign; absent = keeps *out): 0, or 2 after pflag's error
 * ("invalid argument "x" for "--dimensions" flag: strconv.ParseInt: parsing "x": invalid syntax"). */
int cli_flag_int(const struct cli_flag *f, int *out);

#endif
