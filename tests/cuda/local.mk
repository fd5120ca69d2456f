# tests/cuda/ — tests of the cuda module (owned with the module's issue).
