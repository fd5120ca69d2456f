# modelfile/ — libmodelfile.a: Modelfile parser, parameters, names, store, create, templates (issue [modelfile]).
noinst_LIBRARIES += libmodelfile.a
libmodelfile_a_SOURCES =
libmodelfile_a_SOURCES += modelfile/error.c modelfile/error.h modelfile/parser.c modelfile/parser.h \
	modelfile/params.c modelfile/params.h modelfile/name.c modelfile/name.h \
	modelfile/store.c modelfile/store.h modelfile/model.c modelfile/model.h \
	modelfile/request.c modelfile/request.h modelfile/create.c modelfile/create.h
# Go text/template engine with Ollama's data model, and the bundled template corpus (issue 7, item 6).
# template.c includes the template_*.c files and the generated corpus: one translation unit, so that the
# engine's internals (template_internal.h, all static) stay out of the library's global symbols.
libmodelfile_a_SOURCES += modelfile/template.h modelfile/template.c modelfile/template_internal.h \
	modelfile/template_corpus.h
TEMPLATE_PARTS = modelfile/template_util.c modelfile/template_parse.c modelfile/template_value.c \
	modelfile/template_exec.c modelfile/template_ollama.c modelfile/template_named.c
EXTRA_DIST += $(TEMPLATE_PARTS)
TEMPLATE_CORPUS_NAMES = alfred alpaca chatml chatqa codellama-70b-instruct command-r falcon-instruct \
	gemma-instruct gemma3-instruct granite-instruct llama2-chat llama3-instruct magicoder mistral-instruct \
	openchat phi-3 solar-instruct starcoder2-instruct vicuna zephyr
TEMPLATE_CORPUS_FILES = modelfile/templates/index.json \
	$(TEMPLATE_CORPUS_NAMES:%=modelfile/templates/%.gotmpl) $(TEMPLATE_CORPUS_NAMES:%=modelfile/templates/%.json)
CLEANFILES += modelfile/template_corpus.c
modelfile/libmodelfile_a-template.$(OBJEXT): modelfile/template_corpus.c
EXTRA_DIST += modelfile/templates/embed.sh modelfile/templates/README.md $(TEMPLATE_CORPUS_FILES)
# libFuzzer coverage of the whole library for the modelfile fuzz targets (only with --enable-fuzzing).
libmodelfile_a_CFLAGS = $(AM_CFLAGS)
if ENABLE_FUZZING
libmodelfile_a_CFLAGS += -fsanitize=fuzzer-no-link
endif
modelfile/template_corpus.c: $(TEMPLATE_CORPUS_FILES:%=$(srcdir)/%) $(srcdir)/modelfile/templates/embed.sh
	$(AM_V_GEN)$(MKDIR_P) modelfile && \
	$(SHELL) $(srcdir)/modelfile/templates/embed.sh $(srcdir)/modelfile/templates $(TEMPLATE_CORPUS_NAMES) > $@-t && \
	mv $@-t $@
# Jinja chat templates as Hugging Face transformers renders them (issue 14). jinja.c includes the engine's
# files: one translation unit, so that its internals (internal.h, all static) stay out of the global symbols.
libmodelfile_a_SOURCES += modelfile/jinja/jinja.h modelfile/jinja/jinja.c modelfile/jinja/internal.h
JINJA_PARTS = modelfile/jinja/util.c modelfile/jinja/lex.c modelfile/jinja/parse.c modelfile/jinja/value.c \
	modelfile/jinja/eval.c modelfile/jinja/builtins.c modelfile/jinja/api.c
EXTRA_DIST += $(JINJA_PARTS)
EXTRA_DIST += modelfile/jinja/README.md
