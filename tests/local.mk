# tests/ — one C program per module, shell tests of the executable, fuzz-corpus replays; the Python
# integration tests under tests/integration run from tools/test-all after `make check`.
noinst_LIBRARIES += libtestutil.a
libtestutil_a_SOURCES = tests/testmodel.c tests/testmodel.h tests/check.h

# Link order: tests first, then the libraries from the top of the dependency chain down.
TEST_LDADD = libtestutil.a librunner.a libmodelfile.a libgguf.a libbase.a $(ORUN_LIBS_ALL)

AM_TESTS_ENVIRONMENT = ORUN_SRCDIR='$(abs_top_srcdir)'; ORUN_BIN='$(abs_top_builddir)/orun'; \
	ORUN_BUILDDIR='$(abs_top_builddir)'; export ORUN_SRCDIR ORUN_BIN ORUN_BUILDDIR;

TESTS += tests/cli.sh
EXTRA_DIST += tests/cli.sh tests/models.tsv tests/README.md

check_PROGRAMS += tests/test_backend
tests_test_backend_LDADD = $(TEST_LDADD)
TESTS += tests/test_backend

# One fragment per module, each owned with its module.
include tests/base/local.mk
include tests/gguf/local.mk
include tests/modelfile/local.mk
include tests/template/local.mk
include tests/runner/local.mk
include tests/tokenizer/local.mk
include tests/cpu/local.mk
include tests/server/local.mk
include tests/cuda/local.mk
