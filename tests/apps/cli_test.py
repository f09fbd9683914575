#!/usr/bin/env python3
"""Tests of the `nascent info` and `nascent tokenize` commands: output
format, the llama.cpp test vectors through the command line, and clear
errors for bad arguments.

Usage: cli_test.py NASCENT_BINARY DATA_DIR
Exit status: 0 passed, 1 failed, 77 skipped (shared data absent).
"""
import os
import subprocess
import sys
import tempfile

failures = []


def run(binary, *args, stdin=None):
    return subprocess.run([binary, *args], input=stdin, capture_output=True)


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def cases(path):
    text = open(path + ".inp", "rb").read()
    parts = text.split(b"\n__ggml_vocab_test__\n")[:-1]
    lines = open(path + ".out", encoding="utf-8").read().split("\n")
    return [(p, "[" + ", ".join(line.split()) + "]")
            for p, line in zip(parts, lines)]


def main():
    binary, data = sys.argv[1], sys.argv[2]
    spm = os.path.join(data, "tokenizer", "ggml-vocab-llama-spm.gguf")
    gpt2 = os.path.join(data, "tokenizer", "ggml-vocab-gpt-2.gguf")
    if not (os.path.exists(spm) and os.path.exists(gpt2)):
        print(f"SKIPPED: shared test data in {data}/tokenizer is absent")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "text.txt")
        # The vectors through -f, verbatim.
        for model in (spm, gpt2):
            for text, want in cases(model):
                open(path, "wb").write(text)
                r = run(binary, "tokenize", "-m", model, "-f", path, "--ids",
                        "--no-bos", "--no-escape", "--no-parse-special")
                check(r.returncode == 0 and r.stdout.decode() == want + "\n",
                      f"{os.path.basename(model)} {text!r}: "
                      f"{r.stdout!r} != {want!r}")
        # -p with escapes and BOS; --stdin; pieces; --show-count.
        r = run(binary, "tokenize", "-m", spm, "-p", "Hello world\\n", "--ids")
        check(r.stdout == b"[1, 15043, 3186, 13]\n", f"-p: {r.stdout!r}")
        r = run(binary, "tokenize", "-m", spm, "-p", "Hello\\n", "--ids",
                "--no-escape", "--no-bos")
        check(r.stdout == b"[15043, 29905, 29876]\n",
              f"--no-escape: {r.stdout!r}")
        r = run(binary, "tokenize", "-m", spm, "--stdin", "--ids",
                stdin=b"<s>Hello")
        check(r.stdout == b"[1, 1, 15043]\n", f"--stdin: {r.stdout!r}")
        r = run(binary, "tokenize", "-m", spm, "-p", "Hello", "--show-count")
        check(r.stdout == b"     1 -> '<s>'\n 15043 -> ' Hello'\n"
              b"Total number of tokens: 2\n", f"pieces: {r.stdout!r}")
        # Argument errors: clear messages, non-zero status.
        r = run(binary, "tokenize", "-m", spm)
        check(r.returncode == 1 and b"give the text with one of" in r.stderr,
              f"no text: {r.returncode} {r.stderr!r}")
        r = run(binary, "tokenize", "-m", spm, "-p", "x", "--stdin")
        check(r.returncode != 0 and b"--prompt excludes --stdin" in r.stderr,
              f"two texts: {r.returncode} {r.stderr!r}")
        r = run(binary, "tokenize", "-p", "x")
        check(r.returncode != 0 and b"--model is required" in r.stderr,
              f"no model: {r.returncode} {r.stderr!r}")
        r = run(binary, "tokenize", "-m", os.path.join(tmp, "none.gguf"),
                "-p", "x")
        check(r.returncode != 0 and b"File does not exist" in r.stderr,
              f"missing model: {r.returncode} {r.stderr!r}")
        open(path, "wb").write(b"not a gguf file")
        r = run(binary, "info", path)
        check(r.returncode == 1 and
              b"offset 0: not a GGUF file" in r.stderr,
              f"info on text: {r.returncode} {r.stderr!r}")
        # info on a vocab file.
        r = run(binary, "info", spm, "-n", "2")
        out = r.stdout.decode()
        check(r.returncode == 0 and "GGUF v3" in out and
              "metadata (22 keys)" in out and
              '[string; 32000]  ["<unk>", "<s>", ... (31998 more)]' in out and
              "tokenizer: SentencePiece (llama), 32000 tokens, BOS 1 '<s>'"
              in out and "tensors (0, 0 parameters, 0 B)" in out,
              f"info: {out[:400]!r}")
    if failures:
        print(f"FAILED: {len(failures)} checks")
        return 1
    print("cli: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
