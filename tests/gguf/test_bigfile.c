/* tests/gguf/test_bigfile.c — opening a large model costs milliseconds and touches no tensor data: writes a
 * Qwen3-14B-shaped GGUF (40 layers, 5120 wide, 151,936-token vocabulary, Q4_K/Q6_K weights, about 8.6 GB)
 * whose tensor data are holes (a sparse file), drops its pages from the cache, opens it, checks with
 * mincore() that no page of the data section past the kernel's read-ahead window became resident, runs the qwen3 model check, and prints the open time. Skips where the temporary
 * folder cannot hold a sparse file.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/model.h"
#include "gguf/writer.h"
#include "tests/check.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define N_LAYER 40
#define N_EMBD 5120
#define N_FF 17408
#define N_VOCAB 151936

static int build(const char *path, struct gguf_error *err)
{
	struct gguf_writer *w = gguf_writer_new();
	int e = 0;
	e |= gguf_w_str(w, "general.architecture", "qwen3");
	e |= gguf_w_u32(w, "qwen3.block_count", N_LAYER);
	e |= gguf_w_u32(w, "qwen3.context_length", 40960);
	e |= gguf_w_u32(w, "qwen3.embedding_length", N_EMBD);
	e |= gguf_w_u32(w, "qwen3.feed_forward_length", N_FF);
	e |= gguf_w_u32(w, "qwen3.attention.head_count", 40);
	e |= gguf_w_u32(w, "qwen3.attention.head_count_kv", 8);
	e |= gguf_w_u32(w, "qwen3.attention.key_length", 128);
	e |= gguf_w_u32(w, "qwen3.attention.value_length", 128);
	e |= gguf_w_f32(w, "qwen3.rope.freq_base", 1000000.0f);
	e |= gguf_w_f32(w, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
	e |= gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
	/* a realistic vocabulary: 151,936 distinct strings of 1..12 bytes */
	char *pool = malloc((size_t)N_VOCAB * 16);
	const char **toks = malloc(N_VOCAB * sizeof *toks);
	for (int i = 0; i < N_VOCAB; i++) {
		char *s = pool + (size_t)i * 16;
		snprintf(s, 16, "t%d%.*s", i, i % 6, "abcdef");
		toks[i] = s;
	}
	e |= gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, N_VOCAB);
	e |= gguf_w_arr_str(w, "tokenizer.ggml.merges", toks, NULL, N_VOCAB - 512);
	int64_t ne[2];
#define TENSOR(name, type, d0, d1)                                                                       \
	(ne[0] = (d0), ne[1] = (d1), gguf_w_tensor(w, name, type, (d1) > 1 ? 2 : 1, ne, NULL, NULL, NULL))
	e |= TENSOR("token_embd.weight", GGUF_TYPE_Q4_K, N_EMBD, N_VOCAB);
	e |= TENSOR("output_norm.weight", GGUF_TYPE_F32, N_EMBD, 1);
	e |= TENSOR("output.weight", GGUF_TYPE_Q6_K, N_EMBD, N_VOCAB);
	char n[64];
	for (int l = 0; l < N_LAYER; l++) {
#define LT(suffix, type, d0, d1) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), TENSOR(n, type, d0, d1))
		e |= LT("attn_norm.weight", GGUF_TYPE_F32, N_EMBD, 1);
		e |= LT("attn_q.weight", GGUF_TYPE_Q4_K, N_EMBD, 5120);
		e |= LT("attn_k.weight", GGUF_TYPE_Q4_K, N_EMBD, 1024);
		e |= LT("attn_v.weight", GGUF_TYPE_Q6_K, N_EMBD, 1024);
		e |= LT("attn_output.weight", GGUF_TYPE_Q4_K, 5120, N_EMBD);
		e |= LT("attn_q_norm.weight", GGUF_TYPE_F32, 128, 1);
		e |= LT("attn_k_norm.weight", GGUF_TYPE_F32, 128, 1);
		e |= LT("ffn_norm.weight", GGUF_TYPE_F32, N_EMBD, 1);
		e |= LT("ffn_gate.weight", GGUF_TYPE_Q4_K, N_EMBD, N_FF);
		e |= LT("ffn_up.weight", GGUF_TYPE_Q4_K, N_EMBD, N_FF);
		e |= LT("ffn_down.weight", GGUF_TYPE_Q6_K, N_FF, N_EMBD);
	}
	if (!e)
		e = gguf_writer_write_file(w, path, err);
	gguf_writer_free(w);
	free(pool);
	free(toks);
	return e;
}

