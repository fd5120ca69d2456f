/* modelfile/store.c — blobs, manifests and the store-wide operations (list, resolve, copy, delete, prune).
 *
 * Every write goes through a temporary file that is fsynced and renamed, so a crash leaves either the old
 * or the new file. Temporary files have names Ollama's own pruning recognises as garbage (they are not
 * digests / not valid model names), so either implementation cleans up after the other.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "base/buf.h"
#include "base/gofmt.h"
#include "base/json.h"
#include "base/jsonutil.h"
#include "modelfile/store.h"

#define PATH_CAP 4096
#define COPY_CHUNK (1u << 20)

struct mf_store {
	char *root;
	char *blobs;
	char *manifests;
};

/* ---------------------------------------------------------------------------------------------------- */
/* Environment */

/* envconfig.Var: trimmed of spaces, then of quotes. Copies into buf (cap); "" when unset. */
static const char *env_var(const char *name, char *buf, size_t cap)
{
	const char *v = getenv(name);
	buf[0] = 0;
	if (!v)
		return buf;
	while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r' || *v == '\v' || *v == '\f')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' || v[n - 1] == '\r' ||
		     v[n - 1] == '\v' || v[n - 1] == '\f'))
		n--;
	while (n && (*v == '"' || *v == '\'')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == '"' || v[n - 1] == '\''))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, v, n);
	buf[n] = 0;
	return buf;
}

char *mf_models_dir_default(void)
{
	char buf[PATH_CAP];
	if (*env_var("OLLAMA_MODELS", buf, sizeof buf))
		return strdup(buf);
	const char *home = getenv("HOME");
	if (!home || !*home)
		home = "/";
	size_t n = strlen(home) + sizeof "/.ollama/models";
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/.ollama/models", home);
	return p;
}

bool mf_env_bool(const char *name)
{
	char buf[256];
	if (!*env_var(name, buf, sizeof buf))
		return false;
	bool b;
	if (!ob_go_parse_bool(buf, &b))
		return true;
	return b;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Digests */

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool mf_digest_valid(const char *d)
{
	if (strncmp(d, "sha256", 6) != 0 || (d[6] != ':' && d[6] != '-'))
		return false;
	for (int i = 0; i < 64; i++)
		if (!is_hex(d[7 + i]))
			return false;
	return d[71] == 0;
}

static void hex_digest(const unsigned char md[32], char out[MF_DIGEST_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		out[7 + 2 * i] = hex[md[i] >> 4];
		out[8 + 2 * i] = hex[md[i] & 15];
	}
	out[MF_DIGEST_LEN] = 0;
}

void mf_sha256_buf(const void *data, size_t n, char out[MF_DIGEST_LEN + 1])
{
	unsigned char md[32];
	unsigned int len = 0;
	EVP_Digest(data, n, md, &len, EVP_sha256(), NULL);
	hex_digest(md, out);
}

bool mf_cancelled(const struct mf_cancel *c)
{
	return c && c->cancelled && c->cancelled(c->ctx);
}

/* Opens a regular file for reading. O_NONBLOCK: opening a FIFO must not block before fstat can refuse it
 * (it changes nothing for a regular file). A device, FIFO or folder is refused: hashing /dev/zero would
 * never end. */
static int open_regular(const char *path, int *fd_out, struct stat *st, struct mf_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return mf_error_set(err, errno == ENOENT || errno == ENOTDIR ? MF_ERR_NOT_FOUND : MF_ERR_IO,
				    "open %s: %s", path, strerror(errno));
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return mf_error_set(err, MF_ERR_IO, "%s is not a regular file", path);
	}
	*fd_out = fd;
	return MF_OK;
}

static int sha256_file(const char *path, char out[MF_DIGEST_LEN + 1], uint64_t *size, const struct mf_cancel *cancel,
		       struct mf_error *err)
{
	int fd;
	struct stat st;
	int orc = open_regular(path, &fd, &st, err);
	if (orc != MF_OK)
		return orc;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *buf = malloc(COPY_CHUNK);
	int rc = MF_OK;
	uint64_t total = 0;
	if (!ctx || !buf || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf, COPY_CHUNK);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			rc = mf_error_set(err, MF_ERR_IO, "read %s: %s", path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		EVP_DigestUpdate(ctx, buf, (size_t)r);
		total += (uint64_t)r;
		if (mf_cancelled(cancel)) {
			rc = mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
			goto out;
		}
	}
	unsigned char md[32];
	unsigned int len = 0;
	EVP_DigestFinal_ex(ctx, md, &len);
	hex_digest(md, out);
	if (size)
		*size = total;
out:
	free(buf);
	EVP_MD_CTX_free(ctx);
	close(fd);
	return rc;
}

int mf_sha256_file(const char *path, char out[MF_DIGEST_LEN + 1], uint64_t *size, struct mf_error *err)
{
	return sha256_file(path, out, size, NULL, err);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Paths */

static int mkdir_p(const char *path, struct mf_error *err)
{
	char tmp[PATH_CAP];
	size_t n = strlen(path);
	if (n >= sizeof tmp)
		return mf_error_set(err, MF_ERR_LIMIT, "path too long: %s", path);
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != 0)
			continue;
		char c = tmp[i];
		tmp[i] = 0;
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return mf_error_set(err, MF_ERR_IO, "mkdir %s: %s: ensure path elements are traversable", tmp,
					    strerror(errno));
		tmp[i] = c;
	}
	return MF_OK;
}

