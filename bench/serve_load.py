#!/usr/bin/env python3
"""Load test of an OpenAI-compatible server: `nascent serve` and, when
llama-cpp-python's server is importable (`llama-cpp-python[server]`), the
peer on the same model and threads, in the same run. Loopback clients at
each concurrency send prompts of English text (about 128 tokens) and
generate 128 tokens (greedy; the end token kept out: ignore_eos for
nascent, a logit bias for the peer, which has no ignore_eos and takes no
token-id prompts); prints aggregate generated tokens/s (the servers' usage
counts) and time to first token (median, p95) per server and concurrency.
Not a test: no timing is asserted. The peer needs llama-cpp-python's server
extras in its venv (build/venv/bin/pip install uvicorn fastapi
sse-starlette starlette-context pydantic-settings pyyaml: its `[server]`
extra without rebuilding the wheel).

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


def one_request(port, prompt, n_gen, eos_off, out):
    body = dict({"prompt": prompt, "max_tokens": n_gen, "temperature": 0,
                 "stream": True, "stream_options": {"include_usage": True}},
                **eos_off)
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", body=json.dumps(body),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError("HTTP %d: %s" % (r.status, r.read()[:300]))
    first = None
    chunks = 0
    usage = None
    for line in r:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if chunk.get("usage"):
            usage = chunk["usage"].get("completion_tokens")
        if chunk.get("choices"):
            chunks += 1
            if first is None:
                first = time.time() - t0
    c.close()
    # The server's own count where it sends one; else a token per chunk.
    out.append((first or 0.0, usage if usage is not None else chunks))


def make_prompts(count, n_words, seed):
    """Plain English text (Debian's fortunes, which setup.sh installs, else
    a fixed word list): the same prompts for both servers, which tokenize
    them with the model's own vocabulary."""
    words = []
    path = "/usr/share/games/fortunes/fortunes"
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            words = [w for w in f.read().split() if w != "%"]
    if len(words) < 1000:
        words = ("the of and to in is that it was for on are as with his they "
                 "at be this from have or by one had not but what all were "
                 "when we there can an your which their said if do will each "
                 "about how up out them then she many some so these would "
                 "other into has more her two like him see time could no make "
                 "than first been its who now people my made over did down "
                 "only way find use may water long little very after words "
                 "called just where most know").split()
    rng = random.Random(seed)
    if len(words) < 1000:
        words = [rng.choice(words) for _ in range(20 * n_words)]
    prompts = []
    for _ in range(count):
        start = rng.randrange(0, len(words) - n_words)
        prompts.append(" ".join(words[start:start + n_words]))
    return prompts


def run_level(port, concurrency, n_prompt, n_gen, eos_off, rounds):
    results = []
    prompts = make_prompts(concurrency * rounds, n_prompt, concurrency)
    t0 = time.time()
    for k in range(rounds):
        threads = []
        for i in range(concurrency):
            prompt = prompts[k * concurrency + i]
            t = threading.Thread(target=one_request,
                                 args=(port, prompt, n_gen, eos_off, results))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
    wall = time.time() - t0
    if len(results) != concurrency * rounds:
        raise RuntimeError("%d of %d requests failed" %
                           (concurrency * rounds - len(results),
                            concurrency * rounds))
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
    ap.add_argument("--prompt", type=int, default=96,
                    help="words per prompt (96 fortune words are about 128 "
                         "tokens of the llama vocabulary)")
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--eos", type=int, default=2,
                    help="the end token, kept out of the peer's output by a "
                         "logit bias (nascent takes ignore_eos)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--device", default="cpu",
                    help="nascent serve's --device (the peer runs on the CPU)")
    a = ap.parse_args()
    levels = [int(x) for x in a.concurrency.split(",")]
    np_ = max(levels)
    ctx = np_ * (2 * a.prompt + a.gen + 16)  # Tokens: ~1.4 per word.
    servers = [("nascent", [a.nascent, "serve", "-m", a.model, "-t",
                            str(a.threads), "-np", str(np_), "-c", str(ctx),
                            "--device", a.device])]
    if a.peer_python:
        servers.append(("llama-cpp-python", [
            a.peer_python, "-m", "llama_cpp.server", "--model", a.model,
            "--n_threads", str(a.threads), "--n_ctx", str(ctx),
            # By default a new request cuts the one streaming short.
            "--interrupt_requests", "False"]))
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
                eos_off = ({"ignore_eos": True} if name == "nascent" else
                           {"logit_bias": {str(a.eos): -100}})
                tps, med, p95 = run_level(port, c, a.prompt, a.gen, eos_off,
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
