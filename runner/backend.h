/* runner/backend.h — which compute backends this build has.
 *
 * Only runner/backend.c knows the list; everything else asks here. The CPU backend is always present and
 * is the reference; CUDA is present when configure built it (it may still find no device at run time).
 */
#ifndef ORUN_RUNNER_BACKEND_H
#define ORUN_RUNNER_BACKEND_H

/* Number of compiled-in backends (>= 1). */
int rn_backend_count(void);

/* Name of backend i ("cpu", "cuda"), 0 <= i < rn_backend_count(); static storage. */
const char *rn_backend_name(int i);

/* Number of usable devices for backend i: the CPU backend reports 1; CUDA reports the visible GPUs
 * (0 when the driver or a device is missing). Never fails. */
int rn_backend_device_count(int i);

#endif
