/* runner/cpu/kernels_avx512.c — the x86 kernels with AVX-512 VNNI (EVEX vpdpbusd/vpdpwssd, 256-bit via VL).
 *
 * The code is the template kernels_x86.h; the integer sums are bit-identical to the AVX2 set's. 256-bit vectors
 * keep one code path for all three sets and avoid the frequency drop of 512-bit work on older Intel parts.
 */
#include "config.h"

#include "runner/cpu/kernels.h"

#ifdef RN_HAVE_AVX512_KERNELS

#define KX_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define KX_VNNI 2
#define KX_ISA RN_ISA_AVX512
#define KX_EXPORT rn_kernels_avx512
#include "runner/cpu/kernels_x86.h"

#endif
