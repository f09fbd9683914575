#!/usr/bin/env bash
# Installs the peer the comparison tests run against: llama.cpp, through
# llama-cpp-python (which builds llama.cpp from source, CPU only), into the
# virtual environment build/venv that tests/CMakeLists.txt looks for.
# Safe to run again: it returns at once when the package imports and was
# built with the flags below (build/venv/peer-build-flags records them).
#
# llama.cpp is built for this CPU (GGML_NATIVE) but without its AMX
# kernels: on an Intel Xeon with AMX (amx_tile, amx_int8, amx_bf16 in
# /proc/cpuinfo) llama-cpp-python 0.3.36 crashed with SIGSEGV in
# ggml_backend_amx_mul_mat on the peer test's q8_0 model (dim 256, 2
# threads), so the comparisons could not run. GCC keeps an explicit -mno-*
# over -march=native whatever their order.
# On the 2-core development machine the first install took about an hour
# of wall time (a shared, busy machine; see README).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=build/venv
version="${NASCENT_LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
cmake_args="-DCMAKE_C_FLAGS='$flags' -DCMAKE_CXX_FLAGS='$flags'"
marker="$venv/peer-build-flags"
if [[ -x "$venv/bin/python3" ]] &&
   "$venv/bin/python3" -c "import llama_cpp" 2>/dev/null &&
   [[ "$(cat "$marker" 2>/dev/null)" == "$version $cmake_args" ]]; then
  echo "setup_peer: llama-cpp-python present in $venv"
  exit 0
fi
python3 -m venv "$venv"
start=$SECONDS
CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="${NASCENT_JOBS:-2}" \
  "$venv/bin/pip" install --force-reinstall --no-cache-dir --no-deps \
  "llama-cpp-python==$version"
"$venv/bin/pip" install "llama-cpp-python==$version"
echo "$version $cmake_args" >"$marker"
echo "setup_peer: installed llama-cpp-python $version in $((SECONDS - start)) s"
