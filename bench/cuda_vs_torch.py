"""PyTorch on the problems of cuda_bench, in the same device session, and
the table of ratios (nascent time over PyTorch's, inverted so > 1 means
nascent is faster; bandwidth as a fraction of the copy).

    cuda_bench --json nascent.json && python3 bench/cuda_vs_torch.py nascent.json
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F


def time_ms(fn, iters, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(reps):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop) / iters)
    return statistics.median(ms)


def main():
    nascent = {r["name"]: r for r in json.load(open(sys.argv[1]))}
    reps = 11
    dev = torch.device("cuda")
    torch.manual_seed(0)
    ours = {}
    n = 1 << 28
    for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        a = torch.randn(n, device=dev, dtype=dt)
        b = torch.randn(n, device=dev, dtype=dt)
        dst = torch.empty_like(a)
        ours["copy (cudaMemcpy d2d) " + tag] = time_ms(lambda: dst.copy_(a), 20, reps)
        ours["add " + tag] = time_ms(lambda: a + b, 20, reps)
        ours["mul " + tag] = time_ms(lambda: a * b, 20, reps)
        ours["gelu " + tag] = time_ms(lambda: F.gelu(a), 20, reps)
        del a, b, dst
    x = torch.randn(32768, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, device=dev, dtype=torch.bfloat16)
    ours["softmax (32768, 4096) bf16"] = time_ms(lambda: torch.softmax(x, -1), 20, reps)
    ours["rms_norm (32768, 4096) bf16"] = time_ms(
        lambda: F.rms_norm(x, (4096,), w, 1e-6), 20, reps)
    for s in (4096, 8192):
        a = torch.randn(s, s, device=dev, dtype=torch.bfloat16)
        b = torch.randn(s, s, device=dev, dtype=torch.bfloat16)
        ours["matmul bf16 %d^3" % s] = time_ms(lambda: a @ b, 50 if s == 4096 else 10, reps)

    copy = {}
    for tag in ("f32", "bf16"):
        r = nascent["copy (cudaMemcpy d2d) " + tag]
        copy[tag] = r["bytes"] / r["ms"] / 1e6
    print("\n%-28s %10s %10s %12s %9s %9s" % (
        "op", "nascent", "torch", "rate", "vs torch", "vs copy"))
    for name, r in nascent.items():
        t = ours.get(name)
        tag = "bf16" if "bf16" in name else "f32"
        if r["flops"] > 0:
            rate = "%.1f TFLOP/s" % (r["flops"] / r["ms"] / 1e9)
            vs_copy = ""
        else:
            gbs = r["bytes"] / r["ms"] / 1e6
            rate = "%.0f GB/s" % gbs
            vs_copy = "%.2fx" % (gbs / copy[tag])
        vs_torch = "%.2fx" % (t / r["ms"]) if t else "-"
        print("%-28s %8.4fms %8.4fms %12s %9s %9s" % (
            name, r["ms"], t if t else float("nan"), rate, vs_torch, vs_copy))


if __name__ == "__main__":
    main()
