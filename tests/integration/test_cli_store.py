"""The Modelfile CLI verbs against a live `orun serve`: create (blob upload + /api/create), list, show and its
flags, cp and rm, exactly as a user types them; and the seeds' Modelfiles (examples/) created through the
CLI from the small real model and then run through /api/chat."""
import os
import subprocess

import pytest
import requests

from conftest import model_path
from test_server_common import Server


@pytest.fixture(scope="module")
def cli(orun_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    srv = Server(orun_bin, tmp)
    env = dict(os.environ, OLLAMA_HOST=f"127.0.0.1:{srv.port}")

    def run(*args, check=True, timeout=300):
        p = subprocess.run([orun_bin, *args], env=env, capture_output=True, text=True, timeout=timeout)
        if check:
            assert p.returncode == 0, f"orun {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
        return p

    run.srv = srv
    run.tmp = tmp
    try:
        yield run
    finally:
        srv.stop()


def modelfile_from(example, srcdir, tmp, name):
    """examples/<example> with its FROM pointed at the small real qwen2 model."""
    lines = (srcdir / "examples" / example).read_text().splitlines()
    lines = [f"FROM {model_path('qwen2')}" if l.startswith("FROM ") else l for l in lines]
    p = tmp / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_create_list_show_cp_rm(cli, srcdir):
    mf = modelfile_from("Modelfile.quickstart", srcdir, cli.tmp, "Modelfile.quick")
    out = cli("create", "quick", "-f", str(mf))
    assert "success" in out.stdout + out.stderr

    lines = cli("list").stdout.splitlines()
    assert lines[0].split() == ["NAME", "ID", "SIZE", "MODIFIED"]
    assert any(l.split()[0] == "quick:latest" for l in lines[1:]), lines

    modelfile = cli("show", "quick", "--modelfile").stdout
    assert "\nFROM " in modelfile and "TEMPLATE \"\"\"" in modelfile
    assert 'PARAMETER stop "<|im_end|>"' in modelfile or "PARAMETER stop <|im_end|>" in modelfile
    params = cli("show", "quick", "--parameters").stdout
    assert any(l.split()[:2] == ["temperature", "0.7"] for l in params.splitlines()), params
    assert cli("show", "quick", "--system").stdout.strip().startswith("You are a concise coding assistant.")
    assert cli("show", "quick", "--template").stdout.startswith("{{- if .Suffix }}")
    summary = cli("show", "quick").stdout
    assert "architecture" in summary and "qwen2" in summary

    cli("cp", "quick", "quick-copy")
    names = [l.split()[0] for l in cli("list").stdout.splitlines()[1:]]
    assert "quick:latest" in names and "quick-copy:latest" in names
    cli("rm", "quick-copy")
    names = [l.split()[0] for l in cli("list").stdout.splitlines()[1:]]
    assert "quick-copy:latest" not in names and "quick:latest" in names

    bad = cli("show", "no-such-model", check=False)
    assert bad.returncode == 1 and "not found" in bad.stderr
    bad = cli("rm", "no-such-model", check=False)
    assert bad.returncode == 1 and "not found" in bad.stderr


@pytest.mark.parametrize("example,name", [("qwen3-14b-fast.Modelfile", "qwen3-14b-fast"),
                                          ("qwen3-14b-nothink.Modelfile", "qwen3-14b-nothink")])
def test_seed_modelfiles_create_and_run(cli, srcdir, example, name):
    mf = modelfile_from(example, srcdir, cli.tmp, example)
    out = cli("create", name, "-f", str(mf))
    assert "success" in out.stdout + out.stderr
    params = cli("show", name, "--parameters").stdout
    if name.endswith("fast"):
        assert any(l.split()[:2] == ["num_ctx", "131072"] for l in params.splitlines()), params
    else:
        # Go's %v of a float32 1e6, as `ollama show --parameters` prints it
        assert any(l.split()[:2] == ["rope_freq_base", "1e+06"] for l in params.splitlines()), params
        assert any(l.split()[:2] == ["use_mmap", "false"] for l in params.splitlines()), params
    # the seeds' streaming chat request shape, shortened
    r = requests.post(cli.srv.base + "/api/chat", json={
        "model": name, "messages": [{"role": "user", "content": "请用一句话总结量子计算"}], "stream": True,
        "options": {"num_keep": 4, "repeat_last_n": 64, "temperature": 0, "num_predict": 8}}, stream=True,
        timeout=600)
    assert r.status_code == 200, r.text
    import json
    chunks = [json.loads(l) for l in r.iter_lines() if l]
    assert chunks[-1]["done"] is True and chunks[-1]["eval_count"] >= 1, chunks[-1]
    assert "error" not in chunks[-1]
    cli("rm", name)
