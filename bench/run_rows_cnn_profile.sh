#!/usr/bin/env bash
# Session 5 device call 1: the row-kernel variants (bench/cuda_rows_variants.cu,
# built here with nvcc) and a kernel-by-kernel profile of the CNN's batch-256
# training step, nascent (ncu over train_bench) and PyTorch eager
# (torch.profiler). Logs under $OUT.
#   bash bench/run_rows_cnn_profile.sh CARRY BIN_DIR
set -uo pipefail
carry="$1"; bin="$2"; out="${OUT:-/tmp/out}"; mkdir -p "$out"
lt="$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /opt /usr/lib \
  -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$bin/lib:${lt:+$(dirname "$lt"):}${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
(nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
  -o /tmp/rows_variants "$carry/cuda_rows_variants.cu" > "$out/nvcc.log" 2>&1;
 echo "nvcc rc $?" >> "$out/nvcc.log") &
nvcc_pid=$!
echo "=== ncu: nascent CNN training, batch 256 ==="
ncu_bin="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)"
timeout 150 "$ncu_bin" --clock-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip 800 --launch-count 400 "$bin/train_bench" --model cnn \
  --batch 256 --seconds 0.3 --device cuda > "$out/ncu_nascent.csv" 2> "$out/ncu.err"
python3 "$carry/ncu_kernels.py" "$out/ncu_nascent.csv" --show 160 > "$out/ncu_nascent.txt"
head -40 "$out/ncu_nascent.txt"
echo "=== nascent train_bench (no profiler) ==="
for b in 64 256; do timeout 30 "$bin/train_bench" --model cnn --batch $b --seconds 2 --device cuda; done
echo "=== torch profile ==="
(cd "$carry" && PYTHONUNBUFFERED=1 timeout 90 python3 torch_cnn_profile.py --batch 256) 2>&1 | tee "$out/torch_profile.txt" | head -30
(cd "$carry" && PYTHONUNBUFFERED=1 timeout 60 python3 torch_cnn_profile.py --batch 64) > "$out/torch_profile64.txt" 2>&1
wait $nvcc_pid
cat "$out/nvcc.log" | tail -3
echo "=== row variants ==="
timeout 200 /tmp/rows_variants 20 2>&1 | tee "$out/rows.txt"
