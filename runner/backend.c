/* runner/backend.c — the one place that knows which backends exist in this build.
 *
 * The CUDA backend is registered behind the single ORUN_WITH_CUDA #ifdef the style guide allows.
 */
#include "config.h"

#include "runner/backend.h"

#ifdef ORUN_WITH_CUDA
#include "runner/cuda/cuda.h"
#endif

struct backend_entry {
	const char *name;
	int (*device_count)(void);
};

static int cpu_device_count(void) { return 1; }

static const struct backend_entry backends[] = {
	{"cpu", cpu_device_count},
#ifdef ORUN_WITH_CUDA
	{"cuda", rn_cuda_device_count},
#endif
};

int rn_backend_count(void) { return (int)(sizeof backends / sizeof backends[0]); }

const char *rn_backend_name(int i)
{
	if (i < 0 || i >= rn_backend_count())
		return "?";
	return backends[i].name;
}

int rn_backend_device_count(int i)
{
	if (i < 0 || i >= rn_backend_count())
		return 0;
	return backends[i].device_count();
}
