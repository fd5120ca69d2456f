# runner/grammar/ — grammar-constrained sampling: GBNF compiled to a matcher over a token trie, and JSON
# schemas turned into GBNF. Part of the engine core (the engine masks with it), so built in every
# configuration.
librunner_a_SOURCES += runner/grammar/grammar.h runner/grammar/json_schema.h
librunner_a_SOURCES += runner/grammar/grammar_int.h runner/grammar/gbnf.c runner/grammar/vocab.c \
	runner/grammar/match.c runner/grammar/sample.c
librunner_a_SOURCES += runner/grammar/json_schema.c runner/grammar/json_schema_regex.c runner/grammar/json_schema_regex.h
EXTRA_DIST += runner/grammar/json_schema.md
EXTRA_DIST += runner/grammar/README.md
