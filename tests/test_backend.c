/* tests/test_backend.c — the backend registry: the CPU backend always first, CUDA only in CUDA builds, and
 * the device queries servers and tools make through it. */
#include "config.h"

#include <string.h>

#include "runner/backend.h"
#include "tests/check.h"

int main(void)
{
	CHECK(rn_backend_count() >= 1);
	CHECK_STREQ(rn_backend_name(0), "cpu");
	CHECK_EQ_INT(rn_backend_device_count(0), 1);
	CHECK_STREQ(rn_backend_name(-1), "?");
	CHECK_STREQ(rn_backend_name(rn_backend_count()), "?");
	CHECK_EQ_INT(rn_backend_device_count(99), 0);
	/* the CPU: no GPU, no architectures, devices not described */
	struct rn_device_info d;
	uint64_t fr = 1, tot = 1;
	CHECK(!rn_backend_is_gpu(0));
	CHECK_STREQ(rn_backend_device_prefix(0), "CPU");
	CHECK_STREQ(rn_backend_archs(0), "");
	CHECK_EQ_INT(rn_backend_device_info(0, 0, &d), -1);
	CHECK_EQ_INT(rn_backend_device_memory(0, 0, &fr, &tot), -1);
	CHECK(fr == 0 && tot == 0);
	CHECK(!rn_backend_is_gpu(-1) && !rn_backend_is_gpu(99));
	CHECK_STREQ(rn_backend_device_prefix(99), "?");
	CHECK_STREQ(rn_backend_archs(99), "");
	CHECK_EQ_INT(rn_backend_device_info(99, 0, &d), -1);
#ifdef ORUN_WITH_CUDA
	CHECK_EQ_INT(rn_backend_count(), 2);
	CHECK_STREQ(rn_backend_name(1), "cuda");
	CHECK(rn_backend_device_count(1) >= 0);
	CHECK(rn_backend_is_gpu(1));
	CHECK_STREQ(rn_backend_device_prefix(1), "CUDA");
	const char *archs = rn_backend_archs(1); /* e.g. "800,890,900" */
	CHECK(archs[0] >= '1' && archs[0] <= '9' && strspn(archs, "0123456789,") == strlen(archs));
	CHECK_EQ_INT(rn_backend_device_info(1, rn_backend_device_count(1), &d), -1);
	if (rn_backend_device_count(1) > 0) {
		CHECK_EQ_INT(rn_backend_device_info(1, 0, &d), 0);
		CHECK(d.name[0] && d.total_bytes > 0 && d.cc_major > 0);
		CHECK(rn_backend_gpu_memory() > 0);
	} else {
		CHECK(rn_backend_gpu_memory() == 0);
	}
#else
	CHECK_EQ_INT(rn_backend_count(), 1);
	CHECK(rn_backend_gpu_memory() == 0);
#endif
	return check_done();
}
