/* tools/clifmt.c — tables, human-readable sizes and times, errors and flags for the client commands. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/unicode.h"
#include "tools/clifmt.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Width */

size_t display_width(const char *s)
{
	return ob_utf8_width(s, strlen(s));
}

/* ---------------------------------------------------------------------------------------------------- */
/* Tables */

void table_init(struct table *t, size_t ncols, const char *const *header)
{
	memset(t, 0, sizeof *t);
	t->ncols = ncols;
	t->header = header;
	t->wrap = TABLE_DEFAULT_WIDTH;
}

void table_add(struct table *t, const char *const *row)
{
	char **cells = realloc(t->cells, (t->nrows + 1) * t->ncols * sizeof *cells);
	if (!cells)
		return;
	t->cells = cells;
	for (size_t i = 0; i < t->ncols; i++)
		cells[t->nrows * t->ncols + i] = strdup(row[i] ? row[i] : "");
	t->nrows++;
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = 0;
}

struct lines {
	char **v;
	size_t n;
};

static void lines_add(struct lines *L, const char *s, size_t n)
{
	char **v = realloc(L->v, (L->n + 1) * sizeof *v);
	if (!v)
		return;
	L->v = v;
	L->v[L->n] = strndup(s, n);
	if (L->v[L->n])
		L->n++;
}

/* tablewriter's WrapString: words split on single spaces (newlines first become spaces), then broken into
 * lines with minimal raggedness (the sum of squared shortfalls, too-long lines penalised by 1e5). */
static void wrap_string(const char *s, size_t lim, struct lines *out)
{
	char *copy = strdup(s);
	if (!copy)
		return;
	for (char *p = copy; *p; p++)
		if (*p == '\n')
			*p = ' ';
	size_t n = 1;
	for (char *p = copy; *p; p++)
		if (*p == ' ')
			n++;
	const char **word = malloc(n * sizeof *word);
	size_t *wl = malloc(n * sizeof *wl), *ww = malloc(n * sizeof *ww);
	size_t *nbrk = malloc(n * sizeof *nbrk);
	long long *cost = malloc(n * sizeof *cost);
	if (!word || !wl || !ww || !nbrk || !cost)
		goto out;
	size_t k = 0;
	for (char *p = copy, *start = copy;; p++) {
		if (*p == ' ' || *p == 0) {
			word[k] = start;
			wl[k] = (size_t)(p - start);
			char save = *p;
			*p = 0;
			ww[k] = display_width(start);
			*p = save;
			if (ww[k] > lim)
				lim = ww[k];
			k++;
			start = p + 1;
			if (!save)
				break;
		}
	}
	/* length(i, j) = widths of words i..j plus one space between each */
	for (size_t i = n; i-- > 0;) {
		size_t len = 0;
		for (size_t j = i; j < n; j++)
			len += ww[j] + (j > i);
		if (len <= lim) {
			cost[i] = 0;
			nbrk[i] = n;
			continue;
		}
		cost[i] = 0x7fffffff;
		len = ww[i];
		for (size_t j = i + 1; j < n; j++) {
			long long d = (long long)lim - (long long)len;
			long long c = d * d + cost[j];
			if (len > lim)
				c += 100000;
			if (c < cost[i]) {
				cost[i] = c;
				nbrk[i] = j;
			}
			len += 1 + ww[j];
		}
	}
	for (size_t i = 0; i < n;) {
		size_t j = nbrk[i];
		const char *a = word[i], *e = word[j - 1] + wl[j - 1];
		lines_add(out, a, (size_t)(e - a));
		i = j;
	}
out:
	free(word);
	free(wl);
	free(ww);
	free(nbrk);
	free(cost);
	free(copy);
}

