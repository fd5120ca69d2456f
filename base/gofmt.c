/* base/gofmt.c — Go-compatible float printing, string quoting and number/bool parsing.
 *
 * Every Go-style float in orun (fmt's %v, strconv, encoding/json) comes from ob_go_format_float_as. Shortest
 * digits are found by trying precisions 1..17 (1..9 for float32) with printf and keeping the first that reads
 * back exactly (printf/strtod are correctly rounded in glibc); parsing validates Go's literal grammar first
 * and then lets strtof do the correctly rounded conversion.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gofmt.h"
#include "base/unicode.h"

/* Shortest decimal digits of v (finite, > 0) that read back as the same float64 (bits 64) or float32 (bits
 * 32): digits in d (no dot, NUL-terminated), count *nd, decimal point position *dp (v = 0.d1d2... * 10^dp). */
static void shortest_digits(double v, int bits, char *d, int *nd, int *dp)
{
	char tmp[40];
	int maxp = bits == 32 ? 9 : 17;
	for (int prec = 1; prec <= maxp; prec++) {
		snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
		double back = strtod(tmp, NULL);
		if ((bits == 32 ? (float)back == (float)v : back == v) || prec == maxp)
			break;
	}
	/* tmp = d[.ddd]e[+-]xx */
	int n = 0;
	const char *p = tmp;
	for (; *p && *p != 'e'; p++)
		if (isdigit((unsigned char)*p))
			d[n++] = *p;
	int exp = atoi(p + 1);
	while (n > 1 && d[n - 1] == '0')
		n--;
	d[n] = 0;
	*nd = n;
	*dp = exp + 1;
}

int ob_go_format_float_as(char *buf, double v, char fmt, int bits)
{
	if (isnan(v))
		return sprintf(buf, "NaN");
	if (isinf(v))
		return sprintf(buf, v > 0 ? "+Inf" : "-Inf");
	char *o = buf;
	if (signbit(v))
		*o++ = '-';
	v = fabs(v);
	if (v == 0) {
		*o++ = '0';
		*o = 0;
		return (int)(o - buf);
	}
	char d[40];
	int nd, dp;
	shortest_digits(v, bits, d, &nd, &dp);
	int exp = dp - 1;
	/* 'g' with the shortest digits decides as if the precision were 6 */
	if (fmt == 'e' || (fmt == 'g' && (exp < -4 || exp >= 6))) {
		*o++ = d[0];
		if (nd > 1) {
			*o++ = '.';
			memcpy(o, d + 1, (size_t)nd - 1);
			o += nd - 1;
		}
		o += sprintf(o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return (int)(o - buf);
	}
	if (dp <= 0) {
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < -dp; i++)
			*o++ = '0';
		memcpy(o, d, (size_t)nd);
		o += nd;
	} else {
		for (int i = 0; i < dp; i++)
			*o++ = i < nd ? d[i] : '0';
		if (nd > dp) {
			*o++ = '.';
			memcpy(o, d + dp, (size_t)(nd - dp));
			o += nd - dp;
		}
	}
	*o = 0;
	return (int)(o - buf);
}

int ob_go_format_float(char *buf, double v)
{
	return ob_go_format_float_as(buf, v, 'g', 64);
}

bool ob_go_quote(struct ob_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	ob_buf_putc(b, '"');
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t size;
		uint32_t r = ob_utf8_decode(p + i, n - i, &size);
		if (r == OB_RUNE_ERROR && size == 1) {
			char e[5] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15], 0};
			ob_buf_puts(b, e);
			i++;
			continue;
		}
		i += size;
		if (r == '"' || r == '\\') {
			ob_buf_putc(b, '\\');
			ob_buf_putc(b, (char)r);
		} else if (r < 0x80 && r >= 0x20 && r != 0x7f) {
			ob_buf_putc(b, (char)r);
		} else if (ob_rune_is_print(r)) {
			ob_buf_append(b, s + i - size, size);
		} else {
			switch (r) {
			case '\a': ob_buf_puts(b, "\\a"); break;
			case '\b': ob_buf_puts(b, "\\b"); break;
			case '\f': ob_buf_puts(b, "\\f"); break;
			case '\n': ob_buf_puts(b, "\\n"); break;
			case '\r': ob_buf_puts(b, "\\r"); break;
			case '\t': ob_buf_puts(b, "\\t"); break;
			case '\v': ob_buf_puts(b, "\\v"); break;
			default:
				if (r < 0x20 || r == 0x7f)
					ob_buf_printf(b, "\\x%c%c", hex[r >> 4], hex[r & 15]);
				else if (r < 0x10000)
					ob_buf_printf(b, "\\u%04x", (unsigned)r);
				else
					ob_buf_printf(b, "\\U%08x", (unsigned)r);
			}
		}
	}
	return ob_buf_putc(b, '"');
}

