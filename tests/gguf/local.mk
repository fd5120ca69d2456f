# tests/gguf/ — tests of the gguf module (owned with the module's issue).
