#!/usr/bin/env bash
# Generates ONNX's backend node test cases with the pinned onnx (once per
# version, into DATA) and runs nascent on every one of them.
#   node_suite.sh RUNNER PYTHON DATA [RUNNER OPTIONS...]
# Without the onnx venv (scripts/setup_onnx.sh) it reports itself skipped
# (exit 77), except under CI, where it fails.
set -euo pipefail
runner="$1" python="$2" data="$3"
if ! [[ -x "$python" ]] || ! "$python" -c "import onnx" 2>/dev/null; then
  echo "onnx_node_suite: no onnx in $python: run scripts/setup_onnx.sh"
  if [[ -n "${CI:-}" ]]; then exit 1; fi
  exit 77
fi
version="$("$python" -c "import onnx; print(onnx.__version__)")"
if [[ "$(cat "$data/version" 2>/dev/null)" != "$version" ]]; then
  rm -rf "$data"
  mkdir -p "$data/node"
  echo "onnx_node_suite: generating the node cases of onnx $version"
  (cd "$data" && "$python" -W ignore -m onnx.backend.test.cmd_tools \
    generate-data -o "$data" >/dev/null)
  echo "$version" >"$data/version"
fi
exec "$runner" "$data/node" "${@:4}"
