"""`orun gguf` against the `gguf` Python package's reader (GGUFReader) on every key and tensor of both real
test models, the error format on invalid files, and orun's FP8 type (which GGUFReader must refuse)."""
import json
import struct
import subprocess

import numpy as np
import pytest

from conftest import model_path

gguf = pytest.importorskip("gguf")
from gguf import GGUFReader, GGUFValueType as VT  # noqa: E402

VT_NAMES = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16", VT.UINT32: "u32", VT.INT32: "i32",
            VT.FLOAT32: "f32", VT.BOOL: "bool", VT.STRING: "string", VT.ARRAY: "array", VT.UINT64: "u64",
            VT.INT64: "i64", VT.FLOAT64: "f64"}


def run_json(orun_bin, path):
    p = subprocess.run([orun_bin, "gguf", str(path), "--json", "--full"], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def scalar(t, part):
    v = part[0]
    if t == VT.FLOAT32:
        return float(np.float32(v))
    if t == VT.FLOAT64:
        return float(v)
    if t == VT.BOOL:
        return bool(v)
    return int(v)


def py_value(field):
    t = field.types[0]
    if t == VT.STRING:
        return bytes(field.parts[-1]).decode("utf-8", errors="replace")
    if t == VT.ARRAY:
        et = field.types[1]
        if et == VT.STRING:
            return [bytes(field.parts[i]).decode("utf-8", errors="replace") for i in field.data]
        if et == VT.ARRAY:
            pytest.skip("nested arrays are not decoded by GGUFReader")
        return [scalar(et, field.parts[i]) for i in field.data]
    return scalar(t, field.parts[-1])


def orun_value(kv):
    v = kv["value"]
    t = kv["type"]
    if t == "f32":
        return float(np.float32(v))
    if t == "array" and kv["element_type"] == "f32":
        return [float(np.float32(x)) for x in v]
    return v


@pytest.mark.parametrize("mid", ["qwen2", "llama"])
def test_every_key_and_tensor(orun_bin, mid):
    path = model_path(mid)
    reader = GGUFReader(path)
    out = run_json(orun_bin, path)
    assert out["version"] == 3
    fields = [(k, f) for k, f in reader.fields.items() if not k.startswith("GGUF.")]
    assert [kv["key"] for kv in out["metadata"]] == [k for k, _ in fields]
    for kv, (name, field) in zip(out["metadata"], fields):
        assert kv["type"] == VT_NAMES[field.types[0]], name
        if field.types[0] == VT.ARRAY:
            assert kv["element_type"] == VT_NAMES[field.types[1]], name
            assert kv["length"] == len(field.data), name
            assert kv["complete"] is True
        assert orun_value(kv) == py_value(field), name
    assert len(out["tensors"]) == len(reader.tensors)
    params = nbytes = 0
    for t, rt in zip(out["tensors"], reader.tensors):
        assert t["name"] == rt.name
        assert t["type"] == rt.tensor_type.name
        assert t["type_id"] == int(rt.tensor_type)
        assert t["shape"] == [int(x) for x in rt.shape]
        assert t["offset"] == rt.data_offset
        assert t["bytes"] == rt.n_bytes
        params += int(rt.n_elements)
        nbytes += int(rt.n_bytes)
    assert out["totals"]["parameters"] == params
    assert out["totals"]["bytes"] == nbytes
    assert out["model"]["ok"] is True
    assert out["model"]["architecture"] == mid


def test_text_output(orun_bin):
    path = model_path("llama")
    p = subprocess.run([orun_bin, "gguf", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    assert "GGUF version 3" in p.stdout
    assert 'tokenizer.ggml.tokens                  string[49152]    ["<|endoftext|>",' in p.stdout
    assert "blk.0.ffn_down.weight                    Q4_1     [1536, 576]" in p.stdout
    assert "totals: 134515008 parameters, 96576768 bytes of tensor data" in p.stdout


def test_invalid_files(orun_bin, tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUX" + bytes(20))
    p = subprocess.run([orun_bin, "gguf", str(bad)], capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr == f"{bad}: offset 0: bad magic 'GGUX', expected 'GGUF'\n"
    # a valid header whose key count cannot fit in the file
    bad.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1000))
    p = subprocess.run([orun_bin, "gguf", str(bad), "--json"], capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.startswith(f"{bad}: offset 8: 0 tensors and 1000 key/value pairs need at least")
    p = subprocess.run([orun_bin, "gguf", str(tmp_path / "missing.gguf")], capture_output=True, text=True)
    assert p.returncode == 1 and "offset 0: cannot open: No such file or directory" in p.stderr
    p = subprocess.run([orun_bin, "gguf"], capture_output=True, text=True)
    assert p.returncode == 2
    p = subprocess.run([orun_bin, "gguf", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "Usage: orun gguf FILE" in p.stdout


def fp8_file(path):
    """A GGUF with one orun FP8 tensor (type 20280), 300 x 200 values + a 2 x 3 grid of f32 scales."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    kv = s("general.architecture") + struct.pack("<I", 8) + s("llama")
    info = s("w.weight") + struct.pack("<I", 2) + struct.pack("<QQ", 300, 200) + struct.pack("<IQ", 20280, 0)
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + kv + info
    head += bytes(-len(head) % 32)
    rng = np.random.default_rng(1)
    q = rng.integers(0, 0x7e, size=300 * 200, dtype=np.uint8)
    scales = np.array([[1, 2, 3], [4, 5, 6]], dtype="<f4")
    path.write_bytes(head + q.tobytes() + scales.tobytes())


def test_fp8_type_is_refused_by_gguf_py_and_read_by_orun(orun_bin, tmp_path):
    path = tmp_path / "fp8.gguf"
    fp8_file(path)
    with pytest.raises(ValueError, match="20280"):
        GGUFReader(path)
    out = run_json(orun_bin, path)
    assert out["tensors"] == [{"name": "w.weight", "type": "FP8_E4M3_B128", "type_id": 20280, "shape": [300, 200],
                               "offset": out["data_offset"], "bytes": 300 * 200 + 6 * 4}]
