# tools/ — the orun executable.
bin_PROGRAMS += orun
orun_SOURCES = tools/orun.c tools/commands.h tools/argnum.c tools/argnum.h
orun_SOURCES += tools/cmd_gguf.c
orun_SOURCES += tools/cmd_mkmodel.c tools/mkmodel_quant.c tools/mkmodel_quant.h
orun_SOURCES += tools/cmd_generate.c tools/cmd_bench.c
orun_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEDIT_CFLAGS)
orun_LDADD = librunner.a $(REGISTRY_LIB) libmodelfile.a libgguf.a libbase.a $(ORUN_LIBS_ALL) $(LIBEDIT_LIBS)
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
	tools/interactive.c tools/interactive.h tools/wordwrap.c tools/wordwrap.h \
	tools/bench_api.c tools/bench_api.h tools/bench_serve.c tools/bench_serve.h
orun_SOURCES += tools/llama_server_flags.c tools/llama_server_flags.h
endif

# What `make install` puts beside bin/orun (tests/install.sh installs into a DESTDIR and runs it):
# - the manual page orun(1), with the installed paths substituted;
# - $(pkglibdir)/llama-server, a link to orun laid out as Ollama's lib/ollama/llama-server is beside bin/ollama
#   (orun runs as llama-server when called by that name); relative when realpath can make it so, so that a
#   DESTDIR tree works as well as the installed one;
# - with the server: the systemd unit examples/orun.service with the installed paths, in
#   $(systemdsystemunitdir) (under the prefix, so `make distcheck` can install it; systemd also reads
#   /usr/local/lib/systemd/system; override on the make command line for /usr/lib/systemd/system).
EXTRA_DIST += tools/orun.1.in
man_MANS = tools/orun.1
CLEANFILES += tools/orun.1
systemdsystemunitdir = $(prefix)/lib/systemd/system
ORUN_SUBST_PATHS = sed -e 's|[@]bindir[@]|$(bindir)|g' -e 's|[@]pkglibdir[@]|$(pkglibdir)|g' \
	-e 's|[@]systemdsystemunitdir[@]|$(systemdsystemunitdir)|g' -e 's|/usr/local/bin/orun|$(bindir)/orun|g'
tools/orun.1: $(srcdir)/tools/orun.1.in Makefile
	$(AM_V_GEN)$(MKDIR_P) tools && $(ORUN_SUBST_PATHS) $(srcdir)/tools/orun.1.in >$@.tmp && mv $@.tmp $@
install-exec-hook:
	$(MKDIR_P) '$(DESTDIR)$(pkglibdir)'
	rel=`realpath -m --relative-to='$(pkglibdir)' '$(bindir)/orun$(EXEEXT)' 2>/dev/null` || \
	  rel='$(bindir)/orun$(EXEEXT)'; \
	cd '$(DESTDIR)$(pkglibdir)' && rm -f llama-server && ln -s "$$rel" llama-server
uninstall-hook:
	rm -f '$(DESTDIR)$(pkglibdir)/llama-server'
	-rmdir '$(DESTDIR)$(pkglibdir)' 2>/dev/null
if WITH_SERVER
systemdsystemunit_DATA = tools/orun.service
CLEANFILES += tools/orun.service
tools/orun.service: $(srcdir)/examples/orun.service Makefile
	$(AM_V_GEN)$(MKDIR_P) tools && $(ORUN_SUBST_PATHS) $(srcdir)/examples/orun.service >$@.tmp && mv $@.tmp $@
endif
