#!/usr/bin/env python3
"""nascent's ONNX import against ONNX Runtime on the CPU, same threads: the
models of tests/onnx/torch_export_test.py (Fashion-MNIST CNN and MLP, a
transformer encoder, a ResNet-style block, an LSTM + GRU) exported once, at
batch 1 and 64; latency of repeated runs (ORT's InferenceSession.run against
`nascent onnx run --bench`, both including the copy of the outputs to the
host) in alternating chunks: the median of the chunks' medians, and the
minimum over all runs (the better guide on a loaded machine).

    build/onnx-venv/bin/python3 bench/onnx_vs_ort.py build/release/nascent \\
        [--threads 2] [--rounds 20] [--chunks 5]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "onnx"))
import torch_export_test as models  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nascent")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--chunks", type=int, default=5)
    ap.add_argument("--batches", default="1,64")
    a = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    cases = [
        ("cnn", models.Cnn(), lambda b: torch.rand(b, 1, 28, 28, generator=gen)),
        ("mlp", models.Mlp(), lambda b: torch.rand(b, 1, 28, 28, generator=gen)),
        ("encoder", models.Encoder(),
         lambda b: torch.randint(0, 100, (b, 12), generator=gen)),
        ("resblock", models.ResBlock(),
         lambda b: torch.randn(b, 8, 16, 16, generator=gen)),
        ("recurrent", models.Recurrent(),
         lambda b: torch.randn(b, 7, 6, generator=gen)),
    ]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, make in cases:
            models.randomize_norms(model, gen)
            model.eval()
            path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, (make(2),), path, opset_version=17,
                              input_names=["x"], output_names=["y"],
                              dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            for batch in [int(b) for b in a.batches.split(",")]:
                x = make(batch).numpy()
                xin = os.path.join(tmp, f"{name}-{batch}.npy")
                np.save(xin, x)
                sess.run(None, {"x": x})  # Warm-up.
                # Alternating chunks, so that load from other processes on
                # a shared machine falls on both sides alike.
                ort_med, ort_min, nas_med, nas_min = [], [], [], []
                for _ in range(a.chunks):
                    times = []
                    for _ in range(a.rounds):
                        t0 = time.perf_counter()
                        sess.run(None, {"x": x})
                        times.append((time.perf_counter() - t0) * 1e3)
                    ort_med.append(statistics.median(times))
                    ort_min.append(min(times))
                    p = subprocess.run(
                        [a.nascent, "onnx", "run", path, "-i", xin, "--bench",
                         "--rounds", str(a.rounds), "-t", str(a.threads)],
                        capture_output=True, text=True, check=True)
                    m = re.search(r"median ([0-9.]+) ms, min ([0-9.]+) ms",
                                  p.stderr)
                    nas_med.append(float(m.group(1)))
                    nas_min.append(float(m.group(2)))
                row = (name, batch, statistics.median(ort_med), min(ort_min),
                       statistics.median(nas_med), min(nas_min))
                rows.append(row)
                print(f"{name:10} batch {batch:3}: ort {row[2]:8.3f} ms "
                      f"(min {row[3]:.3f}), nascent {row[4]:8.3f} ms "
                      f"(min {row[5]:.3f})", file=sys.stderr)
    print("\n| model | batch | ONNX Runtime ms (min) | nascent ms (min) "
          "| speed (ort / nascent), median (min) |")
    print("| --- | --- | --- | --- | --- |")
    for name, batch, om, omin, nm, nmin in rows:
        print(f"| {name} | {batch} | {om:.3f} ({omin:.3f}) | {nm:.3f} "
              f"({nmin:.3f}) | {om / nm:.2f}x ({omin / nmin:.2f}x) |")
    print(f"\n{a.threads} threads, {a.chunks} alternating chunks of "
          f"{a.rounds} runs each, onnxruntime {ort.__version__}")

if __name__ == "__main__":
    main()
