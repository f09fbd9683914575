#!/usr/bin/env bash
# Installs the peer the comparison tests run against: llama.cpp, through
# llama-cpp-python (which builds llama.cpp from source, CPU only), into the
# virtual environment build/venv that tests/CMakeLists.txt looks for.
# Safe to run again: it returns at once when the package imports.
# On the 2-core development machine the first install took about an hour
# of wall time (a shared, busy machine; see README).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=build/venv
version="${NASCENT_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
if [[ -x "$venv/bin/python3" ]] &&
   "$venv/bin/python3" -c "import llama_cpp" 2>/dev/null; then
  echo "setup_peer: llama-cpp-python present in $venv"
  exit 0
fi
python3 -m venv "$venv"
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL="${NASCENT_JOBS:-2}" \
  "$venv/bin/pip" install "llama-cpp-python==$version"
echo "setup_peer: installed llama-cpp-python $version in $((SECONDS - start)) s"
