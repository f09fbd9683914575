#!/usr/bin/python3
"""Training throughput of the Fashion-MNIST CNN and MLP with PyTorch CPU and
with nascent (bench/train_bench.cpp), rounds alternating so both see the
same load on a shared machine; prints images/s for both and the ratio
nascent / PyTorch (above 1: nascent is faster).

Both train the same architectures (nascent's `nascent train --model cnn|mlp`)
in float32 on the same batch size and thread count, one step being forward,
cross-entropy, backward and an SGD step with momentum 0.9, on batches of
random images held in memory (data loading is left out of both).

    bench/run_train_bench.sh [threads 1,2] [rounds] [batch]
    train_torch.py --device cuda --nascent build/bench/bench/train_bench  # GPU

On a GPU (--device cuda) both train there, PyTorch eager against nascent's
CUDA backend; each round's clock stops after the device has finished.

Needs Debian's /usr/bin/python3 with python3-torch (1.13)."""
import argparse
import ctypes
import re
import subprocess
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def set_threads(threads):
    """torch.set_num_threads, and the same count for the BLAS PyTorch calls.

    Debian's torch is built against the generic BLAS interface
    (BLAS_INFO=generic), so set_num_threads does not reach OpenBLAS, which
    then runs the matmuls of a "1 thread" round on every core (measured:
    2 CPU-seconds per second on 2 vCPUs); it is told through its own
    openblas_set_num_threads.
    """
    torch.set_num_threads(threads)
    with open("/proc/self/maps") as maps:
        libs = {line.split()[-1] for line in maps if "openblas" in line}
    for lib in sorted(libs):
        try:
            ctypes.CDLL(lib).openblas_set_num_threads(threads)
        except (OSError, AttributeError):
            pass


def make_model(name):
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
            nn.Linear(128, 10))
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                         nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))


class TorchRunner:
    def __init__(self, model, batch, device):
        torch.manual_seed(0)
        self.device = device
        self.model = make_model(model).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01,
                                   momentum=0.9)
        self.batches = [(torch.randn(batch, 1, 28, 28, device=device),
                         torch.randint(0, 10, (batch,), device=device))
                        for _ in range(8)]
        self.batch = batch
        self.i = 0

    def step(self):
        x, y = self.batches[self.i % len(self.batches)]
        self.i += 1
        self.opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()

    def sync(self):
        if self.device != "cpu":
            torch.cuda.synchronize()

    def round(self, seconds):
        for _ in range(3):
            self.step()
        self.sync()
        steps = 0
        start = time.perf_counter()
        while True:
            self.step()
            steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds and steps >= 5:
                self.sync()
                elapsed = time.perf_counter() - start
                return steps * self.batch / elapsed


def nascent_round(binary, model, threads, batch, seconds, device):
    out = subprocess.run(
        [binary, "--model", model, "--threads", str(threads), "--batch",
         str(batch), "--seconds", str(seconds), "--device", device],
        check=True, capture_output=True, text=True).stdout
    m = re.search(r"images/s: ([0-9.]+)", out)
    if not m:
        raise RuntimeError("train_bench printed no images/s:\n" + out)
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", default="1,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--models", default="cnn,mlp")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--nascent", help="train_bench binary; PyTorch only if "
                   "absent")
    a = p.parse_args()
    print(f"torch {torch.__version__} on {a.device}, batch {a.batch}, best "
          f"of {a.rounds} rounds of ~{a.seconds} s, images/s")
    print("| model | threads | nascent | PyTorch | ratio |")
    print("|---|---|---|---|---|")
    for model in a.models.split(","):
        for threads in [int(t) for t in a.threads.split(",")]:
            set_threads(threads)
            runner = TorchRunner(model, a.batch, a.device)
            best_t = best_n = 0.0
            for _ in range(a.rounds):
                # Let the other side's spinning workers park first.
                time.sleep(0.05)
                best_t = max(best_t, runner.round(a.seconds))
                if a.nascent:
                    time.sleep(0.05)
                    best_n = max(best_n, nascent_round(
                        a.nascent, model, threads, a.batch, a.seconds,
                        a.device))
            ratio = f"{best_n / best_t:.2f}" if a.nascent else "-"
            nascent = f"{best_n:.0f}" if a.nascent else "-"
            print(f"| {model} | {threads} | {nascent} | {best_t:.0f} | "
                  f"{ratio} |", flush=True)


if __name__ == "__main__":
    main()
