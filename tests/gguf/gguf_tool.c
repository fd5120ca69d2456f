/* tests/gguf/gguf_tool.c — a small driver that lets the Python integration tests reach libgguf calls that
 * have no orun command: `import DIR OUT` (gguf_import_safetensors), `dequant FILE TENSOR` (the tensor's
 * f32 values, little-endian, on stdout), `quantize IN OUT TYPE` (gguf_quantize_file) and `stlist FILE`
 * (a safetensors file's tensors). Built with `make check`; not a test by itself.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "gguf/quantize.h"
#include "gguf/safetensors.h"

static int fail(const char *what, const struct gguf_error *err)
{
	fprintf(stderr, "%s: offset %" PRIu64 ": %s (%s)\n", what, err->offset, err->msg, gguf_strerror(err->code));
	return 1;
}

int main(int argc, char **argv)
{
	struct gguf_error err = {0};
	if (argc == 4 && strcmp(argv[1], "import") == 0) {
		if (gguf_import_safetensors(argv[2], argv[3], NULL, &err))
			return fail(argv[2], &err);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "dequant") == 0) {
		struct gguf_file *f = gguf_open(argv[2], &err);
		if (!f)
			return fail(argv[2], &err);
		const struct gguf_tensor *t = gguf_find_tensor(f, argv[3]);
		if (!t) {
			fprintf(stderr, "%s: no tensor %s\n", argv[2], argv[3]);
			return 1;
		}
		float *out = malloc(t->n_elements * sizeof *out + 1);
		int e = gguf_tensor_dequantize(t, out);
		if (e) {
			fprintf(stderr, "%s: %s\n", argv[3], gguf_strerror(e));
			return 1;
		}
		fwrite(out, sizeof *out, t->n_elements, stdout);
		free(out);
		gguf_close(f);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "quantize") == 0) {
		enum gguf_qmix mix;
		if (gguf_qmix_from_name(argv[4], &mix)) {
			fprintf(stderr, "unknown mixture %s\n", argv[4]);
			return 2;
		}
		if (gguf_quantize_file(argv[2], argv[3], mix, NULL, NULL, &err))
			return fail(argv[2], &err);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "stlist") == 0) {
		struct gguf_st_file *f = gguf_st_open(argv[2], &err);
		if (!f)
			return fail(argv[2], &err);
		for (uint64_t i = 0; i < gguf_st_count(f); i++) {
			const struct gguf_st_tensor *t = gguf_st_at(f, i);
			printf("%s\t%s\t", t->name, gguf_st_dtype_name(t->dtype));
			for (uint32_t d = 0; d < t->n_dims; d++)
				printf("%s%" PRId64, d ? "," : "", t->shape[d]);
			printf("\t%" PRIu64 "\t%" PRIu64 "\n", t->offset, t->n_bytes);
		}
		gguf_st_close(f);
		return 0;
	}
	fprintf(stderr, "usage: gguf_tool import DIR OUT | dequant FILE TENSOR | quantize IN OUT q8_0|q4_K_M | stlist FILE\n");
	return 2;
}
