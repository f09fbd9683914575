#!/usr/bin/env bash
# The main job: install what is needed (Fashion-MNIST included), build the
# release preset and run `nascent train` (no arguments needed): a CNN trained
# on Fashion-MNIST on the CPU, with the test accuracy of each epoch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target nascent_cli -- -j2
./build/release/nascent train "$@"
