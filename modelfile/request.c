/* modelfile/request.c — Modelfile → /api/create request, the client side of `ollama create`.
 *
 * Paths are expanded and cleaned as Go's filepath.Abs/Join do, folders are scanned with the same glob
 * groups and content checks as parser.filesForModel, and the body is written field by field in the order
 * of api.CreateRequest so that a server sees the same bytes the Go CLI would send.
 */
#include "config.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/jsonutil.h"
#include "modelfile/model.h"
#include "modelfile/request.h"

/* ---------------------------------------------------------------------------------------------------- */
/* Paths */

/* filepath.Clean of an absolute path (lexical: "//", ".", ".." resolved). In place. */
static void clean_abs(char *p)
{
	char *out = p, *s = p;
	size_t n = 0; /* length of out */
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		char *e = strchr(s, '/');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		if (len == 1 && s[0] == '.') {
			/* skip */
		} else if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--; /* drop the slash */
		} else {
			out[n++] = '/';
			memmove(out + n, s, len);
			n += len;
		}
		s += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = 0;
}

static char *join_abs(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (!p)
		return NULL;
	snprintf(p, n, "%s/%s", a, b);
	clean_abs(p);
	return p;
}

/* filepath.Abs: joins with the working directory when relative, then cleans. */
static char *abs_path(const char *p)
{
	if (p[0] == '/') {
		char *c = strdup(p);
		if (c)
			clean_abs(c);
		return c;
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return NULL;
	return join_abs(cwd, p);
}

char *mf_expand_path(const char *path, const char *relative_dir, struct mf_error *err)
{
	if (path[0] == '/' || path[0] == '\\')
		return abs_path(path);
	if (path[0] == '~') {
		const char *home = NULL, *rest = "";
		char user[256];
		if (path[1] == 0 || path[1] == '/') {
			home = getenv("HOME");
			struct passwd *pw = (!home || !*home) ? getpwuid(getuid()) : NULL;
			if (pw)
				home = pw->pw_dir;
			if (!home) {
				mf_error_set(err, MF_ERR_NOT_FOUND, "failed to get current user: unknown home directory");
				return NULL;
			}
			rest = path + 1;
		} else {
			const char *slash = strchr(path + 1, '/');
			size_t ul = slash ? (size_t)(slash - path - 1) : strlen(path + 1);
			if (ul >= sizeof user) {
				mf_error_set(err, MF_ERR_NOT_FOUND, "failed to find user '%.*s': user: unknown user", (int)ul,
					     path + 1);
				return NULL;
			}
			memcpy(user, path + 1, ul);
			user[ul] = 0;
			struct passwd *pw = getpwnam(user);
			if (!pw) {
				mf_error_set(err, MF_ERR_NOT_FOUND, "failed to find user '%s': user: unknown user %s", user, user);
				return NULL;
			}
			home = pw->pw_dir;
			rest = slash ? slash : "";
		}
		char *j = malloc(strlen(home) + strlen(rest) + 2);
		if (!j) {
			mf_error_set(err, MF_ERR_NOMEM, "out of memory");
			return NULL;
		}
		sprintf(j, "%s/%s", home, rest);
		char *a = abs_path(j);
		free(j);
		if (!a)
			mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		return a;
	}
	char *j = malloc(strlen(relative_dir) + strlen(path) + 2);
	if (!j) {
		mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		return NULL;
	}
	sprintf(j, "%s/%s", relative_dir, path);
	char *a = abs_path(j);
	free(j);
	if (!a)
		mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	return a;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Folder scanning (filesForModel) */

enum ctype { CT_TEXT, CT_ZIP, CT_BINARY, CT_ERROR };

/* A cut-down http.DetectContentType over the first 512 bytes: zip, text/plain or octet-stream. */
static enum ctype sniff(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return CT_ERROR;
	unsigned char b[512];
	size_t n = fread(b, 1, sizeof b, f);
	fclose(f);
	if (n >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
		return CT_ZIP;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = b[i];
		if (c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F))
			return CT_BINARY;
	}
	return CT_TEXT;
}

static const char *ctype_name(enum ctype t)
{
	switch (t) {
	case CT_TEXT: return "text/plain";
	case CT_ZIP: return "application/zip";
	default: return "application/octet-stream";
	}
}

struct strv {
	char **v;
	size_t n;
};

static int strv_add(struct strv *s, const char *p)
{
	if (s->n >= MF_MAX_MODEL_FILES)
		return MF_ERR_LIMIT;
	char *c = strdup(p);
	char **v = c ? realloc(s->v, (s->n + 1) * sizeof *v) : NULL;
	if (!v) {
		free(c);
		return MF_ERR_NOMEM;
	}
	v[s->n++] = c;
	s->v = v;
	return MF_OK;
}

/* Glob dir/pattern; every match must sniff as want (unless want < 0). Appends to out. Returns MF_OK, the
 * count in *found, or an error (content-type mismatch). */
static int glob_add(const char *dir, const char *pattern, int want, struct strv *out, size_t *found,
		    struct mf_error *err)
{
	*found = 0;
	char pat[PATH_MAX];
	int k = snprintf(pat, sizeof pat, "%s/%s", dir, pattern);
	if (k < 0 || (size_t)k >= sizeof pat)
		return mf_error_set(err, MF_ERR_LIMIT, "path too long");
	glob_t g;
	int r = glob(pat, 0, NULL, &g);
	if (r == GLOB_NOMATCH)
		return MF_OK;
	if (r != 0)
		return mf_error_set(err, MF_ERR_IO, "glob %s failed", pat);
	int rc = MF_OK;
	for (size_t i = 0; i < g.gl_pathc && rc == MF_OK; i++) {
		if (want >= 0) {
			enum ctype t = sniff(g.gl_pathv[i]);
			if (t == CT_ERROR) {
				rc = mf_error_set(err, MF_ERR_IO, "open %s: %s", g.gl_pathv[i], strerror(errno));
				break;
			}
			if ((int)t != want) {
				rc = mf_error_set(err, MF_ERR_INVALID, "invalid content type: expected %s for %s", ctype_name(t),
						  g.gl_pathv[i]);
				break;
			}
		}
		rc = strv_add(out, g.gl_pathv[i]);
		if (rc != MF_OK)
			mf_error_set(err, rc, rc == MF_ERR_LIMIT ? "more than %d files in the model folder" : "out of memory",
				     MF_MAX_MODEL_FILES);
		else
			(*found)++;
	}
	globfree(&g);
	return rc;
}

int mf_files_for_model(const char *dir, char ***out, size_t *n, struct mf_error *err)
{
	*out = NULL;
	*n = 0;
	struct strv v = {0};
	size_t found = 0;
	int rc = MF_OK;
	/* the weights: the first group that matches (content checks as Ollama; a failed check skips a group) */
	struct mf_error ignore;
	struct strv tmp = {0};
	if (glob_add(dir, "model*.safetensors", -1, &tmp, &found, &ignore) == MF_OK && found) {
		v = tmp;
		tmp = (struct strv){0};
		rc = glob_add(dir, "*/model*.safetensors", -1, &v, &found, err);
	} else if ((tmp.n = 0, glob_add(dir, "consolidated*.safetensors", -1, &tmp, &found, &ignore) == MF_OK && found)) {
		v = tmp;
		tmp = (struct strv){0};
	} else if ((tmp.n = 0, glob_add(dir, "pytorch_model*.bin", CT_ZIP, &tmp, &found, &ignore) == MF_OK && found)) {
		v = tmp;
		tmp = (struct strv){0};
	} else if ((tmp.n = 0, glob_add(dir, "consolidated*.pth", CT_ZIP, &tmp, &found, &ignore) == MF_OK && found)) {
		v = tmp;
		tmp = (struct strv){0};
	} else if ((tmp.n = 0, glob_add(dir, "*.gguf", CT_BINARY, &tmp, &found, &ignore) == MF_OK && found)) {
		v = tmp;
		tmp = (struct strv){0};
	} else if ((tmp.n = 0, glob_add(dir, "*.bin", CT_BINARY, &tmp, &found, &ignore) == MF_OK && found)) {
		v = tmp;
		tmp = (struct strv){0};
	} else {
		mf_strlist_free(tmp.v, tmp.n);
		return mf_error_set(err, MF_ERR_NOT_FOUND, "no Modelfile or safetensors files found");
	}
	mf_strlist_free(tmp.v, tmp.n);
	if (rc == MF_OK)
		rc = glob_add(dir, "*.json", CT_TEXT, &v, &found, err);
	if (rc == MF_OK)
		rc = glob_add(dir, "*/*.json", CT_TEXT, &v, &found, err);
	if (rc == MF_OK)
		rc = glob_add(dir, "chat_template.jinja", CT_TEXT, &v, &found, err);
	if (rc == MF_OK) {
		struct strv tk = {0};
		if (glob_add(dir, "tokenizer.model", CT_BINARY, &tk, &found, &ignore) == MF_OK && found) {
			for (size_t i = 0; i < tk.n && rc == MF_OK; i++)
				rc = strv_add(&v, tk.v[i]);
		} else {
			mf_strlist_free(tk.v, tk.n);
			tk = (struct strv){0};
			if (glob_add(dir, "*/tokenizer.model", CT_TEXT, &tk, &found, &ignore) == MF_OK)
				for (size_t i = 0; i < tk.n && rc == MF_OK; i++)
					rc = strv_add(&v, tk.v[i]);
		}
		mf_strlist_free(tk.v, tk.n);
		if (rc != MF_OK)
			mf_error_set(err, rc, "out of memory");
	}
	if (rc != MF_OK) {
		mf_strlist_free(v.v, v.n);
		return rc;
	}
	*out = v.v;
	*n = v.n;
	return MF_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Spec */

static void files_free(struct mf_req_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].path);
		free(f->v[i].name);
	}
	free(f->v);
	f->v = NULL;
	f->n = 0;
}

