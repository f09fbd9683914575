#!/usr/bin/env python3
"""The gradient of one training step of `nascent train-lm`'s LLaMA against
PyTorch's (Debian's python3-torch), in float64, for the same weights and
batch: a short run writes a checkpoint (GQA, trained a few steps so the
weights are not at their initialisation), tests/tools/lm_grad computes
nascent's loss and gradient of the next step's first micro-batch, and this
script rebuilds the model in PyTorch from the checkpoint's tensors, written
here from the architecture's definition (llama.cpp's: RMSNorm, RoPE on
adjacent pairs, grouped-query causal attention, SwiGLU, untied output) and
differentiates it.

Usage: train_lm_grad_vs_torch.py NASCENT_BINARY LM_GRAD_BINARY
Exit status: 0 match, 1 a difference, 77 skipped (no torch).
"""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SKIP = 77
# float32 against float64: the relative error of a whole gradient tensor
# (measured 3.9e-7 and 4.7e-7 on the two models).
GRAD_TOL = 1e-5
LOSS_TOL = 1e-6

try:
    import numpy as np
    import torch
    from torch_llama import llama_loss
except ImportError as e:
    print(f"SKIPPED: {e}")
    sys.exit(SKIP)

DTYPES = {"F32": np.float32, "I32": np.int32, "F64": np.float64}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        buf = data[8 + n + a:8 + n + b]
        out[name] = np.frombuffer(buf, dtype=DTYPES[h["dtype"]]).reshape(
            h["shape"])
    return out, meta


def corpus(path, seed=5):
    rng = random.Random(seed)
    words = ("the a cat dog sees likes old sea sun book red green small "
             "house morning bird friend").split()
    with open(path, "w") as f:
        for _ in range(300):
            n = rng.randint(4, 12)
            s = " ".join(rng.choice(words) for _ in range(n))
            f.write(s[0].upper() + s[1:] + ".\n%\n")


def main():
    nascent, lm_grad = sys.argv[1], sys.argv[2]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "c.txt")
        corpus(text)
        for label, extra in (("gqa", ["--heads", "4", "--kv-heads", "2"]),
                             ("mqa", ["--heads", "2", "--kv-heads", "1"])):
            ckpt = os.path.join(tmp, f"{label}.safetensors")
            r = subprocess.run(
                [nascent, "train-lm", "--corpus", text, "--vocab-size", "300",
                 "--dim", "32", "--layers", "2", "--ffn", "48", "--seq", "24",
                 "--batch", "3", "--steps", "6", "--stop-at", "4",
                 "--samples", "0", "--eval-every", "0", "-t", "2", "-o", ckpt,
                 *extra], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAILED: train-lm: {r.stderr}")
                return 1
            out = os.path.join(tmp, f"{label}.grad.safetensors")
            r = subprocess.run([lm_grad, ckpt, text, out], capture_output=True,
                               text=True)
            if r.returncode != 0:
                print(f"FAILED: lm_grad: {r.stderr}")
                return 1
            ours, meta = read_safetensors(out)
            tensors, _ = read_safetensors(ckpt)
            n_head = int(extra[1])
            n_kv = int(extra[3])
            cfg = (n_head, n_kv, float(meta["rms_eps"]),
                   float(meta["rope_base"]))
            w = {k[len("model."):]: torch.tensor(v, dtype=torch.float64,
                                                 requires_grad=True)
                 for k, v in tensors.items() if k.startswith("model.")}
            ids = torch.tensor(ours["ids"].astype(np.int64))
            loss = llama_loss(w, ids, cfg)
            loss.backward()
            got_loss = float(ours["loss"][0])
            rel = abs(got_loss - loss.item()) / loss.item()
            print(f"{label}: loss nascent {got_loss:.6f}, torch "
                  f"{loss.item():.6f} (rel {rel:.1e})")
            if rel > LOSS_TOL:
                print(f"  FAILED: loss differs by {rel:.1e}")
                failures += 1
            worst = 0.0
            for name, t in w.items():
                g = ours.get("grad." + name)
                if g is None:
                    print(f"  FAILED: no gradient for {name}")
                    failures += 1
                    continue
                want = t.grad.numpy()
                err = np.abs(g - want).max() / max(np.abs(want).max(), 1e-30)
                worst = max(worst, err)
                if err > GRAD_TOL:
                    print(f"  FAILED: {name}: relative error {err:.2e}")
                    failures += 1
            print(f"  {len(w)} gradients, worst relative error {worst:.2e}")
            # The comparison can fail: a gradient of other weights differs.
            other = {k: torch.tensor(v.detach().numpy() * 1.01,
                                     requires_grad=True) for k, v in w.items()}
            llama_loss(other, ids, cfg).backward()
            moved = max(
                np.abs(ours["grad." + k] - other[k].grad.numpy()).max() /
                np.abs(other[k].grad.numpy()).max() for k in other)
            if moved < 10 * GRAD_TOL:
                print(f"  FAILED: 1% other weights give gradients within "
                      f"{moved:.1e}: the test cannot tell them apart")
                failures += 1
    print(f"{failures} failure(s)")
    return 1 if failures else 0


sys.exit(main())
