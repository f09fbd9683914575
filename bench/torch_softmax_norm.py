"""PyTorch CPU timings for the shapes of reduce_bench rows.

Prints "op rows cols threads ms" lines, the same format as reduce_bench, with
the same method: one warm-up, then the minimum over 20 runs.
"""
import time

import torch


def seconds_min(fn, repeats=20):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    shapes = [(128, 1024), (4096, 1024), (64, 32000), (16384, 768)]
    torch.manual_seed(0)
    with torch.no_grad():
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for r, c in shapes:
                x = torch.randn(r, c)
                w = torch.randn(c)
                b = torch.randn(c)
                ops = {
                    "softmax": lambda: torch.softmax(x, -1),
                    "log_softmax": lambda: torch.log_softmax(x, -1),
                    "layer_norm": lambda: torch.nn.functional.layer_norm(
                        x, (c,), w, b, 1e-5),
                }
                # torch 1.13 has no rms_norm: it is written out, the way
                # models of that time did (LLaMA's RMSNorm module).
                ops["rms_norm"] = lambda: x * torch.rsqrt(
                    x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
                for name, fn in ops.items():
                    ms = seconds_min(fn) * 1e3
                    print(f"{name} {r} {c} {threads} {ms:.4f}", flush=True)


if __name__ == "__main__":
    main()