void mf_spec_free(struct mf_create_spec *s)
{
	if (!s)
		return;
	free(s->model);
	free(s->from);
	files_free(&s->files);
	files_free(&s->adapters);
	files_free(&s->draft_files);
	free(s->template_text);
	free(s->system);
	mf_strlist_free(s->licenses, s->n_licenses);
	free(s->renderer);
	free(s->parser);
	free(s->requires);
	mf_params_free(&s->params);
	for (size_t i = 0; i < s->n_messages; i++) {
		free(s->messages[i].role);
		free(s->messages[i].content);
	}
	free(s->messages);
	free(s->quantize);
	memset(s, 0, sizeof *s);
}

/* Adds path (already resolved) to f unless present (a later FROM of the same file replaces it). */
static int files_add(struct mf_req_files *f, const char *path, bool hash, struct mf_error *err)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->v[i].path, path) == 0)
			return MF_OK;
	if (f->n >= MF_MAX_MODEL_FILES)
		return mf_error_set(err, MF_ERR_LIMIT, "more than %d model files", MF_MAX_MODEL_FILES);
	struct mf_req_file *v = realloc(f->v, (f->n + 1) * sizeof *v);
	if (!v)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	f->v = v;
	struct mf_req_file *e = &f->v[f->n];
	memset(e, 0, sizeof *e);
	if (!(e->path = strdup(path)))
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	f->n++;
	if (hash) {
		char real[PATH_MAX];
		if (!realpath(path, real))
			return mf_error_set(err, MF_ERR_IO, "lstat %s: %s", path, strerror(errno));
		return mf_sha256_file(real, e->digest, &e->size, err);
	}
	return MF_OK;
}

