# runner/cuda/ — the CUDA backend, compiled only when configure found nvcc and cuBLAS (issue [cuda]).
# Only cuda.h crosses into C; the .cuh headers are internal to the .cu files.
EXTRA_DIST += runner/cuda/cuda.h runner/cuda/common.cuh runner/cuda/quant.cuh runner/cuda/internal.cuh \
	runner/cuda/README.md
if WITH_CUDA
librunner_a_SOURCES += runner/cuda/device.cu runner/cuda/hostcheck.cu runner/cuda/backend_cuda.c \
	runner/cuda/weights.cu runner/cuda/matvec.cu runner/cuda/ops.cu runner/cuda/attention.cu \
	runner/cuda/gemm.cu runner/cuda/sample.cu runner/cuda/forward.cu runner/cuda/testhooks.cu
# The .cu suffix rule tracks no header dependencies: list them here.
RN_CUDA_HDRS = runner/cuda/cuda.h runner/cuda/common.cuh runner/cuda/quant.cuh
RN_CUDA_IHDRS = $(RN_CUDA_HDRS) runner/cuda/internal.cuh runner/backend.h runner/model.h runner/kvcache.h \
	runner/error.h gguf/gguf.h
runner/cuda/hostcheck.$(OBJEXT): $(RN_CUDA_IHDRS) runner/cpu/ops.h runner/cpu/features.h runner/cpu/kernels.h
runner/cuda/device.$(OBJEXT) runner/cuda/weights.$(OBJEXT) runner/cuda/matvec.$(OBJEXT) runner/cuda/ops.$(OBJEXT) \
	runner/cuda/attention.$(OBJEXT) runner/cuda/gemm.$(OBJEXT) runner/cuda/sample.$(OBJEXT) \
	runner/cuda/forward.$(OBJEXT) runner/cuda/testhooks.$(OBJEXT): $(RN_CUDA_IHDRS)
endif
