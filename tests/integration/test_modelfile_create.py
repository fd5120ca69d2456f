"""create (the modelfile library behind POST /api/create) from a Hugging Face FP8 safetensors checkpoint and
with `quantize`: the checkpoint is the tiny Qwen3-FP8 of test_gguf_import.py (FP8 E4M3 weights with 128x128
weight_scale_inv tiles), uploaded file by file into a fresh store as `ollama create` would, converted by
libgguf (FP8 kept), its chat template detected; then requantized to q8_0 and q4_K_M. tests/modelfile/create_tool
(built by `make check`) calls the library."""
import json
import os
import pathlib
import subprocess

import pytest

pytest.importorskip("ml_dtypes")
pytest.importorskip("safetensors.numpy")
from test_gguf_import import make_qwen3_fp8, write_tokenizer  # noqa: E402


def tool(orun_bin):
    p = pathlib.Path(os.environ.get("ORUN_BUILDDIR", pathlib.Path(orun_bin).parent)) / "tests" / "modelfile" / "create_tool"
    if not os.access(p, os.X_OK):
        pytest.fail(f"{p} not built (run make check)")
    return str(p)


def run(t, *args, body=None):
    p = subprocess.run([t, *args], input=body, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def create(t, store, body):
    rc, out, err = run(t, "create", store, body=json.dumps(body))
    lines = [json.loads(l) for l in out.splitlines()]
    return rc, lines


def gguf_types(orun_bin, path):
    p = subprocess.run([orun_bin, "gguf", path, "--json", "--full"], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    info = json.loads(p.stdout)
    return {t["name"]: t["type"] for t in info["tensors"]}, {m["key"]: m["value"] for m in info["metadata"]}


def test_create_from_fp8_safetensors_and_quantize(orun_bin, srcdir, tmp_path):
    t = tool(orun_bin)
    src = tmp_path / "Qwen3-Tiny-FP8"
    src.mkdir()
    make_qwen3_fp8(src)
    write_tokenizer(src, 300, llama=False)
    # a chat template Ollama's detection knows (the first ChatML reference of the bundled index)
    index = json.loads((srcdir / "modelfile" / "templates" / "index.json").read_text())
    chatml = next(e["template"] for e in index if e["name"] == "chatml")
    tc = json.loads((src / "tokenizer_config.json").read_text())
    tc["chat_template"] = chatml
    (src / "tokenizer_config.json").write_text(json.dumps(tc))
    store = str(tmp_path / "models")
    files = {}
    for f in sorted(src.iterdir()):
        rc, out, err = run(t, "put", store, str(f))
        assert rc == 0, out + err
        files[f.name] = out.strip()
    assert set(files) == {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}

    rc, lines = create(t, store, {"model": "qwen3-tiny-fp8", "files": files})
    assert rc == 0, lines
    statuses = [l["status"] for l in lines]
    assert statuses[0] == "converting model"
    assert statuses[1].startswith("creating new layer sha256:")
    assert "using autodetected template chatml" in statuses
    assert statuses[-2:] == ["writing manifest", "success"]

    cfg = json.loads(run(t, "show", store, "qwen3-tiny-fp8", "config")[1])
    assert cfg["model_format"] == "gguf" and cfg["model_family"] == "qwen3" and cfg["model_families"] == ["qwen3"]
    assert cfg["file_type"] == "FP8"
    model_path = run(t, "show", store, "qwen3-tiny-fp8", "model_path")[1]
    types, kv = gguf_types(orun_bin, model_path)
    assert types["blk.0.attn_q.weight"] == "FP8_E4M3_B128"  # FP8 kept
    assert kv["general.architecture"] == "qwen3"
    params = run(t, "show", store, "qwen3-tiny-fp8", "parameters")[1]
    assert params == 'stop                           "<|im_start|>"\nstop                           "<|im_end|>"'

    # requantize the FP8 model: Ollama's statuses, llama.cpp's Q8_0 mixture
    rc, lines = create(t, store, {"model": "qwen3-tiny-q8", "from": "qwen3-tiny-fp8", "quantize": "q8_0"})
    assert rc == 0, lines
    statuses = [l["status"] for l in lines]
    quant = [l for l in lines if l["status"] == "quantizing FP8 model to Q8_0"]
    assert quant and quant[-1]["digest"] == "0000000000000000000" and quant[-1]["completed"] <= quant[-1]["total"]
    assert "verifying conversion" in statuses
    cfg = json.loads(run(t, "show", store, "qwen3-tiny-q8", "config")[1])
    assert cfg["file_type"] == "Q8_0"
    types, kv = gguf_types(orun_bin, run(t, "show", store, "qwen3-tiny-q8", "model_path")[1])
    assert types["blk.0.attn_q.weight"] == "Q8_0" and kv["general.file_type"] == 7

    rc, lines = create(t, store, {"model": "qwen3-tiny-q4", "files": files, "quantize": "q4_K_M"})
    assert rc == 0, lines
    assert any(l["status"] == "quantizing FP8 model to Q4_K_M" for l in lines)
    cfg = json.loads(run(t, "show", store, "qwen3-tiny-q4", "config")[1])
    assert cfg["file_type"] == "Q4_K_M"

    # a checkpoint with a tensor missing fails with the importer's message, and leaves no model behind
    bad = tmp_path / "bad"
    bad.mkdir()
    make_qwen3_fp8(bad, drop=["model.layers.1.mlp.up_proj.weight_scale_inv"])
    write_tokenizer(bad, 300, llama=False)
    badfiles = {f.name: run(t, "put", store, str(f))[1].strip() for f in sorted(bad.iterdir())}
    rc, lines = create(t, store, {"model": "broken", "files": badfiles})
    assert rc == 1
    assert "has no 'model.layers.1.mlp.up_proj.weight_scale_inv'" in lines[-1]["error"]
    assert lines[-1]["http"] == 500
    assert run(t, "show", store, "broken", "config")[0] == 1
    # no temporary folder is left in the store
    assert not [p for p in os.listdir(store) if p.startswith("ollama-safetensors")]
