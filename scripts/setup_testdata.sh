#!/usr/bin/env bash
# Fetches the test data a fresh clone needs from a registry package:
# llama.cpp's tokenizer test vocabularies (models/ggml-vocab-*.gguf with their
# .inp/.out vectors) and its chat templates (models/templates/), which
# llama-cpp-python's source distribution on PyPI vendors. They land in
# build/testdata/{tokenizer,templates}, the default NASCENT_DATA_DIR of the
# CMake configure when present (../shared/data otherwise).
# Safe to run again: it returns at once when the data is in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="${NASCENT_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
out=build/testdata
marker="$out/llama-cpp-python-version"
if [[ "$(cat "$marker" 2>/dev/null)" == "$version" ]]; then
  echo "setup_testdata: llama-cpp-python $version data present in $out"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: -d "$tmp" \
  "llama-cpp-python==$version"
sdist="$tmp/llama_cpp_python-$version.tar.gz"
models="llama_cpp_python-$version/vendor/llama.cpp/models"
tar xzf "$sdist" -C "$tmp" --wildcards "$models/ggml-vocab-*" \
  "$models/templates/*"
mkdir -p "$out/tokenizer" "$out/templates"
cp "$tmp/$models"/ggml-vocab-* "$out/tokenizer/"
cp -r "$tmp/$models/templates/." "$out/templates/"
echo "$version" >"$marker"
echo "setup_testdata: $(ls "$out/tokenizer" | wc -l) vocabulary files," \
  "$(ls "$out/templates" | wc -l) templates in $out"
