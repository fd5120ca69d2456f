/* tests/base/test_buf.c — base/buf: ob_grow's doubling, ceiling and failure contract, and ob_buf's sticky
 * errors, ceiling and hand-over, the growth step they share with the JSON writer (ob_buf_grow), and a whole
 * file read into a buffer (ob_buf_read_file). */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/buf.h"
#include "tests/check.h"

struct item {
	int a, b;
};

static void test_grow(void)
{
	struct item *v = NULL;
	size_t cap = 0;
	CHECK_EQ_INT(OB_GROW(v, cap, 1, 0), OB_GROW_OK);
	CHECK(v != NULL && cap == 8); /* the first growth gives min_cap */
	CHECK_EQ_INT(OB_GROW(v, cap, 8, 0), OB_GROW_OK);
	CHECK_EQ_INT(cap, 8);         /* enough room: unchanged */
	CHECK_EQ_INT(OB_GROW(v, cap, 9, 0), OB_GROW_OK);
	CHECK_EQ_INT(cap, 16);        /* doubles */
	CHECK_EQ_INT(OB_GROW(v, cap, 100, 0), OB_GROW_OK);
	CHECK_EQ_INT(cap, 100);       /* or jumps to what is needed */
	for (int i = 0; i < 100; i++)
		v[i].a = i;
	/* the ceiling, in elements: growth stops at it, and past it the array is left as it was */
	CHECK_EQ_INT(OB_GROW(v, cap, 110, 120), OB_GROW_OK);
	CHECK_EQ_INT(cap, 120);
	struct item *before = v;
	CHECK_EQ_INT(OB_GROW(v, cap, 121, 120), OB_GROW_LIMIT);
	CHECK(v == before && cap == 120 && v[99].a == 99);
	/* sizes that would overflow are refused, not wrapped */
	CHECK_EQ_INT(ob_grow(&v, &cap, SIZE_MAX / 4, sizeof *v, 8, 0), OB_GROW_LIMIT);
	CHECK(v == before && cap == 120);
	free(v);
}

static void test_buf(void)
{
	struct ob_buf b;
	ob_buf_init(&b, 0);
	CHECK(ob_buf_puts(&b, "ab") && ob_buf_putc(&b, 'c') && ob_buf_printf(&b, "%d", 42) && ob_buf_pad(&b, '.', 3));
	CHECK_STREQ(b.p, "abc42...");
	CHECK(ob_buf_put_rune(&b, 0xe9) && ob_buf_put_rune(&b, 0xd800));
	CHECK_STREQ(b.p, "abc42...\xc3\xa9\xef\xbf\xbd");
	ob_buf_reset(&b);
	CHECK(b.len == 0 && b.p[0] == 0);
	char *t = ob_buf_take(&b);
	CHECK(t && t[0] == 0 && b.p == NULL);
	free(t);
	ob_buf_free(&b);

	ob_buf_init(&b, 8); /* ceiling: 8 bytes of content */
	CHECK(ob_buf_puts(&b, "12345678"));
	CHECK(!ob_buf_putc(&b, '9'));
	CHECK(b.failed && b.over);
	CHECK(!ob_buf_puts(&b, "")); /* sticky */
	CHECK(ob_buf_take(&b) == NULL);
	ob_buf_free(&b);

	ob_buf_init(&b, 0);
	CHECK(ob_buf_reserve(&b, 1000) && b.cap >= 1001 && b.len == 0);
	ob_buf_free(&b);
}

/* the growth step ob_buf and the JSON writer share */
static void test_buf_grow(void)
{
	char *p = NULL;
	size_t cap = 0;
	CHECK_EQ_INT(ob_buf_grow(&p, &cap, 0, 10, 16), OB_GROW_OK);
	CHECK(p != NULL && cap >= 11); /* the content and its NUL */
	size_t before = cap;
	CHECK_EQ_INT(ob_buf_grow(&p, &cap, 10, 6, 16), OB_GROW_OK);  /* 16 bytes of content: at the ceiling */
	CHECK_EQ_INT(ob_buf_grow(&p, &cap, 10, 7, 16), OB_GROW_LIMIT); /* 17: past it */
	CHECK_EQ_INT(ob_buf_grow(&p, &cap, 10, SIZE_MAX, 0), OB_GROW_LIMIT); /* no wrap-around */
	CHECK(cap >= before && cap >= 17);
	free(p);
}

static void test_read_file(void)
{
	char path[] = "/tmp/orun-test-buf-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	CHECK(f && fputs("hello\nworld", f) >= 0);
	if (f)
		fclose(f);
	struct ob_buf b;
	ob_buf_init(&b, 0);
	CHECK(ob_buf_puts(&b, ">") && ob_buf_read_file(&b, path));
	CHECK(b.len == 12 && strcmp(b.p, ">hello\nworld") == 0);
	ob_buf_free(&b);
	ob_buf_init(&b, 5); /* the ceiling */
	CHECK(!ob_buf_read_file(&b, path) && b.failed && b.over);
	ob_buf_free(&b);
	unlink(path);
	ob_buf_init(&b, 0);
	CHECK(!ob_buf_read_file(&b, path) && b.failed && !b.over);
	ob_buf_free(&b);
}

int main(void)
{
	test_grow();
	test_buf();
	test_buf_grow();
	test_read_file();
	return check_done();
}