/* fileDigestMap: a file, or the model files of a folder. MF_ERR_NOT_FOUND (with Go's stat text) when the
 * path does not exist. */
static int digest_map(const char *path, struct mf_req_files *f, bool hash, struct mf_error *err)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return mf_error_set(err, errno == ENOENT || errno == ENOTDIR ? MF_ERR_NOT_FOUND : MF_ERR_IO, "stat %s: %s",
				    path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return files_add(f, path, hash, err);
	char **list;
	size_t n;
	int rc = mf_files_for_model(path, &list, &n, err);
	if (rc != MF_OK)
		return rc;
	char root[PATH_MAX];
	if (!realpath(path, root))
		snprintf(root, sizeof root, "%s", path);
	for (size_t i = 0; i < n && rc == MF_OK; i++) {
		char real[PATH_MAX];
		if (!realpath(list[i], real)) {
			rc = mf_error_set(err, MF_ERR_IO, "lstat %s: %s", list[i], strerror(errno));
			break;
		}
		/* filepath.IsLocal(rel): the resolved file must stay inside the folder */
		size_t rl = strlen(root);
		if (strncmp(real, root, rl) != 0 || real[rl] != '/') {
			rc = strstr(real, ".cache")
				     ? mf_error_set(err, MF_ERR_INVALID,
						    "insecure path: %s\n\nUse --local-dir <dir> when downloading model to disable caching",
						    real)
				     : mf_error_set(err, MF_ERR_INVALID, "insecure path: %s", real);
			break;
		}
		rc = files_add(f, real, hash, err);
	}
	mf_strlist_free(list, n);
	return rc;
}

