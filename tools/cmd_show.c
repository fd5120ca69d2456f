/* tools/cmd_show.c — `orun show MODEL [--license|--modelfile|--parameters|--system|--template] [-v]`:
 * POST /api/show and print one field, or the Model / Capabilities / Parameters / System / License tables
 * as `ollama show` draws them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gofmt.h"
#include "base/json.h"
#include "modelfile/model.h"
#include "tools/clifmt.h"
#include "tools/client.h"
#include "tools/commands.h"

static void usage(FILE *f)
{
	fprintf(f, "Show information for a model\n\n"
		   "Usage:\n  orun show MODEL [flags]\n\n"
		   "Flags:\n"
		   "  -h, --help         help for show\n"
		   "      --license      Show license of a model\n"
		   "      --modelfile    Show Modelfile of a model\n"
		   "      --parameters   Show parameters of a model\n"
		   "      --system       Show system message of a model\n"
		   "      --template     Show template of a model\n"
		   "  -v, --verbose      Show detailed model information\n\n"
		   "Environment Variables:\n"
		   "      OLLAMA_HOST                IP Address for the ollama server (default 127.0.0.1:11434)\n");
}

static const char *str_field(const struct ob_json *obj, const char *key, char *buf, size_t cap)
{
	const struct ob_json *v = obj ? ob_json_get(obj, key) : NULL;
	if (!v || v->type != OB_JSON_STRING) {
		buf[0] = 0;
		return buf;
	}
	snprintf(buf, cap, "%.*s", (int)v->len, v->str);
	return buf;
}

/* A table with a header line and a blank line after it (tableRender). */
static void render(FILE *out, const char *header, struct table *t)
{
	fprintf(out, "  %s\n", header);
	table_render(t, out);
	fputc('\n', out);
	table_free(t);
}

static void add2(struct table *t, const char *a, const char *b)
{
	const char *row[3] = {"", a, b};
	table_add(t, row);
}

/* The first n non-blank lines of s, trimmed, then "..." when there were more. */
static void head_rows(struct table *t, const char *s, int n)
{
	char *copy = strdup(s);
	int count = 0;
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		while (*line == ' ' || *line == '\t' || *line == '\r')
			line++;
		size_t l = strlen(line);
		while (l && (line[l - 1] == ' ' || line[l - 1] == '\t' || line[l - 1] == '\r'))
			line[--l] = 0;
		if (!l)
			continue;
		count++;
		if (count <= n) {
			const char *row[2] = {"", line};
			table_add(t, row);
		}
	}
	if (count > n) {
		const char *row[2] = {"", "..."};
		table_add(t, row);
	}
	free(copy);
}

/* Go's %v of one decoded JSON value. */
static void go_v(const struct ob_json *v, char *out, size_t cap)
{
	if (v->type == OB_JSON_STRING)
		snprintf(out, cap, "%.*s", (int)v->len, v->str);
	else if (v->type == OB_JSON_NUMBER)
		ob_go_format_float(out, v->number);
	else if (v->type == OB_JSON_BOOL)
		snprintf(out, cap, "%s", v->boolean ? "true" : "false");
	else if (v->type == OB_JSON_NULL)
		snprintf(out, cap, "<nil>");
	else
		snprintf(out, cap, "%s", v->type == OB_JSON_ARRAY ? "[...]" : "map[...]");
}

/* The Metadata column for an array: as many items as fit in 10 columns, then " ...+N more]". */
static void format_array(const struct ob_json *a, char *out, size_t cap)
{
	size_t shown = 0, total = 1, i = 0;
	OB_JSON_FOREACH(e, a)
	{
		char item[64];
		go_v(e, item, sizeof item);
		size_t w = display_width(item) + (i > 0 ? 2 : 0);
		if (total + w > 10 && i > 0)
			break;
		total += w;
		shown++;
		i++;
	}
	size_t len = (size_t)snprintf(out, cap, "[");
	i = 0;
	OB_JSON_FOREACH(e, a)
	{
		if (i == shown || len >= cap)
			break;
		char item[64];
		go_v(e, item, sizeof item);
		len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? " " : "", item);
		i++;
	}
	if (len < cap) {
		if (shown < a->count)
			snprintf(out + len, cap - len, " ...+%zu more]", (size_t)a->count - shown);
		else
			snprintf(out + len, cap - len, "]");
	}
}

