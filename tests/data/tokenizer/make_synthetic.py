#!/usr/bin/env python3
"""tests/data/tokenizer/make_synthetic.py — synthetic GGUF files for the tokenizer tests (gguf Python package).

  spm OUT.gguf            a complete tiny llama-architecture model (1 layer, 16 wide, F32) whose tokenizer is
                          SentencePiece-style (tokenizer.ggml.model "llama"): <unk> <s> </s>, the 256 byte tokens
                          <0x00>..<0xFF>, control / user-defined / unused tokens, and pieces with scores learned
                          by a small deterministic BPE-style training run over the text below.  Committed as
                          spm-tiny.gguf; llama-tokenize loads it like any model.
  bad OUTDIR              one small GGUF per tokenizer defect class (bad-*.gguf), for the loader's error tests.
  variant SRC PRE OUT     copy SRC's tokenizer (tokens, types, merges, special ids) into a complete tiny llama
                          model whose tokenizer.ggml.pre is PRE ("-" = key absent): the reference runs on it to
                          produce golden ids for pre-tokenizers no real test model uses.  Not committed (1.6 MB);
                          README.md says how it was used.
Deterministic: the same arguments give the same bytes.
"""
import struct
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

TT_NORMAL, TT_UNKNOWN, TT_CONTROL, TT_USER, TT_UNUSED, TT_BYTE = 1, 2, 3, 4, 5, 6

TRAIN_TEXT = """
The tokenizer turns text into pieces. The pieces come from a vocabulary that was learned from text like this
one: the most frequent pairs of symbols are merged first, and every merge gets a score. When the tokenizer
runs, it starts from single characters and keeps joining the neighbouring pair whose joined text has the best
score, until no pair can be joined. Anything the vocabulary cannot spell falls back to bytes.
It is a small model for tests, so the text is short; there are numbers like 2024, 1999 and 3.14, some code
such as def main(): return 0, for (int i = 0; i < n; i++) { sum += x[i]; }, and a few words in other
languages: Привет мир, привет, Grüße aus München, café, naïve, 你好世界，你好，世界。こんにちは、世界。
The quick brown fox jumps over the lazy dog. The dog sleeps. The fox runs. Hello world! Hello, hello.
What's this? It's a test; isn't it? They'll see, we've seen, I'm here, you're there.
"""

SPECIAL = [  # (text, type) after <unk> <s> </s> and the byte tokens
    ("<|im_start|>", TT_CONTROL),
    ("<|im_end|>", TT_CONTROL),
    ("<|user|>", TT_USER),
    ("<|assistant|>", TT_USER),
    ("<unused0>", TT_UNUSED),
    ("<pad>", TT_CONTROL),
]
N_MERGES = 700


def train():
    """Tiny BPE-style training: the most frequent adjacent pair is merged first (ties: lexicographic)."""
    # per word, as SentencePiece does by default (pieces never span a U+2581 inside)
    words = [list("\u2581" + word) for word in TRAIN_TEXT.split()]
    chars = sorted({c for w in words for c in w})
    merges = []
    vocab = set(chars)
    for _ in range(N_MERGES):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = max(counts.items(), key=lambda kv: (kv[1], [-ord(c) for c in kv[0][0] + "\0" + kv[0][1]]))
        (a, b), n = best
        if n < 2:
            break
        m = a + b
        merges.append(m)
        vocab.add(m)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [m]
                i += 1
    return chars, merges


def spm_vocab():
    tokens = [("<unk>", 0.0, TT_UNKNOWN), ("<s>", 0.0, TT_CONTROL), ("</s>", 0.0, TT_CONTROL)]
    tokens += [("<0x%02X>" % b, 0.0, TT_BYTE) for b in range(256)]
    tokens += [(t, 0.0, ty) for t, ty in SPECIAL]
    chars, merges = train()
    seen = {t for t, _, _ in tokens}
    for i, m in enumerate(merges):  # merged pieces: higher score = merged earlier
        if m not in seen:
            tokens.append((m, -float(i), TT_NORMAL))
            seen.add(m)
    for i, c in enumerate(chars):  # single characters last, lowest scores
        if c not in seen:
            tokens.append((c, -float(len(merges) + i), TT_NORMAL))
            seen.add(c)
    return tokens


def add_tiny_llama(w, n_vocab, n_embd=16, n_ff=32, n_head=2):
    rng = np.random.default_rng(20261130)
    w.add_context_length(256)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
        t("blk.0.%s.weight" % n, n_embd, n_embd)
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("blk.0.ffn_gate.weight", n_ff, n_embd)
    t("blk.0.ffn_up.weight", n_ff, n_embd)
    t("blk.0.ffn_down.weight", n_embd, n_ff)


def write(w, path=None):
    w.write_header_to_file(path)
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_spm(path):
    tokens = spm_vocab()
    w = GGUFWriter(path, "llama")
    w.add_name("orun tokenizer test spm-tiny")
    w.add_tokenizer_model("llama")
    w.add_token_list([t for t, _, _ in tokens])
    w.add_token_scores([s for _, s, _ in tokens])
    w.add_token_types([ty for _, _, ty in tokens])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id([t for t, _, _ in tokens].index("<pad>"))
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    add_tiny_llama(w, len(tokens))
    write(w, path)