/* buf = a + "/" + b; false when it does not fit. */
static bool join2(char *buf, size_t cap, const char *a, const char *b)
{
	int n = snprintf(buf, cap, "%s/%s", a, b);
	return n >= 0 && (size_t)n < cap;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

int mf_store_open(const char *dir, struct mf_store **out, struct mf_error *err)
{
	*out = NULL;
	struct mf_store *s = calloc(1, sizeof *s);
	if (!s)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	s->root = dir ? strdup(dir) : mf_models_dir_default();
	if (s->root) {
		size_t n = strlen(s->root);
		while (n > 1 && s->root[n - 1] == '/')
			s->root[--n] = 0;
	}
	s->blobs = s->root ? path_join(s->root, "blobs") : NULL;
	s->manifests = s->root ? path_join(s->root, "manifests") : NULL;
	if (!s->root || !s->blobs || !s->manifests) {
		mf_store_close(s);
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	int rc = mkdir_p(s->blobs, err);
	if (rc == MF_OK)
		rc = mkdir_p(s->manifests, err);
	if (rc != MF_OK) {
		mf_store_close(s);
		return rc;
	}
	*out = s;
	return MF_OK;
}

void mf_store_close(struct mf_store *s)
{
	if (!s)
		return;
	free(s->root);
	free(s->blobs);
	free(s->manifests);
	free(s);
}

const char *mf_store_root(const struct mf_store *s)
{
	return s->root;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The store lock */

int mf_store_lock(struct mf_store *s, const struct mf_cancel *cancel, int *lock, struct mf_error *err)
{
	*lock = -1;
	char path[PATH_CAP];
	if (!join2(path, sizeof path, s->root, MF_STORE_LOCK_NAME))
		return mf_error_set(err, MF_ERR_LIMIT, "path too long");
	/* a fresh open file description per taker: flock then excludes the threads of this process too */
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		if (errno == EROFS || errno == EACCES || errno == EPERM)
			return MF_OK;
		return mf_error_set(err, MF_ERR_IO, "open %s: %s", path, strerror(errno));
	}
	const struct timespec tick = {0, 10 * 1000000L};
	for (long waited_ms = 0;; waited_ms += 10) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*lock = fd;
			return MF_OK;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) { /* e.g. ENOLCK: no locks on this file system */
			close(fd);
			return MF_OK;
		}
		if (mf_cancelled(cancel)) {
			close(fd);
			return mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
		}
		if (waited_ms >= MF_STORE_LOCK_WAIT_MS) {
			close(fd);
			return mf_error_set(err, MF_ERR_IO,
					    "the model store is busy: %s has been held by another process for %d s",
					    path, MF_STORE_LOCK_WAIT_MS / 1000);
		}
		nanosleep(&tick, NULL);
	}
}

void mf_store_unlock(int lock)
{
	if (lock >= 0)
		close(lock); /* releases the flock */
}

int mf_store_blob_path(const struct mf_store *s, const char *digest, char *buf, size_t cap, struct mf_error *err)
{
	if (!mf_digest_valid(digest))
		return mf_error_set(err, MF_ERR_PARSE, "invalid digest format");
	int n = snprintf(buf, cap, "%s/sha256-%s", s->blobs, digest + 7);
	if (n < 0 || (size_t)n >= cap)
		return mf_error_set(err, MF_ERR_LIMIT, "path too long");
	return MF_OK;
}

bool mf_store_blob_exists(const struct mf_store *s, const char *digest)
{
	char path[PATH_CAP];
	struct stat st;
	return mf_store_blob_path(s, digest, path, sizeof path, NULL) == MF_OK && stat(path, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

void mf_store_touch_blob(const struct mf_store *s, const char *digest)
{
	char path[PATH_CAP];
	if (mf_store_blob_path(s, digest, path, sizeof path, NULL) == MF_OK)
		(void)utimensat(AT_FDCWD, path, NULL, 0);
}

/* fsync the folder holding path, so a rename survives a crash. */
static void sync_dir_of(const char *path)
{
	char dir[PATH_CAP];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = 0;
	int fd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* ---------------------------------------------------------------------------------------------------- */
/* Temporary files */

/* Creates blobs/orun-tmp-XXXXXX (a folder when dir, else a file) and takes an flock on it, held as long as
 * *fd is open: the start-up cleaner removes only what nobody holds. Between the creation and the flock a
 * cleaner may have taken it for a leftover and removed it: then it has no link any more (st_nlink 0) and
 * another is made. A file system without locks: the file is used unlocked (the cleaner cannot take it
 * either, so it never removes it). */
static int temp_create(struct mf_store *s, bool dir, char *path, size_t cap, int *fd, struct mf_error *err)
{
	int rc = mkdir_p(s->blobs, err);
	if (rc != MF_OK)
		return rc;
	for (int attempt = 0; attempt < 16; attempt++) {
		int k = snprintf(path, cap, "%s/" MF_TEMP_PREFIX "XXXXXX", s->blobs);
		if (k < 0 || (size_t)k >= cap)
			return mf_error_set(err, MF_ERR_LIMIT, "path too long");
		int f = -1;
		if (!dir)
			f = mkostemp(path, O_CLOEXEC);
		else if (mkdtemp(path))
			f = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (f < 0)
			return mf_error_set(err, MF_ERR_IO, "create a temporary %s in %s: %s", dir ? "folder" : "file",
					    s->blobs, strerror(errno));
		while (flock(f, LOCK_EX) != 0 && errno == EINTR)
			;
		struct stat st;
		if (fstat(f, &st) == 0 && st.st_nlink > 0) {
			*fd = f;
			return MF_OK;
		}
		close(f);
	}
	return mf_error_set(err, MF_ERR_IO, "create a temporary file in %s: removed as soon as made", s->blobs);
}

/* rm -r of a folder orun made (symlinks are removed, not followed). Returns the bytes of the files removed. */
static uint64_t remove_tree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	uint64_t bytes = 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d))) {
				if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
					continue;
				char child[PATH_CAP];
				if (join2(child, sizeof child, path, e->d_name))
					bytes += remove_tree(child);
			}
			closedir(d);
		}
		rmdir(path);
	} else if (unlink(path) == 0 && S_ISREG(st.st_mode)) {
		bytes = (uint64_t)st.st_size;
	}
	return bytes;
}

int mf_store_temp_dir(struct mf_store *s, char *path, size_t cap, int *lock, struct mf_error *err)
{
	*lock = -1;
	return temp_create(s, true, path, cap, lock, err);
}

void mf_store_temp_dir_remove(const char *path, int lock)
{
	if (path && *path)
		remove_tree(path);
	if (lock >= 0)
		close(lock);
}

