"""The safetensors importer (gguf_import_safetensors) on small deterministic Hugging Face checkpoints that
this test writes with the `safetensors` and `ml_dtypes` packages: a tiny Qwen3 with FP8 E4M3 weights and
128x128 weight_scale_inv tiles (as Qwen3-*-FP8 ships), and a tiny Llama in BF16 split over two shards with
model.safetensors.index.json. The dequantized GGUF tensors are compared with the reference computation
(fp8 * scale tile; the bf16 values; llama.cpp's q/k permutation), and the metadata with what
convert_hf_to_gguf.py writes. tests/gguf/gguf_tool (built by `make check`) calls the library."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
safetensors_numpy = pytest.importorskip("safetensors.numpy")
pytest.importorskip("gguf")
from gguf import GGUFReader  # noqa: E402


def gguf_tool(orun_bin):
    p = pathlib.Path(os.environ.get("ORUN_BUILDDIR", pathlib.Path(orun_bin).parent)) / "tests" / "gguf" / "gguf_tool"
    if not os.access(p, os.X_OK):
        pytest.fail(f"{p} not built (run make check)")
    return str(p)


def bytes_to_unicode():
    """GPT-2's byte -> printable character map (the byte-level BPE alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_tokenizer(d, vocab_size, llama):
    alphabet = list(bytes_to_unicode().values())
    vocab = {t: i for i, t in enumerate(alphabet)}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("a", "n")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if not llama else ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    added = [{"id": len(vocab) + k, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for k, s in enumerate(specials)]
    # a non-special added token
    added.append({"id": len(vocab) + 3, "content": "<think>", "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": False})
    assert len(vocab) + 4 <= vocab_size
    if llama:
        regex = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                 "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
        post = {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                                                          {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [], "special_tokens": {}}
        merge_list = [f"{a} {b}" for a, b in merges]
    else:
        regex = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                 "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
        post = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        merge_list = [[a, b] for a, b in merges]
    tok = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
           "post_processor": post, "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                     "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                     "merges": merge_list}}
    (d / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))
    template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    cfg = {"add_bos_token": False, "add_prefix_space": False, "chat_template": template,
           "bos_token": None if not llama else "<|begin_of_text|>",
           "eos_token": {"content": specials[2] if not llama else "<|eot_id|>", "special": True},
           "pad_token": specials[0]}
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    return vocab, added, merge_list, template


