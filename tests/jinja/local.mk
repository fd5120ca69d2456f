# tests/jinja/ — the Jinja engine (modelfile/jinja/, issue 14): goldens from Python jinja2, engine cases, limits.
check_PROGRAMS += tests/jinja/test_jinja
tests_jinja_test_jinja_LDADD = libtestutil.a libmodelfile.a libgguf.a libbase.a $(CRYPTO_LIBS) -lm
TESTS += tests/jinja/test_jinja
EXTRA_DIST += tests/data/jinja
