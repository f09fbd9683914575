#!/usr/bin/env python3
"""Tests of `nascent make-model`, `nascent quantize` and `nascent bench` on
small random models: outputs, the JSON of bench, and clear errors for bad
arguments and bad files (exit status 1 or CLI11's, a message naming the
fault, no output file left behind).

Usage: quantize_bench_cli_test.py NASCENT_BINARY
Exit status: 0 passed, 1 failed.
"""
import json
import os
import subprocess
import sys
import tempfile

failures = []


def run(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def expect_error(binary, args, parts, what):
    rc, out, err = run(binary, *args)
    check(rc != 0, f"{what}: exit status 0")
    for p in parts:
        check(p in out + err, f"{what}: {p!r} not in {(out + err)[-300:]!r}")


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        f = lambda name: os.path.join(tmp, name)  # noqa: E731
        rc, out, err = run(binary, "make-model", f("m.gguf"), "--dim", "256",
                           "--layers", "2", "--heads", "4", "--kv-heads", "2",
                           "--ffn", "512", "--vocab-size", "320", "--type",
                           "f16")
        check(rc == 0 and os.path.exists(f("m.gguf")), f"make-model: {err}")

        rc, out, err = run(binary, "quantize", f("m.gguf"), f("q.gguf"),
                           "Q4_K_M")
        check(rc == 0, f"quantize q4_k_m: {err}")
        check("output.weight    f16 -> q6_K" in out,
              f"quantize prints the plan: {out[:300]}")
        check("as Q4_K_M" in out and "MiB" in out, f"quantize summary: {out}")
        rc, out, _ = run(binary, "info", f("q.gguf"))
        check("general.file_type" in out and " 15" in out, "file type 15")

        expect_error(binary, ["quantize", f("m.gguf"), f("x.gguf"), "q4_k_x"],
                     ["unknown type 'q4_k_x'", "q4_k_m", "q8_0"],
                     "unknown type")
        expect_error(binary, ["quantize", f("absent.gguf"), f("x.gguf"),
                              "q8_0"], ["absent.gguf"], "missing input")
        with open(f("text.gguf"), "w") as fh:
            fh.write("not gguf")
        expect_error(binary, ["quantize", f("text.gguf"), f("x.gguf"),
                              "q8_0"], ["text.gguf", "GGUF"], "not a GGUF")
        expect_error(binary, ["quantize", f("q.gguf"), f("x.gguf"), "q8_0"],
                     ["already", "--allow-requantize"], "requantize")
        expect_error(binary, ["quantize", f("m.gguf"), f("x.gguf"), "q8_0",
                              "--output-tensor-type", "q9"],
                     ["--output-tensor-type", "'q9'"], "bad tensor type")
        expect_error(binary, ["quantize", f("m.gguf"),
                              os.path.join(tmp, "no", "dir", "x.gguf"),
                              "q8_0"], ["x.gguf"], "unwritable output")
        check(not os.path.exists(f("x.gguf")), "no output left by errors")

        expect_error(binary, ["make-model", f("y.gguf"), "--dim", "100",
                              "--heads", "3"],
                     ["n_embd 100", "n_head 3"], "make-model bad heads")
        expect_error(binary, ["make-model", f("y.gguf"), "--type", "q7"],
                     ["unknown weight type 'q7'"], "make-model bad type")
        expect_error(binary, ["make-model", f("y.gguf"), "--type", "q4_k",
                              "--dim", "96", "--heads", "6"],
                     ["token_embd.weight", "q4_K"], "make-model bad rows")
        check(not os.path.exists(f("y.gguf")), "make-model errors: no file")

        rc, out, err = run(binary, "bench", "-m", f("q.gguf"), "-p", "16",
                           "-n", "4", "-t", "1,2", "-r", "2", "--json")
        check(rc == 0, f"bench --json: {err}")
        if rc == 0:
            rows = json.loads(out)
            check([(r["n_threads"], r["test"]) for r in rows] ==
                  [(1, "pp16"), (1, "tg4"), (2, "pp16"), (2, "tg4")],
                  f"bench rows {[(r['n_threads'], r['test']) for r in rows]}")
            for r in rows:
                check(len(r["samples_ts"]) == 2 and r["avg_ts"] > 0,
                      f"bench samples {r}")
                check(r["peak_rss_bytes"] > r["model_size"] / 2,
                      f"bench RSS {r['peak_rss_bytes']}")
                check(0 < r["load_ms"] <= r["ttft_ms"], f"bench times {r}")
                check(r["model_type"].endswith("Q4_K_M"), r["model_type"])
        rc, out, err = run(binary, "bench", "-m", f("m.gguf"), "-p", "8",
                           "-n", "2", "-r", "1")
        check(rc == 0 and "| llama" in out and "pp8" in out and "tg2" in out
              and "peak RSS" in out, f"bench table: {out}{err}")
        rc, out, err = run(binary, "bench", "-m", f("q.gguf"), "-p", "8",
                           "-n", "2", "-r", "1", "--json", "-d",
                           "cpu,cpu:composed")
        check(rc == 0, f"bench -d cpu,cpu:composed: {err}")
        if rc == 0:
            rows = json.loads(out)
            check([(r["backend"], r["test"]) for r in rows] ==
                  [("cpu", "pp8"), ("cpu", "tg2"), ("cpu:composed", "pp8"),
                   ("cpu:composed", "tg2")],
                  f"bench devices {[(r['backend'], r['test']) for r in rows]}")
        expect_error(binary, ["bench", "-m", f("m.gguf"), "-d", "tpu"],
                     ["unknown device 'tpu'"], "bench -d tpu")
        expect_error(binary, ["bench", "-m", f("m.gguf"), "-t", "0"],
                     ["-t 0"], "bench -t 0")
        expect_error(binary, ["bench", "-m", f("absent.gguf")],
                     ["absent.gguf"], "bench missing model")
    if failures:
        print(f"FAILED: {len(failures)} checks")
        return 1
    print("make-model, quantize and bench: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
