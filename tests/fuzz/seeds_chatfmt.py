#!/usr/bin/env python3
"""tests/fuzz/seeds_chatfmt.py [CORPUS_DIR] — writes the seeds (seed-*) of fuzz_chatfmt into CORPUS_DIR (default:
corpus/chatfmt beside this script): every recorded output of tests/data/chatfmt with its format and options, the
same outputs under a few other formats, and some hostile ones. Input layout: see tests/fuzz/fuzz_chatfmt.c.
"""
import glob
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "chatfmt")
data = os.path.join(here, "..", "data", "chatfmt")

# enum rn_chatfmt_kind, in order (runner/chatfmt/chatfmt.h), by rn_chatfmt_name
KINDS = ["Content-only", "Generic", "Mistral Nemo", "Magistral", "Ministral 3", "Llama 3.x",
         "Llama 3.x with builtin tools", "DeepSeek R1", "DeepSeek V3.1", "FireFunction v2",
         "Functionary v3.1 Llama 3.1", "Functionary v3.2", "Hermes 2 Pro", "Command R7B", "Granite", "GPT-OSS",
         "Seed-OSS", "Nemotron V2", "Nemotron V3", "Apertus", "LFM2 with JSON tools", "MiniMax-M2", "GLM 4.5",
         "Kimi K2", "Qwen3 Coder", "Apriel 1.5", "Xiaomi MiMo"]
os.makedirs(out, exist_ok=True)


def write(name, kind, flags, seed, text):
    if isinstance(text, str):
        text = text.encode()
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(bytes([kind, flags, seed]) + text)


for path in sorted(glob.glob(os.path.join(data, "*.json"))):
    base = os.path.basename(path)[:-5]
    exp = json.load(open(path, encoding="utf-8"))
    text = open(os.path.join(data, base + ".txt"), "rb").read()
    flags = (1 if exp["tools"] else 0) | (2 if exp["reasoning_format"] == "none" else 0) | \
        (4 if exp["thinking_forced_open"] else 0)
    k = KINDS.index(exp["format"])
    write(base, k, flags, 7, text)
    write(base + "-bytes", k, flags | 8, 0, text)
    write(base + "-as-hermes", KINDS.index("Hermes 2 Pro"), 1, 3, text)

hostile = {
    "nested-tags": "<think><think></think><tool_call><tool_call>{\"name\":\"a\"}</tool_call></tool_call>",
    "deep-json": "<tool_call>{\"name\":\"f\",\"arguments\":" + "[" * 1200 + "]" * 1200 + "}</tool_call>",
    "unclosed-json": "{\"name\": \"f\", \"parameters\": {\"a\": \"}\\\"",
    "harmony-junk": "<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>commentary to=functions.<|message|>{",
    "python-tag": "<|python_tag|>x.call(a=\"\\\"\", b=[1,{\"c\":2}], d=null)",
    "xml-no-end": "<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n",
    "mistral-bad-name": "[TOOL_CALLS]bad name[ARGS]{}",
    "functionary-python": ">>>python\nprint('x')\n>>>f\n{}",
    "kimi-names": "<|tool_calls_section_begin|><|tool_call_begin|>functions.:7<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
}
for i, (name, text) in enumerate(sorted(hostile.items())):
    for k in (0, KINDS.index("Hermes 2 Pro"), KINDS.index("GPT-OSS"), KINDS.index("Qwen3 Coder"), 5 + i):
        write("%s-%d" % (name, k), k % len(KINDS), 1 | (4 if i % 2 else 0), i, text)
