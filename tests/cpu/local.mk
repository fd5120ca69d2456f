# tests/cpu/ — tests of the CPU kernels in runner/cpu (owned with the kernels).
# Only libgguf (for reference dequantization) and the kernels' objects of librunner are linked in.
CPU_TEST_LDADD = libtestutil.a librunner.a libgguf.a libbase.a -lm

check_PROGRAMS += tests/cpu/test_pool
tests_cpu_test_pool_LDADD = $(CPU_TEST_LDADD)
TESTS += tests/cpu/test_pool

check_PROGRAMS += tests/cpu/test_attention
tests_cpu_test_attention_LDADD = $(CPU_TEST_LDADD)
TESTS += tests/cpu/test_attention

check_PROGRAMS += tests/cpu/test_matmul
tests_cpu_test_matmul_LDADD = $(CPU_TEST_LDADD)
TESTS += tests/cpu/test_matmul

# Micro-benchmark of the matmul kernels (not a test): tests/cpu/bench_matmul --help
noinst_PROGRAMS += tests/cpu/bench_matmul
tests_cpu_bench_matmul_LDADD = $(CPU_TEST_LDADD)
