#!/usr/bin/env bash
# The main job: install what is needed, build the release preset and run the
# nascent demo (no arguments needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target nascent_cli -- -j2
./build/release/nascent demo "$@"
