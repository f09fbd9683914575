#!/usr/bin/env bash
# Session 5 device call 2: the CUDA tests, the row kernels and the CNN's
# training against PyTorch, then a kernel profile of the batch-256 step.
# CARRY holds bin.tar.xz, scripts/cuda_device_run.sh and bench/*.py.
#   bash bench/run_session5.sh CARRY
set -uo pipefail
carry="$(cd "$1" && pwd)"; out="${OUT:-/tmp/out}"; mkdir -p "$out"
mkdir -p /tmp/nb && tar -xJf "$carry/bin.tar.xz" -C /tmp/nb || exit 1
bin=/tmp/nb/bin
cuobjdump -res-usage "$bin/nascent_tests" 2>/dev/null |
  grep -A1 -E "(softmax_rows_half|rms_rows_half|softmax_rows_regs|norm_rows_regs)INS_8bfloat16ELi4" |
  grep -oE "(softmax_rows_half|rms_rows_half|softmax_rows_regs|norm_rows_regs)INS_8bfloat16ELi4E[^_]*|REG:[0-9]+|STACK:[0-9]+" | paste - - -
STAGES="tests bench train" TEST_FILTER='*Cuda*' TRAIN_MODELS=cnn \
  bash "$carry/scripts/cuda_device_run.sh" "$bin"
lt="$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /opt /usr/lib \
  -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$bin/lib:${lt:+$(dirname "$lt"):}${LD_LIBRARY_PATH:-}"
echo "=== train_bench alone ==="
for b in 64 256; do timeout 30 "$bin/train_bench" --model cnn --batch $b --seconds 2 --device cuda; done
echo "=== ncu: nascent CNN training, batch 256 ==="
ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)"
timeout 120 "$ncu_bin" --clock-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip 800 --launch-count 300 "$bin/train_bench" --model cnn \
  --batch 256 --seconds 0.3 --device cuda > "$out/ncu_nascent.csv" 2> "$out/ncu.err"
python3 "$carry/bench/ncu_kernels.py" "$out/ncu_nascent.csv" --show 120 > "$out/ncu_nascent.txt"
head -25 "$out/ncu_nascent.txt"
