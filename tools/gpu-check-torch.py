#!/usr/bin/env python3
"""tools/gpu-check-torch.py — PyTorch's batch-1 decode of a Qwen3-14B-shaped model, for tools/gpu-check.

The comparison the [cuda] issue asks for where llama.cpp cannot be built in the budget: the fastest plain
PyTorch path at batch 1 — BF16 weights, a static KV cache, the whole decode step (embedding, 40 layers with
QK-norm, RoPE, GQA attention through scaled_dot_product_attention, SwiGLU, LM head, argmax fed back as the next
token) captured once as a CUDA graph and replayed. Weights are random (the speed does not depend on values).
Prints tok/s, GB/s and % of the spec roofline per context depth and one TORCH_JSON line.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F

L, E, H, HK, D, FF, V = 40, 5120, 40, 8, 128, 17408, 151936


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--depths", default="128,32768")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--spec-gbs", type=float, default=4800.0)
    ap.add_argument("--layers", type=int, default=L)
    a = ap.parse_args()
    nl = a.layers
    dev = torch.device("cuda")
    dt = torch.bfloat16
    depths = [int(x) for x in a.depths.split(",")]
    max_ctx = max(depths) + a.gen + 64
    torch.manual_seed(0)
    t0 = time.time()

    def mat(r, c):
        return (torch.randn(r, c, device=dev, dtype=dt) * (1.0 / c ** 0.5)).contiguous()

    layers = []
    for _ in range(nl):
        layers.append(dict(
            wqkv=mat(H * D + 2 * HK * D, E), wo=mat(E, H * D), wgu=mat(2 * FF, E), wd=mat(E, FF),
            n1=torch.ones(E, device=dev, dtype=dt), n2=torch.ones(E, device=dev, dtype=dt),
            qn=torch.ones(D, device=dev, dtype=dt), kn=torch.ones(D, device=dev, dtype=dt)))
    emb = mat(V, E)
    head = mat(V, E)
    nf = torch.ones(E, device=dev, dtype=dt)
    kc = torch.zeros(nl, HK, max_ctx, D, device=dev, dtype=dt)
    vc = torch.zeros(nl, HK, max_ctx, D, device=dev, dtype=dt)
    inv = 1.0 / (1e6 ** (torch.arange(0, D, 2, device=dev, dtype=torch.float32) / D))
    ang = torch.arange(max_ctx, device=dev, dtype=torch.float32)[:, None] * inv[None, :]
    cos_t, sin_t = ang.cos().to(dt), ang.sin().to(dt)
    weight_bytes = sum(x.numel() * 2 for ly in layers for x in ly.values()) + head.numel() * 2 + E * 2
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {nl} layers, weights {weight_bytes/1e9:.2f} GB "
          f"(set up in {time.time()-t0:.1f} s)", flush=True)

    # the copy ceiling (METHOD.md: measure the ceilings on the machine rather than trust the datasheet): a
    # device-to-device copy of 2 GiB, bytes read + written, median of 10 after 3 warm-ups
    src = torch.empty(1 << 30, dtype=torch.int16, device=dev).random_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    times = []
    for _ in range(10):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        dst.copy_(src)
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    copy_gbs = 2 * src.numel() * 2 / (times[5] * 1e-3) / 1e9
    print(f"device-to-device copy: {copy_gbs:.0f} GB/s (read + write, median of 10; spec {a.spec_gbs:.0f})", flush=True)
    del src, dst

    tok = torch.zeros(1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)

    def rms(x, w):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-6)

    def rope(x, c, s):  # NeoX pairs (i, i + D/2), x: [heads, D]
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1)

    def step(ctx):
        x = emb[tok]  # [1, E]
        c, s = cos_t[pos], sin_t[pos]
        keep = (torch.arange(ctx, device=dev) <= pos)  # [ctx]
        mask = torch.where(keep, 0.0, float("-inf")).to(dt)[None, None, None, :]
        for i, ly in enumerate(layers):
            h = rms(x, ly["n1"])
            qkv = h @ ly["wqkv"].t()
            q = qkv[:, : H * D].view(H, D)
            k = qkv[:, H * D: H * D + HK * D].view(HK, D)
            v = qkv[:, H * D + HK * D:].view(HK, D)
            q = rope(rms(q, ly["qn"]), c, s)
            k = rope(rms(k, ly["kn"]), c, s)
            kc[i].index_copy_(1, pos, k[:, None, :])
            vc[i].index_copy_(1, pos, v[:, None, :])
            o = F.scaled_dot_product_attention(q[None, :, None, :], kc[i, None, :, :ctx], vc[i, None, :, :ctx],
                                               attn_mask=mask, enable_gqa=True)
            x = x + o.reshape(1, H * D) @ ly["wo"].t()
            gu = rms(x, ly["n2"]) @ ly["wgu"].t()
            x = x + (F.silu(gu[:, :FF]) * gu[:, FF:]) @ ly["wd"].t()
        logits = rms(x, nf) @ head.t()
        tok.copy_(logits.argmax(dim=-1))
        pos.add_(1)

    runs = []
    for d in depths:
        ctx = d + a.gen + 64
        pos.fill_(d)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                step(ctx)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(ctx)
        pos.fill_(d)
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        pos.fill_(d)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(a.gen):
            g.replay()
        e1.record()
        torch.cuda.synchronize()
        ms = e0.elapsed_time(e1) / a.gen
        kv_bytes = nl * 2 * HK * D * 2 * (d + a.gen / 2)
        tps = 1000.0 / ms
        gbs = (weight_bytes + kv_bytes) * tps / 1e9
        runs.append(dict(depth=d, tok_s=round(tps, 2), gbs=round(gbs, 1), pct_spec=round(100 * gbs / a.spec_gbs, 2),
                         ms=round(ms, 3)))
        print(f"depth {d:6d}: {tps:7.1f} tok/s  {gbs:6.0f} GB/s  {100*gbs/a.spec_gbs:5.1f}% of spec  ({ms:.3f} ms/token)",
              flush=True)
        del g
    print("TORCH_JSON " + json.dumps(dict(format="bf16", bytes_per_token=weight_bytes, runs=runs,
                                          torch=torch.__version__, copy_gbs=round(copy_gbs, 1))))


if __name__ == "__main__":
    sys.exit(main())