/* Removes path unless another process (or thread) holds its flock; true when it was removed. */
static bool remove_if_unheld(const char *path, uint64_t *bytes)
{
	int f = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (f < 0)
		return false;
	bool gone = false;
	if (flock(f, LOCK_EX | LOCK_NB) == 0) { /* nobody writes it: a leftover */
		uint64_t b = remove_tree(path);
		struct stat st;
		gone = lstat(path, &st) != 0;
		if (gone && bytes)
			*bytes += b;
	}
	close(f);
	return gone;
}

/* The temporary manifests of write_atomic (".<tag>.tmp-XXXXXX") under a manifests folder, any depth. */
static void clean_manifest_temps(const char *dir, int depth, size_t *n, uint64_t *bytes)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char child[PATH_CAP];
		struct stat st;
		if (!join2(child, sizeof child, dir, e->d_name) || lstat(child, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 4)
			clean_manifest_temps(child, depth + 1, n, bytes);
		else if (S_ISREG(st.st_mode) && e->d_name[0] == '.' && strstr(e->d_name, ".tmp-") &&
			 remove_if_unheld(child, bytes))
			++*n;
	}
	closedir(d);
}

int mf_store_clean_temp(struct mf_store *s, size_t *n_removed, uint64_t *bytes, struct mf_error *err)
{
	size_t n = 0;
	uint64_t b = 0;
	DIR *d = opendir(s->blobs);
	if (!d)
		return mf_error_set(err, MF_ERR_IO, "couldn't read dir '%s': %s", s->blobs, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d))) {
		char path[PATH_CAP];
		if (strncmp(e->d_name, MF_TEMP_PREFIX, strlen(MF_TEMP_PREFIX)) == 0 &&
		    join2(path, sizeof path, s->blobs, e->d_name) && remove_if_unheld(path, &b))
			n++;
	}
	closedir(d);
	clean_manifest_temps(s->manifests, 0, &n, &b);
	if (n_removed)
		*n_removed = n;
	if (bytes)
		*bytes = b;
	return MF_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Blobs */

struct mf_blob_writer {
	struct mf_store *store;
	int fd;
	char tmp[PATH_CAP];
	EVP_MD_CTX *ctx;
	uint64_t size;
};

int mf_blob_writer_open(struct mf_store *s, struct mf_blob_writer **out, struct mf_error *err)
{
	*out = NULL;
	struct mf_blob_writer *w = calloc(1, sizeof *w);
	if (!w)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	w->store = s;
	w->fd = -1;
	w->ctx = EVP_MD_CTX_new();
	if (!w->ctx || !EVP_DigestInit_ex(w->ctx, EVP_sha256(), NULL)) {
		mf_blob_writer_abort(w);
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	/* held (flock) until the writer is done, so that a start-up cleaner leaves it alone */
	int rc = temp_create(s, false, w->tmp, sizeof w->tmp, &w->fd, err);
	if (rc != MF_OK) {
		w->tmp[0] = 0;
		mf_blob_writer_abort(w);
		return rc;
	}
	*out = w;
	return MF_OK;
}

int mf_blob_writer_write(struct mf_blob_writer *w, const void *data, size_t n, struct mf_error *err)
{
	const char *p = data;
	EVP_DigestUpdate(w->ctx, data, n);
	w->size += n;
	while (n) {
		ssize_t r = write(w->fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return mf_error_set(err, MF_ERR_IO, "write %s: %s", w->tmp, strerror(errno));
		}
		p += r;
		n -= (size_t)r;
	}
	return MF_OK;
}

uint64_t mf_blob_writer_size(const struct mf_blob_writer *w)
{
	return w->size;
}

void mf_blob_writer_abort(struct mf_blob_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp[0])
		unlink(w->tmp);
	EVP_MD_CTX_free(w->ctx);
	free(w);
}

/* Digest in canonical "sha256:" form, hex lower-cased, from either accepted form. */
static void canonical_digest(const char *in, char out[MF_DIGEST_LEN + 1])
{
	memcpy(out, "sha256:", 7);
	for (int i = 0; i < 64; i++) {
		char c = in[7 + i];
		out[7 + i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
	}
	out[MF_DIGEST_LEN] = 0;
}

int mf_blob_writer_commit(struct mf_blob_writer *w, const char *expect, char digest_out[MF_DIGEST_LEN + 1],
			  bool *created, struct mf_error *err)
{
	int rc = MF_OK;
	if (created)
		*created = false;
	unsigned char md[32];
	unsigned int mdlen = 0;
	char digest[MF_DIGEST_LEN + 1];
	EVP_DigestFinal_ex(w->ctx, md, &mdlen);
	hex_digest(md, digest);
	if (digest_out)
		memcpy(digest_out, digest, sizeof digest);
	if (expect) {
		char want[MF_DIGEST_LEN + 1];
		if (!mf_digest_valid(expect)) {
			rc = mf_error_set(err, MF_ERR_PARSE, "invalid digest format");
			goto fail;
		}
		canonical_digest(expect, want);
		if (strcmp(want, digest) != 0) {
			rc = mf_error_set(err, MF_ERR_DIGEST, "digest mismatch, expected \"%s\", got \"%s\"", expect, digest);
			goto fail;
		}
	}
	if (fsync(w->fd) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "fsync %s: %s", w->tmp, strerror(errno));
		goto fail;
	}
	if (fchmod(w->fd, 0644) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "chmod %s: %s", w->tmp, strerror(errno));
		goto fail;
	}
	/* w->fd stays open (and the temporary file locked) until it is renamed: mf_blob_writer_abort closes it */
	char path[PATH_CAP];
	rc = mf_store_blob_path(w->store, digest, path, sizeof path, err);
	if (rc != MF_OK)
		goto fail;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == w->size) {
		/* already there: keep it (same content by construction) */
		unlink(w->tmp);
		w->tmp[0] = 0;
	} else {
		if (rename(w->tmp, path) != 0) {
			rc = mf_error_set(err, MF_ERR_IO, "rename %s to %s: %s", w->tmp, path, strerror(errno));
			goto fail;
		}
		w->tmp[0] = 0;
		sync_dir_of(path);
		if (created)
			*created = true;
	}
	(void)utimensat(AT_FDCWD, path, NULL, 0);
	mf_blob_writer_abort(w);
	return MF_OK;
