#!/usr/bin/env python3
"""Training speed of `nascent train-lm`'s LLaMA against PyTorch CPU eager on
the same model, batch, sequence length and thread count, measured in the
same run: tokens per second over the same number of optimizer steps (AdamW,
float32, gradient clipping), the first included for both. nascent trains on
its default corpus (Debian's fortunes), PyTorch on random ids: the speed of
a step does not depend on the ids.

PyTorch runs the model of tests/peer/torch_llama.py (RMSNorm, RoPE, GQA
causal attention, SwiGLU) with torch.nn.functional.scaled_dot_product_attention
when the installed PyTorch has it. Run with Debian's /usr/bin/python3
(python3-torch) or any Python with torch.

Usage: bench/train_lm_vs_torch.py build/release/nascent [--threads 1,2]
       [--steps 20] [--sizes default,wide] [--device cpu|cuda]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "peer"))
import torch_llama  # noqa: E402

# name -> (vocab, dim, layers, heads, kv_heads, ffn, seq, batch): the
# default run of train-lm and one 4x wider (dim and ffn).
SIZES = {
    "default": (2048, 192, 4, 6, 6, 512, 128, 16),
    "wide": (2048, 768, 4, 12, 12, 2048, 128, 16),
}


def nascent_rate(binary, size, threads, steps, device, corpus):
    v, d, l, h, kv, ff, seq, b = size
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            [binary, "train-lm", *(["--corpus", *corpus] if corpus else []),
             "--vocab-size", str(v),
             "--dim", str(d), "--layers", str(l), "--heads", str(h),
             "--kv-heads", str(kv), "--ffn", str(ff), "--seq", str(seq),
             "--batch", str(b), "--steps", str(steps), "--eval-every", "0",
             "--eval-windows", "1", "--samples", "0", "-t", str(threads),
             "-d", device,
             "-o", os.path.join(tmp, "lm.safetensors")],
            capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    m = re.search(r"s training, ([0-9.]+) tokens/s", r.stdout)
    return float(m.group(1))


def torch_rate(size, threads, steps, device):
    v, d, l, h, kv, ff, seq, b = size
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(1)
    hd = d // h

    dev = "cuda" if device.startswith("cuda") else "cpu"

    def p(*shape, std=0.02):
        return torch.nn.Parameter(
            (torch.randn(*shape, generator=g) * std).to(dev))

    def ones(n):
        return torch.nn.Parameter(torch.ones(n, device=dev))

    w = {"token_embd.weight": p(v, d), "output_norm.weight": ones(d),
         "output.weight": p(v, d)}
    for i in range(l):
        w.update({
            f"blk.{i}.attn_norm.weight": ones(d),
            f"blk.{i}.ffn_norm.weight": ones(d),
            f"blk.{i}.attn_q.weight": p(h * hd, d),
            f"blk.{i}.attn_k.weight": p(kv * hd, d),
            f"blk.{i}.attn_v.weight": p(kv * hd, d),
            f"blk.{i}.attn_output.weight": p(d, h * hd),
            f"blk.{i}.ffn_gate.weight": p(ff, d),
            f"blk.{i}.ffn_up.weight": p(ff, d),
            f"blk.{i}.ffn_down.weight": p(d, ff)})
    opt = torch.optim.AdamW(w.values(), lr=2e-3, weight_decay=0.1)
    cfg = (h, kv, 1e-5, 10000.0)
    start = time.perf_counter()
    for _ in range(steps):
        ids = torch.randint(0, v, (b, seq + 1), generator=g).to(dev)
        loss = torch_llama.llama_loss(w, ids, cfg, fast=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(w.values(), 1.0)
        opt.step()
    if dev == "cuda":
        torch.cuda.synchronize()
    return steps * b * seq / (time.perf_counter() - start)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nascent")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--sizes", default="default,wide")
    ap.add_argument("--device", default="cpu",
                    help="cpu, or cuda for both on the GPU")
    ap.add_argument("--corpus", nargs="*", default=[],
                    help="nascent's corpus files (default: Debian's fortunes)")
    a = ap.parse_args()
    print(f"PyTorch {torch.__version__}, {a.steps} steps each, AdamW, f32, "
          f"{a.device}")
    print("| size | params | threads | nascent tok/s | PyTorch tok/s | "
          "ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in a.sizes.split(","):
        size = SIZES[name]
        v, d, l, h, kv, ff, seq, b = size
        params = 2 * v * d + l * (2 * d + d * d * 2 + 2 * d * d * kv // h
                                  + 3 * d * ff) + d
        for t in (int(x) for x in a.threads.split(",")):
            ours = nascent_rate(a.nascent, size, t, a.steps, a.device,
                                a.corpus)
            theirs = torch_rate(size, t, a.steps, a.device)
            print(f"| {name} (dim {d}, ffn {ff}, batch {b}x{seq}) | "
                  f"{params / 1e6:.1f} M | {t} | {ours:.0f} | "
                  f"{theirs:.0f} | {ours / theirs:.2f} |", flush=True)


main()
