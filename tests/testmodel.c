/* tests/testmodel.c — reads tests/models.tsv and finds the cached model files; no downloading here (that is
 * tools/install-deps' job), so a test never reaches the network. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/testmodel.h"

#define TM_MAX_MODELS 16

static char tm_ids[TM_MAX_MODELS][32];
static char tm_files[TM_MAX_MODELS][256];
static long long tm_sizes[TM_MAX_MODELS];
static const char *tm_id_list[TM_MAX_MODELS + 1];
static int tm_loaded;

static void tm_load(void)
{
	if (tm_loaded)
		return;
	tm_loaded = 1;
	FILE *f = fopen(tm_srcpath("tests/models.tsv"), "r");
	if (!f)
		return;
	char line[4096];
	int n = 0;
	while (n < TM_MAX_MODELS && fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		char *save = NULL;
		char *id = strtok_r(line, "\t", &save);
		char *file = strtok_r(NULL, "\t", &save);
		(void)strtok_r(NULL, "\t", &save); /* sha256 */
		char *bytes = strtok_r(NULL, "\t", &save);
		if (!id || !file || !bytes)
			continue;
		snprintf(tm_ids[n], sizeof tm_ids[n], "%s", id);
		snprintf(tm_files[n], sizeof tm_files[n], "%s", file);
		tm_sizes[n] = atoll(bytes);
		tm_id_list[n] = tm_ids[n];
		n++;
	}
	tm_id_list[n] = NULL;
	fclose(f);
}

static const char *cache_dir(void)
{
	static char buf[1024];
	const char *c = getenv("ORUN_CACHE");
	if (c && *c)
		snprintf(buf, sizeof buf, "%s/models", c);
	else
		snprintf(buf, sizeof buf, "%s/.cache/orun/models", getenv("HOME") ? getenv("HOME") : "/tmp");
	return buf;
}

const char *tm_model_path(const char *id)
{
	static char path[1400];
	tm_load();
	for (int i = 0; tm_id_list[i]; i++) {
		if (strcmp(tm_ids[i], id) != 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", cache_dir(), tm_files[i]);
		struct stat st;
		if (stat(path, &st) != 0 || (long long)st.st_size != tm_sizes[i])
			return NULL;
		return path;
	}
	return NULL;
}

const char *tm_require_model(const char *id)
{
	const char *p = tm_model_path(id);
	if (!p) {
		fprintf(stderr, "SKIP: test model '%s' is not in %s (run tools/install-deps to fetch it)\n", id,
			cache_dir());
		exit(77);
	}
	return p;
}

const char *const *tm_model_ids(void)
{
	tm_load();
	return tm_id_list;
}

const char *tm_srcpath(const char *rel)
{
	static char buf[2048];
	const char *s = getenv("ORUN_SRCDIR");
	snprintf(buf, sizeof buf, "%s/%s", s && *s ? s : ORUN_SRCDIR, rel);
	return buf;
}