fail:
	mf_blob_writer_abort(w);
	return rc;
}

int mf_store_put_blob(struct mf_store *s, const void *data, size_t n, char digest_out[MF_DIGEST_LEN + 1],
		      bool *created, struct mf_error *err)
{
	struct mf_blob_writer *w;
	int rc = mf_blob_writer_open(s, &w, err);
	if (rc != MF_OK)
		return rc;
	rc = mf_blob_writer_write(w, data, n, err);
	if (rc != MF_OK) {
		mf_blob_writer_abort(w);
		return rc;
	}
	return mf_blob_writer_commit(w, NULL, digest_out, created, err);
}

int mf_store_put_file(struct mf_store *s, const char *path, char digest_out[MF_DIGEST_LEN + 1], uint64_t *size,
		      bool *created, struct mf_error *err)
{
	int fd;
	struct stat st;
	int rc = open_regular(path, &fd, &st, err);
	if (rc != MF_OK)
		return rc;
	struct mf_blob_writer *w;
	rc = mf_blob_writer_open(s, &w, err);
	char *buf = rc == MF_OK ? malloc(COPY_CHUNK) : NULL;
	if (rc == MF_OK && !buf)
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	while (rc == MF_OK) {
		ssize_t r = read(fd, buf, COPY_CHUNK);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mf_error_set(err, MF_ERR_IO, "read %s: %s", path, strerror(errno));
			break;
		}
		if (r == 0)
			break;
		rc = mf_blob_writer_write(w, buf, (size_t)r, err);
	}
	free(buf);
	close(fd);
	if (rc != MF_OK) {
		mf_blob_writer_abort(w);
		return rc;
	}
	if (size)
		*size = w->size;
	return mf_blob_writer_commit(w, NULL, digest_out, created, err);
}

int mf_store_adopt_file(struct mf_store *s, const char *path, char digest_out[MF_DIGEST_LEN + 1], uint64_t *size,
			bool *created, const struct mf_cancel *cancel, struct mf_error *err)
{
	char digest[MF_DIGEST_LEN + 1];
	uint64_t n = 0;
	int rc = sha256_file(path, digest, &n, cancel, err);
	if (rc != MF_OK)
		return rc;
	if (created)
		*created = false;
	char dst[PATH_CAP];
	if ((rc = mf_store_blob_path(s, digest, dst, sizeof dst, err)) != MF_OK) {
		unlink(path);
		return rc;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		(void)fchmod(fd, 0644);
		close(fd);
	}
	struct stat st;
	if (stat(dst, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == n) {
		unlink(path);
	} else if (rename(path, dst) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "rename %s to %s: %s", path, dst, strerror(errno));
		unlink(path);
		return rc;
	} else {
		sync_dir_of(dst);
		if (created)
			*created = true;
	}
	(void)utimensat(AT_FDCWD, dst, NULL, 0);
	memcpy(digest_out, digest, sizeof digest);
	if (size)
		*size = n;
	return MF_OK;
}

static int read_file(const char *path, size_t max, char **data, size_t *len, struct stat *st_out, struct mf_error *err)
{
	*data = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mf_error_set(err, errno == ENOENT || errno == ENOTDIR ? MF_ERR_NOT_FOUND : MF_ERR_IO, "open %s: %s",
				    path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return mf_error_set(err, MF_ERR_IO, "%s is not a regular file", path);
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return mf_error_set(err, MF_ERR_LIMIT, "%s is %lld bytes, more than the limit of %zu", path,
				    (long long)st.st_size, max);
	}
	size_t n = (size_t)st.st_size;
	char *p = malloc(n + 1);
	if (!p) {
		close(fd);
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	}
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	p[got] = 0;
	*data = p;
	*len = got;
	if (st_out)
		*st_out = st;
	return MF_OK;
}

int mf_store_read_blob(const struct mf_store *s, const char *digest, size_t max, char **data, size_t *len,
		       struct mf_error *err)
{
	char path[PATH_CAP];
	int rc = mf_store_blob_path(s, digest, path, sizeof path, err);
	if (rc != MF_OK)
		return rc;
	return read_file(path, max, data, len, NULL, err);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Manifests */

static void layer_clear(struct mf_layer *l)
{
	free(l->media_type);
	free(l->digest);
	free(l->from);
	free(l->name);
	memset(l, 0, sizeof *l);
}

void mf_manifest_free(struct mf_manifest *m)
{
	if (!m)
		return;
	free(m->media_type);
	layer_clear(&m->config);
	for (size_t i = 0; i < m->n_layers; i++)
		layer_clear(&m->layers[i]);
	free(m->layers);
	free(m);
}

int64_t mf_manifest_total_size(const struct mf_manifest *m)
{
	/* the sizes are the file's: summed as Go sums int64s (wrapping), never as a signed overflow */
	uint64_t n = (uint64_t)m->config.size;
	for (size_t i = 0; i < m->n_layers; i++)
		n += (uint64_t)m->layers[i].size;
	return (int64_t)n;
}

/* A string member (Go: missing or null → ""); a non-string fails. */
static int get_str(const struct ob_json *obj, const char *key, char **out, struct mf_error *err)
{
	*out = NULL;
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_STRING)
		return mf_error_set(err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go struct field .%s of type string",
				    ob_json_type_name(v), key);
	*out = strndup(v->str, v->len);
	return *out ? MF_OK : mf_error_set(err, MF_ERR_NOMEM, "out of memory");
}

static int get_int(const struct ob_json *obj, const char *key, int64_t *out, struct mf_error *err)
{
	*out = 0;
	const struct ob_json *v = ob_json_get_fold(obj, key);
	if (!v || v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_NUMBER || !ob_json_int(v, out))
		return mf_error_set(err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go struct field .%s of type int64",
				    v->type == OB_JSON_NUMBER ? "number" : ob_json_type_name(v), key);
	return MF_OK;
}

