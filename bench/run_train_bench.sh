#!/bin/sh
# Builds train_bench and runs it beside PyTorch (bench/train_torch.py): the
# Fashion-MNIST CNN and MLP, same batch and thread count, rounds alternating;
# prints images/s for both and the ratio.
# Usage: bench/run_train_bench.sh [threads, e.g. 1,2] [rounds] [batch]
set -e
cd "$(dirname "$0")/.."
threads=${1:-1,2}
rounds=${2:-5}
batch=${3:-64}
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
cmake --build "$build" -j 2 --target train_bench >/dev/null
/usr/bin/python3 bench/train_torch.py --threads "$threads" --rounds "$rounds" \
  --batch "$batch" --nascent "$build/bench/train_bench"
