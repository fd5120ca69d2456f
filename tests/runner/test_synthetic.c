/* tests/runner/test_synthetic.c — synthetic llama / qwen2 / qwen3 models in F16, Q8_0, Q4_K and Q6_K,
 * generated here by `orun mkmodel` exactly as for the golden data, against llama.cpp's logits
 * (tests/data/engine/synthetic_<arch>_<type>.txt, see the README there): the top-1 token must be equal at
 * every position where llama.cpp's margin is not a near tie (the count of equal positions is printed), and
 * the largest absolute difference over the recorded logits (the 8 best and 64 fixed ids per position) is
 * reported and bounded.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runner/backend.h"
#include "runner/model.h"
#include "tests/check.h"
#include "tests/testmodel.h"

#define N_TOK 32
#define N_TOP 8
#define N_SAMPLE 64
/* As in test_engine.c: where llama.cpp's own best two logits are closer than this, either may win (the
 * two engines' exp() differ in the last bits, which occasionally flips one int8 or f16 rounding). */
#define NEAR_TIE 0.25f

struct golden {
	int32_t tokens[N_TOK];
	int32_t top_id[N_TOK][N_TOP];
	float top_logit[N_TOK][N_TOP];
	float sample[N_TOK][N_SAMPLE];
	char args[512];
};

static bool read_golden(const char *path, struct golden *g)
{
	FILE *f = fopen(path, "r");
	CHECKF(f != NULL, "cannot open %s", path);
	if (!f)
		return false;
	char line[16384];
	int row = 0;
	bool ok = true;
	while (fgets(line, sizeof line, f) && row < N_TOK) {
		if (strncmp(line, "# llama.cpp logits of orun mkmodel ", 35) == 0) {
			char *p = strstr(line, " (tokenizer");
			if (p)
				*p = 0;
			snprintf(g->args, sizeof g->args, "%.500s", line + 35);
			continue;
		}
		if (strncmp(line, "# tokens ", 9) == 0) {
			char *s = line + 9;
			for (int i = 0; i < N_TOK; i++)
				g->tokens[i] = (int32_t)strtol(s, &s, 10);
			continue;
		}
		if (line[0] == '#')
			continue;
		char *s = line;
		for (int k = 0; k < N_TOP; k++) {
			g->top_id[row][k] = (int32_t)strtol(s, &s, 10);
			g->top_logit[row][k] = strtof(s, &s);
		}
		s = strchr(s, '|');
		if (!s) {
			ok = false;
			break;
		}
		s++;
		for (int k = 0; k < N_SAMPLE; k++)
			g->sample[row][k] = strtof(s, &s);
		row++;
	}
	fclose(f);
	CHECKF(ok && row == N_TOK && g->args[0], "%s: malformed (%d rows)", path, row);
	return ok && row == N_TOK && g->args[0];
}

