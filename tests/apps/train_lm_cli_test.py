#!/usr/bin/env python3
"""Tests of `nascent train-lm`, `nascent export` and `nascent perplexity` on a
small corpus written here (a fortune file of simple sentences): a short run
writes its checkpoint, loss curve and held-out text and prints held-out
losses and samples; a run stopped at step N and resumed equals the
uninterrupted run byte for byte; exports in f32, f16, q8_0 and q4_k_m load in
`nascent info` and `nascent generate`; `nascent perplexity` prints
llama-perplexity's lines and its figure falls as training goes on; bad
arguments and files are clear errors.

Usage: train_lm_cli_test.py NASCENT_BINARY
Exit status: 0 passed, 1 failed.
"""
import math
import os
import random
import re
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)
    return ok


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True,
                          timeout=600)


def corpus(path, n=400, seed=3):
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "my friend", "the old man", "a bird",
                "the teacher", "our neighbour", "the little girl"]
    verbs = ["sees", "likes", "finds", "wants", "remembers", "paints"]
    objects = ["the sea", "a red apple", "the green hill", "a small house",
               "the morning sun", "an old book"]
    with open(path, "w") as f:
        for i in range(n):
            lines = []
            for _ in range(rng.randint(1, 3)):
                s = (f"{rng.choice(subjects)} {rng.choice(verbs)} "
                     f"{rng.choice(objects)}.")
                lines.append(s[0].upper() + s[1:])
            f.write(" ".join(lines) + "\n%\n")


SMALL = ["--vocab-size", "320", "--dim", "32", "--layers", "2", "--heads",
         "4", "--kv-heads", "2", "--ffn", "64", "--seq", "32", "--batch", "4",
         "--lr", "3e-3", "--warmup", "5", "--eval-every", "10",
         "--eval-windows", "8", "-t", "2"]


def final_ppl(out):
    m = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", out)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "corpus.txt")
        corpus(text)
        p = lambda name: os.path.join(tmp, name)  # noqa: E731

        # A short run: files, held-out lines, samples.
        r = run(binary, "train-lm", "--corpus", text, *SMALL, "--steps", "30",
                "--samples", "2", "-o", p("a.safetensors"))
        if not check(r.returncode == 0, f"train-lm failed: {r.stderr}"):
            return
        out = r.stdout
        print(out)
        check("tokenizer: spm-bpe with 320 tokens" in out, "tokenizer line")
        held = re.findall(r"held-out loss ([0-9.]+), perplexity ([0-9.]+)",
                          out)
        check(len(held) == 3, f"3 held-out evaluations, got {held}")
        if len(held) == 3:
            first, last = float(held[0][0]), float(held[-1][0])
            check(last < first, f"held-out loss falls ({first} -> {last})")
            check(last < math.log(320) - 1.0,
                  f"held-out loss {last} well below uniform")
        check(out.count("sample ") == 2, "two samples")
        for f in ("a.safetensors", "a.loss.svg", "a.heldout.txt"):
            check(os.path.getsize(p(f)) > 0, f"{f} written")
        svg = open(p("a.loss.svg")).read()
        check(svg.startswith("<svg") and svg.count("<circle") == 3,
              "loss curve with three validation points")
        check(not os.path.exists(p("a.sample.gguf")), "sample file removed")

        # Stopped at step 13 and resumed: the same file as the straight run.
        r = run(binary, "train-lm", "--corpus", text, *SMALL, "--steps", "30",
                "--samples", "0", "--stop-at", "13", "-o", p("b.safetensors"))
        check(r.returncode == 0 and "stopped at step 13 of 30" in r.stdout,
              f"--stop-at: {r.stdout} {r.stderr}")
        r = run(binary, "train-lm", "--resume", p("b.safetensors"),
                "--samples", "2", "-o", p("b.safetensors"), "-t", "2")
        check(r.returncode == 0 and "resumed from" in r.stdout,
              f"--resume: {r.stdout} {r.stderr}")
        check(open(p("a.safetensors"), "rb").read() ==
              open(p("b.safetensors"), "rb").read(),
              "resumed checkpoint equals the uninterrupted run's bytes")
        samples = lambda o: re.findall(r"^sample \d+: .*$", o, re.M)  # noqa
        check(samples(r.stdout) == samples(out) and samples(out),
              "resumed run samples the same text")

        # Exports.
        for kind in ("f32", "f16", "q8_0", "q4_k_m"):
            g = p(f"a-{kind}.gguf")
            r = run(binary, "export", p("a.safetensors"), g, "--type", kind)
            if not check(r.returncode == 0, f"export {kind}: {r.stderr}"):
                continue
            info = run(binary, "info", g).stdout
            check("llama" in info and "tokenizer.ggml.tokens" in info,
                  f"info of the {kind} export")
            r = run(binary, "generate", "-m", g, "-p", "The cat", "-n", "12",
                    "--temp", "0", "-t", "2")
            check(r.returncode == 0 and len(r.stdout.strip()) > 0,
                  f"generate on the {kind} export: {r.stdout!r} {r.stderr}")

        # Perplexity: llama-perplexity's lines, lower after training.
        r = run(binary, "perplexity", "-m", p("a-f32.gguf"), "-f",
                p("a.heldout.txt"), "-c", "32", "-t", "2")
        check(r.returncode == 0, f"perplexity: {r.stderr}")
        ppl, err = final_ppl(r.stdout)
        check(ppl is not None and re.match(r"\[1\][0-9.]+,\[2\]", r.stdout),
              f"perplexity output: {r.stdout!r}")
        if ppl is not None and len(held) == 3:
            check(1.0 < ppl < 320 and err > 0, f"perplexity {ppl} +/- {err}")
            # The held-out stream of training and the file differ in BOS/EOS
            # placement, so only roughly equal.
            check(abs(math.log(ppl) - float(held[-1][0])) < 0.7,
                  f"perplexity {ppl} near exp(held-out loss {held[-1][0]})")
        r0 = run(binary, "train-lm", "--corpus", text, *SMALL, "--steps", "1",
                 "--samples", "0", "-o", p("c.safetensors"))
        run(binary, "export", p("c.safetensors"), p("c.gguf"), "--type", "f32")
        r = run(binary, "perplexity", "-m", p("c.gguf"), "-f",
                p("a.heldout.txt"), "-c", "32", "-t", "2")
        early, _ = final_ppl(r.stdout)
        check(r0.returncode == 0 and early is not None and ppl is not None
              and early > 1.5 * ppl,
              f"one step's perplexity {early} well above thirty's {ppl}")

        # Errors.
        def fails(args, *parts):
            r = run(binary, *args)
            check(r.returncode != 0 and all(x in r.stderr for x in parts),
                  f"{' '.join(args[:2])}: exit {r.returncode}, stderr "
                  f"{r.stderr!r} lacks {parts}")
        fails(["train-lm", "--corpus", p("missing.txt")], "missing.txt")
        fails(["train-lm", "--corpus", text, "--vocab-size", "10"],
              "vocab-size")
        fails(["export", text, p("x.gguf")], "corpus.txt")
        fails(["export", p("a.safetensors"), p("x.gguf"), "--type", "q9"],
              "unknown type \"q9\"")
        fails(["train-lm", "--resume", p("a-f16.gguf")], "a-f16.gguf")
        short = p("short.txt")
        open(short, "w").write("The cat.")
        fails(["perplexity", "-m", p("a-f32.gguf"), "-f", short, "-c", "32"],
              "needs at least 64")
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
