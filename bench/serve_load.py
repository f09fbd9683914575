#!/usr/bin/env python3
"""Load test of an OpenAI-compatible server: `nascent serve` and, when
llama-cpp-python's server is importable (`llama-cpp-python[server]`), the
peer on the same model and threads, in the same run. Loopback clients at
each concurrency send 128-token prompts (ids) and generate 128 tokens
(greedy, ignore_eos); prints aggregate generated tokens/s and time to first
token (median, p95) per server and concurrency. Not a test: no timing is
asserted.

  bench/serve_load.py --nascent build/release/nascent -m model.gguf \
      [--peer-python build/venv/bin/python3] [-t 2] [-c 1,4,8,16]
"""
import argparse
import json
import os
import http.client
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, proc, seconds=600):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/v1/models")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("server did not come up")


def one_request(port, prompt, n_gen, out):
    body = {"prompt": prompt, "max_tokens": n_gen, "temperature": 0,
            "stream": True, "ignore_eos": True}
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body=json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    first = None
    tokens = 0
    for line in r:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("choices") and chunk["choices"][0].get("text"):
            tokens += 1
            if first is None:
                first = time.time() - t0
    c.close()
    out.append((first or 0.0, tokens))


def run_level(port, concurrency, n_prompt, n_gen, vocab, rounds):
    rng = random.Random(concurrency)
    results = []
    t0 = time.time()
    for _ in range(rounds):
        threads = []
        for _ in range(concurrency):
            prompt = [rng.randrange(3, vocab) for _ in range(n_prompt)]
            t = threading.Thread(target=one_request,
                                 args=(port, prompt, n_gen, results))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
    wall = time.time() - t0
    ttft = sorted(r[0] for r in results)
    gen = sum(r[1] for r in results)
    p95 = ttft[min(len(ttft) - 1, int(0.95 * len(ttft)))]
    return gen / wall, statistics.median(ttft), p95


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nascent", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--peer-python", default="")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-c", "--concurrency", default="1,4,8,16")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    levels = [int(x) for x in a.concurrency.split(",")]
    np_ = max(levels)
    ctx = np_ * (a.prompt + a.gen + 16)
    servers = [("nascent", [a.nascent, "serve", "-m", a.model, "-t",
                            str(a.threads), "-np", str(np_), "-c", str(ctx)])]
    if a.peer_python:
        servers.append(("llama-cpp-python", [
            a.peer_python, "-m", "llama_cpp.server", "--model", a.model,
            "--n_threads", str(a.threads), "--n_ctx", str(ctx)]))
    print("| server | concurrency | gen tok/s | TTFT median s | TTFT p95 s |")
    print("| --- | --- | --- | --- | --- |")
    for name, cmd in servers:
        port = free_port()
        extra = ["--port", str(port)] + (
            ["--host", "127.0.0.1"] if name != "nascent" else [])
        proc = subprocess.Popen(cmd + extra, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                env=dict(os.environ,
                                         NASCENT_NUM_THREADS=str(a.threads)))
        try:
            wait_ready(port, proc)
            for c in levels:
                tps, med, p95 = run_level(port, c, a.prompt, a.gen, a.vocab,
                                          a.rounds)
                print("| %s | %d | %.1f | %.3f | %.3f |" % (name, c, tps, med,
                                                            p95), flush=True)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
