/* registry/pull.c — rg_pull: the manifest, then each missing layer in parallel ranged chunks into a
 * partial file that survives the process, hashed as its contiguous prefix grows, renamed into blobs/ once
 * its SHA-256 matches, and last the manifest under the store lock.
 *
 * A layer in flight is blobs/sha256-<hex>-partial (Ollama's own name for it) with its progress record
 * blobs/sha256-<hex>-partial.state: the bytes each chunk holds so far. Both are flocked while a pull works
 * on them. orun's start-up cleanup leaves them alone (they are not orun-tmp-*), so a pull resumes after a
 * kill of the server; the prune removes them an hour after their last write (Ollama's prune at once).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "registry/internal.h"

#define STATE_MAGIC "orun-pull-state 1"
#define STATE_HEADER 64          /* bytes of the text header before the per-chunk counts */
#define STATE_SAVE_EVERY (1u << 20) /* bytes a chunk receives between two updates of its count */
#define HASH_BLOCK (4u << 20)
#define REPORT_EVERY_NS 100000000LL /* progress reports at most every 100 ms per layer */
#define MAX_CHUNKS (1u << 20)

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The hasher: a thread that follows the contiguous prefix of the partial file */

struct hasher {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;
	uint64_t avail;  /* bytes from 0 present in the file */
	uint64_t hashed;
	bool done;       /* no more bytes will come */
	bool failed;
	EVP_MD_CTX *md;
	pthread_t thread;
};

static void *hasher_main(void *arg)
{
	struct hasher *h = arg;
	unsigned char *buf = malloc(HASH_BLOCK);
	pthread_mutex_lock(&h->mu);
	if (!buf)
		h->failed = true;
	while (!h->failed) {
		/* Whole blocks only until the end: one pread, one digest update and one write-back request per 4 MiB
		 * rather than one per receive callback (libcurl delivers 16-512 KB at a time). */
		while (h->avail - h->hashed < HASH_BLOCK && !h->done)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->hashed >= h->avail)
			break;
		uint64_t off = h->hashed, n = h->avail - off;
		if (n > HASH_BLOCK)
			n = HASH_BLOCK;
		pthread_mutex_unlock(&h->mu);
		ssize_t r = pread(h->fd, buf, (size_t)n, (off_t)off);
		bool ok = r == (ssize_t)n && EVP_DigestUpdate(h->md, buf, (size_t)n) == 1;
		if (ok) /* start the write-back of what is hashed, so that the fsync before the rename has little left */
			(void)sync_file_range(h->fd, (off_t)off, (off_t)n, SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&h->mu);
		if (!ok)
			h->failed = true;
		else
			h->hashed += n;
	}
	pthread_mutex_unlock(&h->mu);
	free(buf);
	return NULL;
}

