"""`orun run`'s flags as Ollama's (issue 17, item 2), `orun pull`/`push`, and `orun create`'s error for a FROM
model that is not in the store — each through the real executable against a live `orun serve`.

The flags are checked by what reaches the server: a bare --think sends think=true (the qwen2 test model has
no thinking, so the server's refusal names it), --format sends "format" (the server either answers in JSON or
refuses format with its own error while that work lands), an embedding model prints its vector (/api/embed,
--dimensions, --truncate=false).
"""
import json
import os
import subprocess

import pytest
import requests

from conftest import model_path
from test_server_common import Server, create_qwen
from test_server_embed import make_embedding_gguf


@pytest.fixture(scope="module")
def cli(orun_bin, tmp_path_factory):
    import ollama

    tmp = tmp_path_factory.mktemp("cli-run")
    srv = Server(orun_bin, tmp)
    try:
        client = ollama.Client(host=srv.base)
        create_qwen(client)
        emb = tmp / "smol-embed.gguf"
        make_embedding_gguf(model_path("llama"), emb)
        # a small context, so that the truncated embedding below stays cheap under the sanitizer build too
        list(client.create(model="smol-embed", files={"model.gguf": client.create_blob(emb)},
                           parameters={"num_ctx": 512}, stream=True))
        env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{srv.port}")

        def run(*args, stdin=""):
            return subprocess.run([orun_bin, *args], env=env, input=stdin, capture_output=True, text=True,
                                  timeout=300, cwd=tmp)

        run.srv = srv
        run.tmp = tmp
        yield run
    finally:
        srv.stop()


def test_bare_think_is_true(cli):
    # bare --think must not take the next argument as its value: "hi" stays the prompt
    for args in (["qwen2", "--think", "hi"], ["qwen2", "hi", "--think"], ["qwen2", "hi", "--think="],
                 ["qwen2", "hi", "--think=true"], ["qwen2", "hi", "--think=high"]):
        p = cli("run", *args)
        assert p.returncode == 1 and "does not support thinking" in p.stderr, (args, p.stderr)
    p = cli("run", "qwen2", "Say hi.", "--think=false", "--hidethinking", "--nowordwrap", "--insecure",
            "--keepalive", "1m", "--verbose=false")
    assert p.returncode == 0 and p.stdout.strip(), p.stderr
    assert "eval rate:" not in p.stderr
    p = cli("run", "qwen2", "hi", "--think=maybe")
    assert p.returncode == 1
    assert p.stderr.strip() == ('Error: invalid value for --think: "maybe" (must be true, false, high, medium, low, '
                                'or max)')


def test_flag_values_as_pflag(cli):
    p = cli("run", "qwen2", "hi", "--verbose=maybe")
    assert p.returncode == 2 and p.stderr.strip() == ('Error: invalid argument "maybe" for "--verbose" flag: '
                                                      'strconv.ParseBool: parsing "maybe": invalid syntax')
    p = cli("run", "qwen2", "hi", "--dimensions", "x")
    assert p.returncode == 2 and 'strconv.ParseInt: parsing "x": invalid syntax' in p.stderr
    p = cli("run", "qwen2", "hi", "--keepalive", "soon")
    assert p.returncode == 1 and 'time: invalid duration "soon"' in p.stderr
    p = cli("run", "--help")
    assert p.returncode == 0
    for flag in ("--dimensions int", "--format string", "--hidethinking", "--insecure", "--keepalive string",
                 "--nowordwrap", '--think string[="true"]', "--truncate", "--verbose"):
        assert flag in p.stdout, flag


@pytest.mark.parametrize("fmt", ["json", '{"type":"object","properties":{"a":{"type":"integer"}}}'])
def test_format_reaches_the_server(cli, fmt):
    p = cli("run", "qwen2", "Answer with a JSON object with the key a set to 1.", "--format", fmt)
    if p.returncode == 0:
        json.loads(p.stdout)
    else:  # the server's own answer while format support lands: it saw "format"
        assert p.returncode == 1 and "format" in p.stderr and "400" in p.stderr, p.stderr
    p = cli("run", "qwen2", "hi", "--format", "{not json")
    assert p.returncode == 1
    assert p.stderr.startswith("Error: json: error calling MarshalJSON for type json.RawMessage: invalid character")


