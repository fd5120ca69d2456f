# tests/runner/ — tests of the runner module (owned with the module's issue).
