# runner/cuda/ — the CUDA backend, compiled only when configure found nvcc and cuBLAS (issue [cuda]).
EXTRA_DIST += runner/cuda/cuda.h
if WITH_CUDA
librunner_a_SOURCES += runner/cuda/device.cu
endif