static int parse_layer(const struct ob_json *v, struct mf_layer *l, struct mf_error *err)
{
	memset(l, 0, sizeof *l);
	if (v->type == OB_JSON_NULL)
		return MF_OK;
	if (v->type != OB_JSON_OBJECT)
		return mf_error_set(err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go value of type manifest.Layer",
				    ob_json_type_name(v));
	int rc;
	if ((rc = get_str(v, "mediaType", &l->media_type, err)) != MF_OK ||
	    (rc = get_str(v, "digest", &l->digest, err)) != MF_OK || (rc = get_int(v, "size", &l->size, err)) != MF_OK ||
	    (rc = get_str(v, "from", &l->from, err)) != MF_OK || (rc = get_str(v, "name", &l->name, err)) != MF_OK)
		return rc;
	return MF_OK;
}

int mf_manifest_parse(const char *data, size_t n, struct mf_manifest **out, struct mf_error *err)
{
	*out = NULL;
	if (n > MF_MAX_MANIFEST_SIZE)
		return mf_error_set(err, MF_ERR_LIMIT, "manifest is %zu bytes, more than the limit of %u", n,
				    MF_MAX_MANIFEST_SIZE);
	/* json.Decoder reads one value: trailing whitespace (the encoder's newline) is fine */
	struct ob_json_error jerr;
	struct ob_json_doc *doc = ob_json_parse(data, n, &jerr);
	if (!doc)
		return mf_error_set(err, strcmp(jerr.message, "out of memory") == 0 ? MF_ERR_NOMEM : MF_ERR_FORMAT, "%s",
				    jerr.message);
	const struct ob_json *root = ob_json_root(doc);
	struct mf_manifest *m = calloc(1, sizeof *m);
	int rc = MF_OK;
	if (!m) {
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (root->type != OB_JSON_OBJECT) {
		rc = mf_error_set(err, MF_ERR_FORMAT, "json: cannot unmarshal %s into Go value of type manifest.Manifest",
				  ob_json_type_name(root));
		goto out;
	}
	if ((rc = get_int(root, "schemaVersion", &m->schema_version, err)) != MF_OK ||
	    (rc = get_str(root, "mediaType", &m->media_type, err)) != MF_OK)
		goto out;
	const struct ob_json *cfg = ob_json_get_fold(root, "config");
	if (cfg && (rc = parse_layer(cfg, &m->config, err)) != MF_OK)
		goto out;
	const struct ob_json *layers = ob_json_get_fold(root, "layers");
	if (!layers || layers->type == OB_JSON_NULL) {
		m->layers_null = true;
	} else if (layers->type != OB_JSON_ARRAY) {
		rc = mf_error_set(err, MF_ERR_FORMAT,
				  "json: cannot unmarshal %s into Go struct field Manifest.layers of type []manifest.Layer",
				  ob_json_type_name(layers));
		goto out;
	} else if (layers->count > MF_MAX_LAYERS) {
		rc = mf_error_set(err, MF_ERR_LIMIT, "manifest has %u layers, more than the limit of %d", layers->count,
				  MF_MAX_LAYERS);
		goto out;
	} else if (layers->count) {
		m->layers = calloc(layers->count, sizeof *m->layers);
		if (!m->layers) {
			rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
			goto out;
		}
		OB_JSON_FOREACH(e, layers)
		{
			rc = parse_layer(e, &m->layers[m->n_layers], err);
			m->n_layers++;
			if (rc != MF_OK)
				goto out;
		}
	}
out:
	ob_json_free(doc);
	if (rc != MF_OK) {
		mf_manifest_free(m);
		return rc;
	}
	*out = m;
	return MF_OK;
}

static void encode_layer(struct ob_jw *w, const struct mf_layer *l)
{
	ob_jw_obj(w);
	ob_jw_key(w, "mediaType");
	ob_jw_string(w, l->media_type ? l->media_type : "");
	ob_jw_key(w, "digest");
	ob_jw_string(w, l->digest ? l->digest : "");
	ob_jw_key(w, "size");
	ob_jw_int(w, l->size);
	if (l->from && *l->from) {
		ob_jw_key(w, "from");
		ob_jw_string(w, l->from);
	}
	if (l->name && *l->name) {
		ob_jw_key(w, "name");
		ob_jw_string(w, l->name);
	}
	ob_jw_obj_end(w);
}

char *mf_manifest_encode(const struct mf_layer *config, const struct mf_layer *layers, size_t n_layers, size_t *len)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "schemaVersion");
	ob_jw_int(&w, 2);
	ob_jw_key(&w, "mediaType");
	ob_jw_string(&w, MF_MEDIA_MANIFEST);
	ob_jw_key(&w, "config");
	encode_layer(&w, config);
	ob_jw_key(&w, "layers");
	if (!layers && n_layers == 0) {
		ob_jw_null(&w);
	} else {
		ob_jw_arr(&w);
		for (size_t i = 0; i < n_layers; i++)
			encode_layer(&w, &layers[i]);
		ob_jw_arr_end(&w);
	}
	ob_jw_obj_end(&w);
	return ob_jw_take_line(&w, len);
}

static int manifest_path(const struct mf_store *s, const struct mf_name *n, char *buf, size_t cap, struct mf_error *err)
{
	if (!mf_name_is_valid(n)) {
		char b[MF_NAME_STRING_MAX];
		return mf_error_set(err, MF_ERR_PARSE, "unqualified name: %s", mf_name_string(n, b));
	}
	char fp[MF_NAME_STRING_MAX];
	int k = snprintf(buf, cap, "%s/%s", s->manifests, mf_name_filepath(n, fp));
	if (k < 0 || (size_t)k >= cap)
		return mf_error_set(err, MF_ERR_LIMIT, "path too long");
	return MF_OK;
}

