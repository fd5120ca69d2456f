/* runner/cuda/device.cu — device discovery for the CUDA backend.
 *
 * A machine without a driver or GPU answers 0 devices here instead of failing, so a CUDA build runs
 * everywhere and falls back to the CPU.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "runner/backend.h"
#include "runner/cuda/cuda.h"

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)

extern "C" int rn_cuda_device_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return n;
}

extern "C" int rn_cuda_device_describe(int dev, char *buf, int size)
{
	cudaDeviceProp p;
	if (size <= 0)
		return -1;
	buf[0] = 0;
	if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	snprintf(buf, (size_t)size, "%s, %zu MiB, sm_%d%d", p.name, p.totalGlobalMem >> 20, p.major, p.minor);
	return 0;
}

extern "C" int rn_cuda_device_info(int dev, struct rn_device_info *out)
{
	cudaDeviceProp p;
	memset(out, 0, sizeof *out);
	if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	snprintf(out->name, sizeof out->name, "%s", p.name);
	out->total_bytes = p.totalGlobalMem;
	out->cc_major = p.major;
	out->cc_minor = p.minor;
	return 0;
}

extern "C" const char *rn_cuda_archs(void)
{
#ifdef __CUDA_ARCH_LIST__ /* nvcc >= 11.5, from the -gencode flags this file was compiled with */
	return STR(__CUDA_ARCH_LIST__);
#else
	return "?";
#endif
}
