/* modelfile/jinja/jinja.c — the Jinja engine (modelfile/jinja/jinja.h) compiled as one translation unit.
 *
 * The engine is one file per concern (util.c, lex.c, parse.c, value.c, eval.c, builtins.c, api.c) sharing
 * internal.h, whose declarations are all static: compiled here together they keep their internals inside
 * this one object, and only the mf_jinja_ API is global in libmodelfile.a. Those files are never compiled
 * on their own.
 */
#include "config.h"

#include "modelfile/jinja/util.c"
#include "modelfile/jinja/lex.c"
#include "modelfile/jinja/parse.c"
#include "modelfile/jinja/value.c"
#include "modelfile/jinja/eval.c"
#include "modelfile/jinja/builtins.c"
#include "modelfile/jinja/api.c"
