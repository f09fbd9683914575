#!/usr/bin/env bash
# Installs a build of nascent into a temporary prefix, moves the prefix (the
# package must be relocatable), then builds examples/ out of tree against it
# with find_package(nascent) and one example with pkg-config, and runs them:
# each checks its own results, and the GGUF example's streamed text must be
# what `nascent generate` prints for the same model, prompt and sampling.
#   bash scripts/examples_test.sh [BUILD_DIR]     (default build/release)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build="${1:-build/release}"
jobs="${NASCENT_JOBS:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/staged" >/dev/null
mv "$tmp/staged" "$tmp/prefix"
prefix="$tmp/prefix"
# A copy of examples/, so nothing can come from the source tree.
cp -r examples "$tmp/src"

launcher=() cxx=(c++)
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache) cxx=(ccache c++)
fi
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" >/dev/null
cmake --build "$tmp/build" -j "$jobs"

# pkg-config: the same tensors example, compiled and linked by hand.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags="$(pkg-config --cflags nascent)"
libs="$(pkg-config --libs nascent)"
# shellcheck disable=SC2086  # the flags are words
"${cxx[@]}" -std=c++20 -O1 $flags \
  "$tmp/src/tensors_autodiff.cpp" -o "$tmp/pc_tensors" $libs

status=0
# The README's snippets are copies of marked regions of these files.
python3 scripts/check_readme_snippets.py || status=1
run() {
  echo "--- $*"
  if ! "$@"; then
    echo "--- FAILED: $*"
    status=1
  fi
}
export NASCENT_NUM_THREADS=2
run "$tmp/build/tensors_autodiff"
run "$tmp/pc_tensors"
run "$tmp/build/train_mlp" "$tmp/mlp.safetensors"
run "$tmp/build/custom_module"
run "$tmp/build/backends"

nascent="$prefix/bin/nascent"
"$nascent" make-model "$tmp/tiny.gguf" --seed 3 >/dev/null
prompt="Once upon a time"
sampling=(--temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 --seed 1)
echo "--- generate_gguf vs nascent generate"
if "$tmp/build/generate_gguf" "$tmp/tiny.gguf" "$prompt" 24 >"$tmp/ex.txt" &&
  "$nascent" generate -m "$tmp/tiny.gguf" -p "$prompt" -n 24 "${sampling[@]}" \
    >"$tmp/cli.txt" 2>/dev/null &&
  cmp "$tmp/ex.txt" "$tmp/cli.txt"; then
  echo "the same $(wc -c <"$tmp/ex.txt") bytes"
else
  echo "--- FAILED: generate_gguf differs from nascent generate"
  diff "$tmp/ex.txt" "$tmp/cli.txt" || true
  status=1
fi
exit "$status"