static int read_manifest_path(const char *path, const struct mf_name *n, struct mf_manifest **out, struct mf_error *err)
{
	char *data;
	size_t len;
	struct stat st;
	int rc = read_file(path, MF_MAX_MANIFEST_SIZE, &data, &len, &st, err);
	if (rc != MF_OK)
		return rc;
	rc = mf_manifest_parse(data, len, out, err);
	if (rc == MF_OK) {
		char d[MF_DIGEST_LEN + 1];
		mf_sha256_buf(data, len, d);
		memcpy((*out)->digest, d + 7, 64);
		(*out)->digest[64] = 0;
		(*out)->name = *n;
		(*out)->mtime_sec = st.st_mtim.tv_sec;
		(*out)->mtime_nsec = st.st_mtim.tv_nsec;
		(*out)->file_size = st.st_size;
	}
	free(data);
	return rc;
}

int mf_store_read_manifest(const struct mf_store *s, const struct mf_name *n, struct mf_manifest **out,
			   struct mf_error *err)
{
	*out = NULL;
	char path[PATH_CAP];
	int rc = manifest_path(s, n, path, sizeof path, err);
	if (rc != MF_OK)
		return rc;
	return read_manifest_path(path, n, out, err);
}

/* Writes data to path through a temporary file in the same folder (fsync + rename + folder fsync). */
static int write_atomic(const char *path, const char *data, size_t n, struct mf_error *err)
{
	char dir[PATH_CAP], tmp[PATH_CAP];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return mf_error_set(err, MF_ERR_IO, "bad path %s", path);
	*slash = 0;
	int rc = mkdir_p(dir, err);
	if (rc != MF_OK)
		return rc;
	/* a leading dot: never a valid model name, so no reader takes it for a manifest */
	int k = snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", dir, slash + 1);
	if (k < 0 || (size_t)k >= sizeof tmp)
		return mf_error_set(err, MF_ERR_LIMIT, "path too long");
	/* held (flock) while in use, so that mf_store_clean_temp in another process leaves it alone; one that
	 * cleaner removed between mkostemp and flock has no link left: make another */
	char pattern[PATH_CAP];
	memcpy(pattern, tmp, sizeof pattern);
	int fd = -1;
	for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
		memcpy(tmp, pattern, sizeof tmp);
		if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
			return mf_error_set(err, MF_ERR_IO, "create %s: %s", tmp, strerror(errno));
		struct stat st;
		while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
			;
		if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0)
		return mf_error_set(err, MF_ERR_IO, "create %s: removed as soon as made", tmp);
	size_t off = 0;
	while (off < n) {
		ssize_t r = write(fd, data + off, n - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = mf_error_set(err, MF_ERR_IO, "write %s: %s", tmp, strerror(errno));
			goto fail;
		}
		off += (size_t)r;
	}
	if (fsync(fd) != 0 || fchmod(fd, 0644) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "sync %s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (rename(tmp, path) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "rename %s to %s: %s", tmp, path, strerror(errno));
		goto fail;
	}
	close(fd);
	sync_dir_of(path);
	return MF_OK;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

int mf_store_write_manifest(struct mf_store *s, const struct mf_name *n, const struct mf_layer *config,
			    const struct mf_layer *layers, size_t n_layers, struct mf_error *err)
{
	char path[PATH_CAP];
	int rc = manifest_path(s, n, path, sizeof path, err);
	if (rc != MF_OK)
		return rc;
	size_t len;
	char *data = mf_manifest_encode(config, layers, n_layers, &len);
	if (!data)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	rc = write_atomic(path, data, len, err);
	free(data);
	return rc;
}

void mf_manifest_list_free(struct mf_manifest **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mf_manifest_free(list[i]);
	free(list);
}

/* Entries of a folder (not "." or ".."); NULL-terminated array of malloc'd names, or NULL when unreadable. */
static char **list_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return NULL;
	size_t n = 0, cap = 16;
	char **v = malloc(cap * sizeof *v);
	struct dirent *e;
	while (v && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (OB_GROW(v, cap, n + 2, 0) != OB_GROW_OK) {
			for (size_t i = 0; i < n; i++)
				free(v[i]);
			free(v);
			v = NULL;
			break;
		}
		v[n] = strdup(e->d_name);
		if (v[n])
			n++;
	}
	closedir(d);
	if (v)
		v[n] = NULL;
	return v;
}

