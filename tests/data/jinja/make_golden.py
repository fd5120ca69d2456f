#!/usr/bin/env python3
"""tests/data/jinja/make_golden.py — renders every template x conversation of the shared Jinja corpus with
Python jinja2 exactly as Hugging Face transformers renders chat templates, and writes the goldens that
tests/jinja/test_jinja.c compares orun's engine against byte for byte.

Usage (see tests/data/jinja/README.md):
    python3 -m venv ~/.cache/orun/jinja-venv && ~/.cache/orun/jinja-venv/bin/pip install jinja2==3.1.6
    ~/.cache/orun/jinja-venv/bin/python tests/data/jinja/make_golden.py [CORPUS_DIR] [OUT_DIR]

CORPUS_DIR defaults to ../shared/testdata/jinja-templates beside the source tree, OUT_DIR to
tests/data/jinja/golden. It also renders the engine cases of tests/data/jinja/cases.in.json (a template and
its variables each) into tests/data/jinja/cases.json, adding jinja2's "output" or "error" ("Class: message")
to each. For each pair it writes OUT_DIR/<template>/<conversation>.out (the rendering, bytes
as jinja2 returns them, UTF-8) or, when jinja2 raises, OUT_DIR/<template>/<conversation>.err holding one line:
"<ExceptionClass>: <message>". The configuration mirrors transformers' chat_template_utils: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the loopcontrols extension and a
{% generation %} tag that renders its body; `tojson` replaced by json.dumps(x, ensure_ascii=False, indent=,
separators=, sort_keys=); globals raise_exception (a TemplateError) and strftime_now on the fixed clock
2026-01-15 12:00:00; render(messages=, tools=<list or None>, documents=None, add_generation_prompt=,
bos_token=, eos_token=, **extra).
"""
import datetime
import json
import os
import shutil
import sys

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

CLOCK = datetime.datetime(2026, 1, 15, 12, 0, 0)


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers' AssistantTracker, inactive)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return CLOCK.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    srcdir = os.path.normpath(os.path.join(here, "..", "..", ".."))
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(srcdir, "..", "shared", "testdata",
                                                                 "jinja-templates")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "golden")
    with open(os.path.join(corpus, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    with open(os.path.join(corpus, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    if os.path.isdir(out):
        shutil.rmtree(out)
    env = environment()
    counts = {"out": 0, "err": 0}
    for entry in manifest:
        with open(os.path.join(corpus, entry["file"]), "rb") as f:
            source = f.read().decode("utf-8")
        template = env.from_string(source)
        folder = os.path.join(out, entry["name"])
        os.makedirs(folder)
        for conv in conversations:
            try:
                text = template.render(messages=conv["messages"], tools=conv.get("tools"), documents=None,
                                       add_generation_prompt=conv["add_generation_prompt"],
                                       bos_token=entry["bos_token"], eos_token=entry["eos_token"],
                                       **conv["extra"])
                kind, data = "out", text
            except Exception as e:  # every failure is a golden too: orun must fail on the same pair
                kind, data = "err", "%s: %s\n" % (type(e).__name__, e)
            with open(os.path.join(folder, conv["name"] + "." + kind), "wb") as f:
                f.write(data.encode("utf-8"))
            counts[kind] += 1
    print("jinja2 %s: %d renderings, %d errors in %s" % (jinja2.__version__, counts["out"], counts["err"], out))
    make_cases(env, os.path.join(here, "cases.in.json"), os.path.join(here, "cases.json"))


def make_cases(env, src, dst):
    with open(src, encoding="utf-8") as f:
        cases = json.load(f)
    errors = 0
    for case in cases:
        case.pop("output", None)
        case.pop("error", None)
        try:
            case["output"] = env.from_string(case["template"]).render(**case["vars"])
        except Exception as e:
            case["error"] = "%s: %s" % (type(e).__name__, e)
            errors += 1
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("jinja2 %s: %d engine cases (%d errors) in %s" % (jinja2.__version__, len(cases), errors, dst))


if __name__ == "__main__":
    main()
