# runner/cpu/ — the CPU backend, orun's reference (issue [engine]).
# the CPU-feature probe, kernels and thread pool (matmul.h and pool.h are the engine's interface to them)
librunner_a_SOURCES += runner/cpu/features.c runner/cpu/features.h runner/cpu/pool.c runner/cpu/pool.h \
	runner/cpu/matmul.c runner/cpu/matmul.h \
	runner/cpu/kernels.h runner/cpu/kernels_x86.h runner/cpu/kernels_scalar.c runner/cpu/kernels_avx2.c \
	runner/cpu/kernels_avxvnni.c runner/cpu/kernels_avx512.c
# the forward pass, attention, RoPE/norm helpers and the CPU KV cache (issue [engine], engine part)
librunner_a_SOURCES += runner/cpu/cpu.h runner/cpu/forward.c runner/cpu/ops.c runner/cpu/ops.h \
	runner/cpu/attention.c runner/cpu/attention.h
EXTRA_DIST += runner/cpu/KERNELS.md
