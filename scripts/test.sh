#!/usr/bin/env bash
# The project's test command (CI runs it from .ci/run): installs what is
# missing, builds the release preset with warnings as errors (the Python
# module too) and runs ctest (the C++ suite and, as python_tests, the
# module's pytest suite), builds and runs examples/ against an install of
# that build,
# runs every fuzz target for a minute under ASan + UBSan (scripts/fuzz.sh),
# checks that core is device-free, that the layers above the backends reach
# them only through core, and that sources are clang-formatted, then
# runs the test suite as WebAssembly under node. Every check runs even after
# one fails; the exit status is non-zero if any failed.
# NASCENT_JOBS sets the build's parallelism (default 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NASCENT_JOBS="${NASCENT_JOBS:-2}"

failed=()
step() {
  local name="$1"
  shift
  echo
  echo "=== $name: $* ==="
  local start=$SECONDS
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - start)) s) ==="
  else
    echo "=== $name: FAILED ($((SECONDS - start)) s) ==="
    failed+=("$name")
  fi
}

native_build() {
  cmake --preset release && cmake --build --preset release -j "$NASCENT_JOBS"
}

format_check() {
  local dirs=() d
  for d in nascent apps tests bench examples fuzz python; do
    [[ -d "$d" ]] && dirs+=("$d")
  done
  find "${dirs[@]}" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' \
    -o -name '*.cc' \) -print0 | sort -z |
    xargs -0 clang-format --dry-run --Werror
}

step setup bash scripts/setup.sh
if [[ " ${failed[*]} " == *" setup "* ]]; then
  echo "setup failed: nothing else can run"
  exit 1
fi
# The peer of the comparison tests (llama.cpp via llama-cpp-python, built
# from source into build/venv once; later runs find it installed).
step peer-setup bash scripts/setup_peer.sh
# Tokenizer vectors and chat templates from a PyPI source distribution.
step testdata bash scripts/setup_testdata.sh
# The pinned onnx (node test cases) and onnxruntime (benchmark peer) in
# build/onnx-venv; the ONNX tests fail under CI without them.
step onnx-setup bash scripts/setup_onnx.sh
# The WebGPU backend's wgpu-native (from the pinned `wgpu` wheel, into
# build/webgpu-sdk) and lavapipe, the Vulkan driver its tests run on here.
step webgpu-setup bash scripts/setup_webgpu.sh
# The pinned openai client of the `nascent serve` tests, in build/serve-venv.
step serve-setup bash scripts/setup_serve.sh
step build native_build
# The README's benchmark preset must configure after the set-up (its peers,
# OpenBLAS and oneDNN, are found); building it is left to bench runs.
step bench-configure cmake --preset bench
if [[ " ${failed[*]} " != *" build "* ]]; then
  step ctest ctest --preset release -j "$NASCENT_JOBS"
  # examples/ built out of tree against an install of the release build
  # (find_package and pkg-config), and run.
  step examples bash scripts/examples_test.sh build/release
fi
# Every fuzz target for 30 s under ASan + UBSan (fuzz/README.md; longer
# campaigns by hand).
step fuzz bash scripts/fuzz.sh 30
step check_core bash scripts/check_core.sh
step check_layers bash scripts/check_layers.sh
step clang-format format_check
step wasm bash scripts/wasm_test.sh --gtest_brief=1

echo
if ((${#failed[@]})); then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: all checks passed"
