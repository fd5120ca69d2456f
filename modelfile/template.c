/* modelfile/template.c — the Go text/template engine (modelfile/template.h) compiled as one translation unit.
 *
 * The engine is written as one file per concern (template_util.c, _parse.c, _value.c, _exec.c, _ollama.c,
 * _named.c) sharing template_internal.h, whose declarations are all static: compiled here together, they
 * keep their shared internals inside this one object, and only the mf_tpl_ API is global in libmodelfile.a.
 * Those files are never compiled on their own. The generated corpus comes first: template_named.c reads it.
 */
#include "config.h"

#include "modelfile/template_corpus.c" /* from modelfile/templates/ by embed.sh, in the build directory */
#include "modelfile/template_util.c"
#include "modelfile/template_parse.c"
#include "modelfile/template_value.c"
#include "modelfile/template_exec.c"
#include "modelfile/template_ollama.c"
#include "modelfile/template_named.c"
