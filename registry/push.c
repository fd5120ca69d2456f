/* registry/push.c — rg_push: the layers the registry lacks uploaded by the distribution API's POST, PATCH
 * (RG_CHUNK_SIZE at a time) and PUT ?digest=, then the stored manifest's bytes PUT under the tag.
 *
 * Cross-repository mounts (Ollama's "from" layers) are not tried: every missing layer is uploaded.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry/internal.h"

struct upload_progress {
	const struct rg_options *o;
	const char *digest;
	uint64_t base, total;
	int64_t last;
};

static void on_sent(void *ctx, uint64_t sent)
{
	struct upload_progress *u = ctx;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	int64_t ms = (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
	if (ms - u->last < 100 && u->base + sent < u->total)
		return;
	u->last = ms;
	char status[32];
	snprintf(status, sizeof status, "pushing %.12s", u->digest + 7);
	struct mf_error ignored;
	if (rg_report(u->o, status, u->digest, (int64_t)u->total, (int64_t)(u->base + sent), &ignored) != MF_OK)
		return; /* a stop is seen by the transfer's own cancel check */
}

/* An upload step's answer (POST, PATCH): 202 Accepted with the Location of the next step, copied to out. */
static int upload_next(const struct rg_resp *r, char *out, size_t cap, struct mf_error *err)
{
	if (r->status != 202)
		return rg_status_error(err, "upload", r);
	if (!r->location[0])
		return mf_error_set(err, MF_ERR_IO, "upload: the registry answered %ld without a Location", r->status);
	snprintf(out, cap, "%s", r->location);
	return MF_OK;
}

static int push_layer(struct rg_conn *c, struct mf_store *s, const struct mf_layer *ly, struct mf_error *err)
{
	char status[32], path[RG_URL_MAX], loc[RG_URL_MAX];
	snprintf(status, sizeof status, "pushing %.12s", ly->digest + 7);
	int rc = rg_report(c->o, status, ly->digest, ly->size, 0, err);
	if (rc != MF_OK)
		return rc;
	struct rg_resp r;
	snprintf(path, sizeof path, "/v2/%s/blobs/%s", c->repo, ly->digest);
	if ((rc = rg_request(c, "HEAD", path, NULL, NULL, 0, &r, err)) != MF_OK)
		goto out;
	if (r.status == 200) /* the registry has it */
		goto done;
	rg_resp_free(&r);
	char file[4096];
	if ((rc = mf_store_blob_path(s, ly->digest, file, sizeof file, err)) != MF_OK)
		return rc;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return mf_error_set(err, MF_ERR_NOT_FOUND, "open %s: %s", file, strerror(errno));
	snprintf(path, sizeof path, "/v2/%s/blobs/uploads/", c->repo);
	struct rg_body none = {.fd = -1};
	if ((rc = rg_request(c, "POST", path, NULL, &none, RG_MAX_BODY, &r, err)) != MF_OK ||
	    (rc = upload_next(&r, loc, sizeof loc, err)) != MF_OK)
		goto out_fd;
	struct upload_progress u = {c->o, ly->digest, 0, (uint64_t)ly->size, 0};
	for (uint64_t off = 0; off < (uint64_t)ly->size; off += RG_CHUNK_SIZE) {
		uint64_t n = (uint64_t)ly->size - off < RG_CHUNK_SIZE ? (uint64_t)ly->size - off : RG_CHUNK_SIZE;
		char range[80];
		snprintf(range, sizeof range, "Content-Range: %" PRIu64 "-%" PRIu64, off, off + n - 1);
		const char *h[] = {"Content-Type: application/octet-stream", range, NULL};
		struct rg_body b = {.fd = fd, .off = off, .n = n, .progress = on_sent, .ctx = &u};
		u.base = off;
		rg_resp_free(&r);
		if ((rc = rg_request(c, "PATCH", loc, h, &b, RG_MAX_BODY, &r, err)) != MF_OK ||
		    (rc = upload_next(&r, loc, sizeof loc, err)) != MF_OK)
			goto out_fd;
	}
	char put[RG_URL_MAX + 100];
	snprintf(put, sizeof put, "%s%sdigest=%s", loc, strchr(loc, '?') ? "&" : "?", ly->digest);
	rg_resp_free(&r);
	if ((rc = rg_request(c, "PUT", put, NULL, &none, RG_MAX_BODY, &r, err)) != MF_OK)
		goto out_fd;
	if (r.status != 201)
		rc = rg_status_error(err, "upload", &r);
out_fd:
	close(fd);
	if (rc != MF_OK)
		goto out;
done:
	rc = rg_report(c->o, status, ly->digest, ly->size, ly->size, err);
out:
	rg_resp_free(&r);
	return rc;
}

int rg_push(struct mf_store *s, const char *name, const struct rg_options *o, struct mf_error *err)
{
	struct mf_name n, found;
	mf_name_parse(name, &n);
	if (!mf_name_is_valid(&n))
		return mf_error_set_http(err, MF_ERR_PARSE, 400, "invalid model name");
	struct mf_manifest *m = NULL;
	char *bytes = NULL;
	struct rg_conn c = {0};
	struct ob_buf mb;
	ob_buf_init(&mb, RG_MAX_MANIFEST);
	int rc = rg_report(o, "retrieving manifest", NULL, 0, 0, err);
	if (rc != MF_OK)
		return rc;
	if (mf_store_resolve_name(s, &n, &found, err) != MF_OK)
		found = n;
	if ((rc = mf_store_read_manifest(s, &found, &m, err)) != MF_OK) {
		if (rc == MF_ERR_NOT_FOUND) {
			char disp[MF_NAME_STRING_MAX];
			rc = mf_error_set_http(err, MF_ERR_NOT_FOUND, 404, "model \"%s\" not found", mf_name_display(&n, disp));
		}
		return rc;
	}
	if ((rc = rg_manifest_check(m, err)) != MF_OK)
		goto out;
	char fp[MF_NAME_STRING_MAX], file[4096];
	snprintf(file, sizeof file, "%s/manifests/%s", mf_store_root(s), mf_name_filepath(&found, fp));
	if (!ob_buf_read_file(&mb, file)) {
		rc = mf_error_set(err, MF_ERR_IO, "read %s: %s", file, strerror(errno));
		goto out;
	}
	size_t blen = mb.len;
	bytes = ob_buf_take(&mb);
	if ((rc = rg_conn_open(&c, &n, o, err)) != MF_OK)
		goto out;
	for (size_t i = 0; i < m->n_layers && rc == MF_OK; i++)
		rc = push_layer(&c, s, &m->layers[i], err);
	if (rc == MF_OK)
		rc = push_layer(&c, s, &m->config, err);
	if (rc != MF_OK || (rc = rg_report(o, "pushing manifest", NULL, 0, 0, err)) != MF_OK)
		goto out;
	char path[RG_URL_MAX];
	snprintf(path, sizeof path, "/v2/%s/manifests/%s", c.repo, n.tag);
	const char *h[] = {"Content-Type: " MF_MEDIA_MANIFEST, NULL};
	struct rg_body b = {.data = bytes, .len = blen, .fd = -1};
	struct rg_resp r;
	if ((rc = rg_request(&c, "PUT", path, h, &b, RG_MAX_BODY, &r, err)) == MF_OK && r.status != 201 && r.status != 200)
		rc = rg_status_error(err, "push manifest", &r);
	rg_resp_free(&r);
	if (rc == MF_OK)
		rc = rg_report(o, "success", NULL, 0, 0, err);
out:
	ob_buf_free(&mb);
	free(bytes);
	mf_manifest_free(m);
	rg_conn_close(&c);
	return rc;
}
