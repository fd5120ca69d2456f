/* modelfile/name.h — model names as Ollama's types/model package defines them.
 *
 * Full form [scheme://]host/namespace/model:tag. Defaults: host registry.ollama.ai, namespace library, tag
 * latest, scheme https. Parts "promised" by a separator but empty become "!MISSING!" (invalid). Validity:
 * each part starts with an ASCII letter, digit or '_', then letters, digits, '_', '-', plus '.' (not in the
 * namespace) and ':' (host only); host 1–350 bytes, the others 1–80.
 */
#ifndef ORUN_MODELFILE_NAME_H
#define ORUN_MODELFILE_NAME_H

#include <stdbool.h>
#include <stddef.h>

#define MF_NAME_HOST_MAX 350
#define MF_NAME_PART_MAX 80
#define MF_NAME_DEFAULT_HOST "registry.ollama.ai"
#define MF_NAME_DEFAULT_NAMESPACE "library"
#define MF_NAME_DEFAULT_TAG "latest"
#define MF_NAME_MISSING "!MISSING!"
/* Room for any string an mf_name prints (String, DisplayShortest, Filepath) plus the NUL. */
#define MF_NAME_STRING_MAX (MF_NAME_HOST_MAX + 3 * MF_NAME_PART_MAX + 8)

struct mf_name {
	char scheme[32];
	char host[MF_NAME_HOST_MAX + 1];
	char ns[MF_NAME_PART_MAX + 1];
	char model[MF_NAME_PART_MAX + 1];
	char tag[MF_NAME_PART_MAX + 1];
	bool overlong; /* a part was longer than its limit (kept truncated): the name is invalid */
	bool nul;      /* the input held a NUL byte (parsed up to it): the name is invalid, as in Go */
};

/* ParseName: parses s and fills the defaults. The result may be invalid: check mf_name_is_valid. */
void mf_name_parse(const char *s, struct mf_name *n);

/* ParseName of s[0..len), which may hold NUL bytes (a JSON string can): a NUL makes the name invalid,
 * where a C string would silently end at it ("a\u0000b" must not name "a"). Every name that comes from a
 * request goes through this. */
void mf_name_parse_n(const char *s, size_t len, struct mf_name *n);

/* ParseNameBare: parses s without defaults. */
void mf_name_parse_bare(const char *s, struct mf_name *n);

/* ParseNameFromFilepath: "host/namespace/model/tag" (as under manifests/); false unless fully qualified. */
bool mf_name_from_filepath(const char *rel, struct mf_name *n);

/* IsValid / IsFullyQualified: every part present and valid. */
bool mf_name_is_valid(const struct mf_name *n);

/* Name.String(): "host/namespace/model:tag" with empty parts left out. buf of MF_NAME_STRING_MAX bytes. */
char *mf_name_string(const struct mf_name *n, char *buf);

/* DisplayShortest(): leaves out the default host, and the default namespace when the host is the default
 * (both compared case-insensitively); the tag is always shown. buf of MF_NAME_STRING_MAX bytes. */
char *mf_name_display(const struct mf_name *n, char *buf);

/* Filepath(): "host/namespace/model/tag"; the name must be valid (else buf is set to ""). */
char *mf_name_filepath(const struct mf_name *n, char *buf);

/* EqualFold: the four parts equal ignoring ASCII case. */
bool mf_name_equal_fold(const struct mf_name *a, const struct mf_name *b);

/* Go's %q of a name as a request gave it (s[0..n), NULs and all), for error texts such as
 * `name "a\x00b" is invalid`; at most MF_NAME_QUOTE_MAX - 1 bytes, cut short past that. */
#define MF_NAME_QUOTE_MAX 1024
char *mf_name_quote(const char *s, size_t n, char out[MF_NAME_QUOTE_MAX]);

/* IsValidNamespace. */
bool mf_name_valid_namespace(const char *s);

#endif