static int same_path(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	if (!realpath(a, ra) || !realpath(b, rb))
		return 0;
	return strcmp(ra, rb) == 0;
}

static bool parse_uint_nolead(const char **p)
{
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return false;
	if (*s == '0' && s[1] >= '0' && s[1] <= '9')
		return false;
	while (*s >= '0' && *s <= '9')
		s++;
	*p = s;
	return true;
}

/* dot-separated identifiers of [0-9A-Za-z-]; numeric ones without leading zeros when prerelease. */
static bool parse_idents(const char **p, bool prerelease)
{
	const char *s = *p;
	for (;;) {
		const char *start = s;
		bool digits = true;
		while ((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '-') {
			if (*s < '0' || *s > '9')
				digits = false;
			s++;
		}
		if (s == start)
			return false;
		if (prerelease && digits && *start == '0' && s - start > 1)
			return false;
		if (*s != '.')
			break;
		s++;
	}
	*p = s;
	return true;
}

bool mf_semver_valid(const char *v)
{
	if (v[0] != 'v')
		return false;
	const char *p = v + 1;
	if (!parse_uint_nolead(&p))
		return false;
	if (*p == 0)
		return true; /* vMAJOR */
	if (*p != '.')
		return false;
	p++;
	if (!parse_uint_nolead(&p))
		return false;
	if (*p == 0)
		return true; /* vMAJOR.MINOR */
	if (*p != '.')
		return false;
	p++;
	if (!parse_uint_nolead(&p))
		return false;
	if (*p == '-') {
		p++;
		if (!parse_idents(&p, true))
			return false;
	}
	if (*p == '+') {
		p++;
		if (!parse_idents(&p, false))
			return false;
	}
	return *p == 0;
}

static int set_str(char **field, const char *v, struct mf_error *err)
{
	char *c = strdup(v);
	if (!c)
		return mf_error_set(err, MF_ERR_NOMEM, "out of memory");
	free(*field);
	*field = c;
	return MF_OK;
}

int mf_spec_from_modelfile(const struct mf_modelfile *mf, const char *relative_dir, bool hash,
			   struct mf_create_spec *spec, struct mf_warnings *w, struct mf_error *err)
{
	int rc = MF_OK;
	char **model_paths = NULL, **draft_paths = NULL;
	size_t n_model = 0, n_draft = 0;
	for (size_t i = 0; i < mf->n_cmds && rc == MF_OK; i++) {
		const char *name = mf->cmds[i].name, *args = mf->cmds[i].args;
		if (strcmp(name, "model") == 0 || strcmp(name, "draft") == 0 || strcmp(name, "adapter") == 0) {
			char *path = mf_expand_path(args, relative_dir, err);
			if (!path) {
				rc = err ? err->code : MF_ERR_NOMEM;
				break;
			}
			bool is_model = name[0] == 'm', is_draft = name[0] == 'd';
			struct mf_req_files *dst = is_model ? &spec->files : is_draft ? &spec->draft_files : &spec->adapters;
			if (!is_model && !is_draft)
				files_free(&spec->adapters); /* req.Adapters = digestMap: the last ADAPTER wins */
			rc = digest_map(path, dst, hash, err);
			if (rc == MF_ERR_NOT_FOUND && is_model && err && strncmp(err->msg, "stat ", 5) == 0) {
				rc = set_str(&spec->from, args, err); /* not a local path: a model name */
				free(path);
				continue;
			}
			if (rc == MF_OK) {
				char **others = is_model ? draft_paths : model_paths;
				size_t no = is_model ? n_draft : n_model;
				for (size_t k = 0; k < no && rc == MF_OK; k++)
					if (is_model || is_draft ? same_path(path, others[k]) : 0)
						rc = mf_error_set(err, MF_ERR_INVALID,
								  "DRAFT must not reference the same local path as FROM: %s", path);
				if (rc == MF_OK && (is_model || is_draft))
					rc = mf_strlist_add(is_model ? &model_paths : &draft_paths, is_model ? &n_model : &n_draft,
							    path) == MF_OK
						     ? MF_OK
						     : mf_error_set(err, MF_ERR_NOMEM, "out of memory");
			}
			free(path);
		} else if (strcmp(name, "template") == 0) {
			rc = set_str(&spec->template_text, args, err);
		} else if (strcmp(name, "system") == 0) {
			rc = set_str(&spec->system, args, err);
		} else if (strcmp(name, "license") == 0) {
			if (mf_strlist_add(&spec->licenses, &spec->n_licenses, args) != MF_OK)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else if (strcmp(name, "renderer") == 0) {
			rc = set_str(&spec->renderer, args, err);
		} else if (strcmp(name, "parser") == 0) {
			rc = set_str(&spec->parser, args, err);
		} else if (strcmp(name, "requires") == 0) {
			size_t n = strlen(args);
			char *v = malloc(n + 2);
			if (!v) {
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
				break;
			}
			if (args[0] == 'v')
				memcpy(v, args, n + 1);
			else
				sprintf(v, "v%s", args);
			if (!mf_semver_valid(v))
				rc = mf_error_set(err, MF_ERR_INVALID, "requires must be a valid semver (e.g. 0.14.0)");
			else
				rc = set_str(&spec->requires, v + 1, err);
			free(v);
		} else if (strcmp(name, "message") == 0) {
			const char *sep = strstr(args, ": ");
			struct mf_req_message *m = realloc(spec->messages, (spec->n_messages + 1) * sizeof *m);
			if (!m) {
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
				break;
			}
			spec->messages = m;
			m = &spec->messages[spec->n_messages];
			m->role = sep ? strndup(args, (size_t)(sep - args)) : strdup(args);
			m->content = strdup(sep ? sep + 2 : "");
			spec->n_messages++;
			if (!m->role || !m->content)
				rc = mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		} else {
			rc = mf_params_set(&spec->params, name, args, w, err);
		}
	}
	mf_strlist_free(model_paths, n_model);
	mf_strlist_free(draft_paths, n_draft);
	return rc;
}

/* ---------------------------------------------------------------------------------------------------- */
/* File names and the JSON body */

static char *dir_of(const char *p)
{
	char *d = strdup(p);
	if (!d)
		return NULL;
	char *s = strrchr(d, '/');
	if (s == d)
		d[1] = 0;
	else if (s)
		*s = 0;
	return d;
}

/* Is path inside root (or equal)? Both absolute and clean. */
static bool within(const char *root, const char *path)
{
	size_t n = strlen(root);
	if (strcmp(root, "/") == 0)
		return true;
	return strncmp(root, path, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static int name_files(struct mf_req_files *f)
{
	char *root = NULL;
	if (f->n >= 2) {
		for (size_t i = 0; i < f->n; i++) {
			char *a = abs_path(f->v[i].path);
			char *d = a ? dir_of(a) : NULL;
			free(a);
			if (!d) {
				free(root);
				return MF_ERR_NOMEM;
			}
			if (!root) {
				root = d;
				continue;
			}
			while (!within(root, d)) {
				char *parent = dir_of(root);
				if (!parent || strcmp(parent, root) == 0) {
					free(parent);
					break;
				}
				free(root);
				root = parent;
			}
			free(d);
		}
	}
	for (size_t i = 0; i < f->n; i++) {
		const char *p = f->v[i].path, *base = strrchr(p, '/');
		const char *name = base ? base + 1 : p;
		char *a = root ? abs_path(p) : NULL;
		if (root && a && within(root, a) && strcmp(root, a) != 0)
			name = a + strlen(root) + (strcmp(root, "/") == 0 ? 0 : 1);
		free(f->v[i].name);
		f->v[i].name = strdup(name);
		free(a);
		if (!f->v[i].name) {
			free(root);
			return MF_ERR_NOMEM;
		}
	}
	free(root);
	return MF_OK;
}

int mf_spec_name_files(struct mf_create_spec *spec)
{
	int rc = name_files(&spec->files);
	if (rc == MF_OK)
		rc = name_files(&spec->adapters);
	if (rc == MF_OK)
		rc = name_files(&spec->draft_files);
	return rc;
}

static int cmp_file_name(const void *a, const void *b)
{
	return strcmp(((const struct mf_req_file *)a)->name, ((const struct mf_req_file *)b)->name);
}

static void write_files(struct ob_jw *w, const char *key, const struct mf_req_files *f)
{
	if (!f->n)
		return;
	struct mf_req_file *sorted = malloc(f->n * sizeof *sorted);
	if (!sorted) {
		ob_jw_key(w, key);
		ob_jw_null(w);
		return;
	}
	memcpy(sorted, f->v, f->n * sizeof *sorted);
	for (size_t i = 0; i < f->n; i++)
		if (!sorted[i].name)
			sorted[i].name = sorted[i].path;
	qsort(sorted, f->n, sizeof *sorted, cmp_file_name);
	ob_jw_key(w, key);
	ob_jw_obj(w);
	for (size_t i = 0; i < f->n; i++) {
		if (i + 1 < f->n && strcmp(sorted[i].name, sorted[i + 1].name) == 0)
			continue; /* a map keeps one entry per name */
		ob_jw_key(w, sorted[i].name);
		ob_jw_string(w, sorted[i].digest);
	}
	ob_jw_obj_end(w);
	free(sorted);
}

char *mf_spec_to_json(const struct mf_create_spec *s, size_t *len, struct mf_error *err)
{
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	ob_jw_obj(&w);
	ob_jw_key(&w, "model");
	ob_jw_string(&w, s->model ? s->model : "");
	if (s->quantize && *s->quantize) {
		ob_jw_key(&w, "quantize");
		ob_jw_string(&w, s->quantize);
	}
	if (s->from && *s->from) {
		ob_jw_key(&w, "from");
		ob_jw_string(&w, s->from);
	}
	write_files(&w, "files", &s->files);
	write_files(&w, "draft_files", &s->draft_files);
	write_files(&w, "adapters", &s->adapters);
	if (s->template_text && *s->template_text) {
		ob_jw_key(&w, "template");
		ob_jw_string(&w, s->template_text);
	}
	if (s->n_licenses) {
		ob_jw_key(&w, "license");
		ob_jw_arr(&w);
		for (size_t i = 0; i < s->n_licenses; i++)
			ob_jw_string(&w, s->licenses[i]);
		ob_jw_arr_end(&w);
	}
	if (s->system && *s->system) {
		ob_jw_key(&w, "system");
		ob_jw_string(&w, s->system);
	}
	if (s->params.n) {
		ob_jw_key(&w, "parameters");
		int rc = mf_params_write_json(&s->params, &w, err);
		if (rc != MF_OK) {
			ob_jw_free(&w);
			return NULL;
		}
	}
	if (s->n_messages) {
		ob_jw_key(&w, "messages");
		ob_jw_arr(&w);
		for (size_t i = 0; i < s->n_messages; i++) {
			ob_jw_obj(&w);
			ob_jw_key(&w, "role");
			ob_jw_string(&w, s->messages[i].role);
			ob_jw_key(&w, "content");
			ob_jw_string(&w, s->messages[i].content);
			ob_jw_obj_end(&w);
		}
		ob_jw_arr_end(&w);
	}
	if (s->renderer && *s->renderer) {
		ob_jw_key(&w, "renderer");
		ob_jw_string(&w, s->renderer);
	}
	if (s->parser && *s->parser) {
		ob_jw_key(&w, "parser");
		ob_jw_string(&w, s->parser);
	}
	if (s->requires && *s->requires) {
		ob_jw_key(&w, "requires");
		ob_jw_string(&w, s->requires);
	}
	ob_jw_key(&w, "name");
	ob_jw_string(&w, "");
	ob_jw_obj_end(&w);
	size_t n = 0;
	char *out = ob_jw_take(&w, &n);
	ob_jw_free(&w);
	if (!out) {
		mf_error_set(err, MF_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (len)
		*len = n;
	return out;
}
