/* runner/cpu/kernels_avxvnni.c — the x86 kernels with AVX-VNNI (VEX vpdpbusd/vpdpwssd on 256-bit vectors).
 *
 * The code is the template kernels_x86.h; the integer sums are bit-identical to the AVX2 set's.
 */
#include "config.h"

#include "runner/cpu/kernels.h"

#ifdef RN_HAVE_AVXVNNI_KERNELS

#define KX_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define KX_VNNI 1
#define KX_ISA RN_ISA_AVXVNNI
#define KX_EXPORT rn_kernels_avxvnni
#include "runner/cpu/kernels_x86.h"

#endif
