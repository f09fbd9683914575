#!/usr/bin/env bash
# Fails, printing the offending lines, if a layer above the backends
# includes a backend's header: models, generate, tokenizer, io, data, nn,
# optim, autodiff and onnx speak only the Backend interface and the op front-ends
# (core/), so that every backend runs them. A capability they need becomes
# an op of the table (core/op_table.h), not a call into a backend. Only the
# library's entry points that pick a backend (nascent/default_backend.cpp,
# nascent/backends/device.cpp, the umbrella header nascent/nascent.h) and
# the programs (apps/) name backends.
#
#   scripts/check_layers.sh [dir...]   check these folders (default: the layers)
#   scripts/check_layers.sh --self-test
#       plants a violation in a scratch folder and fails unless it is caught
#       and a clean file passes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
layers=(models generate tokenizer io data nn optim autodiff serve train onnx)
pattern='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]nascent/backends/'

# Prints "file:line: text" for each violation under the folders given;
# returns 1 if there is any.
check() {
  local hits
  hits="$(grep -rnE -- "$pattern" "$@" || true)"
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
