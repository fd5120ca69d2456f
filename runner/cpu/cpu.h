/* runner/cpu/cpu.h — the CPU backend's entry in the backend registry (runner/backend.c).
 *
 * The CPU backend is orun's reference: weights are used in place from the mapping, activations quantized to
 * int8 blocks for the matmuls (runner/cpu/matmul.h), one pool job per forward pass (runner/cpu/pool.h).
 */
#ifndef ORUN_RUNNER_CPU_CPU_H
#define ORUN_RUNNER_CPU_CPU_H

#include "runner/backend.h"

extern const struct rn_backend_ops rn_cpu_backend_ops;

#endif
