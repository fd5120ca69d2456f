# tools/ — the orun executable.
bin_PROGRAMS += orun
orun_SOURCES = tools/orun.c tools/commands.h tools/argnum.c tools/argnum.h
orun_SOURCES += tools/cmd_gguf.c
orun_SOURCES += tools/cmd_mkmodel.c tools/mkmodel_quant.c tools/mkmodel_quant.h
orun_SOURCES += tools/cmd_generate.c tools/cmd_bench.c
orun_LDADD = librunner.a $(REGISTRY_LIB) libmodelfile.a libgguf.a libbase.a $(ORUN_LIBS_ALL)
# the scripts: dependencies, the whole test suite and its summary, a first run, the GPU checks
EXTRA_DIST += tools/bench-pull tools/install-deps tools/test-all tools/test-summary tools/quickstart tools/gpu-check \
	tools/gpu-check-torch.py
# The client commands (libcurl): only with the server/client part of the build.
if WITH_SERVER
orun_SOURCES += tools/client.c tools/client.h tools/clifmt.c tools/clifmt.h \
	tools/cmd_create.c tools/cmd_show.c tools/cmd_list.c tools/cmd_cp.c tools/cmd_rm.c tools/cmd_pull.c
endif
# The server side (issue [server]): serve, the llama-server runner mode, and the ps/run/stop client commands.
if WITH_SERVER
orun_SOURCES += tools/cmd_serve.c tools/cmd_llama_server.c tools/cmd_ps.c tools/cmd_run.c tools/cmd_stop.c \
	tools/bench_api.c tools/bench_api.h
orun_SOURCES += tools/llama_server_flags.c tools/llama_server_flags.h
endif
