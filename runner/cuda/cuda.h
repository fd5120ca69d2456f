/* runner/cuda/cuda.h — the only crossing from C into CUDA.
 *
 * Plain C declarations of the extern "C" entry points implemented in the .cu files of runner/cuda. Host .c files include
 * this header and never a CUDA header.
 */
#ifndef ORUN_RUNNER_CUDA_H
#define ORUN_RUNNER_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of visible CUDA devices; 0 when there is no driver or no device (never an error). */
int rn_cuda_device_count(void);

/* Writes "NAME, N MiB, sm_XY" for device dev into buf (always NUL-terminated). Returns 0, or -1 when the
 * device cannot be queried. */
int rn_cuda_device_describe(int dev, char *buf, int size);

#ifdef __cplusplus
}
#endif

#endif
