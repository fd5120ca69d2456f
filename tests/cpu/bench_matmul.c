/* tests/cpu/bench_matmul.c — micro-benchmark of the CPU matmul (not a test): GFLOP/s and GB/s of weight reads
 * for every weight type at Qwen2.5-0.5B's shapes, decode (n = 1) and prefill (n = 512), against a streaming-read
 * roofline measured here, with 1 and 2 threads.
 *
 * Decode cycles through enough distinct copies of each matrix to exceed the L3 cache, as a model's forward pass
 * does, so the GB/s are DRAM figures. Run from the build dir: tests/cpu/bench_matmul --help.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "gguf/gguf.h"
#include "runner/cpu/matmul.h"
#include "runner/cpu/pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define STREAM_BYTES ((size_t)1 << 30)
#define DECODE_WORKING_SET ((size_t)384 << 20) /* > 32 MB of L3, comfortably */
#define MAX_LIST 32

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread: on a shared machine, the 1-thread figures in CPU time show what the kernels
 * cost when they have a core to themselves. */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------------------------------------- roofline */

struct stream_job {
	const uint8_t *buf;
	size_t bytes;
	uint64_t sink[64 * 8];
};

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) static uint64_t stream_avx2(const uint8_t *p, size_t n)
{
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	for (size_t i = 0; i + 128 <= n; i += 128) {
		a0 = _mm256_xor_si256(a0, _mm256_load_si256((const __m256i *)(p + i)));
		a1 = _mm256_xor_si256(a1, _mm256_load_si256((const __m256i *)(p + i + 32)));
		a2 = _mm256_xor_si256(a2, _mm256_load_si256((const __m256i *)(p + i + 64)));
		a3 = _mm256_xor_si256(a3, _mm256_load_si256((const __m256i *)(p + i + 96)));
	}
	__m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
	return (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static uint64_t stream_plain(const uint8_t *p, size_t n)
{
	const uint64_t *q = (const uint64_t *)p;
	uint64_t a = 0, b = 0, c = 0, d = 0;
	for (size_t i = 0; i + 4 <= n / 8; i += 4) {
		a ^= q[i];
		b ^= q[i + 1];
		c ^= q[i + 2];
		d ^= q[i + 3];
	}
	return a ^ b ^ c ^ d;
}

static void stream_fn(void *p, int ith, int nth)
{
	struct stream_job *j = p;
	int64_t b, e;
	rn_pool_split((int64_t)j->bytes, 4096, ith, nth, &b, &e);
#if defined(__x86_64__) || defined(__i386__)
	if (rn_isa_available(RN_ISA_AVX2)) {
		j->sink[ith * 8] = stream_avx2(j->buf + b, (size_t)(e - b));
		return;
	}
#endif
	j->sink[ith * 8] = stream_plain(j->buf + b, (size_t)(e - b));
}

static double measure_stream(struct rn_pool *pool, const uint8_t *buf)
{
	struct stream_job j = { .buf = buf, .bytes = STREAM_BYTES };
	double best = 1e30;
	for (int r = 0; r < 8; r++) {
		double t0 = now_s();
		rn_pool_run(pool, stream_fn, &j);
		double t = now_s() - t0;
		if (t < best)
			best = t;
	}
	return (double)STREAM_BYTES / best / 1e9;
}

/* ---------------------------------------------------------------------------------------------- weights */

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random bytes with sane f16 scales in every field where a block keeps one: writing small f16 values into all
 * 2-byte fields would be type-specific; instead every 16-bit little-endian word gets a small-exponent value,
 * which is a valid (and harmless) pattern for quant bits too. */
static void fill_random(uint8_t *p, size_t n, int type)
{
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint16_t h = (uint16_t)(rnd() & 0x83ff) | 0x2000; /* |x| in [2^-7, 2^-6) */
		if (type == RN_MM_FP8) {
			p[i] = (uint8_t)(rnd() & 0x77);
			p[i + 1] = (uint8_t)(rnd() & 0x77);
			continue;
		}
		if (type == RN_MM_F32 && (i & 2))
			h = 0x3c00; /* high half of an f32 near 1 */
		memcpy(p + i, &h, 2);
	}
}

/* A page-aligned buffer, on transparent huge pages when asked (as the weights' copy with use_mmap false and
 * orun bench's roofline buffer are); not yet touched. */
static uint8_t *alloc_buf(size_t bytes, int huge)
{
	const size_t align = huge ? (size_t)2 << 20 : 4096;
	uint8_t *p = aligned_alloc(align, (bytes + align - 1) / align * align);
	if (p && huge)
		(void)madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

/* ---------------------------------------------------------------------------------------------- model */

/* All 2-D weight matmuls of a real model, as a forward pass does them: every weight except the token
 * embedding, at n = 1 (decode: the output projection included) or n (prefill: the output projection at n = 1,
 * since only the last token's logits are needed). Prints the matmul-only tokens/s and GB/s. */
static int bench_model(const char *path, const int *ns, int n_ns, struct rn_pool **pools, const int *threads,
		       const double *roof, int n_threads, double min_time)
{
	struct gguf_error gerr;
	struct gguf_file *f = gguf_open(path, &gerr);
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, gerr.msg);
		return 1;
	}
	enum { MAX_W = 4096 };
	static struct rn_weight ws[MAX_W];
	static int is_output[MAX_W];
	int nw = 0;
	int64_t max_cols = 0, max_rows = 0;
	size_t bytes = 0;
	for (uint64_t i = 0; i < gguf_tensor_count(f) && nw < MAX_W; i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		if (t->n_dims != 2 || strcmp(t->name, "token_embd.weight") == 0)
			continue;
		struct rn_mm_error err;
		if (rn_mm_weight_from_tensor(t, &ws[nw], &err) != RN_MM_OK) {
			fprintf(stderr, "%s\n", err.msg);
			continue;
		}
		is_output[nw] = strcmp(t->name, "output.weight") == 0;
		bytes += rn_mm_row_bytes(ws[nw].type, ws[nw].cols) * (size_t)ws[nw].rows;
		if (ws[nw].cols > max_cols)
			max_cols = ws[nw].cols;
		if (ws[nw].rows > max_rows)
			max_rows = ws[nw].rows;
		nw++;
	}
	int have_output = 0;
	for (int k = 0; k < nw; k++)
		have_output |= is_output[k];
	if (!have_output) {
		/* tied embeddings: the output projection is the token embedding */
		const struct gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
		struct rn_mm_error err;
		if (t && nw < MAX_W && rn_mm_weight_from_tensor(t, &ws[nw], &err) == RN_MM_OK) {
			is_output[nw] = 1;
			bytes += rn_mm_row_bytes(ws[nw].type, ws[nw].cols) * (size_t)ws[nw].rows;
			if (ws[nw].rows > max_rows)
				max_rows = ws[nw].rows;
			nw++;
		}
	}
	int max_n = 1;
	for (int k = 0; k < n_ns; k++)
		if (ns[k] > max_n)
			max_n = ns[k];
	size_t work_bytes = rn_act_row_bytes(RN_ACT_Q8_32, max_cols) * (size_t)max_n + 64;
	float *x = malloc(sizeof(float) * (size_t)max_cols * (size_t)max_n);
	float *y = malloc(sizeof(float) * (size_t)(max_rows > max_cols ? max_rows : max_cols) * (size_t)max_n);
	void *work = aligned_alloc(64, (work_bytes + 63) / 64 * 64);
	if (!x || !y || !work)
		return 1;
	for (int64_t i = 0; i < max_cols * max_n; i++)
		x[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
	printf("\nmodel %s: %d weight matrices, %.1f MB read per decoded token\n", path, nw, bytes / 1e6);
	printf("%5s %3s %12s %10s %8s %7s\n", "n", "thr", "ms/forward", "tok/s", "GB/s", "%roof");
	for (int ni = 0; ni < n_ns; ni++) {
		int n = ns[ni];
		for (int t = 0; t < n_threads; t++) {
			int iters = 0;
			double t0 = now_s(), el;
			do {
				for (int k = 0; k < nw; k++) {
					int nn = is_output[k] ? 1 : n;
					rn_matmul_f32(pools[t], &ws[k], x, ws[k].cols, nn, y, ws[k].rows, work);
				}
				iters++;
				el = now_s() - t0;
			} while (el < min_time);
			double per = el / iters;
			printf("%5d %3d %12.2f %10.1f %8.1f %6.0f%%\n", n, threads[t], per * 1e3, n / per,
			       n == 1 ? bytes / per / 1e9 : 0.0, n == 1 ? 100.0 * bytes / per / 1e9 / roof[t] : 0.0);
			fflush(stdout);
		}
	}
	free(x);
	free(y);
	free(work);
	gguf_close(f);
	return 0;
}

/* ---------------------------------------------------------------------------------------------- bench */

struct shape {
	const char *what;
	int64_t rows, cols;
};

static const struct shape shapes[] = {
	{ "attn_q/o 896x896", 896, 896 },
	{ "ffn_up 4864x896", 4864, 896 },
	{ "ffn_down 896x4864", 896, 4864 },
	{ "output 151936x896", 151936, 896 },
};

static const int all_types[] = { RN_MM_F32,  RN_MM_F16,  RN_MM_BF16, RN_MM_Q8_0, RN_MM_Q4_0,
				 RN_MM_Q4_1, RN_MM_Q5_0, RN_MM_Q5_1, RN_MM_Q2_K, RN_MM_Q3_K,
				 RN_MM_Q4_K, RN_MM_Q5_K, RN_MM_Q6_K, RN_MM_FP8,
				 RN_MM_Q4_0_R8, RN_MM_Q4_1_R8, RN_MM_Q5_0_R8, RN_MM_Q5_1_R8 };

static int parse_list(const char *s, int *out, int max, int types)
{
	int n = 0;
	char buf[512];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
		if (types) {
			int found = -1;
			for (size_t k = 0; k < sizeof all_types / sizeof all_types[0]; k++)
				if (strcasecmp(tok, rn_mm_type_name(all_types[k])) == 0 ||
				    (strcasecmp(tok, "fp8") == 0 && all_types[k] == RN_MM_FP8))
					found = all_types[k];
			if (found < 0) {
				fprintf(stderr, "unknown type %s\n", tok);
				exit(2);
			}
			out[n++] = found;
		} else {
			out[n++] = atoi(tok);
		}
	}
	return n;
}

