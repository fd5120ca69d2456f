# tests/ — one C program per module, shell tests of the executable, fuzz-corpus replays; the Python
# integration tests under tests/integration run from tools/test-all after `make check`.
noinst_LIBRARIES += libtestutil.a
libtestutil_a_SOURCES = tests/testmodel.c tests/testmodel.h tests/check.h

# Link order: tests first, then the libraries from the top of the dependency chain down.
TEST_LDADD = libtestutil.a librunner.a $(REGISTRY_LIB) libmodelfile.a libgguf.a libbase.a $(ORUN_LIBS_ALL)

# ORUN_SHARED: the shared test data (../shared beside the source tree unless configure was given ORUN_SHARED=DIR,
# as a distcheck is, whose source tree is an unpacked copy elsewhere). Tests that need it fail when it is
# missing, naming it (tests/check.h, tests/integration/conftest.py).
ORUN_SHARED_DIR = $(if $(ORUN_SHARED),$(ORUN_SHARED),$(abs_top_srcdir)/../shared)
AM_TESTS_ENVIRONMENT = ORUN_SRCDIR='$(abs_top_srcdir)'; ORUN_BIN='$(abs_top_builddir)/orun'; \
	ORUN_BUILDDIR='$(abs_top_builddir)'; ORUN_SHARED='$(ORUN_SHARED_DIR)'; \
	export ORUN_SRCDIR ORUN_BIN ORUN_BUILDDIR ORUN_SHARED;

TESTS += tests/cli.sh tests/install.sh
EXTRA_DIST += tests/cli.sh tests/install.sh tests/models.tsv tests/README.md tests/requirements.txt

# The Python integration tests (run by tools/test-all after `make check`, not by it).
EXTRA_DIST += tests/integration/conftest.py tests/integration/test_cli_store.py tests/integration/test_gguf_cli.py \
	tests/integration/test_gguf_import.py tests/integration/test_modelfile_create.py \
	tests/integration/test_models.py tests/integration/test_server_api.py tests/integration/test_server_common.py \
	tests/integration/test_server_embed.py tests/integration/test_server_llamaserver.py \
	tests/integration/test_server_load.py tests/integration/test_server_wire.py \
	tests/integration/test_registry.py tests/integration/registry_util.py
EXTRA_DIST += tests/integration/test_server_hardening_http.py tests/integration/test_server_hardening_store.py
EXTRA_DIST += tests/integration/jinja_golden.py tests/integration/test_server_jinja.py \
	tests/integration/test_llamaserver_jinja.py
EXTRA_DIST += tests/integration/test_server_logprobs.py
EXTRA_DIST += tests/integration/test_cli_run.py tests/integration/test_server_log.py
EXTRA_DIST += tests/integration/test_server_format.py
EXTRA_DIST += tests/integration/test_cli_interactive.py
EXTRA_DIST += tests/integration/test_prefix_cache.py

check_PROGRAMS += tests/test_backend
tests_test_backend_LDADD = $(TEST_LDADD)
TESTS += tests/test_backend

# One fragment per module, each owned with its module.
include tests/base/local.mk
include tests/gguf/local.mk
include tests/modelfile/local.mk
include tests/template/local.mk
include tests/jinja/local.mk
include tests/runner/local.mk
include tests/tokenizer/local.mk
include tests/cpu/local.mk
include tests/server/local.mk
include tests/chatfmt/local.mk
include tests/cuda/local.mk
