# tools/ — the orun executable.
bin_PROGRAMS += orun
orun_SOURCES = tools/orun.c tools/commands.h
orun_SOURCES += tools/cmd_gguf.c
orun_SOURCES += tools/cmd_mkmodel.c tools/mkmodel_quant.c tools/mkmodel_quant.h
orun_SOURCES += tools/cmd_generate.c tools/cmd_bench.c
orun_LDADD = librunner.a libmodelfile.a libgguf.a $(ORUN_LIBS_ALL)
