# tests/template/ — tests of the template module (owned with the module's issue).
