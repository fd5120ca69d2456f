# tests/template/ — tests of the template module (owned with the module's issue).
check_PROGRAMS += tests/template/test_template
tests_template_test_template_LDADD = libtestutil.a libmodelfile.a libgguf.a $(CRYPTO_LIBS) -lm
TESTS += tests/template/test_template
EXTRA_DIST += tests/data/template
