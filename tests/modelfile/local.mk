# tests/modelfile/ — tests of the modelfile module (owned with the module's issue).
check_PROGRAMS += tests/modelfile/test_json
tests_modelfile_test_json_LDADD = $(TEST_LDADD)
TESTS += tests/modelfile/test_json