def fp8_quantize(w, rng):
    """FP8 E4M3 values and per-128x128-tile scales with W ~= fp8 * scale (how Qwen3-FP8 checkpoints look)."""
    rows, cols = w.shape
    tr, tc = -(-rows // 128), -(-cols // 128)
    scale = np.empty((tr, tc), np.float32)
    q = np.empty_like(w, dtype=ml_dtypes.float8_e4m3fn)
    for i in range(tr):
        for j in range(tc):
            blk = w[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
            s = np.float32(max(np.abs(blk).max(), 1e-8) / 448.0)
            scale[i, j] = s
            q[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = (blk / s).astype(ml_dtypes.float8_e4m3fn)
    return q, scale


def make_qwen3_fp8(d, drop=()):
    rng = np.random.default_rng(3)
    H, NH, NKV, HD, FF, L, V = 192, 4, 2, 48, 320, 2, 300
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": H, "intermediate_size": FF,
           "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NKV, "head_dim": HD,
           "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": V,
           "tie_word_embeddings": False, "bos_token_id": 297, "eos_token_id": 299, "torch_dtype": "bfloat16",
           "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                   "weight_block_size": [128, 128]}}
    (d / "config.json").write_text(json.dumps(cfg))
    tensors, ref = {}, {}
    bf = ml_dtypes.bfloat16
    emb = rng.standard_normal((V, H)).astype(bf)
    tensors["model.embed_tokens.weight"] = emb
    ref["token_embd.weight"] = emb.astype(np.float32)
    lm = rng.standard_normal((V, H)).astype(bf)
    tensors["lm_head.weight"] = lm
    ref["output.weight"] = lm.astype(np.float32)
    norm = (1 + 0.1 * rng.standard_normal(H)).astype(bf)
    tensors["model.norm.weight"] = norm
    ref["output_norm.weight"] = norm.astype(np.float32)
    shapes = {"self_attn.q_proj": (NH * HD, H, "attn_q"), "self_attn.k_proj": (NKV * HD, H, "attn_k"),
              "self_attn.v_proj": (NKV * HD, H, "attn_v"), "self_attn.o_proj": (H, NH * HD, "attn_output"),
              "mlp.gate_proj": (FF, H, "ffn_gate"), "mlp.up_proj": (FF, H, "ffn_up"), "mlp.down_proj": (H, FF, "ffn_down")}
    for l in range(L):
        for hf, (r, c, gg) in shapes.items():
            q, s = fp8_quantize(rng.standard_normal((r, c)).astype(np.float32) * 0.05, rng)
            tensors[f"model.layers.{l}.{hf}.weight"] = q
            tensors[f"model.layers.{l}.{hf}.weight_scale_inv"] = s
            full = np.repeat(np.repeat(s, 128, axis=0), 128, axis=1)[:r, :c]
            ref[f"blk.{l}.{gg}.weight"] = q.astype(np.float32) * full
        for hf, gg, n in (("input_layernorm", "attn_norm", H), ("post_attention_layernorm", "ffn_norm", H),
                          ("self_attn.q_norm", "attn_q_norm", HD), ("self_attn.k_norm", "attn_k_norm", HD)):
            v = (1 + 0.1 * rng.standard_normal(n)).astype(bf)
            tensors[f"model.layers.{l}.{hf}.weight"] = v
            ref[f"blk.{l}.{gg}.weight"] = v.astype(np.float32)
    for name in drop:
        del tensors[name]
    safetensors_numpy.save_file(tensors, str(d / "model.safetensors"), metadata={"format": "pt"})
    return cfg, ref


def permute(w, n_head):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute (q/k rows regrouped for its RoPE)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def make_llama_bf16(d):
    rng = np.random.default_rng(4)
    H, NH, NKV, FF, L, V = 128, 4, 2, 256, 2, 300
    HD = H // NH
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": FF,
           "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NKV,
           "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "vocab_size": V,
           "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16",
           "_name_or_path": "tiny/llama-test"}
    (d / "config.json").write_text(json.dumps(cfg))
    bf = ml_dtypes.bfloat16
    shards = [{}, {}]
    ref = {}
    emb = rng.standard_normal((V, H)).astype(bf)
    shards[0]["model.embed_tokens.weight"] = emb
    ref["token_embd.weight"] = emb.astype(np.float32)
    norm = rng.standard_normal(H).astype(bf)
    shards[1]["model.norm.weight"] = norm
    ref["output_norm.weight"] = norm.astype(np.float32)
    shapes = {"self_attn.q_proj": (NH * HD, H, "attn_q"), "self_attn.k_proj": (NKV * HD, H, "attn_k"),
              "self_attn.v_proj": (NKV * HD, H, "attn_v"), "self_attn.o_proj": (H, NH * HD, "attn_output"),
              "mlp.gate_proj": (FF, H, "ffn_gate"), "mlp.up_proj": (FF, H, "ffn_up"), "mlp.down_proj": (H, FF, "ffn_down")}
    for l in range(L):
        sh = shards[l % 2]
        for hf, (r, c, gg) in shapes.items():
            w = rng.standard_normal((r, c)).astype(bf)
            sh[f"model.layers.{l}.{hf}.weight"] = w
            w32 = w.astype(np.float32)
            if gg == "attn_q":
                w32 = permute(w32, NH)
            elif gg == "attn_k":
                w32 = permute(w32, NKV)
            ref[f"blk.{l}.{gg}.weight"] = w32
        for hf, gg in (("input_layernorm", "attn_norm"), ("post_attention_layernorm", "ffn_norm")):
            v = rng.standard_normal(H).astype(bf)
            sh[f"model.layers.{l}.{hf}.weight"] = v
            ref[f"blk.{l}.{gg}.weight"] = v.astype(np.float32)
    wm = {}
    for k, sh in enumerate(shards):
        fn = f"model-{k + 1:05d}-of-00002.safetensors"
        safetensors_numpy.save_file(sh, str(d / fn), metadata={"format": "pt"})
        wm.update({n: fn for n in sh})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wm}))
    return cfg, ref


