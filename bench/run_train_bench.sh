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
build=${NASCENT_BENCH_BUILD:-build/bench}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DNASCENT_BUILD_BENCH=ON -DNASCENT_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" -j2 train_bench >/dev/null
/usr/bin/python3 bench/train_torch.py --threads "$threads" --rounds "$rounds" \
  --batch "$batch" --nascent "$build/bench/train_bench"
