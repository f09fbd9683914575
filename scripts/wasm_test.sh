#!/usr/bin/env bash
# Builds the test suite for WebAssembly (the "wasm" preset: emscripten,
# SIMD128) and runs it under node. Arguments go to the test binary, e.g.
#   scripts/wasm_test.sh --gtest_filter='AllOps/*'
# NASCENT_JOBS sets the build's parallelism (default 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# emcc's JS optimizer loads acorn from Debian's node modules folder.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

# The preset names emscripten's toolchain file, so this equals
# `emcmake cmake --preset wasm`.
cmake --preset wasm
cmake --build --preset wasm -j "${NASCENT_JOBS:-2}" --target nascent_tests
node build/wasm/tests/nascent_tests.js "$@"