def bpe_mini():
    """A small but valid byte-level BPE vocabulary (GPT-2 byte alphabet + a few merges)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    alphabet = [chr(c) for _, c in sorted(zip(bs, cs))]
    merges = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a"]
    tokens = alphabet + ["Ġt", "he", "Ġthe", "in", "Ġa", "<|endoftext|>"]
    types = [TT_NORMAL] * (len(tokens) - 1) + [TT_CONTROL]
    return tokens, types, merges


def make_bad(outdir):
    def base(name, model="gpt2", pre="gpt2", tokens=None, types=None, merges=None, scores=None, skip=()):
        tk, ty, mg = bpe_mini()
        tokens = tk if tokens is None else tokens
        types = ty if types is None else types
        merges = mg if merges is None else merges
        w = GGUFWriter("%s/%s" % (outdir, name), "llama")
        if "model" not in skip:
            w.add_tokenizer_model(model)
        if pre is not None:
            w.add_tokenizer_pre(pre)
        if "tokens" not in skip:
            w.add_token_list(tokens)
        if "types" not in skip:
            w.add_token_types(types)
        if "merges" not in skip:
            w.add_token_merges(merges)
        if scores is not None:
            w.add_token_scores(scores)
        return w

    jobs = []
    jobs.append(base("bad-no-model.gguf", skip=("model",)))
    jobs.append(base("bad-no-tokens.gguf", skip=("tokens", "types")))
    jobs.append(base("bad-unknown-model.gguf", model="wordpiece-9000"))
    jobs.append(base("bad-unknown-pre.gguf", pre="no-such-pre"))
    jobs.append(base("bad-no-merges.gguf", skip=("merges",)))
    tk, ty, _ = bpe_mini()
    jobs.append(base("bad-types-short.gguf", types=ty[:-10]))
    jobs.append(base("bad-scores-short.gguf", model="llama", pre=None, skip=("merges",),
                     scores=[0.0] * (len(tk) - 3)))
    jobs.append(base("bad-dup-token.gguf", tokens=tk[:-1] + ["Ġthe"]))
    w = base("bad-tokens-not-strings.gguf", skip=("tokens",))
    w.add_array("tokenizer.ggml.tokens", list(range(len(tk))))
    jobs.append(w)
    w = base("bad-model-not-string.gguf", skip=("model",))
    w.add_uint32("tokenizer.ggml.model", 2)
    jobs.append(w)
    w = base("ok-bos-out-of-range.gguf")  # llama.cpp keeps the default and warns: not an error
    w.add_bos_token_id(1000000)
    jobs.append(w)
    for w in jobs:
        write(w)
    # GGUFWriter refuses empty arrays: this one is written by hand
    raw_gguf("%s/bad-empty-vocab.gguf" % outdir, [
        ("general.architecture", "str", "llama"),
        ("tokenizer.ggml.model", "str", "gpt2"),
        ("tokenizer.ggml.pre", "str", "gpt2"),
        ("tokenizer.ggml.tokens", "strarr", []),
        ("tokenizer.ggml.merges", "strarr", ["a b"]),
    ])


def raw_gguf(path, kvs):
    """A GGUF v3 file with no tensors and the given (key, kind, value) pairs, padded to 32 bytes."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs))
    for key, kind, val in kvs:
        out += s(key)
        if kind == "str":
            out += struct.pack("<I", 8) + s(val)
        else:
            out += struct.pack("<IIQ", 9, 8, len(val)) + b"".join(s(v) for v in val)
    out += b"\0" * (-len(out) % 32)
    with open(path, "wb") as f:
        f.write(out)


def copy_field(w, f):
    t = f.types[0]
    name = f.name
    if t == GGUFValueType.ARRAY:
        et = f.types[1]
        if et == GGUFValueType.STRING:
            vals = [bytes(f.parts[i]) for i in f.data]
        else:
            vals = [f.parts[i].tolist()[0] for i in f.data]
        w.add_key_value(name, vals, GGUFValueType.ARRAY, sub_type=et)
    elif t == GGUFValueType.STRING:
        w.add_key_value(name, bytes(f.parts[f.data[0]]), t)
    else:
        w.add_key_value(name, f.parts[f.data[0]].tolist()[0], t)


def make_variant(src, pre, out):
    r = GGUFReader(src)
    w = GGUFWriter(out, "llama")
    n_vocab = 0
    for name, f in r.fields.items():
        if not name.startswith("tokenizer.") or name in ("tokenizer.ggml.pre", "tokenizer.chat_template"):
            continue
        copy_field(w, f)
        if name == "tokenizer.ggml.tokens":
            n_vocab = len(f.data)
    if pre != "-":
        w.add_tokenizer_pre(pre)
    add_tiny_llama(w, n_vocab, n_embd=8, n_ff=16, n_head=2)
    write(w, out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "spm":
        make_spm(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "bad":
        make_bad(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "variant":
        make_variant(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
