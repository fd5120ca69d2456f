/* runner/cuda/backend_cuda.c — the CUDA backend's ops table for runner/backend.c.
 *
 * Plain C (designated initialisers keep it in step with struct rn_backend_ops); the functions live in the .cu
 * files behind runner/cuda/cuda.h.
 */
#include "config.h"

#include "runner/backend.h"
#include "runner/cuda/cuda.h"

const struct rn_backend_ops rn_cuda_backend_ops = {
	.name = "cuda",
	.device_prefix = "CUDA",
	.gpu = true,
	.device_count = rn_cuda_device_count,
	.device_info = rn_cuda_device_info,
	.device_memory = rn_cuda_mem_info,
	.archs = rn_cuda_archs,
	.load = rn_cuda_load,
	.free = rn_cuda_free,
	.forward = rn_cuda_forward,
	.kv_move = rn_cuda_kv_move,
	.kv_rotate = rn_cuda_kv_rotate,
	.kv_copy = rn_cuda_kv_copy,
	.memory = rn_cuda_memory,
};
