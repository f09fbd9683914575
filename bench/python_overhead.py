"""What calling nascent from Python costs, against PyTorch in the same run.

Small ops (16 elements, where the work is nothing and the time is the
call's): the per-op time of nascent's Python binding next to PyTorch's own
per-op time, each the best of several rounds of a few thousand calls. The
issue's target is nascent within 2x of PyTorch.

Large ops (1024x1024 matmul, add of 2^22 floats): the time per call of both
libraries from Python, at the same thread count, and the small-op overhead
as a share of the large op's time. That share bounds what Python adds to
the C++ call, so it shows that a large op runs at the C++ library's speed
(the C++ kernels' own rates are in gemm_bench and elementwise_bench).

  PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py
  ... --threads 1 --iters 1000 --rounds 40

Prints a markdown table; needs numpy and torch (Debian's python3-torch).
"""
import argparse
import os
import time

import numpy as np
import torch

import nascent


def per_call(f, iters):
    """Seconds per call of f() over one round of `iters` calls."""
    t0 = time.perf_counter()
    for _ in range(iters):
        f()
    return (time.perf_counter() - t0) / iters


def best_pair(fn, ft, iters, rounds):
    """The best round of each of two functions, their rounds alternating so
    that both see the same machine (it is shared and drifts)."""
    for _ in range(min(iters, 200)):  # warm caches, pools, allocators
        fn()
        ft()
    n = t = float("inf")
    for _ in range(rounds):
        n = min(n, per_call(fn, iters))
        t = min(t, per_call(ft, iters))
    return n, t


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=min(2, os.cpu_count()))
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=40)
    args = p.parse_args()
    nascent.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)

    rng = np.random.default_rng(0)

    def pair(*shape):
        a = rng.standard_normal(shape, dtype=np.float32)
        b = rng.standard_normal(shape, dtype=np.float32)
        return ((nascent.from_numpy(a.copy()), nascent.from_numpy(b.copy())),
                (torch.from_numpy(a.copy()), torch.from_numpy(b.copy())))

    (na, nb), (ta, tb) = pair(16)
    (nm, nn_), (tm, tn) = pair(4, 4)
    small = [
        ("a + b (16 f32)", lambda: na + nb, lambda: ta + tb),
        ("add(a, b)", lambda: nascent.add(na, nb), lambda: torch.add(ta, tb)),
        ("a * 2.0", lambda: na * 2.0, lambda: ta * 2.0),
        ("a.exp()", lambda: na.exp(), lambda: ta.exp()),
        ("a.sum()", lambda: na.sum(), lambda: ta.sum()),
        ("a.reshape(4, 4)", lambda: na.reshape(4, 4), lambda: ta.reshape(4, 4)),
        ("a @ b (4x4)", lambda: nm @ nn_, lambda: tm @ tn),
    ]
    (ga, gb), (gta, gtb) = pair(1024, 1024)
    (va, vb), (vta, vtb) = pair(1 << 22)
    large = [
        ("a @ b (1024x1024 f32)", lambda: ga @ gb, lambda: gta @ gtb,
         2 * 1024 ** 3, "GFLOP/s"),
        ("a + b (2^22 f32)", lambda: va + vb, lambda: vta + vtb,
         3 * 4 * (1 << 22), "GB/s"),
    ]

    loop, _ = best_pair(lambda: None, lambda: None, args.iters, args.rounds)
    print(f"nascent {nascent.__version__}, torch {torch.__version__}, "
          f"{args.threads} thread(s), best of {args.rounds} rounds of "
          f"{args.iters} calls; the empty loop's {loop * 1e9:.0f} ns per "
          f"call is subtracted; rounds alternate between the libraries")
    print()
    print("| small op | nascent (us) | torch (us) | nascent / torch |")
    print("| --- | ---: | ---: | ---: |")
    overhead = 0.0
    for name, fn, ft in small:
        n, t = best_pair(fn, ft, args.iters, args.rounds)
        n, t = n - loop, t - loop
        if name.startswith("a + b"):
            overhead = n
        print(f"| {name} | {n * 1e6:.2f} | {t * 1e6:.2f} | {n / t:.2f} |")
    print()
    print("| large op | nascent (ms) | torch (ms) | nascent rate | torch rate "
          "| nascent / torch | small-op overhead / nascent time |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, fn, ft, work, unit in large:
        # Few calls a round: each is milliseconds.
        n, t = best_pair(fn, ft, 5, args.rounds)
        print(f"| {name} | {n * 1e3:.3f} | {t * 1e3:.3f} | "
              f"{work / n / 1e9:.1f} {unit} | {work / t / 1e9:.1f} {unit} | "
              f"{n / t:.2f} | {overhead / n:.2%} |")


if __name__ == "__main__":
    main()
