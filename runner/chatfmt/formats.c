/* runner/chatfmt/formats.c — which chat format a template selects, in the order and by the markers that
 * llama.cpp's common_chat_templates_apply_jinja tests them, and the table describing each format's thinking
 * tags and tool-call markers for the parser (stream.c). It does not render templates or build grammars.
 */
#include "config.h"

#include <string.h>

#include "runner/chatfmt/internal.h"

static bool has(const char *s, size_t n, const char *lit)
{
	return cf_find(s, n, lit) != NULL;
}

enum rn_chatfmt_kind rn_chatfmt_detect(const char *t, size_t n)
{
	if (!t)
		return RN_CHATFMT_GENERIC;
	if (has(t, n, "message['prefix'] is defined and message['prefix'] and thinking"))
		return RN_CHATFMT_DEEPSEEK_V3_1;
	if (has(t, n, "<｜tool▁calls▁begin｜>"))
		return RN_CHATFMT_DEEPSEEK_R1;
	if (has(t, n, "<|END_THINKING|><|START_ACTION|>"))
		return RN_CHATFMT_COMMAND_R7B;
	if (has(t, n, "elif thinking") && has(t, n, "<|tool_call|>"))
		return RN_CHATFMT_GRANITE;
	if (has(t, n, "[gMASK]<sop>") && has(t, n, "<arg_key>") && has(t, n, "<arg_value>"))
		return RN_CHATFMT_GLM_4_5;
	if (has(t, n, "<tool_call>") && has(t, n, "<function>") && has(t, n, "<function=") &&
	    has(t, n, "<parameters>") && has(t, n, "<parameter="))
		return has(t, n, "<think>") ? RN_CHATFMT_NEMOTRON_V3 : RN_CHATFMT_QWEN3_CODER_XML;
	if (has(t, n, "<tools>") && has(t, n, "# Tools") && has(t, n, "</tools>") && has(t, n, "<tool_calls>") &&
	    has(t, n, "</tool_calls>") && has(t, n, "<tool_response>"))
		return RN_CHATFMT_XIAOMI_MIMO;
	if (has(t, n, "<tool_call>"))
		return RN_CHATFMT_HERMES;
	if (has(t, n, "<|channel|>"))
		return RN_CHATFMT_GPT_OSS;
	if (has(t, n, "<seed:think>"))
		return RN_CHATFMT_SEED_OSS;
	if (has(t, n, "<SPECIAL_10>"))
		return RN_CHATFMT_NEMOTRON_V2;
	if (has(t, n, "<|system_start|>") && has(t, n, "<|tools_prefix|>"))
		return RN_CHATFMT_APERTUS;
	if (has(t, n, "List of tools: <|tool_list_start|>[") && has(t, n, "]<|tool_list_end|>"))
		return RN_CHATFMT_LFM2;
	if (has(t, n, "]~!b[") && has(t, n, "]~b]"))
		return RN_CHATFMT_MINIMAX_M2;
	if (has(t, n, "<|im_system|>tool_declare<|im_middle|>") && has(t, n, "<|tool_calls_section_begin|>") &&
	    has(t, n, "## Return of"))
		return RN_CHATFMT_KIMI_K2;
	if (has(t, n, "<thinking>") && has(t, n, "</thinking>") && has(t, n, "<available_tools>") &&
	    has(t, n, "<|assistant|>") && has(t, n, "<|tool_result|>") && has(t, n, "<tool_calls>[") &&
	    has(t, n, "]</tool_calls>"))
		return RN_CHATFMT_APRIEL_1_5;
	if (has(t, n, ">>>all"))
		return RN_CHATFMT_FUNCTIONARY_V3_2;
	if (has(t, n, " functools["))
		return RN_CHATFMT_FIREFUNCTION_V2;
	if (has(t, n, "<|start_header_id|>") && has(t, n, "<function="))
		return RN_CHATFMT_FUNCTIONARY_V3_1;
	if (has(t, n, "<|start_header_id|>ipython<|end_header_id|>"))
		return RN_CHATFMT_LLAMA3;
	if (has(t, n, "[SYSTEM_PROMPT]") && has(t, n, "[TOOL_CALLS]") && has(t, n, "[ARGS]"))
		return RN_CHATFMT_MINISTRAL_3;
	if (has(t, n, "[THINK]") && has(t, n, "[/THINK]"))
		return RN_CHATFMT_MAGISTRAL;
	if (has(t, n, "[TOOL_CALLS]"))
		return RN_CHATFMT_MISTRAL_NEMO;
	return RN_CHATFMT_GENERIC;
}

