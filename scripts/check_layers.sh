#!/usr/bin/env bash
# Fails, printing the offending lines, if a layer includes a header of a
# layer it must not see:
# - above the backends (models, generate, tokenizer, io, data, nn, optim,
#   train, autodiff, dist, onnx, serve), no backend header: those layers speak only the
#   Backend interface and the op front-ends (core/), so that every backend
#   runs them. A capability they need becomes an op of the table
#   (core/op_table.h), not a call into a backend. Only the library's entry
#   points that pick a backend (nascent/default_backend.cpp,
#   nascent/backends/device.cpp, the umbrella header nascent/nascent.h) and
#   the programs (apps/) name backends.
# - layers point down: core < quant < io, data, tokenizer < autodiff < nn <
#   optim < dist < train < models < onnx < generate < serve; a layer includes only layers
#   below it (io and data are file formats, so they know nothing of nn or
#   training; checkpoints belong to train).
#
#   scripts/check_layers.sh [dir...]   check these folders for backend
#                                      headers (default: every rule above)
#   scripts/check_layers.sh --self-test
#       plants violations in a scratch folder and fails unless they are
#       caught and a clean file passes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
layers=(models generate tokenizer io data nn optim autodiff dist serve train onnx)
include_of() {
  echo "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]nascent/($1)/"
}
pattern="$(include_of backends)"

# layer: the layers it must not include (those at or above it, but itself).
above=(
  "core:quant|io|data|tokenizer|autodiff|nn|optim|dist|train|models|onnx|generate|serve"
  "quant:io|data|tokenizer|autodiff|nn|optim|dist|train|models|onnx|generate|serve"
  "io:data|tokenizer|autodiff|nn|optim|dist|train|models|onnx|generate|serve"
  "data:tokenizer|autodiff|nn|optim|dist|train|models|onnx|generate|serve"
  "tokenizer:autodiff|nn|optim|dist|train|models|onnx|generate|serve"
  "autodiff:nn|optim|dist|train|models|onnx|generate|serve"
  "nn:optim|dist|train|models|onnx|generate|serve"
  "optim:dist|train|models|onnx|generate|serve"
  "dist:train|models|onnx|generate|serve"
  "train:models|onnx|generate|serve"
  "models:onnx|generate|serve"
  "onnx:generate|serve"
  "generate:serve"
)

# Prints "file:line: text" for each include matching `pattern` under the
# folders given; returns 1 if there is any.
check() {
  check_pattern "$pattern" "$@"
}
check_pattern() {
  local re="$1" hits
  shift
  hits="$(grep -rnE -- "$re" "$@" || true)"
  if [[ -n "$hits" ]]; then
    echo "$hits"
    return 1
  fi
}

self_test() {
  local tmp failed=0
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  printf '#include "nascent/core/ops.h"\nint f();\n' >"$tmp/clean.cpp"
  if ! check "$tmp" >/dev/null; then
    echo "self-test: a clean file was rejected"
    failed=1
  fi
  for bad in '#include "nascent/backends/cpu/backend.h"' \
    '  #  include <nascent/backends/cpu/thread_pool.h>'; do
    printf '%s\n' "$bad" >"$tmp/bad.cpp"
    if check "$tmp" >/dev/null; then
      echo "self-test: not caught: $bad"
      failed=1
    fi
    rm -f "$tmp/bad.cpp"
  done
  printf '#include "nascent/nn/module.h"\n' >"$tmp/up.cpp"
  if ! check_pattern "$(include_of "optim|train")" "$tmp" >/dev/null; then
    echo "self-test: an include of a lower layer was rejected"
    failed=1
  fi
  if check_pattern "$(include_of "nn|optim")" "$tmp" >/dev/null; then
    echo "self-test: not caught: io including nn"
    failed=1
  fi
  if ((failed)); then return 1; fi
  echo "check_layers self-test: violations caught, clean file accepted"
}

if [[ "${1:-}" == "--self-test" ]]; then
  self_test
  exit
fi

dirs=()
if (($#)); then
  dirs=("$@")
else
  for d in "${layers[@]}"; do
    [[ -d "$root/nascent/$d" ]] && dirs+=("$root/nascent/$d")
  done
fi
if ! check "${dirs[@]}"; then
  echo "check_layers: the layers above the backends must not include a" \
    "backend's header (see above); add an op to the table instead."
  exit 1
fi
echo "check_layers: ${#dirs[@]} layers reach the backends only through core"
if (($#)); then exit 0; fi
bad=0
for rule in "${above[@]}"; do
  layer="${rule%%:*}"
  [[ -d "$root/nascent/$layer" ]] || continue
  if ! check_pattern "$(include_of "${rule#*:}")" "$root/nascent/$layer"; then
    echo "check_layers: nascent/$layer includes a layer above it (see" \
      "above); move the code down or the include's target up."
    bad=1
  fi
done
if ((bad)); then exit 1; fi
echo "check_layers: ${#above[@]} layers include only the layers below them"