static void usage(void)
{
	printf("usage: bench_matmul [--types q4_K,q8_0,...] [--n 1,512] [--threads 1,2] [--shapes 0,1,2,3]\n"
	       "                    [--isa scalar|avx2|avxvnni|avx512] [--min-time SECONDS] [--prefill-output] [--hot]\n"
	       "                    [--huge]\n"
	       "Prints ms per matmul, GFLOP/s, GB/s of weight reads and %% of the streaming-read roofline; with one\n"
	       "thread also the CPU time per matmul (cpu ms) and the GB/s it implies (what a core could do on its own).\n"
	       "--hot reuses one copy of the weights (cache-resident: the kernels' compute ceiling) instead of cycling\n"
	       "through copies larger than the L3 cache.\n"
	       "--huge puts the weights and the roofline's buffer on transparent huge pages (as orun's copy of the weights\n"
	       "with use_mmap false, and orun bench's roofline).\n"
	       "--model FILE.gguf runs every weight matmul of that model instead (a forward pass without attention and\n"
	       "norms), at each --n: matmul-only tokens/s, and for n = 1 the GB/s of weights read per token.\n"
	       "Shapes: 0 = 896x896, 1 = 4864x896, 2 = 896x4864, 3 = 151936x896 (rows x cols); the output shape is\n"
	       "skipped for n > 1 unless --prefill-output (prefill computes logits for the last token only).\n");
}

