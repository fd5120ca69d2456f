/* tests/fuzz/replay.c — runs a fuzz target's LLVMFuzzerTestOneInput on every file of its corpus, so that
 * `make check` replays the corpora in every build without libFuzzer. The corpus folder is FUZZ_CORPUS
 * (relative to the source tree) or the first argument; an empty or missing corpus is a failure.
 */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : tm_srcpath(FUZZ_CORPUS);
	char *d = strdup(dir);
	DIR *dp = opendir(d);
	if (!dp) {
		fprintf(stderr, "replay: cannot open corpus %s\n", d);
		return 1;
	}
	struct dirent *de;
	int n = 0;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", d, de->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		long sz = ftell(f);
		fseek(f, 0, SEEK_SET);
		/* an exact-size heap copy, so ASan sees any read past the input */
		uint8_t *buf = malloc(sz > 0 ? (size_t)sz : 1);
		if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
			fprintf(stderr, "replay: cannot read %s\n", path);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)sz);
		free(buf);
		n++;
	}
	closedir(dp);
	fprintf(stderr, "replay: %d inputs from %s ran clean\n", n, d);
	free(d);
	return n > 0 ? 0 : 1;
}
