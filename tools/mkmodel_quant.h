/* tools/mkmodel_quant.h — row quantizers for the synthetic-model generator (`orun mkmodel`): f32 rows to
 * F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K blocks in ggml's layouts, and FP8 E4M3 values for orun's
 * 128x128-tile type.
 *
 * Simple, fast and deterministic (integer-exact rounding, no search): the goal is valid files of any shape
 * quickly, not the best possible quality. Formats as gguf/gguf.h's dequantizers read them.
 */
#ifndef ORUN_TOOLS_MKMODEL_QUANT_H
#define ORUN_TOOLS_MKMODEL_QUANT_H

#include <stdbool.h>
#include <stdint.h>

/* True when mkq_row can produce this GGUF type. */
bool mkq_supported(uint32_t type);

/* Quantize n values (a multiple of the type's block size) of src into dst (gguf_row_size(type, n) bytes).
 * Returns false for an unsupported type. Not for FP8 (see mkq_fp8). */
bool mkq_row(uint32_t type, const float *src, void *dst, int64_t n);

/* One FP8 E4M3FN byte for x (round to nearest even, saturating at +-448; NaN becomes 0x7F). */
uint8_t mkq_e4m3(float x);

#endif
