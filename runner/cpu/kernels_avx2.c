/* runner/cpu/kernels_avx2.c — the x86 kernels for AVX2 + FMA + F16C (vpmaddubsw/vpmaddwd integer dots).
 *
 * The code is the template kernels_x86.h; this file only chooses the target and the dot-product instructions.
 */
#include "config.h"

#include "runner/cpu/kernels.h"

#ifdef RN_HAVE_AVX2_KERNELS

#define KX_TARGET __attribute__((target("avx2,fma,f16c")))
#define KX_VNNI 0
#define KX_ISA RN_ISA_AVX2
#define KX_EXPORT rn_kernels_avx2
#include "runner/cpu/kernels_x86.h"

#endif
