/* tests/check.h — the tiny assertion kit every C test program uses.
 *
 * CHECK(cond) reports file:line and the expression and counts the failure without stopping, so one run shows
 * every broken case; check_done() turns the count into the exit status. SKIP(...) exits 77, which automake
 * reports as SKIP: use it only when a prerequisite (a model file, a GPU) is really absent, and say which.
 * check_shared_path() finds the shared test data (../shared), and fails the test when it is not there.
 */
#ifndef ORUN_TESTS_CHECK_H
#define ORUN_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                                      \
	do {                                                                                             \
		check_count++;                                                                           \
		if (!(cond)) {                                                                           \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
			check_failures++;                                                                \
		}                                                                                        \
	} while (0)

/* CHECK with a printf-style explanation of the values involved. */
#define CHECKF(cond, ...)                                                                                \
	do {                                                                                             \
		check_count++;                                                                           \
		if (!(cond)) {                                                                           \
			fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);          \
			fprintf(stderr, __VA_ARGS__);                                                    \
			fputc('\n', stderr);                                                             \
			check_failures++;                                                                \
		}                                                                                        \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                               \
	do {                                                                                             \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);                          \
		CHECKF(check_a_ == check_b_, "%lld != %lld", check_a_, check_b_);                        \
	} while (0)

#define CHECK_STREQ(a, b)                                                                                \
	do {                                                                                             \
		const char *check_a_ = (a), *check_b_ = (b);                                             \
		CHECKF(check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0, "\"%s\" != \"%s\"",       \
		       check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");                  \
	} while (0)

#define SKIP(...)                                                                                        \
	do {                                                                                             \
		fprintf(stderr, "SKIP: ");                                                               \
		fprintf(stderr, __VA_ARGS__);                                                            \
		fputc('\n', stderr);                                                                     \
		exit(77);                                                                                \
	} while (0)

/* Path of rel (a file or folder) in the shared test data: $ORUN_SHARED (make check sets it), else ../shared
 * beside the source tree. A missing one is not a reason to skip: the test fails at once (exit 1) with
 * "FAIL: needs ../shared/REL: not found at PATH (set ORUN_SHARED)". Static storage, valid until the next call. */
static inline const char *check_shared_path(const char *rel)
{
	static char buf[4096];
	const char *dir = getenv("ORUN_SHARED"), *src = getenv("ORUN_SRCDIR");
	if (dir && *dir)
		snprintf(buf, sizeof buf, "%s/%s", dir, rel);
	else
		snprintf(buf, sizeof buf, "%s/../shared/%s", src && *src ? src : ORUN_SRCDIR, rel);
	struct stat st;
	if (stat(buf, &st) != 0) {
		fprintf(stderr, "FAIL: needs ../shared/%s: not found at %s (set ORUN_SHARED)\n", rel, buf);
		exit(1);
	}
	return buf;
}

/* Call at the end of main: prints a one-line tally and returns the exit status. */
static inline int check_done(void)
{
	fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures);
	return check_failures ? 1 : 0;
}

#endif