int main(void)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[512];
	snprintf(path, sizeof path, "%s/orun-test-big-%d.gguf", tmp, (int)getpid());
	struct gguf_error err = {0};
	/* probe: a 64 MiB hole must cost (almost) no disk, or this test would write gigabytes of zeros */
	{
		int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
		struct stat pst;
		bool sparse = fd >= 0 && lseek(fd, 64 << 20, SEEK_SET) > 0 && write(fd, "x", 1) == 1 && fstat(fd, &pst) == 0 &&
			      (long long)pst.st_blocks * 512 < (1 << 20);
		if (fd >= 0)
			close(fd);
		unlink(path);
		if (!sparse)
			SKIP("%s does not store holes (sparse files); the 9.5 GB test file would be written in full", tmp);
	}
	double t0 = now();
	int e = build(path, &err);
	if (e) {
		unlink(path);
		SKIP("cannot write a sparse %s: %s", path, err.msg);
	}
	double t_write = now() - t0;
	struct stat st;
	stat(path, &st);
	fprintf(stderr, "wrote %s: %lld bytes (%lld on disk) in %.2f s\n", path, (long long)st.st_size,
		(long long)st.st_blocks * 512, t_write);
	CHECK(st.st_size > 8000000000LL);

	/* drop the file's pages from the page cache (the writer wrote the small tensors as real zeros), so that
	 * residency after open shows what open itself read */
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
	close(fd);

	/* open three times, keep the best (the first may pay for cold header pages) */
	double best = 1e9, cold = 0;
	struct gguf_file *f = NULL;
	for (int i = 0; i < 3; i++) {
		gguf_close(f);
		t0 = now();
		f = gguf_open(path, &err);
		double dt = now() - t0;
		if (i == 0)
			cold = dt;
		if (dt < best)
			best = dt;
		CHECKF(f != NULL, "open: %s", f ? "" : err.msg);
		if (!f)
			break;
	}
	if (f) {
		fprintf(stderr, "opened %llu tensors, %llu keys in %.2f ms from a cold page cache, %.2f ms warm (best of 3)\n",
			(unsigned long long)gguf_tensor_count(f), (unsigned long long)gguf_kv_count(f), cold * 1e3, best * 1e3);
		CHECK(best < 0.5);
		/* no page of the data section is resident: open never touched tensor data */
		const uint8_t *base = gguf_file_data(f);
		long pg = sysconf(_SC_PAGESIZE);
		uint64_t first = (gguf_data_offset(f) + (uint64_t)pg - 1) / (uint64_t)pg; /* first whole data page */
		uint64_t pages = (gguf_file_size(f) + (uint64_t)pg - 1) / (uint64_t)pg;
		unsigned char *vec = malloc(pages);
		CHECK(mincore((void *)base, gguf_file_size(f), vec) == 0);
		/* The kernel's read-ahead while open() walks the metadata may pull in the pages just after it (a few
		 * MB at most); open itself reads none of them. Past that window nothing may be resident. */
		uint64_t window = (8u << 20) / (uint64_t)pg;
		uint64_t resident = 0, beyond = 0;
		for (uint64_t p = first; p < pages; p++) {
			resident += vec[p] & 1;
			beyond += (vec[p] & 1) && p >= first + window;
		}
		fprintf(stderr, "resident data pages after open: %llu of %llu (read-ahead after the header), %llu beyond 8 MiB\n",
			(unsigned long long)resident, (unsigned long long)(pages - first), (unsigned long long)beyond);
		CHECK_EQ_INT(beyond, 0);
		free(vec);
		struct gguf_model_info mi;
		e = gguf_model_check(f, &mi, &err);
		CHECKF(e == GGUF_OK, "%s", err.msg);
		CHECK(mi.arch == GGUF_ARCH_QWEN3 && mi.has_qk_norm && mi.n_layer == 40 && mi.n_vocab == N_VOCAB);
		gguf_close(f);
	}
	unlink(path);
	return check_done();
}
