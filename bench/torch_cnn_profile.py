"""Where PyTorch eager's CNN training step spends GPU time (the model,
optimizer and batch of bench/train_torch.py), by torch.profiler: kernels by
device time per step, and the step's wall time with and without a sync.

    python3 bench/torch_cnn_profile.py [--batch 256] [--steps 20]
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import train_torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    r = train_torch.TorchRunner("cnn", a.batch, "cuda")
    for _ in range(10):
        r.step()
    r.sync()
    t = time.perf_counter()
    for _ in range(a.steps):
        r.step()
    r.sync()
    print(f"step {1e3 * (time.perf_counter() - t) / a.steps:.3f} ms "
          f"(batch {a.batch}, no sync between steps)")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.steps):
            r.step()
        r.sync()
    ev = [e for e in prof.key_averages()]
    key = ("self_device_time_total" if hasattr(ev[0], "self_device_time_total")
           else "self_cuda_time_total")
    ev.sort(key=lambda e: -getattr(e, key))
    total = sum(getattr(e, key) for e in ev)
    print(f"GPU time per step: {total / a.steps / 1e3:.3f} ms")
    for e in ev[:30]:
        us = getattr(e, key) / a.steps
        if us <= 0:
            continue
        print(f"{us:8.1f} us {e.count // a.steps:3d}x  {e.key[:110]}")


if __name__ == "__main__":
    main()
