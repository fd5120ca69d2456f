/* tests/gguf/test_quantize.c — quantization against llama.cpp's llama-quantize on a small synthetic llama F16
 * GGUF that this test generates deterministically (`test_quantize --write-model PATH` writes it; the golden
 * file tests/data/gguf/quantize-golden.tsv holds llama-quantize's per-tensor types, the FNV-1a hash of its
 * Q8_0 tensor bytes and its per-tensor RMS error, see tests/gguf/make_quant_golden.sh). Checks: Q8_0 output
 * bit-identical; Q4_K_M picks the same type per tensor and has an RMS error per tensor no more than 1% above
 * llama.cpp's; the quantized blocks dequantize through gguf_dequantize; bad inputs are refused.
 */
#include "config.h"

#include <math.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/quantize.h"
#include "gguf/writer.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define N_LAYER 4
#define N_EMBD 256
#define N_FF 768
#define N_HEAD 4
#define N_HEAD_KV 2
#define N_VOCAB 512
#define HEAD_DIM (N_EMBD / N_HEAD)

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* weight-like values: a per-row scale, gaussian bulk, a few large outliers */
static void fill_weights(uint16_t *dst, int64_t rows, int64_t cols, double scale)
{
	for (int64_t r = 0; r < rows; r++) {
		double rs = scale * (0.5 + uniform());
		for (int64_t c = 0; c < cols; c++) {
			double g = sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
			if (uniform() < 0.002)
				g *= 8.0;
			dst[r * cols + c] = gguf_f32_to_f16((float)(g * rs));
		}
	}
}

