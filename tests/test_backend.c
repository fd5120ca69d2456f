/* tests/test_backend.c — the backend registry: the CPU backend always first, CUDA only in CUDA builds. */
#include "config.h"

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
#ifdef ORUN_WITH_CUDA
	CHECK_EQ_INT(rn_backend_count(), 2);
	CHECK_STREQ(rn_backend_name(1), "cuda");
	CHECK(rn_backend_device_count(1) >= 0);
#else
	CHECK_EQ_INT(rn_backend_count(), 1);
#endif
	return check_done();
}
