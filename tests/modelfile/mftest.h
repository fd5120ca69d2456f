/* tests/modelfile/mftest.h — small helpers shared by the modelfile tests: whole-file reads, the escaped
 * one-line form of parsed commands used by the golden files, string replacement and temporary folders. */
#ifndef ORUN_TESTS_MODELFILE_MFTEST_H
#define ORUN_TESTS_MODELFILE_MFTEST_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads a whole file; NULL if it cannot. The buffer has a NUL after the data. */
static inline char *mft_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *p = malloc(cap);
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap *= 2;
			p = realloc(p, cap);
		}
		size_t r = fread(p + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	p[n] = 0;
	if (len)
		*len = n;
	return p;
}

static inline int mft_write(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(data, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Appends s escaped as the golden files write it (\\ \n \r \t \xHH) to out (large enough: 4*strlen+1). */
static inline void mft_escape(char *out, const char *s)
{
	char *o = out + strlen(out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '\\': *o++ = '\\'; *o++ = '\\'; break;
		case '\n': *o++ = '\\'; *o++ = 'n'; break;
		case '\r': *o++ = '\\'; *o++ = 'r'; break;
		case '\t': *o++ = '\\'; *o++ = 't'; break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				o += sprintf(o, "\\x%02x", *p);
			else
				*o++ = (char)*p;
		}
	}
	*o = 0;
}

/* A copy of s with every occurrence of from replaced by to. */
static inline char *mft_replace(const char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0;
	for (const char *p = strstr(s, from); p; p = strstr(p + fl, from))
		n++;
	char *out = malloc(strlen(s) + n * (tl > fl ? tl - fl : 0) + 1), *o = out;
	for (const char *p = s;;) {
		const char *q = strstr(p, from);
		if (!q) {
			strcpy(o, p);
			break;
		}
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		memcpy(o, to, tl);
		o += tl;
		p = q + fl;
	}
	return out;
}

/* Names in dir ending in suffix, sorted; NULL-terminated array of malloc'd names (without dir). */
static int mft_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}
static inline char **mft_list(const char *dir, const char *suffix, int *count)
{
	DIR *d = opendir(dir);
	char **v = calloc(1, sizeof *v);
	int n = 0;
	if (d) {
		struct dirent *e;
		size_t sl = strlen(suffix);
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0) {
				v = realloc(v, (size_t)(n + 2) * sizeof *v);
				v[n++] = strdup(e->d_name);
			}
		}
		closedir(d);
	}
	v[n] = NULL;
	qsort(v, (size_t)n, sizeof *v, mft_cmp);
	*count = n;
	return v;
}

static inline void mft_list_free(char **v)
{
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

/* Creates a fresh temporary directory; returns a malloc'd path. */
static inline char *mft_tmpdir(void)
{
	const char *base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char *p = malloc(strlen(base) + 32);
	sprintf(p, "%s/orun-mft-XXXXXX", base);
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

/* rm -rf path (no symlink following). */
static inline void mft_rmrf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d))) {
				if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
					continue;
				char *c = malloc(strlen(path) + strlen(e->d_name) + 2);
				sprintf(c, "%s/%s", path, e->d_name);
				mft_rmrf(c);
				free(c);
			}
			closedir(d);
		}
		rmdir(path);
	} else {
		unlink(path);
	}
}

/* Copies the tree at src into dst (dst created); regular files and folders only. 0 on success. */
static inline int mft_copy_tree(const char *src, const char *dst)
{
	struct stat st;
	if (lstat(src, &st) != 0)
		return -1;
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, 0755) != 0 && errno != EEXIST)
			return -1;
		DIR *d = opendir(src);
		if (!d)
			return -1;
		struct dirent *e;
		int rc = 0;
		while (rc == 0 && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char *a = malloc(strlen(src) + strlen(e->d_name) + 2), *b = malloc(strlen(dst) + strlen(e->d_name) + 2);
			sprintf(a, "%s/%s", src, e->d_name);
			sprintf(b, "%s/%s", dst, e->d_name);
			rc = mft_copy_tree(a, b);
			free(a);
			free(b);
		}
		closedir(d);
		return rc;
	}
	size_t n;
	char *data = mft_read(src, &n);
	if (!data)
		return -1;
	int rc = mft_write(dst, data, n);
	free(data);
	return rc;
}

static inline int mft_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

#endif
