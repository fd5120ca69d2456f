# tests/server/ — tests of the server module (owned with the module's issue).
if WITH_SERVER
check_PROGRAMS += tests/server/test_http
tests_server_test_http_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_http
check_PROGRAMS += tests/server/test_parsers
tests_server_test_parsers_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_parsers
check_PROGRAMS += tests/server/test_sched
tests_server_test_sched_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_sched
check_PROGRAMS += tests/server/test_ls_flags
tests_server_test_ls_flags_SOURCES = tests/server/test_ls_flags.c tools/llama_server_flags.c
tests_server_test_ls_flags_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_ls_flags
check_PROGRAMS += tests/server/test_jinja_chat
tests_server_test_jinja_chat_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_jinja_chat
check_PROGRAMS += tests/server/test_structured
tests_server_test_structured_LDADD = $(TEST_LDADD)
TESTS += tests/server/test_structured
endif
# Fuzz targets for the server's parsers (tests/fuzz/README.md): `make check` replays each corpus; with
# `./configure CC=clang --enable-fuzzing` the libFuzzer binaries are built too. fuzz_manifest reads stored
# models as the server does (runner/api/stored_model.c), hence here and not with tests/modelfile.
if WITH_SERVER
FUZZ_REQUEST_SOURCES = tests/fuzz/fuzz_request.c tests/fuzz/fuzz_request.h
FUZZ_STORE_SOURCES = tests/fuzz/fuzz_tmpstore.c tests/fuzz/fuzz_tmpstore.h
check_PROGRAMS += tests/fuzz/replay_http tests/fuzz/replay_api tests/fuzz/replay_parsers tests/fuzz/replay_manifest \
	tests/fuzz/replay_llamaserver
TESTS += tests/fuzz/replay_http tests/fuzz/replay_api tests/fuzz/replay_parsers tests/fuzz/replay_manifest \
	tests/fuzz/replay_llamaserver
tests_fuzz_replay_http_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_http.c $(FUZZ_REQUEST_SOURCES)
tests_fuzz_replay_http_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/http"'
tests_fuzz_replay_http_LDADD = $(TEST_LDADD)
tests_fuzz_replay_api_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_api.c $(FUZZ_REQUEST_SOURCES) $(FUZZ_STORE_SOURCES)
tests_fuzz_replay_api_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/api"'
tests_fuzz_replay_api_LDADD = $(TEST_LDADD)
tests_fuzz_replay_parsers_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_parsers.c
tests_fuzz_replay_parsers_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/parsers"'
tests_fuzz_replay_parsers_LDADD = $(TEST_LDADD)
tests_fuzz_replay_manifest_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_manifest.c $(FUZZ_STORE_SOURCES)
tests_fuzz_replay_manifest_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/manifest"'
tests_fuzz_replay_manifest_LDADD = $(TEST_LDADD)
tests_fuzz_replay_llamaserver_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_llamaserver.c
tests_fuzz_replay_llamaserver_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_CORPUS='"tests/fuzz/corpus/llamaserver"'
tests_fuzz_replay_llamaserver_LDADD = $(TEST_LDADD)
EXTRA_DIST += tests/fuzz/corpus/http tests/fuzz/corpus/api tests/fuzz/corpus/parsers tests/fuzz/corpus/manifest \
	tests/fuzz/corpus/llamaserver tests/fuzz/run-slice.sh tests/fuzz/seeds.py
if ENABLE_FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_http tests/fuzz/fuzz_api tests/fuzz/fuzz_parsers tests/fuzz/fuzz_manifest \
	tests/fuzz/fuzz_llamaserver
tests_fuzz_fuzz_http_SOURCES = tests/fuzz/fuzz_http.c $(FUZZ_REQUEST_SOURCES)
tests_fuzz_fuzz_http_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_http_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_http_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_api_SOURCES = tests/fuzz/fuzz_api.c $(FUZZ_REQUEST_SOURCES) $(FUZZ_STORE_SOURCES)
tests_fuzz_fuzz_api_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_api_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_api_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_parsers_SOURCES = tests/fuzz/fuzz_parsers.c
tests_fuzz_fuzz_parsers_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_parsers_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_parsers_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_manifest_SOURCES = tests/fuzz/fuzz_manifest.c $(FUZZ_STORE_SOURCES)
tests_fuzz_fuzz_manifest_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_manifest_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_manifest_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_llamaserver_SOURCES = tests/fuzz/fuzz_llamaserver.c
tests_fuzz_fuzz_llamaserver_CFLAGS = $(AM_CFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_llamaserver_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_llamaserver_LDADD = $(TEST_LDADD)
endif
endif
