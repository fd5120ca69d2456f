# tests/cuda/ — tests of the cuda module (owned with the module's issue).
EXTRA_DIST += tests/cuda/wrand.h tests/cuda/synth.h tests/cuda/cmp.h
if WITH_CUDA
# The backend's decoding code compiled for the host, against the CPU backend: runs without a GPU.
check_PROGRAMS += tests/cuda/test_cuda_host
tests_cuda_test_cuda_host_LDADD = $(TEST_LDADD)
TESTS += tests/cuda/test_cuda_host
# Kernels, the whole forward pass and the real models' greedy continuations against the CPU backend: these
# skip (77) where rn_cuda_device_count() == 0.
check_PROGRAMS += tests/cuda/test_cuda_kernels tests/cuda/test_cuda_forward tests/cuda/test_cuda_models
check_PROGRAMS += tests/cuda/test_cuda_attn
tests_cuda_test_cuda_attn_LDADD = $(TEST_LDADD)
TESTS += tests/cuda/test_cuda_attn
tests_cuda_test_cuda_kernels_LDADD = $(TEST_LDADD)
tests_cuda_test_cuda_forward_LDADD = $(TEST_LDADD)
tests_cuda_test_cuda_models_LDADD = $(TEST_LDADD)
TESTS += tests/cuda/test_cuda_kernels tests/cuda/test_cuda_forward tests/cuda/test_cuda_models
# Qwen3-14B's real shapes (2 layers; Q4_K_M, Q8_0, FP8) against the CPU: skip (77) without a device;
# ORUN_CUDA_TEST_CPU=1 runs their CPU reference half there.
check_PROGRAMS += tests/cuda/test_cuda_shapes tests/cuda/test_cuda_depth tests/cuda/test_cuda_sampler
tests_cuda_test_cuda_shapes_LDADD = $(TEST_LDADD)
tests_cuda_test_cuda_depth_LDADD = $(TEST_LDADD)
tests_cuda_test_cuda_sampler_LDADD = $(TEST_LDADD)
TESTS += tests/cuda/test_cuda_shapes tests/cuda/test_cuda_depth tests/cuda/test_cuda_sampler
# The prefill GEMM paths (host checks of the FP8 scale layout run without a GPU; the rest skips there).
check_PROGRAMS += tests/cuda/test_cuda_gemm
tests_cuda_test_cuda_gemm_LDADD = $(TEST_LDADD)
TESTS += tests/cuda/test_cuda_gemm
check_PROGRAMS += tests/cuda/test_cuda_decode
tests_cuda_test_cuda_decode_LDADD = $(TEST_LDADD)
TESTS += tests/cuda/test_cuda_decode
# Speed on one model (not a test; tools/gpu-check runs it): tests/cuda/bench_cuda --help
noinst_PROGRAMS += tests/cuda/bench_cuda
tests_cuda_bench_cuda_LDADD = $(TEST_LDADD)
endif
