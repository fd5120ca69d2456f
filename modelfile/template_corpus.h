/* modelfile/template_corpus.h — the embedded template corpus (generated from modelfile/templates/ by
 * embed.sh at build time; see modelfile/templates/README.md). Internal to template_named.c.
 */
#ifndef ORUN_MODELFILE_TEMPLATE_CORPUS_H
#define ORUN_MODELFILE_TEMPLATE_CORPUS_H

#include <stddef.h>

struct tpl_corpus_file {
	const char *name;   /* e.g. "chatml" */
	const char *gotmpl; /* the .gotmpl bytes as stored */
	size_t gotmpl_len;
	const char *params; /* the .json parameters file, or NULL */
	size_t params_len;
};

extern const char tpl_corpus_index[]; /* index.json */
extern const size_t tpl_corpus_index_len;
extern const struct tpl_corpus_file tpl_corpus_files[];
extern const size_t tpl_corpus_nfiles;

#endif
