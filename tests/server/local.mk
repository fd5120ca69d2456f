# tests/server/ — tests of the server module (owned with the module's issue).
