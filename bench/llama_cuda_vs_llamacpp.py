#!/usr/bin/env python3
"""nascent's CUDA backend vs llama.cpp's CUDA build on one GPU: the
TinyLlama-1.1B-shaped random-weight model (dim 2048, 22 layers, 32 heads,
4 KV heads, FFN 5632) as F16, Q8_0 and Q4_K_M, the same files for both,
prompt processing (pp512) and generation (tg128) tokens/s from `nascent
bench -d cuda` and `llama-bench -ngl 99 -fa on` (every layer on the GPU,
flash attention on), run in turn so each ratio is taken in the same round.

  python3 bench/llama_cuda_vs_llamacpp.py NASCENT LLAMA_BENCH \\
      [--vocab ggml-vocab-llama-spm.gguf] [--work /tmp/nascent-llama] \\
      [--types F16,Q8_0,Q4_K_M] [--reps 3] [--rounds 2]

The F16 file is written by `nascent make-model` (with the vocabulary of
--vocab, else a synthesised one of 32000 tokens), the others by `nascent
quantize` (byte-identical to llama-quantize's). Files are deleted at the
end unless --keep is given.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from llama_vs_llamacpp import SHAPE  # The CPU comparison's model.

# Issue 24's targets, as nascent / llama.cpp.
TARGETS = {"pp": 1.0, "tg": 2.0}
FILES = {"F16": "f16", "Q8_0": "q8_0", "Q4_K_M": "q4_k_m"}


def run(args):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed ({r.returncode}):\n"
                 f"{r.stderr[-2000:]}")
    return r.stdout


def rates(rows):
    """{"pp": t/s, "tg": t/s} from llama-bench-style JSON rows."""
    out = {}
    for row in rows:
        ts = row.get("avg_ts")
        if ts is None:
            s = row["samples_ts"]
            ts = statistics.mean(s) if isinstance(s, list) else s
        out["pp" if row["n_prompt"] else "tg"] = float(ts)
    return out


def nascent_rates(binary, path, a):
    return rates(json.loads(run(
        [binary, "bench", "-m", path, "-p", str(a.prompt), "-n", str(a.gen),
         "-r", str(a.reps), "-d", "cuda", "--json"])))


def llama_cpp_rates(binary, path, a):
    return rates(json.loads(run(
        [binary, "-m", path, "-p", str(a.prompt), "-n", str(a.gen), "-r",
         str(a.reps), "-ngl", "99", "-fa", "on", "-o", "json"])))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("nascent")
    p.add_argument("llama_bench")
    p.add_argument("--vocab")
    p.add_argument("--work", default="/tmp/nascent-llama")
    p.add_argument("--types", default="F16,Q8_0,Q4_K_M")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--gen", type=int, default=128)
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    types = a.types.split(",")
    for t in types:
        if t not in FILES:
            sys.exit(f"--types: {t} is not one of {', '.join(FILES)}")
    os.makedirs(a.work, exist_ok=True)
    f16 = os.path.join(a.work, "f16.gguf")
    vocab = ["--vocab", a.vocab] if a.vocab else ["--vocab-size", "32000"]
    if not os.path.exists(f16):
        run([a.nascent, "make-model", f16, "--type", "f16"] + SHAPE + vocab)
    paths = {}
    for t in types:
        paths[t] = os.path.join(a.work, FILES[t] + ".gguf")
        if not os.path.exists(paths[t]):
            run([a.nascent, "quantize", "-q", f16, paths[t], FILES[t]])

    got = {}  # (type, test) -> [(nascent, llama.cpp)] per round
    for rnd in range(a.rounds):
        for t in types:
            n = nascent_rates(a.nascent, paths[t], a)
            c = llama_cpp_rates(a.llama_bench, paths[t], a)
            for test in ("pp", "tg"):
                got.setdefault((t, test), []).append((n[test], c[test]))
            print(f"round {rnd + 1} {t}: nascent pp {n['pp']:.0f} tg "
                  f"{n['tg']:.1f}, llama.cpp pp {c['pp']:.0f} tg "
                  f"{c['tg']:.1f} t/s", flush=True)

    print()
    print("| model | test | nascent t/s | llama.cpp t/s | nascent / llama.cpp "
          "(each round) | target |")
    print("| --- | --- | --- | --- | --- | --- |")
    for t in types:
        for test in ("pp", "tg"):
            pairs = got[(t, test)]
            name = f"pp{a.prompt}" if test == "pp" else f"tg{a.gen}"
            ns = statistics.mean(x for x, _ in pairs)
            cs = statistics.mean(y for _, y in pairs)
            ratios = ", ".join(f"{x / y:.2f}" for x, y in pairs)
            print(f"| {t} | {name} | {ns:.1f} | {cs:.1f} | {ratios} | "
                  f"{TARGETS[test]} |")
    if not a.keep:
        shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    main()
