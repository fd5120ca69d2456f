/* tests/fuzz/fuzz_modelfile.c — libFuzzer target for the Modelfile parser and what consumes its output:
 * parse (data, size); when accepted, print the Modelfile (Ollama's Command.String), parse the printed form
 * again, quote every value, convert every PARAMETER as the CLI does, and parse every FROM argument as a
 * model name. A second pass feeds the bytes to the create-request decoder as a JSON body (without the
 * legacy Modelfile form, which would read server-side files). Built as a real fuzzer with --enable-fuzzing,
 * and linked with tests/fuzz/replay.c for `make check`.
 */
#include "config.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modelfile/create.h"
#include "modelfile/name.h"
#include "modelfile/params.h"
#include "modelfile/parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static bool is_keyword(const char *name)
{
	static const char *const kw[] = {"license", "template", "system", "adapter", "draft",
					 "renderer", "parser", "message", "requires", NULL};
	for (int i = 0; kw[i]; i++)
		if (strcmp(name, kw[i]) == 0)
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mf_modelfile *mf = NULL;
	struct mf_error err;
	if (mf_parse(data, size, &mf, &err) == MF_OK) {
		struct mf_params params = {0};
		struct mf_warnings w = {0};
		for (size_t i = 0; i < mf->n_cmds; i++) {
			const struct mf_command *c = &mf->cmds[i];
			char *q = mf_quote(c->args);
			if (q)
				sink += strlen(q);
			free(q);
			char *line = mf_command_string(c);
			if (line)
				sink += strlen(line);
			free(line);
			if (strcmp(c->name, "model") == 0) {
				struct mf_name n;
				mf_name_parse(c->args, &n);
				char buf[MF_NAME_STRING_MAX];
				sink += mf_name_is_valid(&n) + strlen(mf_name_display(&n, buf));
			} else if (!is_keyword(c->name)) {
				if (mf_params_set(&params, c->name, c->args, &w, &err) == MF_OK)
					sink += params.n;
			}
		}
		struct ob_jw jw;
		ob_jw_init(&jw, 0, 0);
		if (mf_params_write_json(&params, &jw, &err) == MF_OK)
			sink += jw.len;
		ob_jw_free(&jw);
		mf_params_free(&params);
		mf_warnings_free(&w);
		/* the printed form parses again (it may differ for inputs Ollama cannot round-trip either) */
		char *printed = mf_modelfile_string(mf);
		if (printed) {
			struct mf_modelfile *again = NULL;
			if (mf_parse(printed, strlen(printed), &again, &err) == MF_OK)
				sink += again->n_cmds;
			mf_modelfile_free(again);
			free(printed);
		}
		mf_modelfile_free(mf);
	}
	/* the same bytes as a create request body, unless it asks for the legacy form */
	if (!memmem(data, size, "odelfile", 8) && !memmem(data, size, "path", 4) && !memmem(data, size, "\\u", 2)) {
		struct mf_create_request *r = NULL;
		struct mf_warnings w = {0};
		if (mf_create_request_parse((const char *)data, size, &r, &w, &err) == MF_OK)
			sink += mf_create_request_stream(r) + strlen(mf_create_request_model(r) ? mf_create_request_model(r) : "");
		mf_create_request_free(r);
		mf_warnings_free(&w);
	}
	return 0;
}
