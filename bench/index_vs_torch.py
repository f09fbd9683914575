#!/usr/bin/env python3
"""Runs bench/index_bench (nascent) and PyTorch on the same shapes, same
thread count, and prints a table with the ratio torch_time / nascent_time
(above 1: nascent is faster).

  NASCENT_NUM_THREADS=2 /usr/bin/python3 bench/index_vs_torch.py build/bench
"""
import os
import subprocess
import sys
import time

import torch

threads = int(os.environ.get("NASCENT_NUM_THREADS", "2"))
torch.set_num_threads(threads)


def best_us(fn, reps):
    fn()
    t = []
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        t.append((time.perf_counter() - s) * 1e6)
    t.sort()
    return t[0]  # Best of reps, as index_bench.


def torch_cases():
    g = torch.Generator().manual_seed(1)
    w = torch.rand(32000, 1024, generator=g) * 2 - 1
    ids = torch.randint(0, 32000, (4096,), generator=g)
    yield "embedding_f32_32000x1024_ids4096", best_us(
        lambda: torch.nn.functional.embedding(ids, w), 50)
    x = torch.rand(4096, 1024, generator=g)
    idx = torch.randint(0, 1024, (4096, 256), generator=g)
    yield "gather_f32_4096x1024_axis1_k256", best_us(
        lambda: torch.gather(x, 1, idx), 50)
    x = torch.zeros(1024, 512)
    src = torch.rand(8192, 512, generator=g)
    idx = torch.randint(0, 1024, (8192, 1), generator=g).expand(8192, 512)
    yield "scatter_add_f32_1024x512_axis0_8192", best_us(
        lambda: torch.scatter_add(x, 0, idx, src), 30)
    x = torch.rand(2048, 1024, generator=g)
    idx = torch.randint(0, 1024, (512,), generator=g)
    yield "index_select_f32_2048x1024_axis1_k512", best_us(
        lambda: torch.index_select(x, 1, idx), 50)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    exe = os.path.join(build, "bench", "index_bench")
    env = dict(os.environ, NASCENT_NUM_THREADS=str(threads))
    out = subprocess.run([exe], env=env, check=True, capture_output=True,
                         text=True).stdout
    ours = {}
    for line in out.splitlines():
        name, us, nbytes = line.split()
        ours[name] = (float(us), float(nbytes))
    print(f"threads {threads}, torch {torch.__version__}")
    print(f"{'case':42} {'nascent us':>11} {'GB/s':>6} {'torch us':>9} "
          f"{'torch/nascent':>13}")
    for name, t_us in torch_cases():
        us, nbytes = ours[name]
        print(f"{name:42} {us:11.1f} {nbytes / us / 1e3:6.1f} {t_us:9.1f} "
              f"{t_us / us:13.2f}")


if __name__ == "__main__":
    main()