static void free_list(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static int cmp_mtime_desc(const void *a, const void *b)
{
	const struct mf_manifest *x = *(struct mf_manifest *const *)a, *y = *(struct mf_manifest *const *)b;
	if (x->mtime_sec != y->mtime_sec)
		return x->mtime_sec > y->mtime_sec ? -1 : 1;
	if (x->mtime_nsec != y->mtime_nsec)
		return x->mtime_nsec > y->mtime_nsec ? -1 : 1;
	char a1[MF_NAME_STRING_MAX], b1[MF_NAME_STRING_MAX];
	return strcmp(mf_name_string(&x->name, a1), mf_name_string(&y->name, b1));
}

int mf_store_list(const struct mf_store *s, struct mf_manifest ***out, size_t *count, struct mf_error *err)
{
	*out = NULL;
	*count = 0;
	size_t n = 0, cap = 0;
	struct mf_manifest **list = NULL;
	int rc = MF_OK;
	char **hosts = list_dir(s->manifests);
	for (char **h = hosts; h && *h && rc == MF_OK; h++) {
		char p1[PATH_CAP];
		if (!join2(p1, sizeof p1, s->manifests, *h))
			continue;
		char **nss = list_dir(p1);
		for (char **ns = nss; ns && *ns && rc == MF_OK; ns++) {
			char p2[PATH_CAP];
			if (!join2(p2, sizeof p2, p1, *ns))
				continue;
			char **models = list_dir(p2);
			for (char **m = models; m && *m && rc == MF_OK; m++) {
				char p3[PATH_CAP];
				if (!join2(p3, sizeof p3, p2, *m))
					continue;
				char **tags = list_dir(p3);
				for (char **t = tags; t && *t && rc == MF_OK; t++) {
					char p4[PATH_CAP], rel[PATH_CAP];
					struct stat st;
					if (!join2(p4, sizeof p4, p3, *t) || stat(p4, &st) != 0 || S_ISDIR(st.st_mode))
						continue;
					int k = snprintf(rel, sizeof rel, "%s/%s/%s/%s", *h, *ns, *m, *t);
					if (k < 0 || (size_t)k >= sizeof rel)
						continue;
					struct mf_name nm;
					if (!mf_name_from_filepath(rel, &nm))
						continue;
					struct mf_manifest *man;
					if (read_manifest_path(p4, &nm, &man, NULL) != MF_OK)
						continue; /* corrupt or unreadable: skipped, as Manifests(true) */
					if (n == cap && OB_GROW(list, cap, n + 1, 0) != OB_GROW_OK) {
						mf_manifest_free(man);
						rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
						break;
					}
					list[n++] = man;
				}
				free_list(tags);
			}
			free_list(models);
		}
		free_list(nss);
	}
	free_list(hosts);
	if (rc != MF_OK) {
		mf_manifest_list_free(list, n);
		return rc;
	}
	if (n)
		qsort(list, n, sizeof *list, cmp_mtime_desc);
	*out = list;
	*count = n;
	return MF_OK;
}

int mf_store_resolve_name(const struct mf_store *s, const struct mf_name *in, struct mf_name *out, struct mf_error *err)
{
	*out = *in;
	struct mf_manifest **list;
	size_t n;
	int rc = mf_store_list(s, &list, &n, err);
	if (rc != MF_OK)
		return rc;
	/* Ollama iterates a map (random order) and lets any match rewrite each part; orun takes the first
	 * match in listing order, which is the same whenever the spellings agree. */
	bool host = false, ns = false, model = false, tag = false;
	for (size_t i = 0; i < n; i++) {
		const struct mf_name *e = &list[i]->name;
		if (!host && strcasecmp(e->host, in->host) == 0) {
			strcpy(out->host, e->host);
			host = true;
		}
		if (!ns && strcasecmp(e->ns, in->ns) == 0) {
			strcpy(out->ns, e->ns);
			ns = true;
		}
		if (!model && strcasecmp(e->model, in->model) == 0) {
			strcpy(out->model, e->model);
			model = true;
		}
		if (!tag && strcasecmp(e->tag, in->tag) == 0) {
			strcpy(out->tag, e->tag);
			tag = true;
		}
	}
	mf_manifest_list_free(list, n);
	return MF_OK;
}

/* Is digest used by any manifest in the store? (On a listing error: assume it is.) */
static bool digest_in_use(const struct mf_store *s, const char *digest)
{
	struct mf_manifest **list;
	size_t n;
	if (mf_store_list(s, &list, &n, NULL) != MF_OK)
		return true;
	bool used = false;
	for (size_t i = 0; i < n && !used; i++) {
		const struct mf_manifest *m = list[i];
		if (m->config.digest && strcmp(m->config.digest, digest) == 0)
			used = true;
		for (size_t j = 0; j < m->n_layers && !used; j++)
			if (m->layers[j].digest && strcmp(m->layers[j].digest, digest) == 0)
				used = true;
	}
	mf_manifest_list_free(list, n);
	return used;
}

int mf_store_remove_blob_if_unused(struct mf_store *s, const char *digest, struct mf_error *err)
{
	if (!digest || !*digest)
		return MF_OK;
	int lock;
	int rc = mf_store_lock(s, NULL, &lock, err);
	if (rc != MF_OK)
		return rc;
	char path[PATH_CAP];
	if (!digest_in_use(s, digest) && (rc = mf_store_blob_path(s, digest, path, sizeof path, err)) == MF_OK &&
	    unlink(path) != 0 && errno != ENOENT)
		rc = mf_error_set(err, MF_ERR_IO, "remove %s: %s", path, strerror(errno));
	mf_store_unlock(lock);
	return rc;
}

/* RemoveLayers; the caller holds the store lock. */
static int remove_unused_layers(struct mf_store *s, const struct mf_manifest *m, struct mf_error *err)
{
	struct mf_manifest **list;
	size_t n;
	int rc = mf_store_list(s, &list, &n, err);
	if (rc != MF_OK)
		return rc;
	for (size_t k = 0; k <= m->n_layers && rc == MF_OK; k++) {
		const struct mf_layer *l = k < m->n_layers ? &m->layers[k] : &m->config;
		if (!l->digest || !*l->digest)
			continue;
		bool used = false;
		for (size_t i = 0; i < n && !used; i++) {
			const struct mf_manifest *o = list[i];
			if (o->config.digest && strcmp(o->config.digest, l->digest) == 0)
				used = true;
			for (size_t j = 0; j < o->n_layers && !used; j++)
				if (o->layers[j].digest && strcmp(o->layers[j].digest, l->digest) == 0)
					used = true;
		}
		if (used)
			continue;
		char path[PATH_CAP];
		rc = mf_store_blob_path(s, l->digest, path, sizeof path, err);
		if (rc == MF_OK && unlink(path) != 0 && errno != ENOENT)
			rc = mf_error_set(err, MF_ERR_IO, "remove %s: %s", path, strerror(errno));
	}
	mf_manifest_list_free(list, n);
	return rc;
}

int mf_store_remove_unused_layers(struct mf_store *s, const struct mf_manifest *m, struct mf_error *err)
{
	int lock;
	int rc = mf_store_lock(s, NULL, &lock, err);
	if (rc == MF_OK)
		rc = remove_unused_layers(s, m, err);
	mf_store_unlock(lock);
	return rc;
}

/* PruneDirectory: removes empty folders below (and including) path; symlinks are left alone. */
static void prune_dirs(const char *path, bool keep_root)
{
	struct stat st;
	if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return;
	char **entries = list_dir(path);
	for (char **e = entries; e && *e; e++) {
		char child[PATH_CAP];
		if (join2(child, sizeof child, path, *e))
			prune_dirs(child, false);
	}
	free_list(entries);
	if (!keep_root)
		(void)rmdir(path); /* fails harmlessly when not empty */
}

static int delete_locked(struct mf_store *s, const char *name, const struct mf_name *n, struct mf_error *err);

int mf_store_delete(struct mf_store *s, const char *name, struct mf_error *err)
{
	struct mf_name n;
	mf_name_parse(name, &n);
	char q[MF_NAME_QUOTE_MAX];
	if (!mf_name_is_valid(&n))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "name %s is invalid",
					 mf_name_quote(name, strlen(name), q));
	int lock;
	int rc = mf_store_lock(s, NULL, &lock, err);
	if (rc == MF_OK)
		rc = delete_locked(s, name, &n, err);
	mf_store_unlock(lock);
	return rc;
}