void cmd_show_info(const struct ob_json *r, bool verbose, FILE *out)
{
	char arch[256], buf[4096];
	const struct ob_json *details = ob_json_get(r, "details"), *info = ob_json_get(r, "model_info");
	struct table t;
	table_init(&t, 3, NULL);
	str_field(r, "remote_host", buf, sizeof buf);
	if (buf[0]) {
		char model[1024];
		add2(&t, "Remote model", str_field(r, "remote_model", model, sizeof model));
		add2(&t, "Remote URL", buf);
	}
	if (info && info->type == OB_JSON_OBJECT) {
		str_field(info, "general.architecture", arch, sizeof arch);
		if (arch[0])
			add2(&t, "architecture", arch);
		char param[64];
		str_field(details, "parameter_size", param, sizeof param);
		if (!param[0]) {
			const struct ob_json *pc = ob_json_get(info, "general.parameter_count");
			if (pc && pc->type == OB_JSON_NUMBER)
				mf_human_number((uint64_t)pc->number, param);
		}
		if (param[0])
			add2(&t, "parameters", param);
		static const char *const suffix[2][2] = {{"context_length", "context length"},
							 {"embedding_length", "embedding length"}};
		for (int i = 0; i < 2; i++) {
			char key[300];
			snprintf(key, sizeof key, "%s.%s", arch, suffix[i][0]);
			const struct ob_json *v = ob_json_get(info, key);
			if (v && v->type == OB_JSON_NUMBER) {
				char num[64];
				snprintf(num, sizeof num, "%.0f", v->number);
				add2(&t, suffix[i][1], num);
			}
		}
	} else {
		add2(&t, "architecture", str_field(details, "family", arch, sizeof arch));
		add2(&t, "parameters", str_field(details, "parameter_size", buf, sizeof buf));
	}
	add2(&t, "quantization", str_field(details, "quantization_level", buf, sizeof buf));
	str_field(r, "requires", buf, sizeof buf);
	if (buf[0])
		add2(&t, "requires", buf);
	render(out, "Model", &t);

	const struct ob_json *caps = ob_json_get(r, "capabilities");
	if (caps && caps->type == OB_JSON_ARRAY && caps->count) {
		table_init(&t, 2, NULL);
		OB_JSON_FOREACH(cap, caps)
		if (cap->type == OB_JSON_STRING) {
			const char *row[2] = {"", cap->str};
			table_add(&t, row);
		}
		render(out, "Capabilities", &t);
	}

	const struct ob_json *params = ob_json_get(r, "parameters");
	if (params && params->type == OB_JSON_STRING && params->len) {
		/* each line split into fields on whitespace, as strings.Fields */
		size_t maxf = 1;
		char *copy = strndup(params->str, params->len), *save = NULL;
		for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			size_t f = 1;
			for (char *q = line; *q;) {
				while (*q && strchr(" \t\r\v\f", *q))
					q++;
				if (!*q)
					break;
				f++;
				while (*q && !strchr(" \t\r\v\f", *q))
					q++;
			}
			if (f > maxf)
				maxf = f;
		}
		free(copy);
		table_init(&t, maxf, NULL);
		copy = strndup(params->str, params->len);
		save = NULL;
		for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const char **row = calloc(maxf, sizeof *row);
			size_t f = 0;
			row[f++] = "";
			char *s2 = NULL;
			for (char *tok = strtok_r(line, " \t\r\v\f", &s2); tok && f < maxf; tok = strtok_r(NULL, " \t\r\v\f", &s2))
				row[f++] = tok;
			if (f > 1)
				table_add(&t, row);
			free(row);
		}
		free(copy);
		render(out, "Parameters", &t);
	}

	if (verbose && info && info->type == OB_JSON_OBJECT) {
		table_init(&t, 3, NULL);
		struct ob_jw jw;
		ob_jw_init(&jw, 0, 0);
		ob_jw_value(&jw, info, true); /* sorted keys */
		struct ob_json_error je;
		struct ob_json_doc *sorted = ob_jw_str(&jw) ? ob_json_parse(ob_jw_str(&jw), strlen(ob_jw_str(&jw)), &je) : NULL;
		if (sorted)
			OB_JSON_FOREACH_MEMBER(k, v, ob_json_root(sorted))
			{
				char val[4096];
				if (v->type == OB_JSON_BOOL)
					snprintf(val, sizeof val, "%s", v->boolean ? "true" : "false");
				else if (v->type == OB_JSON_STRING)
					snprintf(val, sizeof val, "%.*s", (int)v->len, v->str);
				else if (v->type == OB_JSON_NUMBER)
					snprintf(val, sizeof val, "%g", v->number);
				else if (v->type == OB_JSON_ARRAY)
					format_array(v, val, sizeof val);
				else
					snprintf(val, sizeof val, "%s", ob_json_type_name(v));
				add2(&t, k->str, val);
			}
		ob_json_free(sorted);
		ob_jw_free(&jw);
		render(out, "Metadata", &t);
	}

	const struct ob_json *tensors = ob_json_get(r, "tensors");
	if (verbose && tensors && tensors->type == OB_JSON_ARRAY && tensors->count) {
		table_init(&t, 4, NULL);
		OB_JSON_FOREACH(tn, tensors)
		{
			char name[256], type[64], shape[256] = "[";
			str_field(tn, "name", name, sizeof name);
			str_field(tn, "type", type, sizeof type);
			const struct ob_json *sh = ob_json_get(tn, "shape");
			if (sh && sh->type == OB_JSON_ARRAY)
				OB_JSON_FOREACH(d, sh)
				{
					size_t l = strlen(shape);
					snprintf(shape + l, sizeof shape - l, "%s%.0f", l > 1 ? " " : "", d->number);
				}
			strncat(shape, "]", sizeof shape - strlen(shape) - 1);
			const char *row[4] = {"", name, type, shape};
			table_add(&t, row);
		}
		render(out, "Tensors", &t);
	}

	const struct ob_json *sys = ob_json_get(r, "system");
	if (sys && sys->type == OB_JSON_STRING && sys->len) {
		table_init(&t, 2, NULL);
		t.wrap = 100;
		head_rows(&t, sys->str, 2);
		render(out, "System", &t);
	}
	const struct ob_json *lic = ob_json_get(r, "license");
	if (lic && lic->type == OB_JSON_STRING && lic->len) {
		table_init(&t, 2, NULL);
		t.wrap = 100;
		head_rows(&t, lic->str, 2);
		render(out, "License", &t);
	}
}