def dequant(tool, path, name, shape):
    p = subprocess.run([tool, "dequant", str(path), name], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return np.frombuffer(p.stdout, dtype="<f4").reshape(shape)


def orun_json(orun_bin, path):
    p = subprocess.run([orun_bin, "gguf", str(path), "--json", "--full"], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def test_qwen3_fp8(orun_bin, tmp_path):
    tool = gguf_tool(orun_bin)
    src = tmp_path / "Qwen3-Tiny-FP8"
    src.mkdir()
    cfg, ref = make_qwen3_fp8(src)
    vocab, added, merges, template = write_tokenizer(src, cfg["vocab_size"], llama=False)
    out = tmp_path / "qwen3.gguf"
    p = subprocess.run([tool, "import", str(src), str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    info = orun_json(orun_bin, out)
    kv = {m["key"]: m["value"] for m in info["metadata"]}
    assert kv["general.architecture"] == "qwen3"
    assert kv["qwen3.block_count"] == 2 and kv["qwen3.embedding_length"] == 192
    assert kv["qwen3.feed_forward_length"] == 320 and kv["qwen3.context_length"] == 4096
    assert kv["qwen3.attention.head_count"] == 4 and kv["qwen3.attention.head_count_kv"] == 2
    assert kv["qwen3.attention.key_length"] == 48 and kv["qwen3.attention.value_length"] == 48
    assert kv["qwen3.rope.freq_base"] == 1000000.0
    assert abs(kv["qwen3.attention.layer_norm_rms_epsilon"] - 1e-6) < 1e-12
    assert kv["tokenizer.ggml.model"] == "gpt2" and kv["tokenizer.ggml.pre"] == "qwen2"
    toks = kv["tokenizer.ggml.tokens"]
    assert len(toks) == 300
    inv = {i: t for t, i in vocab.items()}
    for a in added:
        inv[a["id"]] = a["content"]
    assert toks == [inv.get(i, f"[PAD{i}]") for i in range(300)]
    types = kv["tokenizer.ggml.token_type"]
    assert [types[a["id"]] for a in added] == [3, 3, 3, 4]
    assert types[0] == 1 and types[299] == 5
    assert kv["tokenizer.ggml.merges"] == [f"{a} {b}" for a, b in merges]
    assert kv["tokenizer.ggml.eos_token_id"] == added[2]["id"]  # tokenizer_config eos wins over config.json
    assert kv["tokenizer.ggml.padding_token_id"] == added[0]["id"]
    assert kv["tokenizer.ggml.bos_token_id"] == 297  # from config.json (tokenizer_config has none)
    assert kv["tokenizer.ggml.add_bos_token"] is False
    assert kv["tokenizer.chat_template"] == template
    assert info["model"]["ok"] is True, info["model"]
    tensors = {t["name"]: t for t in info["tensors"]}
    assert tensors["blk.0.attn_q.weight"]["type"] == "FP8_E4M3_B128"
    assert tensors["blk.0.attn_q.weight"]["shape"] == [192, 192]
    assert tensors["token_embd.weight"]["type"] == "BF16"
    assert tensors["blk.1.attn_q_norm.weight"]["type"] == "F32"
    assert set(tensors) == set(ref)
    for name, r in ref.items():
        got = dequant(tool, out, name, r.shape)
        np.testing.assert_array_equal(got, r.astype(np.float32), err_msg=name)
    # GGUFReader refuses the FP8 type rather than misreading it
    with pytest.raises(ValueError):
        GGUFReader(out)


def test_llama_bf16_sharded(orun_bin, tmp_path):
    tool = gguf_tool(orun_bin)
    src = tmp_path / "llama"
    src.mkdir()
    cfg, ref = make_llama_bf16(src)
    vocab, added, merges, template = write_tokenizer(src, cfg["vocab_size"], llama=True)
    out = tmp_path / "llama.gguf"
    p = subprocess.run([tool, "import", str(src), str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = GGUFReader(out)  # all standard types: the reference reader must read it
    f = {k: v for k, v in r.fields.items()}
    assert f["general.architecture"].contents() == "llama"
    assert f["general.name"].contents() == "llama-test"
    assert f["llama.block_count"].contents() == 2
    assert f["llama.vocab_size"].contents() == 300
    assert f["llama.rope.dimension_count"].contents() == 32
    assert f["llama.rope.freq_base"].contents() == 500000.0
    assert f["general.file_type"].contents() == 32  # MOSTLY_BF16
    assert f["tokenizer.ggml.pre"].contents() == "llama-bpe"
    assert f["tokenizer.ggml.merges"].contents() == merges
    assert f["tokenizer.ggml.bos_token_id"].contents() == added[0]["id"]
    assert f["tokenizer.ggml.eos_token_id"].contents() == added[2]["id"]
    assert f["tokenizer.ggml.add_bos_token"].contents() is True  # TemplateProcessing starts with bos
    names = {t.name: t for t in r.tensors}
    assert "output.weight" not in names  # tied embeddings
    assert set(names) == set(ref)
    for name, want in ref.items():
        t = names[name]
        assert t.tensor_type.name == ("BF16" if want.ndim == 2 else "F32"), name
        got = dequant(tool, out, name, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=name)
    info = orun_json(orun_bin, out)
    assert info["model"]["ok"] is True, info["model"]


def test_import_errors(orun_bin, tmp_path):
    tool = gguf_tool(orun_bin)
    src = tmp_path / "bad"
    src.mkdir()
    # a missing scale grid
    cfg, ref = make_qwen3_fp8(src, drop=["model.layers.1.mlp.up_proj.weight_scale_inv"])
    write_tokenizer(src, cfg["vocab_size"], llama=False)
    p = subprocess.run([tool, "import", str(src), str(tmp_path / "x.gguf")], capture_output=True, text=True)
    assert p.returncode == 1
    assert "FP8 tensor 'model.layers.1.mlp.up_proj.weight' has no 'model.layers.1.mlp.up_proj.weight_scale_inv'" in p.stderr
    assert not (tmp_path / "x.gguf").exists()
    # an unsupported architecture
    cfg["architectures"] = ["GemmaForCausalLM"]
    (src / "config.json").write_text(json.dumps(cfg))
    p = subprocess.run([tool, "import", str(src), str(tmp_path / "x.gguf")], capture_output=True, text=True)
    assert p.returncode == 1 and "architecture 'GemmaForCausalLM' is not supported" in p.stderr


def make_qwen2_f16(d):
    """A tiny Qwen2 in F16 with q/k/v biases and tied embeddings, one file."""
    rng = np.random.default_rng(5)
    H, NH, NKV, FF, L, V = 128, 4, 2, 192, 2, 300
    HD = H // NH
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": H, "intermediate_size": FF,
           "num_hidden_layers": L, "num_attention_heads": NH, "num_key_value_heads": NKV,
           "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": V,
           "tie_word_embeddings": True, "torch_dtype": "float16"}
    (d / "config.json").write_text(json.dumps(cfg))
    t, ref = {}, {}
    def add(hf, gg, shape, dtype=np.float16):
        w = rng.standard_normal(shape).astype(dtype)
        t[hf] = w
        ref[gg] = w.astype(np.float32)
    add("model.embed_tokens.weight", "token_embd.weight", (V, H))
    add("model.norm.weight", "output_norm.weight", (H,))
    for l in range(L):
        p, b = f"model.layers.{l}.", f"blk.{l}."
        add(p + "self_attn.q_proj.weight", b + "attn_q.weight", (NH * HD, H))
        add(p + "self_attn.k_proj.weight", b + "attn_k.weight", (NKV * HD, H))
        add(p + "self_attn.v_proj.weight", b + "attn_v.weight", (NKV * HD, H))
        add(p + "self_attn.q_proj.bias", b + "attn_q.bias", (NH * HD,))
        add(p + "self_attn.k_proj.bias", b + "attn_k.bias", (NKV * HD,))
        add(p + "self_attn.v_proj.bias", b + "attn_v.bias", (NKV * HD,))
        add(p + "self_attn.o_proj.weight", b + "attn_output.weight", (H, NH * HD))
        add(p + "mlp.gate_proj.weight", b + "ffn_gate.weight", (FF, H))
        add(p + "mlp.up_proj.weight", b + "ffn_up.weight", (FF, H))
        add(p + "mlp.down_proj.weight", b + "ffn_down.weight", (H, FF))
        add(p + "input_layernorm.weight", b + "attn_norm.weight", (H,), np.float32)
        add(p + "post_attention_layernorm.weight", b + "ffn_norm.weight", (H,), np.float32)
    safetensors_numpy.save_file(t, str(d / "model.safetensors"))
    return cfg, ref


def test_qwen2_f16_biases(orun_bin, tmp_path):
    tool = gguf_tool(orun_bin)
    src = tmp_path / "qwen2"
    src.mkdir()
    cfg, ref = make_qwen2_f16(src)
    write_tokenizer(src, cfg["vocab_size"], llama=False)
    out = tmp_path / "qwen2.gguf"
    p = subprocess.run([tool, "import", str(src), str(out)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = GGUFReader(out)
    names = {t.name: t for t in r.tensors}
    assert set(names) == set(ref)
    assert r.fields["general.file_type"].contents() == 1  # MOSTLY_F16
    assert r.fields["qwen2.context_length"].contents() == 32768
    for name, want in ref.items():
        assert names[name].tensor_type.name == ("F16" if want.ndim == 2 else "F32"), name
        np.testing.assert_array_equal(dequant(tool, out, name, want.shape), want, err_msg=name)
    info = orun_json(orun_bin, out)
    assert info["model"]["ok"] is True, info["model"]