enum rn_chatfmt_kind rn_chatfmt_for_request(enum rn_chatfmt_kind kind, const char *t, size_t n,
					    const char *const *tool_names, size_t n_tools)
{
	static const char *const builtin[] = {"wolfram_alpha", "web_search", "brave_search", "python", "code_interpreter"};
	if (n_tools == 0 && (kind == RN_CHATFMT_GENERIC || kind == RN_CHATFMT_MISTRAL_NEMO))
		return RN_CHATFMT_CONTENT_ONLY;
	if (kind == RN_CHATFMT_LLAMA3 && t && has(t, n, "<|python_tag|>"))
		for (size_t i = 0; i < n_tools; i++)
			for (size_t k = 0; k < sizeof builtin / sizeof *builtin; k++)
				if (tool_names[i] && strcmp(tool_names[i], builtin[k]) == 0)
					return RN_CHATFMT_LLAMA3_BUILTIN;
	return kind;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The formats */

static const struct cf_keys k_openai = {"name", "arguments", "id", false};
static const struct cf_keys k_r7b = {"tool_name", "parameters", "tool_call_id", false};
static const struct cf_keys k_short = {NULL, NULL, NULL, true};

static const struct cf_xml x_qwen = {"<function=", ">", "<parameter=", ">", NULL, "</parameter>", "</function>", true};
static const struct cf_xml x_seed = {"<function=", ">", "<parameter=", ">", NULL, "</parameter>", "</function>", false};
static const struct cf_xml x_minimax = {"<invoke name=\"", "\">", "<parameter name=\"", "\">", NULL, "</parameter>",
					"</invoke>", false};
static const struct cf_xml x_glm = {NULL, NULL, "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", NULL, false};

static const struct cf_sep s_r1 = {"<｜tool▁call▁begin｜>", false, "function<｜tool▁sep｜>", "\n", "```json\n", "```",
				   "<｜tool▁call▁end｜>", false};
static const struct cf_sep s_v31 = {"<｜tool▁call▁begin｜>", false, NULL, "<｜tool▁sep｜>", NULL, NULL,
				    "<｜tool▁call▁end｜>", false};
static const struct cf_sep s_kimi = {"<|tool_call_begin|>", true, NULL, "<|tool_call_argument_begin|>", NULL, NULL,
				     "<|tool_call_end|>", true};

#define TOOL(t, b, e) {t, b, e, &k_openai, NULL, NULL, true}
#define DROP(t) {t, CF_DROP, NULL, NULL, NULL, NULL, false}
#define R1_BEGIN(t) {t, CF_SEP_JSON, "<｜tool▁calls▁end｜>", NULL, NULL, &s_r1, true}
#define V31_BEGIN(t) {t, CF_SEP_JSON, "<｜tool▁calls▁end｜>", NULL, NULL, &s_v31, true}

static const struct cf_format formats[RN_CHATFMT_COUNT] = {
	[RN_CHATFMT_CONTENT_ONLY] = {"Content-only", "<think>", "</think>", CF_DROP, false, false, {{0}}},
	[RN_CHATFMT_GENERIC] = {"Generic", NULL, NULL, CF_GENERIC_START, false, false, {{0}}},
	[RN_CHATFMT_MISTRAL_NEMO] = {"Mistral Nemo", NULL, NULL, CF_DROP, false, false,
				     {{"[TOOL_CALLS]", CF_MISTRAL, NULL, &k_openai, NULL, NULL, true}}},
	[RN_CHATFMT_MAGISTRAL] = {"Magistral", "[THINK]", "[/THINK]", CF_DROP, false, false,
				  {{"[TOOL_CALLS]", CF_MISTRAL, NULL, &k_openai, NULL, NULL, true}}},
	[RN_CHATFMT_MINISTRAL_3] = {"Ministral 3", "[THINK]", "[/THINK]", CF_DROP, false, false,
				    {{"[TOOL_CALLS]", CF_MISTRAL, NULL, &k_openai, NULL, NULL, true}}},
	[RN_CHATFMT_LLAMA3] = {"Llama 3.x", "<think>", "</think>", CF_LLAMA_START, false, false, {{0}}},
	[RN_CHATFMT_LLAMA3_BUILTIN] = {"Llama 3.x with builtin tools", "<think>", "</think>", CF_LLAMA_START, false, false,
				       {TOOL("<|python_tag|>", CF_PYTHON_BUILTIN, NULL)}},
	[RN_CHATFMT_DEEPSEEK_R1] = {"DeepSeek R1", "<think>", "</think>", CF_DROP, false, false,
				    {R1_BEGIN("<｜tool▁calls▁begin｜>"), R1_BEGIN("<｜tool_calls_begin｜>"),
				     R1_BEGIN("<｜tool calls begin｜>"), R1_BEGIN("<｜tool\\_calls\\_begin｜>"),
				     R1_BEGIN("<｜tool▁calls｜>")}},
	[RN_CHATFMT_DEEPSEEK_V3_1] = {"DeepSeek V3.1", "<think>", "</think>", CF_DROP, false, false,
				      {V31_BEGIN("<｜tool▁calls▁begin｜>"), V31_BEGIN("<｜tool_calls_begin｜>"),
				       V31_BEGIN("<｜tool calls begin｜>"), V31_BEGIN("<｜tool\\_calls\\_begin｜>"),
				       V31_BEGIN("<｜tool▁calls｜>")}},
	[RN_CHATFMT_FIREFUNCTION_V2] = {"FireFunction v2", NULL, NULL, CF_DROP, false, false,
					{TOOL(" functools", CF_JSON_ARRAY, NULL)}},
	[RN_CHATFMT_FUNCTIONARY_V3_1] = {"Functionary v3.1 Llama 3.1", NULL, NULL, CF_DROP, false, false,
					 {TOOL("<function=", CF_FUNC_EQ, "</function>"),
					  TOOL("<|python_tag|>", CF_PYTHON_CODE, NULL)}},
	[RN_CHATFMT_FUNCTIONARY_V3_2] = {"Functionary v3.2", NULL, NULL, CF_FUNCTIONARY, false, false,
					 {TOOL(">>>", CF_FUNCTIONARY, NULL)}},
	[RN_CHATFMT_HERMES] = {"Hermes 2 Pro", "<think>", "</think>", CF_DROP, false, false,
			       {{"<tool_call>", CF_JSON_TAGGED, "</tool_call>", &k_openai, &x_qwen, NULL, true},
				TOOL("<function_call>", CF_JSON_TAGGED, "</function_call>"),
				TOOL("<tool>", CF_JSON_TAGGED, "</tool>"), TOOL("<tools>", CF_JSON_TAGGED, "</tools>"),
				TOOL("<response>", CF_JSON_TAGGED, "</response>"),
				TOOL("<json>", CF_JSON_TAGGED, "</json>"), TOOL("<xml>", CF_JSON_TAGGED, "</xml>"),
				TOOL("<JSON>", CF_JSON_TAGGED, "</JSON>"), TOOL("{\"name\"", CF_JSON_BARE, NULL),
				TOOL("<function=", CF_FUNC_EQ, "</function>"),
				TOOL("<function name=\"", CF_FUNC_ATTR, "</function>")}},
	[RN_CHATFMT_COMMAND_R7B] = {"Command R7B", "<|START_THINKING|>", "<|END_THINKING|>", CF_DROP, false, false,
				    {{"<|START_ACTION|>", CF_JSON_ARRAY, "<|END_ACTION|>", &k_r7b, NULL, NULL, true},
				     DROP("<|START_RESPONSE|>"), DROP("<|END_RESPONSE|>")}},
	[RN_CHATFMT_GRANITE] = {"Granite", "<think>", "</think>", CF_DROP, false, false,
				{TOOL("<|tool_call|>", CF_JSON_ARRAY, NULL), DROP("<response>"), DROP("</response>")}},
	[RN_CHATFMT_GPT_OSS] = {"GPT-OSS", NULL, NULL, CF_DROP, true, false, {{0}}},
	[RN_CHATFMT_SEED_OSS] = {"Seed-OSS", "<seed:think>", "</seed:think>", CF_DROP, false, true,
				 {{"<seed:tool_call>", CF_XML, "</seed:tool_call>", NULL, &x_seed, NULL, true}}},
	[RN_CHATFMT_NEMOTRON_V2] = {"Nemotron V2", "<think>", "</think>", CF_DROP, false, false,
				    {TOOL("<TOOLCALL>", CF_JSON_ARRAY, "</TOOLCALL>")}},
	[RN_CHATFMT_NEMOTRON_V3] = {"Nemotron V3", "<think>", "</think>", CF_DROP, false, false,
				    {{"<tool_call>", CF_XML, "</tool_call>", NULL, &x_qwen, NULL, true}}},
	[RN_CHATFMT_APERTUS] = {"Apertus", "<|inner_prefix|>", "<|inner_suffix|>", CF_DROP, false, false,
				{{"<|tools_prefix|>", CF_JSON_ARRAY, "<|tools_suffix|>", &k_short, NULL, NULL, true}}},
	[RN_CHATFMT_LFM2] = {"LFM2 with JSON tools", NULL, NULL, CF_DROP, false, false,
			     {TOOL("<|tool_call_start|>", CF_JSON_ARRAY, "<|tool_call_end|>")}},
	[RN_CHATFMT_MINIMAX_M2] = {"MiniMax-M2", "<think>", "</think>", CF_DROP, false, true,
				   {{"<minimax:tool_call>", CF_XML, "</minimax:tool_call>", NULL, &x_minimax, NULL, true}}},
	[RN_CHATFMT_GLM_4_5] = {"GLM 4.5", "<think>", "</think>", CF_DROP, false, true,
				{{"<tool_call>", CF_XML, "</tool_call>", NULL, &x_glm, NULL, true}}},
	[RN_CHATFMT_KIMI_K2] = {"Kimi K2", "<think>", "</think>", CF_DROP, false, true,
				{{"<|tool_calls_section_begin|>", CF_SEP_JSON, "<|tool_calls_section_end|>", NULL, NULL,
				  &s_kimi, true}}},
	[RN_CHATFMT_QWEN3_CODER_XML] = {"Qwen3 Coder", "<think>", "</think>", CF_DROP, false, true,
					{{"<tool_call>", CF_XML, "</tool_call>", NULL, &x_qwen, NULL, true}}},
	[RN_CHATFMT_APRIEL_1_5] = {"Apriel 1.5", "<thinking>", "</thinking>", CF_DROP, false, true,
				   {TOOL("<tool_calls>", CF_JSON_ARRAY, "</tool_calls>")}},
	[RN_CHATFMT_XIAOMI_MIMO] = {"Xiaomi MiMo", "<think>", "</think>", CF_DROP, false, true,
				    {TOOL("<tool_call>", CF_JSON_TAGGED, "</tool_call>")}},
};

const struct cf_format *cf_format_get(enum rn_chatfmt_kind k)
{
	return (unsigned)k < RN_CHATFMT_COUNT ? &formats[k] : NULL;
}

const char *rn_chatfmt_name(enum rn_chatfmt_kind k)
{
	const struct cf_format *f = cf_format_get(k);
	return f ? f->name : "?";
}

bool rn_chatfmt_think_tags(enum rn_chatfmt_kind k, const char **open, const char **close)
{
	const struct cf_format *f = cf_format_get(k);
	if (!f || !f->think_open)
		return false;
	if (open)
		*open = f->think_open;
	if (close)
		*close = f->think_close;
	return true;
}

bool rn_chatfmt_prompt_opens_thinking(enum rn_chatfmt_kind k, const char *prompt, size_t len)
{
	const char *open;
	if (!prompt || !rn_chatfmt_think_tags(k, &open, NULL))
		return false;
	while (len && cf_is_space(prompt[len - 1]))
		len--;
	size_t ol = strlen(open);
	return len >= ol && memcmp(prompt + len - ol, open, ol) == 0;
}

bool rn_chatfmt_supports_tools(enum rn_chatfmt_kind k)
{
	const struct cf_format *f = cf_format_get(k);
	if (!f)
		return false;
	if (f->harmony || f->start != CF_DROP)
		return true;
	for (int i = 0; i < CF_MAX_MARKERS && f->markers[i].text; i++)
		if (f->markers[i].is_tool)
			return true;
	return false;
}

bool rn_chatfmt_supports_thinking(enum rn_chatfmt_kind k)
{
	const struct cf_format *f = cf_format_get(k);
	return f && (f->think_open || f->harmony);
}