static int write_model(const char *path)
{
	struct gguf_writer *w = gguf_writer_new();
	int e = 0;
	e |= gguf_w_str(w, "general.architecture", "llama");
	e |= gguf_w_str(w, "general.name", "orun quantize test");
	e |= gguf_w_u32(w, "llama.block_count", N_LAYER);
	e |= gguf_w_u32(w, "llama.context_length", 512);
	e |= gguf_w_u32(w, "llama.embedding_length", N_EMBD);
	e |= gguf_w_u32(w, "llama.feed_forward_length", N_FF);
	e |= gguf_w_u32(w, "llama.attention.head_count", N_HEAD);
	e |= gguf_w_u32(w, "llama.attention.head_count_kv", N_HEAD_KV);
	e |= gguf_w_f32(w, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
	e |= gguf_w_u32(w, "general.file_type", 1);
	const char **toks = malloc(N_VOCAB * sizeof *toks);
	char *pool = malloc(N_VOCAB * 8);
	int32_t *types = malloc(N_VOCAB * sizeof *types);
	for (int i = 0; i < N_VOCAB; i++) {
		snprintf(pool + 8 * i, 8, "t%d", i);
		toks[i] = pool + 8 * i;
		types[i] = 1;
	}
	e |= gguf_w_str(w, "tokenizer.ggml.model", "gpt2");
	e |= gguf_w_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, N_VOCAB);
	e |= gguf_w_arr(w, "tokenizer.ggml.token_type", GGUF_VT_I32, types, N_VOCAB);
	/* all data lives until the write: one buffer per tensor */
	uint16_t *bufs[16 + 9 * N_LAYER];
	int nb = 0;
	float *ones = malloc(N_EMBD * sizeof *ones);
	for (int i = 0; i < N_EMBD; i++)
		ones[i] = 1.0f + 0.01f * (float)(i % 7);
#define MAT(name, cols, rows, scale)                                                                     \
	do {                                                                                             \
		uint16_t *b = malloc((size_t)(rows) * (cols) * 2);                                       \
		fill_weights(b, rows, cols, scale);                                                      \
		bufs[nb++] = b;                                                                          \
		e |= gguf_w_tensor(w, name, GGUF_TYPE_F16, 2, (int64_t[]){cols, rows}, b, NULL, NULL);   \
	} while (0)
	MAT("token_embd.weight", N_EMBD, N_VOCAB, 0.02);
	e |= gguf_w_tensor(w, "output_norm.weight", GGUF_TYPE_F32, 1, (int64_t[]){N_EMBD}, ones, NULL, NULL);
	MAT("output.weight", N_EMBD, N_VOCAB, 0.03);
	char n[64];
	for (int l = 0; l < N_LAYER; l++) {
#define NM(s) (snprintf(n, sizeof n, "blk.%d.%s", l, s), n)
		e |= gguf_w_tensor(w, NM("attn_norm.weight"), GGUF_TYPE_F32, 1, (int64_t[]){N_EMBD}, ones, NULL, NULL);
		MAT(NM("attn_q.weight"), N_EMBD, N_EMBD, 0.04);
		MAT(NM("attn_k.weight"), N_EMBD, N_HEAD_KV * HEAD_DIM, 0.04);
		MAT(NM("attn_v.weight"), N_EMBD, N_HEAD_KV * HEAD_DIM, 0.02);
		MAT(NM("attn_output.weight"), N_EMBD, N_EMBD, 0.02);
		e |= gguf_w_tensor(w, NM("ffn_norm.weight"), GGUF_TYPE_F32, 1, (int64_t[]){N_EMBD}, ones, NULL, NULL);
		MAT(NM("ffn_gate.weight"), N_EMBD, N_FF, 0.03);
		MAT(NM("ffn_up.weight"), N_EMBD, N_FF, 0.03);
		MAT(NM("ffn_down.weight"), N_FF, N_EMBD, 0.02);
#undef NM
	}
	struct gguf_error err;
	if (!e)
		e = gguf_writer_write_file(w, path, &err);
	gguf_writer_free(w);
	for (int i = 0; i < nb; i++)
		free(bufs[i]);
	free(ones);
	free(toks);
	free(pool);
	free(types);
	return e;
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static double rms_error(const struct gguf_tensor *ref, const struct gguf_tensor *q)
{
	float *a = malloc(ref->n_elements * sizeof *a), *b = malloc(q->n_elements * sizeof *b);
	double s = 0;
	if (gguf_tensor_dequantize(ref, a) == GGUF_OK && gguf_tensor_dequantize(q, b) == GGUF_OK)
		for (uint64_t i = 0; i < ref->n_elements; i++)
			s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
	else
		s = INFINITY;
	free(a);
	free(b);
	return sqrt(s / (double)ref->n_elements);
}

static void test_rows(void)
{
	/* Q8_0 of known values (llama.cpp's formula: d = amax/127, q = roundf(x/d)) */
	float x[32];
	for (int i = 0; i < 32; i++)
		x[i] = (float)(i - 16) * 0.5f;
	uint8_t b[34];
	CHECK_EQ_INT(gguf_quantize_row(GGUF_TYPE_Q8_0, x, b, 32), GGUF_OK);
	CHECK_EQ_INT(b[0] | b[1] << 8, gguf_f32_to_f16(8.0f / 127.0f));
	CHECK_EQ_INT((int8_t)b[2], -127);
	CHECK_EQ_INT((int8_t)b[2 + 17], 8); /* 0.5 * 127 / 8 = 7.94 -> 8 */
	CHECK_EQ_INT(gguf_quantize_row(GGUF_TYPE_Q8_0, x, b, 31), GGUF_ERR_INVALID_ARG);
	CHECK_EQ_INT(gguf_quantize_row(GGUF_TYPE_IQ2_XS, x, b, 256), GGUF_ERR_UNSUPPORTED);
	/* all-zero and constant blocks survive every type */
	static float z[256], c[256];
	for (int i = 0; i < 256; i++)
		c[i] = -0.75f;
	static uint8_t qb[256 * 4];
	static float back[256];
	uint32_t types[] = {GGUF_TYPE_Q8_0, GGUF_TYPE_Q5_0, GGUF_TYPE_Q4_K, GGUF_TYPE_Q6_K};
	for (int k = 0; k < 4; k++) {
		CHECK_EQ_INT(gguf_quantize_row(types[k], z, qb, 256), GGUF_OK);
		CHECK_EQ_INT(gguf_dequantize(types[k], qb, back, 256), GGUF_OK);
		for (int i = 0; i < 256; i++)
			CHECKF(back[i] == 0.0f, "%s: zero block gives %g", gguf_type_name(types[k]), back[i]);
		CHECK_EQ_INT(gguf_quantize_row(types[k], c, qb, 256), GGUF_OK);
		CHECK_EQ_INT(gguf_dequantize(types[k], qb, back, 256), GGUF_OK);
		CHECKF(fabsf(back[7] + 0.75f) < 0.01f, "%s: constant -0.75 gives %g", gguf_type_name(types[k]), back[7]);
	}
	/* non-finite input never crashes (values are unspecified) */
	static float bad[256];
	for (int i = 0; i < 256; i++)
		bad[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -1e38f;
	for (int k = 0; k < 4; k++)
		CHECK_EQ_INT(gguf_quantize_row(types[k], bad, qb, 256), GGUF_OK);
	enum gguf_qmix mix;
	CHECK(gguf_qmix_from_name("Q4_K_M", &mix) == GGUF_OK && mix == GGUF_QMIX_Q4_K_M);
	CHECK(gguf_qmix_from_name("q3_k_s", &mix) == GGUF_ERR_NOT_FOUND);
}

/* llama-quantize counts attn_v / ffn_down in (layer number, name) order, not file order: with 30 layers stored
 * in the order 0, 1, 10, 11, ..., 19, 2, 20, ... the "more bits" layers are still 0-2, 5, 8, ..., 23, 26-29
 * (the attn_v types llama-quantize chose for SmolLM2-135M, 30 layers, whose file has that order). */
static void test_layer_order(void)
{
	struct gguf_writer *w = gguf_writer_new();
	int e = 0;
	char names[30][32];
	int order[30], n = 0;
	for (int d = 0; d < 30; d++) /* lexicographic order of the decimal layer numbers */
		order[d] = d;
	for (int a = 0; a < 30; a++)
		for (int b = a + 1; b < 30; b++) {
			char x[8], y[8];
			snprintf(x, sizeof x, "%d", order[a]);
			snprintf(y, sizeof y, "%d", order[b]);
			if (strcmp(x, y) > 0) {
				int t = order[a];
				order[a] = order[b];
				order[b] = t;
			}
		}
	for (int k = 0; k < 30; k++) {
		snprintf(names[n], sizeof names[n], "blk.%d.attn_v.weight", order[k]);
		e |= gguf_w_tensor(w, names[n++], GGUF_TYPE_F16, 2, (int64_t[]){256, 64}, NULL, NULL, NULL);
	}
	uint8_t *mem;
	size_t size;
	struct gguf_error err;
	e |= gguf_writer_write_mem(w, &mem, &size, &err);
	CHECK_EQ_INT(e, 0);
	struct gguf_file *f = gguf_parse(mem, size, &err);
	CHECK(f != NULL);
	for (uint64_t i = 0; f && i < gguf_tensor_count(f); i++) {
		int l = atoi(gguf_tensor_at(f, i)->name + 4);
		bool more = l < 3 || l >= 26 || (l - 3) % 3 == 2;
		uint32_t t = gguf_qmix_tensor_type(f, i, GGUF_QMIX_Q4_K_M);
		CHECKF(t == (more ? GGUF_TYPE_Q6_K : GGUF_TYPE_Q4_K), "layer %d: %s", l, gguf_type_name(t));
	}
	gguf_close(f);
	free(mem);
	gguf_writer_free(w);
}

/* A progress callback that cancels at its second report (polls inside a tensor, total 0, pass). */
static int stop_after_two(void *ctx, uint64_t done, uint64_t total)
{
	(void)done;
	if (total == 0)
		return 0;
	return ++*(int *)ctx == 2;
}

/* A progress callback that cancels at its first poll inside a tensor, counting the reports it got before. */
static int stop_at_first_poll(void *ctx, uint64_t done, uint64_t total)
{
	(void)done;
	if (total != 0)
		++*(int *)ctx;
	return total == 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write-model") == 0)
		return write_model(argv[2]) ? 1 : 0;
	test_rows();
	test_layer_order();
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char src[512], q8[512], q4[512];
	snprintf(src, sizeof src, "%s/orun-quant-src-%d.gguf", tmp, (int)getpid());
	snprintf(q8, sizeof q8, "%s/orun-quant-q8-%d.gguf", tmp, (int)getpid());
	snprintf(q4, sizeof q4, "%s/orun-quant-q4km-%d.gguf", tmp, (int)getpid());
	CHECK_EQ_INT(write_model(src), 0);
	struct gguf_error err;
	CHECKF(gguf_quantize_file(src, q8, GGUF_QMIX_Q8_0, NULL, NULL, &err) == GGUF_OK, "%s", err.msg);
	CHECKF(gguf_quantize_file(src, q4, GGUF_QMIX_Q4_K_M, NULL, NULL, &err) == GGUF_OK, "%s", err.msg);
	/* requantizing a quantized file is refused */
	CHECK_EQ_INT(gguf_quantize_file(q8, q4, GGUF_QMIX_Q4_K_M, NULL, NULL, &err), GGUF_ERR_UNSUPPORTED);
	/* a progress callback that says stop: GGUF_ERR_CANCELLED after that tensor, and no output at all */
	char qc[512];
	snprintf(qc, sizeof qc, "%s/orun-quant-cancel-%d.gguf", tmp, (int)getpid());
	int calls = 0;
	CHECK_EQ_INT(gguf_quantize_file(src, qc, GGUF_QMIX_Q8_0, stop_after_two, &calls, &err), GGUF_ERR_CANCELLED);
	CHECK_EQ_INT(calls, 2);
	CHECK(access(qc, F_OK) != 0);
	/* a cancel seen by a poll stops inside the first tensor with 16 rows or more, before its report */
	int reports = 0;
	CHECK_EQ_INT(gguf_quantize_file(src, qc, GGUF_QMIX_Q8_0, stop_at_first_poll, &reports, &err), GGUF_ERR_CANCELLED);
	struct gguf_file *fc = gguf_open(src, &err);
	CHECK(fc && reports < (int)gguf_tensor_count(fc));
	gguf_close(fc);
	CHECKF(strstr(err.msg, "cancelled in tensor") != NULL, "%s", err.msg);
	CHECK(access(qc, F_OK) != 0);
	struct gguf_file *fs = gguf_open(src, &err), *f8 = gguf_open(q8, &err), *f4 = gguf_open(q4, &err);
	CHECK(fs && f8 && f4);
	size_t gl;
	FILE *gf = fopen(tm_srcpath("tests/data/gguf/quantize-golden.tsv"), "r");
	CHECKF(gf != NULL, "tests/data/gguf/quantize-golden.tsv missing");
	char line[512];
	int rows = 0, worse = 0;
	double sum_ours = 0, sum_ref = 0;
	(void)gl;
	while (fs && f8 && f4 && gf && fgets(line, sizeof line, gf)) {
		if (line[0] == '#')
			continue;
		char name[128], t8[16], t4[16];
		unsigned long long h8;
		double rms4;
		if (sscanf(line, "%127s %15s %llx %15s %lf", name, t8, &h8, t4, &rms4) != 5)
			continue;
		rows++;
		const struct gguf_tensor *s = gguf_find_tensor(fs, name), *a = gguf_find_tensor(f8, name),
					 *b = gguf_find_tensor(f4, name);
		CHECKF(s && a && b, "tensor %s missing", name);
		if (!s || !a || !b)
			continue;
		CHECKF(strcmp(gguf_type_name(a->type), t8) == 0, "q8_0 %s: type %s, llama.cpp %s", name, gguf_type_name(a->type), t8);
		CHECKF(fnv(a->data, a->n_bytes) == h8, "q8_0 %s: data differs from llama.cpp's", name);
		CHECKF(strcmp(gguf_type_name(b->type), t4) == 0, "q4_K_M %s: type %s, llama.cpp %s", name,
		       gguf_type_name(b->type), t4);
		double ours = rms_error(s, b);
		if (rms4 > 0) {
			CHECKF(ours <= rms4 * 1.01, "q4_K_M %s (%s): RMS error %.6g, llama.cpp %.6g", name, t4, ours, rms4);
			worse += ours > rms4;
			sum_ours += ours;
			sum_ref += rms4;
		}
	}
	if (gf)
		fclose(gf);
	CHECK_EQ_INT(rows, (int)gguf_tensor_count(fs ? fs : f8));
	fprintf(stderr, "q4_K_M: %d tensors, mean RMS error %.6g (llama.cpp %.6g, ratio %.4f), %d tensors worse\n", rows,
		sum_ours / rows, sum_ref / rows, sum_ours / sum_ref, worse);
	if (f4) {
		CHECK_EQ_INT(gguf_get_u32(f4, "general.file_type", 0), 15);
		CHECK(gguf_get_u32(f8, "general.file_type", 0) == 7);
	}
	gguf_close(fs);
	gguf_close(f8);
	gguf_close(f4);
	unlink(src);
	unlink(q8);
	unlink(q4);
	return check_done();
}
