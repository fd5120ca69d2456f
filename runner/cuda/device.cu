/* runner/cuda/device.cu — device discovery for the CUDA backend.
 *
 * A machine without a driver or GPU answers 0 devices here instead of failing, so a CUDA build runs
 * everywhere and falls back to the CPU.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "runner/cuda/cuda.h"

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
