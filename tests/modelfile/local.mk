# tests/modelfile/ — tests of the modelfile module (owned with the module's issue).
