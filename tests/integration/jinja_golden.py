"""Renders chat templates with Python jinja2 exactly as transformers' apply_chat_template does (the environment of
tests/data/jinja/make_golden.py), and reads a GGUF's template and BOS/EOS texts: the reference the Jinja
integration tests compare orun's rendered prompts against.

jinja2 comes from the test venv (tests/requirements.txt) or, failing that, ~/.cache/orun/jinja-venv (the venv
tests/data/jinja/README.md sets up); the rendering runs in a child process so that either works.
"""
import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import CACHE, SRCDIR

_RENDER = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import make_golden
a = json.load(sys.stdin)
t = make_golden.environment().from_string(a["template"])
sys.stdout.write(t.render(messages=a["messages"], tools=a["tools"], documents=None,
                          add_generation_prompt=a["add_generation_prompt"], bos_token=a["bos"],
                          eos_token=a["eos"], **a["extra"]))
'''


def _python():
    if importlib.util.find_spec("jinja2"):
        return sys.executable
    p = CACHE / "jinja-venv" / "bin" / "python"
    if p.exists():
        return str(p)
    pytest.fail("needs jinja2 3.1.6 (tests/requirements.txt) in the test venv or ~/.cache/orun/jinja-venv",
                pytrace=False)


def render(template, messages, tools=None, bos="", eos="", extra=None, add_generation_prompt=True):
    """transformers' rendering of template for these OpenAI-shaped messages (tools None unless given)."""
    a = dict(template=template, messages=messages, tools=tools, bos=bos, eos=eos, extra=extra or {},
             add_generation_prompt=add_generation_prompt)
    r = subprocess.run([_python(), "-c", _RENDER, str(SRCDIR / "tests" / "data" / "jinja")], input=json.dumps(a),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def gguf_chat(orun_bin, path):
    """(tokenizer.chat_template, BOS text, EOS text) of a GGUF, read with `orun gguf --json --full`."""
    out = subprocess.run([orun_bin, "gguf", str(path), "--json", "--full"], capture_output=True, check=True).stdout
    meta = {e["key"]: e for e in json.loads(out)["metadata"]}
    tokens = meta["tokenizer.ggml.tokens"]["value"]

    def text(key):
        return tokens[meta[key]["value"]] if key in meta else ""

    return (meta["tokenizer.chat_template"]["value"], text("tokenizer.ggml.bos_token_id"),
            text("tokenizer.ggml.eos_token_id"))
