#!/usr/bin/env bash
# Session 5 (cudaopt) device call: the CUDA tests and the optimizer tests,
# then the CNN's training against PyTorch at batch 64 and 256 with the
# fused CUDA optimizer. CARRY holds bin.tar.xz, scripts/cuda_device_run.sh
# and bench/train_torch.py.
#   bash bench/run_session5_optim.sh CARRY
set -uo pipefail
carry="$(cd "$1" && pwd)"
out="${OUT:-/tmp/out}"
mkdir -p "$out" /tmp/nb
tar -xJf "$carry/bin.tar.xz" -C /tmp/nb || exit 1
bin=/tmp/nb/bin
# CONV_ALT=" ": no conv2d re-runs through cuDNN and im2col64.
STAGES="tests train" CONV_ALT=" " TRAIN_MODELS=cnn \
  TEST_FILTER='*Cuda*:*optim*:*Optim*:*sgd*:*adam*' \
  bash "$carry/scripts/cuda_device_run.sh" "$bin"
lt="$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /opt /usr/lib \
  -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$bin/lib:${lt:+$(dirname "$lt"):}${LD_LIBRARY_PATH:-}"
"$bin/nascent_tests" --gtest_list_tests \
  --gtest_filter='*Cuda*:*optim*:*Optim*:*sgd*:*adam*' | grep -c "^  " |
  sed 's/^/tests selected: /'
# The fused updates on the bare backend against the float64 references.
echo "=== sgd_update, adam_update without the CPU cross-check ==="
NASCENT_CUDA_CROSS_CHECK=0 timeout 60 "$bin/nascent_tests" \
  --gtest_filter='*CudaConformance.*/sgd_update:*CudaConformance.*/adam_update'
echo "=== train_bench alone ==="
for b in 64 256; do
  timeout 30 "$bin/train_bench" --model cnn --batch $b --seconds 2 \
    --device cuda
done