def test_embedding_model(cli):
    p = cli("run", "smol-embed", "The cat sat on the mat.")
    assert p.returncode == 0, p.stderr
    v = json.loads(p.stdout)
    assert len(v) == 576 and all(isinstance(x, float) for x in v)
    p = cli("run", "smol-embed", "The cat sat on the mat.", "--dimensions", "8")
    assert p.returncode == 0, p.stderr
    assert len(json.loads(p.stdout)) == 8
    assert p.stdout.count("\n") == 1
    p = cli("run", "smol-embed", stdin="")
    assert p.returncode == 1
    assert p.stderr.strip() == 'Error: embedding models require input text. Usage: orun run smol-embed "your text here"'
    long = "word " * 2000  # past the model's num_ctx of 512
    p = cli("run", "smol-embed", long, "--truncate=false")
    assert p.returncode == 1 and "context length" in p.stderr, p.stderr
    p = cli("run", "smol-embed", long)
    assert p.returncode == 0, p.stderr


def test_pull_push_flags(cli):
    for verb in ("pull", "push"):
        # a registry that is not there: one clear error line (the registry itself: test_registry.py)
        p = cli(verb, "127.0.0.1:9/ns/m:t", "--insecure")
        assert p.returncode == 1, p.stderr
        assert p.stderr.strip().splitlines()[-1].startswith("Error: "), p.stderr
        p = cli(verb)
        assert p.returncode == 2 and "accepts 1 arg(s), received 0" in p.stderr
        p = cli(verb, "--help")
        assert p.returncode == 0 and "--insecure" in p.stdout
    p = cli("help")
    assert "\n  pull " in p.stdout and "\n  push " in p.stdout


def test_create_from_missing_model(cli):
    (cli.tmp / "Modelfile").write_text("FROM qwen2.5-coder:0.5b\nPARAMETER temperature 0\n")
    p = cli("create", "mine", "-f", str(cli.tmp / "Modelfile"))
    assert p.returncode == 1
    err = p.stderr.strip().splitlines()[-1]
    assert err.startswith("Error: 404 Not Found: FROM model 'qwen2.5-coder:0.5b' not found"), p.stderr
    assert "GGUF" in err and "500" not in err
    r = requests.post(cli.srv.base + "/api/create", json={"model": "mine", "from": "nosuch", "stream": False})
    assert r.status_code == 404 and r.json()["error"].startswith("FROM model 'nosuch:latest' not found")
    r = requests.post(cli.srv.base + "/api/create", json={"model": "mine", "from": "nosuch"})
    assert r.status_code == 404 and "not in the store" in r.text


def test_bench_serve(cli):
    """`orun bench --serve`: the load generator over the HTTP API (issue 17, item 4)."""
    pid = str(cli.srv.proc.pid)
    p = cli("bench", "--serve", "--model", "qwen2", "-c", "2", "--requests", "3", "-n", "4", "--pid", pid, "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["requests"] == 3 and j["ok"] == 3 and j["errors"] == 0 and j["streams"] == 2
    assert 0 < j["tokens"] <= 12 and j["aggregate_tok_s"] > 0
    for key in ("ttft_ms", "latency_s"):
        d = j[key]
        assert 0 < d["p50"] <= d["p95"] <= d["p99"], (key, d)
    assert j["server_pid"] == int(pid) and j["peak_rss_bytes"] >= j["run_peak_rss_bytes"] > 100 << 20
    p = cli("bench", "--serve", "--model", "qwen2", "--duration", "0.5", "-n", "2", "--no-warmup",
            "--prompts", "/dev/null")
    assert p.returncode == 2 and "holds no prompt" in p.stderr
    (cli.tmp / "prompts.txt").write_text("Say yes.\n\nSay no.\n")
    p = cli("bench", "--serve", "--model", "qwen2", "--duration", "0.5", "-n", "2", "--no-warmup",
            "--prompts", str(cli.tmp / "prompts.txt"))
    assert p.returncode == 0, p.stderr
    assert "| TTFT ms |" in p.stdout and "| decode tok/s |" in p.stdout and "aggregate tok/s" in p.stdout
    assert json.loads(p.stdout.strip().splitlines()[-1])["requests"] >= 1
    p = cli("bench", "--serve", "--model", "nosuch", "--requests", "1")
    assert p.returncode == 1 and "not found" in p.stderr