static bool hasher_start(struct hasher *h, int fd)
{
	memset(h, 0, sizeof *h);
	h->fd = fd;
	h->md = EVP_MD_CTX_new();
	if (!h->md || EVP_DigestInit_ex(h->md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(h->md);
		return false;
	}
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (pthread_create(&h->thread, NULL, hasher_main, h) != 0) {
		EVP_MD_CTX_free(h->md);
		return false;
	}
	return true;
}

static void hasher_advance(struct hasher *h, uint64_t avail)
{
	pthread_mutex_lock(&h->mu);
	if (avail > h->avail) {
		h->avail = avail;
		if (avail - h->hashed >= HASH_BLOCK)
			pthread_cond_signal(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
}

/* Stops the thread; with out, writes the digest of what it hashed ("sha256:<hex>"). False when it failed or
 * had not reached want bytes. */
static bool hasher_finish(struct hasher *h, uint64_t want, char out[MF_DIGEST_LEN + 1])
{
	pthread_mutex_lock(&h->mu);
	h->done = true;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	bool ok = !h->failed && h->hashed == want;
	unsigned char md[32];
	unsigned int n = 0;
	if (ok && out && EVP_DigestFinal_ex(h->md, md, &n) == 1 && n == 32) {
		strcpy(out, "sha256:");
		for (int i = 0; i < 32; i++)
			snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
	} else {
		ok = false;
	}
	EVP_MD_CTX_free(h->md);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	return ok;
}

/* ---------------------------------------------------------------------------------------------------- */
/* One layer */

struct chunk {
	uint64_t start, len, done, saved; /* done: bytes present from start; saved: what the record says */
	int attempts;
	CURL *h;
	struct curl_slist *hl;
	struct layer *l;
	long status;
	bool size_wrong;
	char range_total[32];
};

struct layer {
	struct rg_conn *c;
	const char *digest;
	uint64_t size, chunk_size;
	int fd, state_fd;
	struct chunk *chunks;
	size_t n;
	struct hasher hash;
	uint64_t resumed; /* bytes already present when this pull began */
	int64_t last_report;
	struct mf_error *err;
};

static void save_count(struct layer *l, size_t i)
{
	struct chunk *k = &l->chunks[i];
	unsigned char b[8];
	for (int j = 0; j < 8; j++)
		b[j] = (unsigned char)(k->done >> (8 * j));
	if (pwrite(l->state_fd, b, 8, (off_t)(STATE_HEADER + 8 * i)) == 8)
		k->saved = k->done;
}

static uint64_t prefix(const struct layer *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->chunks[i].done < l->chunks[i].len)
			return l->chunks[i].start + l->chunks[i].done;
	return l->size;
}

static uint64_t completed(const struct layer *l)
{
	uint64_t s = 0;
	for (size_t i = 0; i < l->n; i++)
		s += l->chunks[i].done;
	return s;
}

/* Reads the progress record when it describes this layer with these chunks; else writes a fresh one. */
static int state_load(struct layer *l)
{
	char head[STATE_HEADER];
	memset(head, ' ', sizeof head);
	int k = snprintf(head, sizeof head, STATE_MAGIC " %" PRIu64 " %" PRIu64 "\n", l->size, l->chunk_size);
	head[k] = ' ';
	head[STATE_HEADER - 1] = '\n';
	char got[STATE_HEADER];
	struct stat st;
	bool valid = pread(l->state_fd, got, sizeof got, 0) == (ssize_t)sizeof got && !memcmp(got, head, sizeof head) &&
		     fstat(l->fd, &st) == 0 && (uint64_t)st.st_size == l->size;
	for (size_t i = 0; i < l->n && valid; i++) {
		unsigned char b[8];
		if (pread(l->state_fd, b, 8, (off_t)(STATE_HEADER + 8 * i)) != 8) {
			valid = false;
			break;
		}
		uint64_t v = 0;
		for (int j = 0; j < 8; j++)
			v |= (uint64_t)b[j] << (8 * j);
		if (v > l->chunks[i].len)
			valid = false;
		l->chunks[i].done = l->chunks[i].saved = v;
	}
	if (valid)
		return 0;
	for (size_t i = 0; i < l->n; i++)
		l->chunks[i].done = l->chunks[i].saved = 0;
	if (ftruncate(l->state_fd, 0) != 0 || pwrite(l->state_fd, head, sizeof head, 0) != (ssize_t)sizeof head)
		return -1;
	for (size_t i = 0; i < l->n; i++)
		save_count(l, i);
	return 0;
}

static size_t on_chunk_body(char *p, size_t sz, size_t n, void *ctx)
{
	struct chunk *k = ctx;
	struct layer *l = k->l;
	size_t len = sz * n;
	if (k->status == 0)
		curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &k->status);
	if (k->status != 206 && !(k->status == 200 && k->start == 0 && k->done == 0 && k->len == l->size))
		return len; /* an error body (or a redirect's): dropped, judged when the transfer ends */
	if (k->done + len > k->len) {
		k->size_wrong = true;
		return 0;
	}
	size_t off = 0;
	while (off < len) {
		ssize_t w = pwrite(l->fd, p + off, len - off, (off_t)(k->start + k->done + off));
		if (w <= 0)
			return 0;
		off += (size_t)w;
	}
	k->done += len;
	if (k->done - k->saved >= STATE_SAVE_EVERY || k->done == k->len)
		save_count(l, (size_t)(k - l->chunks));
	hasher_advance(&l->hash, prefix(l));
	return len;
}

static size_t on_chunk_header(char *p, size_t sz, size_t n, void *ctx)
{
	struct chunk *k = ctx;
	size_t len = sz * n;
	if (len >= 5 && !strncmp(p, "HTTP/", 5))
		k->status = 0, k->range_total[0] = 0;
	if (len > 14 && !strncasecmp(p, "Content-Range:", 14)) {
		const char *slash = memchr(p, '/', len);
		if (slash) {
			size_t m = len - (size_t)(slash + 1 - p);
			if (m >= sizeof k->range_total)
				m = sizeof k->range_total - 1;
			memcpy(k->range_total, slash + 1, m);
			k->range_total[m] = 0;
			if (strtoull(k->range_total, NULL, 10) != k->l->size)
				k->size_wrong = true;
		}
	}
	return len;
}

static int chunk_start(struct layer *l, CURLM *m, struct chunk *k, const char *url)
{
	struct rg_conn *c = l->c;
	if (!k->h && !(k->h = curl_easy_init()))
		return mf_error_set(l->err, MF_ERR_NOMEM, "out of memory");
	curl_easy_reset(k->h);
	rg_conn_setup(c, k->h);
	char range[80];
	snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-%" PRIu64, k->start + k->done, k->start + k->len - 1);
	const char *extra[] = {range, NULL};
	curl_slist_free_all(k->hl);
	k->hl = rg_conn_headers(c, extra);
	k->status = 0;
	curl_easy_setopt(k->h, CURLOPT_URL, url);
	curl_easy_setopt(k->h, CURLOPT_HTTPHEADER, k->hl);
	curl_easy_setopt(k->h, CURLOPT_WRITEFUNCTION, on_chunk_body);
	curl_easy_setopt(k->h, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(k->h, CURLOPT_HEADERFUNCTION, on_chunk_header);
	curl_easy_setopt(k->h, CURLOPT_HEADERDATA, k);
	curl_easy_setopt(k->h, CURLOPT_PRIVATE, k);
	curl_easy_setopt(k->h, CURLOPT_BUFFERSIZE, 512L << 10); /* fewer, larger writes */
	if (curl_multi_add_handle(m, k->h) != CURLM_OK)
		return mf_error_set(l->err, MF_ERR_NOMEM, "out of memory");
	return MF_OK;
}

static int report_layer(struct layer *l, bool force)
{
	int64_t t = now_ns();
	if (!force && t - l->last_report < REPORT_EVERY_NS)
		return rg_cancelled(l->c->o) ? mf_error_set(l->err, MF_ERR_CANCELLED, "request canceled") : MF_OK;
	l->last_report = t;
	char status[32];
	snprintf(status, sizeof status, "pulling %.12s", l->digest + 7);
	return rg_report(l->c->o, status, l->digest, (int64_t)l->size, (int64_t)completed(l), l->err);
}

/* A transfer ended: the chunk is complete, to be tried again, or the layer fails. */
static int chunk_done(struct layer *l, struct chunk *k, CURLcode res)
{
	if (k->size_wrong)
		return mf_error_set(l->err, MF_ERR_IO, "pulling %s: the registry sent a blob of %s bytes where the "
			"manifest says %" PRIu64, l->digest, k->range_total[0] ? k->range_total : "more", l->size);
	if (res == CURLE_OK && (k->status == 206 || k->status == 200) && k->done == k->len)
		return MF_OK;
	if (res == CURLE_ABORTED_BY_CALLBACK && rg_cancelled(l->c->o))
		return mf_error_set(l->err, MF_ERR_CANCELLED, "request canceled");
	if (res == CURLE_OK && k->status == 401) { /* the token expired: another one */
		struct rg_resp r;
		char path[RG_URL_MAX];
		snprintf(path, sizeof path, "/v2/%s/blobs/%s", l->c->repo, l->digest);
		int rc = rg_request(l->c, "HEAD", path, NULL, NULL, 0, &r, l->err);
		rg_resp_free(&r);
		if (rc != MF_OK)
			return rc;
	} else if (res == CURLE_OK && k->status < 500 && k->status != 206 && k->status != 200 && k->status != 0) {
		return mf_error_set_http(l->err, k->status == 404 ? MF_ERR_NOT_FOUND : MF_ERR_IO, k->status == 404 ? 404 : 500,
					 "pulling %s: %ld", l->digest, k->status);
	} else if (res != CURLE_OK && !rg_curl_retriable(res)) {
		return mf_error_set(l->err, MF_ERR_IO, "pulling %s: %s", l->digest, curl_easy_strerror(res));
	}
	if (++k->attempts >= RG_MAX_RETRIES)
		return mf_error_set(l->err, MF_ERR_IO, "pulling %s: %s (after %d attempts)", l->digest,
				    res != CURLE_OK ? curl_easy_strerror(res) : "the transfer ended early", k->attempts);
	return rg_backoff(l->c->o, k->attempts - 1, l->err) == MF_OK ? -1 : MF_ERR_CANCELLED;
}

/* Downloads the chunks not yet complete, RG_PARALLEL at a time. */
static int download_chunks(struct layer *l)
{
	char url[RG_URL_MAX];
	snprintf(url, sizeof url, "%s/v2/%s/blobs/%s", l->c->base, l->c->repo, l->digest);
	CURLM *m = curl_multi_init();
	if (!m)
		return mf_error_set(l->err, MF_ERR_NOMEM, "out of memory");
	size_t next = 0, running = 0;
	int rc = MF_OK;
	while (rc == MF_OK) {
		while (running < RG_PARALLEL && next < l->n) {
			struct chunk *k = &l->chunks[next++];
			if (k->done == k->len)
				continue;
			if ((rc = chunk_start(l, m, k, url)) != MF_OK)
				break;
			running++;
		}
		if (rc != MF_OK || running == 0)
			break;
		int still = 0;
		if (curl_multi_perform(m, &still) != CURLM_OK) {
			rc = mf_error_set(l->err, MF_ERR_IO, "pulling %s: curl_multi_perform failed", l->digest);
			break;
		}
		CURLMsg *msg;
		int left;
		while (rc == MF_OK && (msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct chunk *k = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&k);
			CURLcode res = msg->data.result;
			curl_multi_remove_handle(m, k->h);
			running--;
			save_count(l, (size_t)(k - l->chunks));
			int d = chunk_done(l, k, res);
			if (d == -1) { /* again, from where it stopped */
				if ((rc = chunk_start(l, m, k, url)) == MF_OK)
					running++;
			} else if (d != MF_OK) {
				rc = d;
			}
		}
		if (rc == MF_OK)
			rc = report_layer(l, false);
		if (rc == MF_OK && still)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (size_t i = 0; i < l->n; i++) {
		if (l->chunks[i].h) {
			curl_multi_remove_handle(m, l->chunks[i].h);
			curl_easy_cleanup(l->chunks[i].h);
			save_count(l, i);
		}
		curl_slist_free_all(l->chunks[i].hl);
		l->chunks[i].h = NULL;
		l->chunks[i].hl = NULL;
	}
	curl_multi_cleanup(m);
	return rc;
}

/* Waits for the partial file's lock (another pull of the same blob holds it), asking cancel. */
static int lock_partial(int fd, const struct rg_options *o, struct mf_error *err)
{
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return MF_OK; /* no locks on this file system: go on unlocked */
		if (rg_cancelled(o))
			return mf_error_set(err, MF_ERR_CANCELLED, "request canceled");
		nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
	}
	return MF_OK;
}

static void sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
}

/* Makes the blob of one layer present: skipped when it is, else downloaded (resumed), verified, renamed. */
static int pull_layer(struct rg_conn *c, struct mf_store *s, const struct mf_layer *ly, struct mf_error *err)
{
	char blob[4096], partial[4200], state[4200];
	int rc = mf_store_blob_path(s, ly->digest, blob, sizeof blob, err);
	if (rc != MF_OK)
		return rc;
	if (ly->size < 0)
		return mf_error_set(err, MF_ERR_FORMAT, "layer %s has a negative size", ly->digest);
	struct layer l = {.c = c, .digest = ly->digest, .size = (uint64_t)ly->size, .fd = -1, .state_fd = -1, .err = err};
	char status[32];
	snprintf(status, sizeof status, "pulling %.12s", ly->digest + 7);
	struct stat st;
	if (stat(blob, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == l.size)
		return rg_report(c->o, status, ly->digest, ly->size, ly->size, err);
	snprintf(partial, sizeof partial, "%s-partial", blob);
	snprintf(state, sizeof state, "%s-partial.state", blob);
	l.fd = open(partial, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (l.fd < 0)
		return mf_error_set(err, MF_ERR_IO, "open %s: %s", partial, strerror(errno));
	if ((rc = lock_partial(l.fd, c->o, err)) != MF_OK) {
		close(l.fd);
		return rc;
	}
	if (stat(blob, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == l.size) { /* the other pull's */
		close(l.fd);
		return rg_report(c->o, status, ly->digest, ly->size, ly->size, err);
	}
	l.state_fd = open(state, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	l.chunk_size = RG_CHUNK_SIZE;
	l.n = l.size ? (size_t)((l.size + l.chunk_size - 1) / l.chunk_size) : 0;
	if (l.state_fd < 0 || l.n > MAX_CHUNKS) {
		rc = l.state_fd < 0 ? mf_error_set(err, MF_ERR_IO, "open %s: %s", state, strerror(errno))
				    : mf_error_set(err, MF_ERR_LIMIT, "layer %s is too large", ly->digest);
		goto out;
	}
	l.chunks = calloc(l.n ? l.n : 1, sizeof *l.chunks);
	if (!l.chunks) {
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		l.chunks[i].start = i * l.chunk_size;
		l.chunks[i].len = l.size - l.chunks[i].start < l.chunk_size ? l.size - l.chunks[i].start : l.chunk_size;
		l.chunks[i].l = &l;
	}
	/* the whole size reserved up front: a full disk fails here, before a byte is fetched */
	if (fstat(l.fd, &st) != 0 || (uint64_t)st.st_size != l.size) {
		if (ftruncate(l.fd, 0) != 0 || (l.size && (errno = posix_fallocate(l.fd, 0, (off_t)l.size)) != 0)) {
			int e = errno;
			rc = mf_error_set(err, MF_ERR_IO, "pulling %s: cannot reserve %" PRIu64 " bytes in %s: %s", ly->digest,
					  l.size, partial, strerror(e));
			unlink(partial);
			unlink(state);
			goto out;
		}
	}
	if (state_load(&l) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "write %s: %s", state, strerror(errno));
		goto out;
	}
	l.resumed = completed(&l);
	if (!hasher_start(&l.hash, l.fd)) {
		rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		goto out;
	}
	hasher_advance(&l.hash, prefix(&l));
	if ((rc = report_layer(&l, true)) == MF_OK)
		rc = download_chunks(&l);
	char got[MF_DIGEST_LEN + 1] = "";
	bool hashed = hasher_finish(&l.hash, rc == MF_OK ? l.size : UINT64_MAX, rc == MF_OK ? got : NULL);
	if (rc != MF_OK)
		goto out; /* the partial file stays for the next pull */
	if ((rc = report_layer(&l, true)) != MF_OK)
		goto out;
	if (!hashed || strcasecmp(got, ly->digest) != 0) {
		unlink(partial);
		unlink(state);
		rc = hashed ? mf_error_set_http(err, MF_ERR_DIGEST, 500,
					 "digest mismatch, file must be downloaded again: want %s, got %s", ly->digest, got)
			    : mf_error_set(err, MF_ERR_IO, "read %s: %s", partial, strerror(errno));
		goto out;
	}
	if (fsync(l.fd) != 0 || rename(partial, blob) != 0) {
		rc = mf_error_set(err, MF_ERR_IO, "rename %s to %s: %s", partial, blob, strerror(errno));
		goto out;
	}
	unlink(state);
	char dir[4096];
	snprintf(dir, sizeof dir, "%s", blob);
	*strrchr(dir, '/') = 0;
	sync_dir(dir);
	mf_store_touch_blob(s, ly->digest);
out:
	free(l.chunks);
	if (l.state_fd >= 0)
		close(l.state_fd);
	close(l.fd); /* releases the lock */
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */

/* Every layer the manifest names is present with its size (under the store lock, just before it is written). */
static int check_blobs(struct mf_store *s, const struct mf_manifest *m, struct mf_error *err)
{
	for (size_t i = 0; i <= m->n_layers; i++) {
		const struct mf_layer *ly = i < m->n_layers ? &m->layers[i] : &m->config;
		char path[4096];
		struct stat st;
		int rc = mf_store_blob_path(s, ly->digest, path, sizeof path, err);
		if (rc != MF_OK)
			return rc;
		if (stat(path, &st) != 0 || st.st_size != ly->size)
			return mf_error_set(err, MF_ERR_IO, "layer %s went missing before the manifest was written", ly->digest);
	}
	return MF_OK;
}

int rg_manifest_check(const struct mf_manifest *m, struct mf_error *err)
{
	for (size_t i = 0; i <= m->n_layers; i++) {
		const struct mf_layer *ly = i < m->n_layers ? &m->layers[i] : &m->config;
		if (!ly->digest || !mf_digest_valid(ly->digest) || strncmp(ly->digest, "sha256:", 7) != 0)
			return mf_error_set(err, MF_ERR_FORMAT, "manifest: invalid layer digest \"%s\"",
					    ly->digest ? ly->digest : "");
		if (ly->size < 0)
			return mf_error_set(err, MF_ERR_FORMAT, "manifest: layer %s has size %" PRId64, ly->digest,
					    ly->size);
	}
	return MF_OK;
}

int rg_pull(struct mf_store *s, const char *name, const struct rg_options *o, struct mf_error *err)
{
	struct mf_name n;
	mf_name_parse(name, &n);
	if (!mf_name_is_valid(&n))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "invalid model name");
	struct rg_conn c;
	int rc = rg_conn_open(&c, &n, o, err);
	struct mf_manifest *m = NULL, *old = NULL;
	struct rg_resp r = {0};
	if (rc != MF_OK)
		goto out;
	if ((rc = rg_report(o, "pulling manifest", NULL, 0, 0, err)) != MF_OK)
		goto out;
	char path[RG_URL_MAX];
	snprintf(path, sizeof path, "/v2/%s/manifests/%s", c.repo, n.tag);
	const char *accept[] = {"Accept: " MF_MEDIA_MANIFEST, NULL};
	if ((rc = rg_request(&c, "GET", path, accept, NULL, RG_MAX_MANIFEST, &r, err)) != MF_OK)
		goto out;
	if (r.status == 404) {
		rc = mf_error_set_http(err, MF_ERR_NOT_FOUND, 404, "pull model manifest: file does not exist");
		goto out;
	}
	if (r.status != 200) {
		rc = rg_status_error(err, "pull model manifest", &r);
		goto out;
	}
	if (r.body.len > RG_MAX_MANIFEST) {
		rc = mf_error_set(err, MF_ERR_LIMIT, "pull model manifest: larger than %u bytes", RG_MAX_MANIFEST);
		goto out;
	}
	if ((rc = mf_manifest_parse(r.body.p ? r.body.p : "", r.body.len, &m, err)) != MF_OK ||
	    (rc = rg_manifest_check(m, err)) != MF_OK)
		goto out;
	for (size_t i = 0; i < m->n_layers && rc == MF_OK; i++)
		rc = pull_layer(&c, s, &m->layers[i], err);
	if (rc == MF_OK)
		rc = pull_layer(&c, s, &m->config, err);
	if (rc != MF_OK || (rc = rg_report(o, "verifying sha256 digest", NULL, 0, 0, err)) != MF_OK ||
	    (rc = rg_report(o, "writing manifest", NULL, 0, 0, err)) != MF_OK)
		goto out;
	struct mf_error oe;
	if (mf_store_read_manifest(s, &n, &old, &oe) != MF_OK)
		old = NULL;
	int lock;
	if ((rc = mf_store_lock(s, o ? o->cancel : NULL, &lock, err)) != MF_OK)
		goto out;
	rc = check_blobs(s, m, err);
	if (rc == MF_OK)
		rc = mf_store_write_manifest(s, &n, &m->config, m->layers, m->n_layers, err);
	mf_store_unlock(lock);
	if (rc != MF_OK)
		goto out;
	if (old && !(o && o->noprune)) {
		if ((rc = rg_report(o, "removing unused layers", NULL, 0, 0, err)) != MF_OK)
			goto out;
		if ((rc = mf_store_remove_unused_layers(s, old, err)) != MF_OK)
			goto out;
	}
	rc = rg_report(o, "success", NULL, 0, 0, err);
out:
	rg_resp_free(&r);
	mf_manifest_free(m);
	mf_manifest_free(old);
	rg_conn_close(&c);
	return rc;
}
