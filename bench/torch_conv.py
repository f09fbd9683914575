#!/usr/bin/python3
"""PyTorch side of the conv benchmark (same cases and rounds as
conv_bench.cpp). With --nascent BINARY (conv_bench) it runs conv_bench
--serve beside it, alternating one round of nascent with one round of
PyTorch so that both see the same load on a shared machine, and prints the
joint table: best ms per call and images/s for both, and the speed ratio
nascent/PyTorch (images/s over images/s: above 1 means nascent is faster).

Run through bench/run_conv_bench.sh. Needs Debian's /usr/bin/python3 with
python3-torch (1.13, oneDNN for conv on CPU)."""
import argparse
import subprocess
import time

import torch
import torch.nn.functional as F

BATCH = 64


def calls_per_round(fn):
    fn()
    fn()
    t0 = time.perf_counter()
    fn()
    return max(1, int(0.02 / max(time.perf_counter() - t0, 1e-6)))


def round_ms(fn, calls, cpu_clock):
    # CPU time (all threads) leaves out time spent descheduled: steadier for
    # one thread on a busy machine; meaningless with spinning workers.
    now = time.process_time if cpu_clock else time.perf_counter
    start = now()
    for _ in range(calls):
        fn()
    return (now() - start) / calls * 1e3


def make_cases():
    torch.manual_seed(0)
    cases = []
    conv_bwd = torch.ops.aten.convolution_backward
    for name, xs, ws in (("conv1", (BATCH, 1, 28, 28), (32, 1, 3, 3)),
                         ("conv2", (BATCH, 32, 14, 14), (64, 32, 3, 3))):
        x, w, b = torch.randn(xs), torch.randn(ws), torch.randn(ws[0])
        y = F.conv2d(x, w, b, padding=1)
        g = torch.randn_like(y)

        def backward(mask, x=x, w=w, g=g):
            return conv_bwd(g, x, w, [w.shape[0]], [1, 1], [1, 1], [1, 1],
                            False, [0, 0], 1, mask)

        cases.append((name + "_fwd",
                      lambda x=x, w=w, b=b: F.conv2d(x, w, b, padding=1)))
        cases.append((name + "_bwd_input",
                      lambda: backward([True, False, False])))
        cases.append((name + "_bwd_weight",
                      lambda: backward([False, True, False])))
    for name, xs in (("pool1", (BATCH, 32, 28, 28)),
                     ("pool2", (BATCH, 64, 14, 14))):
        x = torch.randn(xs)
        y, idx = F.max_pool2d_with_indices(x, 2)
        g = torch.randn_like(y)
        cases.append((name + "_max_fwd",
                      lambda x=x: F.max_pool2d_with_indices(x, 2)))
        cases.append((name + "_max_bwd",
                      lambda x=x, g=g, idx=idx:
                      torch.ops.aten.max_pool2d_with_indices_backward(
                          g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)))
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--nascent", help="conv_bench binary to compare with")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: process CPU time, for one thread on a busy "
                    "machine")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    cases = make_cases()
    ours = None
    if args.nascent:
        ours = subprocess.Popen([args.nascent, "--serve"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
    best_torch, best_ours, calls = {}, {}, {}
    with torch.no_grad():
        for _ in range(args.rounds):
            for t in threads:
                torch.set_num_threads(t)
                for name, fn in cases:
                    key = (name, t)
                    if key not in calls:
                        calls[key] = calls_per_round(fn)
                    # Both sides' idle workers spin for a while after a
                    # parallel region (libgomp's, nascent's pool): let them
                    # park before the other side's round.
                    time.sleep(0.03)
                    ms = round_ms(fn, calls[key], args.clock == "cpu")
                    best_torch[key] = min(best_torch.get(key, 1e30), ms)
                    if ours:
                        time.sleep(0.03)
                        ours.stdin.write(f"{name} {t} {args.clock}\n")
                        ours.stdin.flush()
                        ms = float(ours.stdout.readline())
                        best_ours[key] = min(best_ours.get(key, 1e30), ms)
    if ours:
        ours.stdin.close()
        ours.wait()
    if not ours:
        for (name, t), ms in best_torch.items():
            print(f"{name} {t} {ms:.4f}")
        return
    print(f"{'case (batch 64)':<18} {'thr':>3} {'nascent ms':>11} "
          f"{'torch ms':>9} {'nascent img/s':>14} {'torch img/s':>12} "
          f"{'speed ratio':>11}")
    for (name, t), tms in best_torch.items():
        nms = best_ours[(name, t)]
        print(f"{name:<18} {t:>3} {nms:>11.3f} {tms:>9.3f} "
              f"{BATCH / nms * 1e3:>14.0f} {BATCH / tms * 1e3:>12.0f} "
              f"{tms / nms:>11.2f}")
    print("speed ratio = nascent images/s / PyTorch images/s "
          "(>= 1: nascent at least as fast); best of "
          f"{args.rounds} alternating rounds of ~20 ms, {args.clock} clock")
    print(f"torch {torch.__version__}, oneDNN "
          f"{'on' if torch.backends.mkldnn.enabled else 'off'}")


if __name__ == "__main__":
    main()