static int delete_locked(struct mf_store *s, const char *name, const struct mf_name *n, struct mf_error *err)
{
	struct mf_name r;
	int rc = mf_store_resolve_name(s, n, &r, err);
	if (rc != MF_OK)
		return rc;
	struct mf_manifest *m;
	rc = mf_store_read_manifest(s, &r, &m, err);
	if (rc == MF_ERR_NOT_FOUND)
		return mf_error_set(err, MF_ERR_NOT_FOUND, "model '%s' not found", name);
	if (rc != MF_OK)
		return rc;
	char path[PATH_CAP];
	rc = manifest_path(s, &r, path, sizeof path, err);
	if (rc == MF_OK && unlink(path) != 0)
		rc = mf_error_set(err, errno == ENOENT ? MF_ERR_NOT_FOUND : MF_ERR_IO, "remove %s: %s", path,
				  strerror(errno));
	if (rc == MF_OK) {
		prune_dirs(s->manifests, true);
		rc = remove_unused_layers(s, m, err);
	}
	mf_manifest_free(m);
	return rc;
}

int mf_store_copy(struct mf_store *s, const char *src, const char *dst, struct mf_error *err)
{
	struct mf_name sn, dn, sr, dr;
	char q[MF_NAME_QUOTE_MAX];
	mf_name_parse(src, &sn);
	if (!mf_name_is_valid(&sn))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "source %s is invalid",
					 mf_name_quote(src, strlen(src), q));
	int rc = mf_store_resolve_name(s, &sn, &sr, err);
	if (rc != MF_OK)
		return rc;
	mf_name_parse(dst, &dn);
	if (!mf_name_is_valid(&dn))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "destination %s is invalid",
					 mf_name_quote(dst, strlen(dst), q));
	rc = mf_store_resolve_name(s, &dn, &dr, err);
	if (rc != MF_OK)
		return rc;
	char sp[PATH_CAP], dp[PATH_CAP];
	if ((rc = manifest_path(s, &sr, sp, sizeof sp, err)) != MF_OK ||
	    (rc = manifest_path(s, &dr, dp, sizeof dp, err)) != MF_OK)
		return rc;
	if (strcmp(sp, dp) == 0)
		return MF_OK;
	int lock;
	if ((rc = mf_store_lock(s, NULL, &lock, err)) != MF_OK)
		return rc;
	char *data = NULL;
	size_t len;
	rc = read_file(sp, MF_MAX_MANIFEST_SIZE, &data, &len, NULL, err);
	if (rc == MF_ERR_NOT_FOUND)
		rc = mf_error_set(err, MF_ERR_NOT_FOUND, "model \"%s\" not found", src);
	if (rc == MF_OK)
		rc = write_atomic(dp, data, len, err);
	mf_store_unlock(lock);
	free(data);
	return rc;
}

static int prune_locked(struct mf_store *s, size_t *n_blobs, size_t *n_removed, struct mf_error *err);

int mf_store_prune(struct mf_store *s, size_t *n_blobs, size_t *n_removed, struct mf_error *err)
{
	int lock;
	int rc = mf_store_lock(s, NULL, &lock, err);
	if (rc == MF_OK)
		rc = prune_locked(s, n_blobs, n_removed, err);
	mf_store_unlock(lock);
	return rc;
}

static int prune_locked(struct mf_store *s, size_t *n_blobs, size_t *n_removed, struct mf_error *err)
{
	size_t total = 0, removed = 0;
	char **names = list_dir(s->blobs);
	if (!names)
		return mf_error_set(err, MF_ERR_IO, "couldn't read dir '%s': %s", s->blobs, strerror(errno));
	struct mf_manifest **list;
	size_t n;
	int rc = mf_store_list(s, &list, &n, err);
	if (rc != MF_OK) {
		free_list(names);
		return rc;
	}
	time_t now = time(NULL);
	for (char **b = names; *b; b++) {
		char path[PATH_CAP];
		struct stat st;
		if (!join2(path, sizeof path, s->blobs, *b) || lstat(path, &st) != 0 || S_ISDIR(st.st_mode))
			continue;
		if (now - st.st_mtime < MF_PRUNE_GRACE_SECONDS)
			continue;
		if (strncmp(*b, MF_TEMP_PREFIX, strlen(MF_TEMP_PREFIX)) == 0)
			continue; /* mf_store_clean_temp's: removed when nobody holds it, whatever its age */
		char digest[MF_DIGEST_LEN + 8];
		snprintf(digest, sizeof digest, "%s", *b);
		for (char *c = digest; *c; c++)
			if (*c == '-')
				*c = ':';
		if (!mf_digest_valid(digest)) {
			if (unlink(path) == 0) /* partial downloads / abandoned temporary files */
				removed++;
			continue;
		}
		total++;
		bool used = false;
		for (size_t i = 0; i < n && !used; i++) {
			const struct mf_manifest *m = list[i];
			if (m->config.digest && strcasecmp(m->config.digest, digest) == 0)
				used = true;
			for (size_t j = 0; j < m->n_layers && !used; j++)
				if (m->layers[j].digest && strcasecmp(m->layers[j].digest, digest) == 0)
					used = true;
		}
		if (!used && unlink(path) == 0)
			removed++;
	}
	mf_manifest_list_free(list, n);
	free_list(names);
	prune_dirs(s->manifests, true);
	if (n_blobs)
		*n_blobs = total;
	if (n_removed)
		*n_removed = removed;
	return MF_OK;
}
