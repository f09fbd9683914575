"""PyTorch peer for bench/elementwise_bench.cpp: the same ops on the same
sizes, wall time, preallocated outputs where PyTorch allows (out=; where
allocates). bench/run_elementwise.sh runs both and prints their ratios.

    /usr/bin/python3 bench/elementwise_torch.py [--quick]
"""
import sys
import time

import torch


def median_seconds(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def main():
    quick = "--quick" in sys.argv
    sizes = [1 << 24] if quick else [1 << 24, 1 << 26]
    torch.manual_seed(0)
    print(f"torch {torch.__version__}: GB/s = (bytes read + written) / time")
    for n in sizes:
        a, b = torch.rand(n), torch.rand(n)
        x, out = torch.randn(n), torch.empty(n)
        cond = torch.rand(n) > 0.5
        cases = [
            ("copy", 8, lambda: out.copy_(a)),
            ("add", 12, lambda: torch.add(a, b, out=out)),
            ("mul", 12, lambda: torch.mul(a, b, out=out)),
            ("add scalar", 8, lambda: torch.add(a, 2.0, out=out)),
            ("exp", 8, lambda: torch.exp(x, out=out)),
            # F.gelu and F.silu have no out=; their native ops do.
            ("gelu (erf)", 8, lambda: torch._C._nn.gelu(x, out=out)),
            ("gelu (tanh)", 8,
             lambda: torch._C._nn.gelu(x, approximate="tanh", out=out)),
            ("sigmoid", 8, lambda: torch.sigmoid(x, out=out)),
            ("silu", 8, lambda: torch._C._nn.silu(x, out=out)),
            ("tanh", 8, lambda: torch.tanh(x, out=out)),
            ("erf", 8, lambda: torch.erf(x, out=out)),
            ("where", 13, lambda: torch.where(cond, a, b)),
        ]
        for threads in (1, 2):
            torch.set_num_threads(threads)
            print(f"\nf32 x 2^{n.bit_length() - 1}, {threads} thread(s)")
            print(f"{'op':<12} {'ms':>8} {'GB/s':>7} {'x copy':>7}")
            copy_gbs = None
            for name, bytes_per, fn in cases:
                t = median_seconds(fn, 3 if quick else 7)
                gbs = bytes_per * n / t / 1e9
                copy_gbs = copy_gbs or gbs
                print(f"{name:<12} {t * 1e3:8.2f} {gbs:7.1f} "
                      f"{gbs / copy_gbs:7.2f}")


if __name__ == "__main__":
    main()
