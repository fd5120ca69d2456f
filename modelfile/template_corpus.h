/* modelfile/template_corpus.h — the embedded template corpus (generated from modelfile/templates/ by
 * embed.sh at build time; see modelfile/templates/README.md). Internal to template_named.c.
 *
 * The generated modelfile/template_corpus.c defines, all static: tpl_corpus_index[] (index.json, of
 * tpl_corpus_index_len bytes) and tpl_corpus_files[] (tpl_corpus_nfiles entries). modelfile/template.c
 * includes it ahead of template_named.c, which reads them (a static array of unknown size cannot be declared
 * here portably).
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

#endif
