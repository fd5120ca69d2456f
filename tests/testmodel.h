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

/* TM_SANITIZED: 1 in an ASan build (tools/test-all's second pass, build/san). There the real-model runs that
 * only repeat the plain build's numerical comparisons are cut down: the sanitizers look for memory and UB
 * errors, which the same code paths on fewer tokens show as well, and the full runs cost minutes each. */
#if defined(__SANITIZE_ADDRESS__)
#define TM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TM_SANITIZED 1
#endif
#endif
#ifndef TM_SANITIZED
#define TM_SANITIZED 0
#endif

#endif
