#!/usr/bin/env bash
# Installs what the ONNX tests and benchmark need: the pinned onnx from PyPI
# (its node test generators, and the onnx.proto whose field numbers
# nascent/onnx/proto.h reads) and onnxruntime (bench/onnx_vs_ort.py), into
# build/onnx-venv, a venv of Debian's Python that also sees Debian's
# python3-torch and python3-numpy (scripts/setup.sh installs them).
# Safe to run again: it returns at once when the pinned versions import.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=build/onnx-venv
onnx_version="${NASCENT_ONNX_VERSION:-1.17.0}"
ort_version="${NASCENT_ORT_VERSION:-1.20.1}"
if [[ -x "$venv/bin/python3" ]] &&
   "$venv/bin/python3" -c "
import onnx, onnxruntime
assert onnx.__version__ == '$onnx_version'
assert onnxruntime.__version__ == '$ort_version'" 2>/dev/null; then
  echo "setup_onnx: onnx $onnx_version and onnxruntime $ort_version in $venv"
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet "onnx==$onnx_version" \
  "onnxruntime==$ort_version"
echo "setup_onnx: installed onnx $onnx_version and onnxruntime $ort_version"
