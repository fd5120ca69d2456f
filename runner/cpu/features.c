/* runner/cpu/features.c — the process's one CPU-feature probe (cpuid leaves 1 and 7, XCR0 through xgetbv).
 *
 * Same answers as GCC's __builtin_cpu_supports (which also requires the OS to save the wider registers), read
 * once; deliberately no per-call probing and no knowledge of which kernels exist (matmul.c decides that).
 */
#include "config.h"

#include "runner/cpu/features.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define FEAT_X86 1
#endif

static struct rn_cpu_features feats;
static pthread_once_t feats_once = PTHREAD_ONCE_INIT;

#ifdef FEAT_X86
static uint64_t xgetbv0(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}

static bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

static void probe_x86(struct rn_cpu_features *f)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return;
	const uint64_t xcr0 = bit(c, 27) ? xgetbv0() : 0; /* OSXSAVE */
	const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
	unsigned b7 = 0, c7 = 0, a71 = 0, t;
	if (__get_cpuid_count(7, 0, &t, &b7, &c7, &d))
		__get_cpuid_count(7, 1, &a71, &t, &t, &t);
	f->sse3 = bit(c, 0);
	f->avx = ymm && bit(c, 28);
	f->fma = ymm && bit(c, 12);
	f->f16c = ymm && bit(c, 29);
	f->avx2 = ymm && bit(b7, 5);
	f->avxvnni = ymm && bit(a71, 4);
	f->avx512f = zmm && bit(b7, 16);
	f->avx512bw = zmm && bit(b7, 30);
	f->avx512vl = zmm && bit(b7, 31);
	f->avx512vnni = zmm && bit(c7, 11);
}
#endif

static void probe(void)
{
#ifdef FEAT_X86
	probe_x86(&feats);
#endif
	const char *env = getenv("ORUN_CPU_ISA");
	snprintf(feats.isa_env, sizeof feats.isa_env, "%s", env ? env : "");
	feats.simd_ops = feats.avx2 && feats.fma && feats.f16c && strcmp(feats.isa_env, "scalar") != 0;
}

const struct rn_cpu_features *rn_cpu_features(void)
{
	pthread_once(&feats_once, probe);
	return &feats;
}