int main(int argc, char **argv)
{
	int types[MAX_LIST], ns[MAX_LIST], threads[MAX_LIST], shape_sel[MAX_LIST];
	int n_types = 0, n_ns = 0, n_threads = 0, n_shapes = 0, prefill_output = 0, hot = 0, huge = 0;
	const char *model = NULL;
	double min_time = 0.3;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--types") && i + 1 < argc)
			n_types = parse_list(argv[++i], types, MAX_LIST, 1);
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n_ns = parse_list(argv[++i], ns, MAX_LIST, 0);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			n_threads = parse_list(argv[++i], threads, MAX_LIST, 0);
		else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
			n_shapes = parse_list(argv[++i], shape_sel, MAX_LIST, 0);
		else if (!strcmp(argv[i], "--min-time") && i + 1 < argc)
			min_time = atof(argv[++i]);
		else if (!strcmp(argv[i], "--prefill-output"))
			prefill_output = 1;
		else if (!strcmp(argv[i], "--hot"))
			hot = 1;
		else if (!strcmp(argv[i], "--huge"))
			huge = 1;
		else if (!strcmp(argv[i], "--model") && i + 1 < argc)
			model = argv[++i];
		else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
			const char *name = argv[++i];
			int ok = 0;
			for (int k = RN_ISA_SCALAR; k <= RN_ISA_AVX512; k++)
				if (!strcmp(name, rn_isa_name((enum rn_isa)k)))
					ok = rn_isa_set((enum rn_isa)k) == 0;
			if (!ok) {
				fprintf(stderr, "kernel set %s is not available here\n", name);
				return 2;
			}
		} else {
			usage();
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	if (!n_types) {
		n_types = (int)(sizeof all_types / sizeof all_types[0]);
		memcpy(types, all_types, sizeof all_types);
	}
	if (!n_ns) {
		ns[0] = 1;
		ns[1] = 512;
		n_ns = 2;
	}
	if (!n_threads) {
		threads[0] = 1;
		threads[1] = 2;
		n_threads = 2;
	}
	if (!n_shapes) {
		for (int k = 0; k < 4; k++)
			shape_sel[k] = k;
		n_shapes = 4;
	}

	printf("kernel set: %s; physical cores: %d\n", rn_isa_name(rn_isa_current()), rn_cpu_physical_cores());
	uint8_t *big = alloc_buf(STREAM_BYTES, huge);
	if (!big) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	memset(big, 1, STREAM_BYTES);
	double roof[MAX_LIST];
	struct rn_pool *pools[MAX_LIST];
	for (int t = 0; t < n_threads; t++) {
		if (rn_pool_new(threads[t], &pools[t]) != 0) {
			fprintf(stderr, "cannot start %d threads\n", threads[t]);
			return 1;
		}
		roof[t] = measure_stream(pools[t], big);
		printf("streaming read roofline, %d thread%s: %.1f GB/s\n", threads[t], threads[t] > 1 ? "s" : "",
		       roof[t]);
	}
	free(big);

	if (model) {
		int rc = bench_model(model, ns, n_ns, pools, threads, roof, n_threads, min_time);
		for (int t = 0; t < n_threads; t++)
			rn_pool_free(pools[t]);
		return rc;
	}

	printf("\n%-8s %-20s %5s %3s %10s %9s %8s %7s %9s %9s\n", "type", "shape (rows x cols)", "n", "thr",
	       "ms/matmul", "GFLOP/s", "GB/s", "%roof", "cpu ms", "cpu GB/s");
	/* buffers for the largest case: 512 rows of 4864 inputs, 151936 outputs (times 512 with --prefill-output) */
	size_t work_bytes = rn_act_row_bytes(RN_ACT_Q8_32, 4864) * 512;
	if (rn_act_row_bytes(RN_ACT_Q8_256, 4864) * 512 > work_bytes)
		work_bytes = rn_act_row_bytes(RN_ACT_Q8_256, 4864) * 512;
	size_t y_floats = (size_t)151936 * (prefill_output ? 512 : 1);
	if (y_floats < (size_t)512 * 4864)
		y_floats = (size_t)512 * 4864;
	uint8_t *wbuf = alloc_buf(DECODE_WORKING_SET, huge);
	float *x = malloc(sizeof(float) * 512 * 4864);
	float *y = malloc(sizeof(float) * y_floats);
	void *work = aligned_alloc(64, work_bytes);
	if (!wbuf || !x || !y || !work)
		return 1;
	for (int i = 0; i < 512 * 4864; i++)
		x[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;

	for (int ti = 0; ti < n_types; ti++) {
		int type = types[ti];
		fill_random(wbuf, DECODE_WORKING_SET, type);
		for (int si = 0; si < n_shapes; si++) {
			const struct shape *sh = &shapes[shape_sel[si] & 3];
			size_t rb = rn_mm_row_bytes(type, sh->cols);
			if (rb == 0) {
				printf("%-8s %-20s  n/a: cols not a multiple of the block size\n", rn_mm_type_name(type),
				       sh->what);
				continue;
			}
			size_t wbytes = rb * (size_t)sh->rows;
			size_t grid = type == RN_MM_FP8 ? 4 * (size_t)((sh->rows + 127) / 128) * ((sh->cols + 127) / 128)
							: 0;
			size_t stride = (wbytes + grid + 4095) / 4096 * 4096;
			int copies = hot ? 1 : (int)(DECODE_WORKING_SET / stride);
			if (copies < 1) {
				printf("%-8s %-20s  n/a: does not fit the bench buffer\n", rn_mm_type_name(type), sh->what);
				continue;
			}
			for (int ni = 0; ni < n_ns; ni++) {
				int n = ns[ni];
				if (n > 512 || n < 1)
					continue;
				if (n > 1 && sh->rows > 100000 && !prefill_output)
					continue;
				for (int t = 0; t < n_threads; t++) {
					/* warm up, then time until min_time has passed */
					int iters = 0, c = 0;
					double t0 = 0, el = 0, c0 = 0;
					for (int warm = 1; warm >= 0; warm--) {
						iters = 0;
						t0 = now_s();
						c0 = cpu_s();
						do {
							struct rn_weight w = { .type = type,
									       .rows = sh->rows,
									       .cols = sh->cols,
									       .data = wbuf + (size_t)c * stride };
							if (type == RN_MM_FP8)
								w.scale = wbuf + (size_t)c * stride + wbytes;
							c = (c + 1) % copies;
							rn_matmul_f32(pools[t], &w, x, sh->cols, n, y, sh->rows, work);
							iters++;
							el = now_s() - t0;
						} while (el < (warm ? min_time / 4 : min_time) && iters < 100000);
					}
					double per = el / iters, cper = (cpu_s() - c0) / iters;
					double gflops = 2.0 * (double)sh->rows * (double)sh->cols * n / per / 1e9;
					double gbs = (double)wbytes / per / 1e9;
					printf("%-8s %-20s %5d %3d %10.3f %9.1f %8.1f %6.0f%%", rn_mm_type_name(type),
					       sh->what, n, threads[t], per * 1e3, gflops, gbs, 100.0 * gbs / roof[t]);
					if (threads[t] == 1)
						printf(" %9.3f %9.1f", cper * 1e3, (double)wbytes / cper / 1e9);
					printf("\n");
					fflush(stdout);
				}
			}
		}
	}
	for (int t = 0; t < n_threads; t++)
		rn_pool_free(pools[t]);
	free(wbuf);
	free(x);
	free(y);
	free(work);
	return 0;
}