/* One (arch, type): returns the max |logit difference|, or -1 when it could not run. */
static float run_case(const char *orun, const char *tok, const char *dir, const char *arch, const char *type,
		      int *top1_equal)
{
	char gpath[256], mpath[512], cmd[2048];
	snprintf(gpath, sizeof gpath, "tests/data/engine/synthetic_%s_%s.txt", arch, type);
	static struct golden g;
	memset(&g, 0, sizeof g);
	if (!read_golden(tm_srcpath(gpath), &g))
		return -1;
	snprintf(mpath, sizeof mpath, "%s/%s_%s.gguf", dir, arch, type);
	/* g.args holds "--arch A --type T <shape args>" exactly as the golden data was made */
	snprintf(cmd, sizeof cmd, "'%s' mkmodel -o '%s' --tokenizer '%s' %s --threads 2 2>/dev/null", orun, mpath, tok,
		 g.args);
	int rc = system(cmd);
	CHECKF(rc == 0, "%s failed (%d)", cmd, rc);
	if (rc != 0)
		return -1;
	struct rn_error err = {0};
	struct rn_model *m = rn_model_open(mpath, &err);
	CHECKF(m != NULL, "%s", err.msg);
	struct rn_load_params bp;
	rn_load_params_init(&bp);
	bp.n_seq = 1;
	bp.n_ctx = 64;
	bp.n_batch = N_TOK;
	bp.n_threads = 2;
	struct rn_backend *b = m ? rn_backend_load(m, &bp, &err) : NULL;
	CHECKF(b != NULL, "%s", err.msg);
	float md = -1;
	if (b) {
		const int V = m->hp.n_vocab;
		float *lg = malloc((size_t)N_TOK * V * sizeof *lg);
		int32_t pos[N_TOK], seq[N_TOK] = {0};
		uint8_t want[N_TOK];
		for (int i = 0; i < N_TOK; i++)
			pos[i] = i, want[i] = 1;
		struct rn_batch bt = {.n_tokens = N_TOK, .token = g.tokens, .pos = pos, .seq = seq, .want = want};
		struct rn_outputs out = {.logits = lg};
		if (rn_backend_forward(b, &bt, &out, &err) == RN_OK) {
			md = 0;
			*top1_equal = 0;
			for (int p = 0; p < N_TOK; p++) {
				const float *row = lg + (size_t)p * V;
				int best = 0;
				for (int j = 1; j < V; j++)
					if (row[j] > row[best])
						best = j;
				*top1_equal += best == g.top_id[p][0];
				float margin = g.top_logit[p][0] - g.top_logit[p][1];
				if (best != g.top_id[p][0])
					fprintf(stderr, "%s %s position %d: orun's top-1 is %d (%.4f), llama.cpp's %d (%.4f, margin %.4f; "
						"orun gives it %.4f)\n", arch, type, p, best, (double)row[best], g.top_id[p][0],
						(double)g.top_logit[p][0], (double)margin, (double)row[g.top_id[p][0]]);
				CHECKF(best == g.top_id[p][0] || margin < NEAR_TIE, "%s %s position %d: top-1 differs where "
				       "llama.cpp is sure (margin %.3f)", arch, type, p, (double)margin);
				for (int k = 0; k < N_TOP; k++)
					md = fmaxf(md, fabsf(row[g.top_id[p][k]] - g.top_logit[p][k]));
				for (int k = 0; k < N_SAMPLE; k++)
					md = fmaxf(md, fabsf(row[(k * 769 + 3) % V] - g.sample[p][k]));
			}
		} else {
			CHECKF(0, "%s", err.msg);
		}
		free(lg);
	}
	rn_backend_free(b);
	rn_model_free(m);
	unlink(mpath);
	return md;
}

int main(void)
{
	const char *orun = getenv("ORUN_BIN");
	if (!orun || access(orun, X_OK) != 0)
		SKIP("ORUN_BIN is not set to the orun executable (run through make check)");
	const char *tok = tm_require_model("llama"); /* the tokenizer the synthetic models copy */
	char dir[] = "/tmp/orun-synthetic-XXXXXX";
	if (!mkdtemp(dir))
		SKIP("cannot create a temporary folder");
	static const char *const archs[] = {"llama", "qwen2", "qwen3"};
	static const char *const types[] = {"F16", "Q8_0", "Q4_K", "Q6_K"};
	for (int a = 0; a < 3; a++)
		for (int t = 0; t < 4; t++) {
			int eq = 0;
			float md = run_case(orun, tok, dir, archs[a], types[t], &eq);
			if (md < 0)
				continue;
			fprintf(stderr, "%-5s %-4s: top-1 equal at %d/%d positions, max |logit - llama.cpp| = %.2e\n", archs[a],
				types[t], eq, N_TOK, (double)md);
			/* logits spread over about +-15 here; 0.5 is far above float rounding and far below a real bug */
			CHECKF(md < 0.5f, "%s %s: max |logit difference| %g", archs[a], types[t], (double)md);
		}
	rmdir(dir);
	return check_done();
}
