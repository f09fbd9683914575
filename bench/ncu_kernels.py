"""Sums an ncu --csv log of gpu__time_duration by kernel: per kernel name
the calls and total microseconds, and the launch sequence of the first
--show kernels (to see one training step).

    python3 bench/ncu_kernels.py LOG.csv [--show 100]
"""
import csv
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    show = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    rows = []
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "")
        us = v / 1e3 if unit in ("nsecond", "ns") else v
        rows.append((r["Kernel Name"][:100], us))
    tot = defaultdict(lambda: [0, 0.0])
    for name, us in rows:
        tot[name][0] += 1
        tot[name][1] += us
    print(f"{len(rows)} kernels, {sum(u for _, u in rows):.1f} us in all")
    for name, (n, us) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
        print(f"{us:9.1f} us {n:4d}x {us / n:7.1f} us  {name}")
    print("--- sequence")
    for name, us in rows[:show]:
        print(f"{us:7.1f}  {name}")


if __name__ == "__main__":
    main()