bool ob_go_underscore_ok(const char *s, size_t n)
{
	char saw = '^';
	size_t i = 0;
	if (n >= 1 && (s[0] == '-' || s[0] == '+')) {
		s++;
		n--;
	}
	bool hex = false;
	if (n >= 2 && s[0] == '0' && strchr("bBoOxX", s[1])) {
		i = 2;
		saw = '0';
		hex = s[1] == 'x' || s[1] == 'X';
	}
	for (; i < n; i++) {
		char c = s[i];
		if ((c >= '0' && c <= '9') || (hex && isxdigit((unsigned char)c))) {
			saw = '0';
			continue;
		}
		if (c == '_') {
			if (saw != '0')
				return false;
			saw = '_';
			continue;
		}
		if (saw == '_')
			return false;
		saw = '!';
	}
	return saw != '_';
}

/* Go's special(): [+-]inf, [+-]infinity, nan (case-insensitive), whole string. */
static bool parse_special(const char *s, float *out)
{
	const char *p = s;
	float sign = 1;
	if (*p == '+' || *p == '-') {
		sign = *p == '-' ? -1.0f : 1.0f;
		p++;
		if (strcasecmp(p, "inf") == 0 || strcasecmp(p, "infinity") == 0) {
			*out = sign * INFINITY;
			return true;
		}
		return false;
	}
	if (strcasecmp(p, "inf") == 0 || strcasecmp(p, "infinity") == 0) {
		*out = INFINITY;
		return true;
	}
	if (strcasecmp(p, "nan") == 0) {
		*out = NAN;
		return true;
	}
	return false;
}

bool ob_go_parse_float32(const char *s, float *out)
{
	if (parse_special(s, out))
		return true;
	/* Go's readFloat grammar */
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	int base = 10;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	bool digits = false, dot = false, underscores = false;
	for (;; p++) {
		char c = *p;
		if (c == '_') {
			underscores = true;
			continue;
		}
		if (c == '.') {
			if (dot)
				return false;
			dot = true;
			continue;
		}
		if ((c >= '0' && c <= '9') || (base == 16 && isxdigit((unsigned char)c))) {
			digits = true;
			continue;
		}
		break;
	}
	if (!digits)
		return false;
	bool has_exp = false;
	if ((base == 10 && (*p == 'e' || *p == 'E')) || (base == 16 && (*p == 'p' || *p == 'P'))) {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		bool ed = false;
		for (; (*p >= '0' && *p <= '9') || *p == '_'; p++) {
			if (*p == '_')
				underscores = true;
			else
				ed = true;
		}
		if (!ed)
			return false;
		has_exp = true;
	}
	if (*p)
		return false;
	if (base == 16 && !has_exp)
		return false;
	if (underscores && !ob_go_underscore_ok(s, strlen(s)))
		return false;
	/* strtof on the literal without underscores */
	size_t n = strlen(s);
	char tmp[256], *buf = n < sizeof tmp ? tmp : malloc(n + 1);
	if (!buf)
		return false;
	size_t j = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '_')
			buf[j++] = s[i];
	buf[j] = 0;
	errno = 0;
	char *end;
	float f = strtof(buf, &end);
	bool ok = *end == 0 && !isinf(f);
	if (buf != tmp)
		free(buf);
	if (!ok)
		return false;
	*out = f;
	return true;
}

bool ob_go_parse_int64(const char *s, int64_t *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return false;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return false;
	errno = 0;
	long long v = strtoll(s, NULL, 10);
	if (errno == ERANGE)
		return false;
	*out = v;
	return true;
}

bool ob_go_parse_bool(const char *s, bool *out)
{
	static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
	static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};
	for (int i = 0; i < 6; i++) {
		if (strcmp(s, t[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcmp(s, f[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

int64_t ob_go_float_to_int(double f)
{
	if (isnan(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)f;
}