int cmd_show(int argc, char **argv)
{
	struct cli_flag flags[] = {{"license", 0, false, NULL},    {"modelfile", 0, false, NULL}, {"parameters", 0, false, NULL},
				   {"system", 0, false, NULL},     {"template", 0, false, NULL},  {"verbose", 'v', false, NULL}};
	const char *pos[1];
	size_t n_pos;
	int rc;
	if (!cli_parse(argc, argv, flags, 6, pos, 1, &n_pos, usage, &rc))
		return rc;
	if ((rc = cli_exact_args(n_pos, 1)) != 0)
		return rc;
	int set = 0;
	const char *which = NULL;
	for (int i = 0; i < 5; i++)
		if (flags[i].value && strcmp(flags[i].value, "false") != 0) {
			set++;
			which = flags[i].name;
		}
	bool verbose = flags[5].value && strcmp(flags[5].value, "false") != 0;
	struct client c;
	if (client_connect(&c) != 0)
		return cli_error("%s", c.err);
	if (set > 1) {
		client_cleanup(&c);
		return cli_error("only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified");
	}
	/* ShowRequest{Name: args[0], Verbose: verbose} as json.Marshal writes it */
	struct ob_jw w;
	ob_jw_init(&w, 0, 0);
	client_show_request(&w, "", pos[0], verbose);
	struct ob_json_doc *d;
	rc = client_do_json(&c, "POST", "/api/show", ob_jw_str(&w), w.len, &d);
	ob_jw_free(&w);
	if (rc != 0) {
		rc = cli_error("%s", c.err);
		client_cleanup(&c);
		return rc;
	}
	client_cleanup(&c);
	const struct ob_json *r = ob_json_root(d);
	const struct ob_json *caps = ob_json_get(r, "capabilities");
	if (caps && caps->type == OB_JSON_ARRAY)
		OB_JSON_FOREACH(cap, caps)
	if (ob_json_str_eq(cap, "image")) {
		ob_json_free(d);
		return cli_error("image generation models are not currently supported");
	}
	if (set == 1) {
		const struct ob_json *v = ob_json_get(r, which);
		const char *s = v && v->type == OB_JSON_STRING ? v->str : "";
		size_t n = v && v->type == OB_JSON_STRING ? v->len : 0;
		fwrite(s, 1, n, stdout);
		/* fmt.Println for license, modelfile and parameters; fmt.Print for system and template */
		if (strcmp(which, "system") != 0 && strcmp(which, "template") != 0)
			fputc('\n', stdout);
	} else {
		cmd_show_info(r, verbose, stdout);
	}
	ob_json_free(d);
	return 0;
}
