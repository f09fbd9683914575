#!/bin/sh
# Builds conv_bench and runs it beside PyTorch on the same cases and thread
# counts, rounds alternating, and prints one table.
# Usage: bench/run_conv_bench.sh [threads, e.g. 1,2] [rounds] [wall|cpu]
# (cpu: process CPU time, steadier for one thread on a shared machine.)
set -e
cd "$(dirname "$0")/.."
threads=${1:-1,2}
rounds=${2:-15}
clock=${3:-wall}
# The bench preset's build (build/bench), or NASCENT_BENCH_BUILD's: a
# Release build with the benchmarks turned on (other settings kept).
if [ -n "${NASCENT_BENCH_BUILD:-}" ]; then
  build=$NASCENT_BENCH_BUILD
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DNASCENT_BUILD_BENCH=ON >/dev/null
else
  build=build/bench
  cmake --preset bench >/dev/null
fi
cmake --build "$build" -j 2 --target conv_bench >/dev/null
/usr/bin/python3 bench/torch_conv.py --threads "$threads" --rounds "$rounds" \
  --clock "$clock" --nascent "$build/bench/conv_bench"
