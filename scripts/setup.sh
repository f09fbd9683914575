#!/usr/bin/env bash
# Installs what building, testing and benchmarking nascent needs on Debian 12
# (bookworm). Safe to run again: when every package is already installed it
# only checks and returns.
set -euo pipefail

packages=(
  # Build.
  build-essential cmake ninja-build g++ clang-format ccache
  # Libraries (headers; fmt and Highway are also used header-only in wasm).
  libfmt-dev libhwy-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  # `nascent serve`'s HTTP server and SSE streaming (cpp-httplib, MIT): a
  # maintained single-purpose library, packaged by Debian; CMake finds it
  # through its pkg-config file.
  libcpp-httplib-dev pkgconf
  # The main job's data: Fashion-MNIST's IDX files in
  # /usr/share/datasets/fashion-mnist.
  dataset-fashion-mnist
  # English text (/usr/share/games/fortunes, about 2.4 MB): the default
  # corpus of `nascent train-lm` and the tokenizer trainer's tests.
  fortunes fortunes-min
  # Tests: libgtest-dev for native builds, googletest's sources for wasm.
  libgtest-dev googletest
  # The Python module (python/, built with the release preset when these
  # are present): pybind11's headers and CMake package, Python's headers,
  # and NumPy and pytest for its tests (for Debian's /usr/bin/python3,
  # which also has python3-torch below).
  pybind11-dev python3-dev python3-numpy python3-pytest
  # The chat-template tests' peer: Jinja2, the engine Hugging Face renders
  # chat templates with (tests/peer/chat_templates_vs_jinja2.py).
  python3-jinja2
  # Fuzzing (scripts/fuzz.sh): clang 14 and its libFuzzer, ASan and UBSan
  # runtimes (compiler-rt).
  clang-14 libclang-rt-14-dev
  # The WebGPU backend's tests: the Vulkan loader and Mesa's lavapipe (a
  # Vulkan driver on the CPU); scripts/setup_webgpu.sh adds wgpu-native.
  libvulkan1 mesa-vulkan-drivers
  # Data-parallel training across processes (nascent/dist/, `train
  # --distributed mpi`): Open MPI's library, headers and mpirun (BSD).
  libopenmpi-dev openmpi-bin
  # WebAssembly build and running its tests (emscripten 3.1.6, node).
  emscripten nodejs node-acorn
  # Benchmarks and their peers (python3-venv: llama-cpp-python's venv,
  # scripts/setup_peer.sh).
  # (Debian's oneDNN CMake config needs the OpenCL headers and loader.)
  libbenchmark-dev libopenblas-dev libdnnl-dev ocl-icd-opencl-dev
  opencl-headers python3-torch python3-venv
)

missing=()
for p in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=()
if ((EUID != 0)); then sudo=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