/* parseDimension: the cell's lines (reflowed into one paragraph, wrapped at min(width, lim)). */
static struct lines cell_lines(const char *s, size_t lim, size_t *width)
{
	struct lines L = {0};
	size_t maxw = 0;
	for (const char *p = s;;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *line = strndup(p, n);
		if (line) {
			size_t w = display_width(line);
			if (w > maxw)
				maxw = w;
			free(line);
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (maxw > lim)
		maxw = lim;
	wrap_string(s, maxw, &L);
	*width = 0;
	for (size_t i = 0; i < L.n; i++) {
		size_t w = display_width(L.v[i]);
		if (w > *width)
			*width = w;
	}
	if (maxw > *width)
		*width = maxw;
	return L;
}

static void pad(FILE *out, const char *s, size_t width, const char *after)
{
	fputs(s, out);
	for (size_t w = display_width(s); w < width; w++)
		fputc(' ', out);
	fputs(after, out);
}

void table_render(const struct table *t, FILE *out)
{
	size_t nc = t->ncols;
	size_t *width = calloc(nc, sizeof *width);
	struct lines *cell = calloc(t->nrows * nc + 1, sizeof *cell);
	if (!width || !cell) {
		free(width);
		free(cell);
		return;
	}
	if (t->header)
		for (size_t c = 0; c < nc; c++) {
			size_t w;
			struct lines L = cell_lines(t->header[c], t->wrap, &w);
			for (size_t i = 0; i < L.n; i++)
				free(L.v[i]);
			free(L.v);
			width[c] = w;
		}
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < nc; c++) {
			size_t w;
			cell[r * nc + c] = cell_lines(t->cells[r * nc + c], t->wrap, &w);
			if (w > width[c])
				width[c] = w;
		}
	if (t->header) {
		/* the last header cell is followed by one space, the others by the table padding */
		for (size_t c = 0; c < nc; c++)
			pad(out, t->header[c], width[c], c + 1 == nc ? " " : "    ");
		fputc('\n', out);
	}
	for (size_t r = 0; r < t->nrows; r++) {
		size_t h = 1;
		for (size_t c = 0; c < nc; c++)
			if (cell[r * nc + c].n > h)
				h = cell[r * nc + c].n;
		for (size_t i = 0; i < h; i++) {
			for (size_t c = 0; c < nc; c++) {
				struct lines *L = &cell[r * nc + c];
				/* shorter cells are filled with "  " lines, as tablewriter does */
				pad(out, i < L->n ? L->v[i] : "  ", width[c], "    ");
			}
			fputc('\n', out);
		}
	}
	for (size_t k = 0; k < t->nrows * nc; k++) {
		for (size_t i = 0; i < cell[k].n; i++)
			free(cell[k].v[i]);
		free(cell[k].v);
	}
	free(cell);
	free(width);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Human-readable values (format package) */

char *human_bytes(int64_t b, char buf[32])
{
	double v;
	const char *unit;
	if (b >= 1000000000000LL) {
		v = (double)b / 1e12;
		unit = "TB";
	} else if (b >= 1000000000LL) {
		v = (double)b / 1e9;
		unit = "GB";
	} else if (b >= 1000000LL) {
		v = (double)b / 1e6;
		unit = "MB";
	} else if (b >= 1000LL) {
		v = (double)b / 1e3;
		unit = "KB";
	} else {
		snprintf(buf, 32, "%lld B", (long long)b);
		return buf;
	}
	if (v >= 10)
		snprintf(buf, 32, "%d %s", (int)v, unit);
	else if (v != trunc(v))
		snprintf(buf, 32, "%.1f %s", v, unit);
	else
		snprintf(buf, 32, "%d %s", (int)v, unit);
	return buf;
}

static void human_duration(double secs, char buf[48])
{
	long long seconds = (long long)secs;
	if (seconds < 1) {
		snprintf(buf, 48, "Less than a second");
		return;
	}
	if (seconds == 1) {
		snprintf(buf, 48, "1 second");
		return;
	}
	if (seconds < 60) {
		snprintf(buf, 48, "%lld seconds", seconds);
		return;
	}
	long long minutes = (long long)(secs / 60);
	if (minutes == 1) {
		snprintf(buf, 48, "About a minute");
		return;
	}
	if (minutes < 60) {
		snprintf(buf, 48, "%lld minutes", minutes);
		return;
	}
	long long hours = llround(secs / 3600);
	if (hours == 1)
		snprintf(buf, 48, "About an hour");
	else if (hours < 48)
		snprintf(buf, 48, "%lld hours", hours);
	else if (hours < 24 * 7 * 2)
		snprintf(buf, 48, "%lld days", hours / 24);
	else if (hours < 24 * 30 * 2)
		snprintf(buf, 48, "%lld weeks", hours / 24 / 7);
	else if (hours < 24 * 365 * 2)
		snprintf(buf, 48, "%lld months", hours / 24 / 30);
	else
		snprintf(buf, 48, "%lld years", ((long long)(secs / 3600)) / 24 / 365);
}

char *human_time(time_t sec, long nsec, const char *zero_value, char buf[64])
{
	if (sec == 0 && nsec == 0) {
		snprintf(buf, 64, "%s", zero_value);
		return buf;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	double delta = (double)(now.tv_sec - sec) + (double)(now.tv_nsec - nsec) / 1e9;
	char d[48];
	if ((long long)(delta / 3600) / 24 / 365 < -20) {
		snprintf(buf, 64, "Forever");
	} else if (delta < 0) {
		human_duration(-delta, d);
		snprintf(buf, 64, "%s from now", d);
	} else {
		human_duration(delta, d);
		snprintf(buf, 64, "%s ago", d);
	}
	return buf;
}

static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

bool parse_rfc3339(const char *s, time_t *sec, long *nsec)
{
	if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':')
		return false;
	struct tm tm = {0};
	int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2), h = digits(s + 11, 2), mi = digits(s + 14, 2),
	    se = digits(s + 17, 2);
	if (y < 0 || mo < 1 || d < 1 || h < 0 || mi < 0 || se < 0)
		return false;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	const char *p = s + 19;
	long ns = 0;
	if (*p == '.') {
		p++;
		int k = 0;
		while (isdigit((unsigned char)*p)) {
			if (k < 9) {
				ns = ns * 10 + (*p - '0');
				k++;
			}
			p++;
		}
		for (; k < 9; k++)
			ns *= 10;
	}
	long off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh = digits(p + 1, 2), om = p[3] == ':' ? digits(p + 4, 2) : -1;
		if (oh < 0 || om < 0)
			return false;
		off = (*p == '-' ? -1 : 1) * (oh * 3600 + om * 60);
		p += 6;
	} else {
		return false;
	}
	if (*p)
		return false;
	*sec = timegm(&tm) - off;
	*nsec = ns;
	return true;
}

int cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("Error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

int cli_min_args(size_t got, size_t min)
{
	if (got >= min)
		return 0;
	fprintf(stderr, "Error: requires at least %zu arg(s), only received %zu\n", min, got);
	return 2;
}

int cli_exact_args(size_t got, size_t want)
{
	if (got == want)
		return 0;
	fprintf(stderr, "Error: accepts %zu arg(s), received %zu\n", want, got);
	return 2;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Flags */

/* The parse itself: 0, or 2 after printing the error; *help for -h / --help. */
static int parse_args(int argc, char **argv, struct cli_flag *flags, size_t n_flags, const char **pos,
		      size_t max_pos, size_t *n_pos, bool *help)
{
	*n_pos = 0;
	*help = false;
	bool only_pos = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (only_pos || a[0] != '-' || a[1] == 0) {
			if (*n_pos < max_pos)
				pos[*n_pos] = a;
			(*n_pos)++;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			*help = true;
			continue;
		}
		struct cli_flag *f = NULL;
		const char *inline_value = NULL;
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t nl = eq ? (size_t)(eq - name) : strlen(name);
			for (size_t k = 0; k < n_flags; k++)
				if (strlen(flags[k].name) == nl && strncmp(flags[k].name, name, nl) == 0)
					f = &flags[k];
			if (!f) {
				fprintf(stderr, "Error: unknown flag: --%.*s\n", (int)nl, name);
				return 2;
			}
			if (eq)
				inline_value = eq + 1;
		} else {
			for (size_t k = 0; k < n_flags; k++)
				if (flags[k].shorthand && flags[k].shorthand == a[1])
					f = &flags[k];
			if (!f) {
				fprintf(stderr, "Error: unknown shorthand flag: '%c' in %s\n", a[1], a);
				return 2;
			}
			if (a[2])
				inline_value = a[2] == '=' ? a + 3 : a + 2;
		}
		if (!f->takes_value) {
			f->value = inline_value ? inline_value : "true";
			continue;
		}
		if (inline_value) {
			f->value = inline_value;
		} else if (i + 1 < argc) {
			f->value = argv[++i];
		} else {
			if (a[1] == '-')
				fprintf(stderr, "Error: flag needs an argument: --%s\n", f->name);
			else
				fprintf(stderr, "Error: flag needs an argument: '%c' in -%c\n", f->shorthand, f->shorthand);
			return 2;
		}
	}
	return 0;
}

bool cli_parse(int argc, char **argv, struct cli_flag *flags, size_t n_flags, const char **pos, size_t max_pos,
	       size_t *n_pos, void (*usage)(FILE *f), int *status)
{
	bool help;
	*status = parse_args(argc, argv, flags, n_flags, pos, max_pos, n_pos, &help);
	if (*status == 0 && help)
		usage(stdout);
	return *status == 0 && !help;
}

int cli_flag_bool(const struct cli_flag *f, bool *out)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
	*out = false;
	if (!f->value)
		return 0;
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		if (strcmp(f->value, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(f->value, no[i]) == 0)
			return 0;
	}
	fprintf(stderr, "Error: invalid argument \"%s\" for \"--%s\" flag: strconv.ParseBool: parsing \"%s\": invalid syntax\n",
		f->value, f->name, f->value);
	return 2;
}

int cli_flag_int(const struct cli_flag *f, int *out)
{
	if (!f->value)
		return 0;
	const char *s = f->value;
	const char *d = s + (*s == '+' || *s == '-');
	bool ok = *d != 0;
	for (const char *p = d; *p; p++)
		ok = ok && *p >= '0' && *p <= '9';
	errno = 0;
	long long v = ok ? strtoll(s, NULL, 10) : 0;
	if (!ok || errno == ERANGE || v < INT_MIN || v > INT_MAX) {
		fprintf(stderr, "Error: invalid argument \"%s\" for \"--%s\" flag: strconv.ParseInt: parsing \"%s\": %s\n", s,
			f->name, s, ok ? "value out of range" : "invalid syntax");
		return 2;
	}
	*out = (int)v;
	return 0;
}
