#!/usr/bin/env bash
# Fails, printing the offending lines, if nascent/core/ holds device or
# platform code: conditional compilation (#pragma once is the only guard),
# CUDA/HIP, SIMD intrinsic, Highway or OS headers, a backend's headers, or
# platform and compiler macros. Core must build unchanged for every backend
# and target; such code belongs in nascent/backends/.
#
#   scripts/check_core.sh [dir]     check dir (default: nascent/core)
#   scripts/check_core.sh --self-test
#       plants one violation of each kind in a scratch folder and fails
#       unless every one is caught and a clean file passes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Alternatives joined into one extended-regex group.
any_of() {
  local IFS='|'
  echo "($*)"
}

inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'
id='[A-Za-z0-9_]*'
cuda_headers=(cuda cublas cudnn curand cufft cusparse cusolver nccl nvrtc
  nvToolsExt thrust/ cub/ cutlass/ cute/ hip/ hipblas miopen rocblas)
simd_headers=("[a-z0-9_]*intrin\.h" "arm_(neon|sve|fp16|bf16|acle)\.h"
  "wasm_simd128\.h" "altivec\.h" "riscv_vector\.h")
os_headers=("windows\.h" "unistd\.h" "pthread\.h" "dlfcn\.h" emscripten
  sys/ mach/ linux/)
macros=("__CUDA$id" __NVCC__ "__HIP$id" __x86_64__ __x86_64 __amd64__
  __i386__ _M_X64 _M_IX86 _M_ARM64 _M_ARM __aarch64__ __arm__ "__ARM_$id"
  "__AVX$id" "__SSE$id" __FMA__ __F16C__ "__wasm$id" "__EMSCRIPTEN$id"
  _WIN32 _WIN64 _MSC_VER "__MINGW$id" __CYGWIN__ __APPLE__ __MACH__
  __linux__ __linux __unix__ __unix __ANDROID__ __FreeBSD__ __GNUC__
  __clang__ "__riscv$id" "__powerpc$id" "HWY_[A-Z0-9_]+")

# Each rule: a name, then an extended regex matched against every line.
conditionals=(if ifdef ifndef elif elifdef elifndef else endif)
rules=(
  "conditional compilation"
  "^[[:space:]]*#[[:space:]]*$(any_of "${conditionals[@]}")\\b"
  "CUDA/HIP header" "${inc}$(any_of "${cuda_headers[@]}")"
  "SIMD intrinsic header" "${inc}$(any_of "${simd_headers[@]}")"
  "Highway header" "${inc}hwy/"
  "OS header" "${inc}$(any_of "${os_headers[@]}")"
  "backend header" "${inc}nascent/backends/"
  "platform or compiler macro" "\\b$(any_of "${macros[@]}")\\b"
)

# Prints "file:line: [rule] text" for each violation under $1; returns 1 if
# there is any.
check() {
  local dir="$1" found=0 i hits
  for ((i = 0; i < ${#rules[@]}; i += 2)); do
    hits="$(grep -rnE -- "${rules[i + 1]}" "$dir" || true)"
    if [[ -n "$hits" ]]; then
      found=1
      while IFS= read -r line; do
        echo "${line%%:*}:$(cut -d: -f2 <<<"$line"): [${rules[i]}]" \
          "$(cut -d: -f3- <<<"$line")"
      done <<<"$hits"
    fi
  done
  return "$found"
}

self_test() {
  local tmp failed=0 bad
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' RETURN
  printf '#pragma once\n#include <vector>\nint f();  // plain code\n' \
    >"$tmp/clean.h"
  if ! check "$tmp" >/dev/null; then
    echo "self-test: a clean file was rejected"
    failed=1
  fi
  for bad in '#if FOO' '#ifdef FOO' '  # ifndef FOO' '#elif 1' '#endif' \
    '#include <cuda_runtime.h>' '#include "cublas_v2.h"' '#include <cudnn.h>' \
    '#include <immintrin.h>' '#include <x86intrin.h>' '#include <arm_neon.h>' \
    '#include <wasm_simd128.h>' '#include "hwy/highway.h"' \
    '#include <unistd.h>' '#include <sys/mman.h>' '#else' 'int a = __AVX2__;' \
    '#include "nascent/backends/cpu/backend.h"' \
    'bool x = __CUDA_ARCH__;' 'int y = __x86_64__;' 'int z = __EMSCRIPTEN__;' \
    'int w = _WIN32;' 'int v = __linux__;' 'int u = HWY_TARGET;'; do
    rm -f "$tmp"/*
    printf '#pragma once\n%s\n' "$bad" >"$tmp/bad.cpp"
    if check "$tmp" >/dev/null; then
      echo "self-test: not caught: $bad"
      failed=1
    fi
  done
  if ((failed)); then return 1; fi
  echo "check_core self-test: all violations caught, clean file accepted"
}

if [[ "${1:-}" == "--self-test" ]]; then
  self_test
  exit
fi

dir="${1:-$root/nascent/core}"
if [[ ! -d "$dir" ]]; then
  echo "check_core: no folder $dir"
  exit 1
fi
if ! check "$dir"; then
  echo "check_core: $dir must stay device- and platform-free (see above);" \
    "move such code to nascent/backends/."
  exit 1
fi
echo "check_core: $dir is device- and platform-free"
