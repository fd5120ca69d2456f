# tests/cpu/ — tests of the CPU kernels in runner/cpu (owned with the kernels).
