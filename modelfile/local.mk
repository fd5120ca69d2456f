# modelfile/ — libmodelfile.a: Modelfile parser, parameters, names, store, create, templates (issue [modelfile]).
noinst_LIBRARIES += libmodelfile.a
libmodelfile_a_SOURCES =
libmodelfile_a_SOURCES += modelfile/json.c modelfile/json.h
