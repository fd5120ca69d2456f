# modelfile/ — libmodelfile.a: Modelfile parser, parameters, names, store, create, templates (issue [modelfile]).
noinst_LIBRARIES += libmodelfile.a
libmodelfile_a_SOURCES =
libmodelfile_a_SOURCES += modelfile/json.c modelfile/json.h
libmodelfile_a_SOURCES += modelfile/error.c modelfile/error.h modelfile/buf.c modelfile/buf.h \
	modelfile/unicode.c modelfile/unicode.h modelfile/parser.c modelfile/parser.h \
	modelfile/gofmt.c modelfile/gofmt.h modelfile/params.c modelfile/params.h \
	modelfile/name.c modelfile/name.h modelfile/jsonutil.c modelfile/jsonutil.h \
	modelfile/store.c modelfile/store.h modelfile/model.c modelfile/model.h \
	modelfile/request.c modelfile/request.h
EXTRA_DIST += modelfile/unicode-gen.c
