#!/usr/bin/env bash
# A closer look at the CUDA row kernels and the CNN's training step, on a
# machine with a GPU (one device call, about 5 minutes): the row-kernel
# variants of bench/cuda_rows_variants.cu (built here with nvcc), the
# registers and stack of the library's bf16 row kernels (their occupancy
# set their speed: bench/NOTES.md, "CUDA (H200)"), and a kernel-by-kernel
# profile of the CNN's batch-256 step, nascent (ncu over train_bench)
# against PyTorch eager (torch.profiler). Logs under $OUT (default
# ./cuda-run).
#
#   bash bench/run_rows_cnn_profile.sh BIN_DIR
#
# BIN_DIR holds nascent_tests and train_bench (and, in lib/, shared
# libraries the machine lacks), as for scripts/cuda_device_run.sh.
set -uo pipefail
bin="$(cd "${1:?usage: run_rows_cnn_profile.sh BIN_DIR}" && pwd)"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-$PWD/cuda-run}"
mkdir -p "$out"
lt="$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /opt /usr/lib \
  -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$bin/lib:${lt:+$(dirname "$lt"):}${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader

# The variants build while the profiles run.
(nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
  -o /tmp/rows_variants bench/cuda_rows_variants.cu > "$out/nvcc.log" 2>&1
 echo "nvcc rc $?" >> "$out/nvcc.log") &
nvcc_pid=$!

echo "=== registers of the bf16 row kernels (cuobjdump -res-usage) ==="
kernels='(softmax_rows_half|rms_rows_half|softmax_rows_regs|norm_rows_regs)'
cuobjdump -res-usage "$bin/nascent_tests" 2>/dev/null |
  grep -A1 -E "${kernels}INS_8bfloat16ELi4" |
  grep -oE "${kernels}INS_8bfloat16ELi4E[^_]*|REG:[0-9]+|STACK:[0-9]+" |
  paste - - - | tee "$out/regs.txt"

echo "=== ncu: nascent CNN training, batch 256 ==="
ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)"
timeout 150 "$ncu_bin" --clock-control none \
  --metrics gpu__time_duration.sum --csv --launch-skip 800 \
  --launch-count 400 "$bin/train_bench" --model cnn --batch 256 \
  --seconds 0.3 --device cuda > "$out/ncu_nascent.csv" 2> "$out/ncu.err"
python3 bench/ncu_kernels.py "$out/ncu_nascent.csv" --show 160 \
  > "$out/ncu_nascent.txt"
head -40 "$out/ncu_nascent.txt"

echo "=== nascent train_bench (no profiler) ==="
for b in 64 256; do
  timeout 30 "$bin/train_bench" --model cnn --batch $b --seconds 2 \
    --device cuda
done

echo "=== torch profile ==="
PYTHONUNBUFFERED=1 timeout 90 python3 bench/torch_cnn_profile.py \
  --batch 256 2>&1 | tee "$out/torch_profile.txt" | head -30
PYTHONUNBUFFERED=1 timeout 60 python3 bench/torch_cnn_profile.py \
  --batch 64 > "$out/torch_profile64.txt" 2>&1

wait $nvcc_pid
tail -3 "$out/nvcc.log"
echo "=== row variants ==="
timeout 200 /tmp/rows_variants 20 2>&1 | tee "$out/rows.txt"
