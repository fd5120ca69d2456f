/* runner/cpu/features.h — what this CPU can run, probed once for the whole process.
 *
 * One cpuid + xgetbv probe (an AVX or AVX-512 feature counts only when the OS saves the YMM / ZMM registers),
 * run under pthread_once, with ORUN_CPU_ISA read at the same time. The matmul kernels' choice (matmul.c), the
 * vector ops (ops.c), attention (attention.c), `orun bench` and llama-server's system_info line all read it
 * here, so they can never disagree. Thread-safe; never fails (a non-x86 CPU reports no feature).
 */
#ifndef ORUN_RUNNER_CPU_FEATURES_H
#define ORUN_RUNNER_CPU_FEATURES_H

#include <stdbool.h>

struct rn_cpu_features {
	bool sse3;
	bool avx, avx2, fma, f16c;                      /* with the OS saving YMM */
	bool avxvnni;                                   /* AVX-VNNI (VEX), with the OS saving YMM */
	bool avx512f, avx512bw, avx512vl, avx512vnni;   /* with the OS saving ZMM */
	char isa_env[16];   /* ORUN_CPU_ISA as the process started ("" when unset): "scalar" forces the portable
			     * paths everywhere; a kernel set's name picks that set when available (matmul.h) */
	bool simd_ops;      /* avx2 && fma && f16c and ORUN_CPU_ISA is not "scalar": the AVX2 paths of ops.c and
			     * attention.c may run */
};

/* The probed features; static storage, valid for the life of the process. */
const struct rn_cpu_features *rn_cpu_features(void);

#endif
