/* tests/testmodel.h — where the tests find the small real models (tests/models.tsv). */
#ifndef ORUN_TESTS_TESTMODEL_H
#define ORUN_TESTS_TESTMODEL_H

/* Path of the model with this id ("qwen2", "llama") in $ORUN_CACHE/models (default ~/.cache/orun/models),
 * or NULL when it is not there. Static storage, valid until the next call. */
const char *tm_model_path(const char *id);

/* As tm_model_path, but exits 77 (skip) with a message naming the file and the install step when the model
 * is missing. */
const char *tm_require_model(const char *id);

/* Ids listed in tests/models.tsv, in order; NULL-terminated, static storage. */
const char *const *tm_model_ids(void);

/* Path of a file under the source tree (ORUN_SRCDIR), e.g. tm_srcpath("tests/data/x"). Static storage. */
const char *tm_srcpath(const char *rel);

#endif
