#!/usr/bin/env bash
# Runs the CUDA backend's checks and benchmarks on a machine with a GPU, in
# one go, writing logs to $OUT (default ./cuda-run): the device's state, the
# CUDA tests (conformance suite cross-checked against the CPU backend, memory
# and leak tests), the benchmarks against cudaMemcpy and PyTorch, then
# compute-sanitizer memcheck and racecheck over a subset of the conformance
# suite (all of it would take hours under the sanitizer).
#
#   scripts/cuda_device_run.sh BIN_DIR
#
# BIN_DIR holds nascent_tests, cuda_bench, train_bench, nascent and
# nascent_onnx_node_suite (and, in lib/, shared libraries they need that the
# machine lacks); DATA, when set,
# is a folder with Fashion-MNIST's IDX files for a `nascent train` on the
# GPU; ONNX_DATA, folders of ONNX cases (the onnx stage, below). STAGES
# picks stages (default "tests onnx bench conv train llama sanitize";
# a device
# call lasts at most 10 minutes, so two calls may split them). Each stage has
# its own time limit, so a hang in one still leaves the others' logs.
set -uo pipefail
bin="$(cd "${1:?usage: cuda_device_run.sh BIN_DIR}" && pwd)"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${OUT:-$PWD/cuda-run}"
mkdir -p "$out"

# cuBLASLt: the toolkit's, or the one PyTorch's wheels carry. The backend
# opens it (and cuDNN) with dlopen on first use (libraries.h), searching
# LD_LIBRARY_PATH first, so ldd below no longer lists them.
lt="$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /opt /usr/lib \
  -name 'libcublasLt.so.13*' 2>/dev/null | head -1)"
# cuDNN (conv2d, when the build had it): the toolkit's, or PyTorch's wheel's.
dnn="$(find /usr/local/cuda/lib64 /usr/local/cuda*/lib* /opt /usr/lib \
  -name 'libcudnn.so.9*' 2>/dev/null | head -1)"
export LD_LIBRARY_PATH="$bin/lib:${lt:+$(dirname "$lt"):}${dnn:+$(dirname "$dnn"):}${LD_LIBRARY_PATH:-}"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem \
    --format=csv
  echo "cuBLASLt: ${lt:-not found}"
  echo "cuDNN: ${dnn:-not found}"
  ldd "$bin/nascent_tests" | grep -E "not found|cublas|cudnn|hwy|fmt"
} 2>&1 | tee "$out/env.txt"

# Runs "$@" as $shards gtest shards in parallel (the tests' host side, the
# float64 references and the CPU cross-check, is the slow part), each with
# a time limit; logs in $out/$name.N.log.
shards=8
sharded() {
  local name="$1" limit="$2"
  shift 2
  echo "=== $name (${shards} shards, limit ${limit}s each): $* ==="
  local start=$SECONDS i
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "$limit" "$@" \
      > "$out/$name.$i.log" 2>&1 &
  done
  wait
  echo "=== $name: done after $((SECONDS - start)) s ==="
  cat "$out/$name".*.log > "$out/$name.log"
  rm -f "$out/$name".*.log
}

stages=" ${STAGES:-tests onnx bench conv train llama sanitize} "
want() { [[ "$stages" == *" $1 "* ]]; }

export NASCENT_NUM_THREADS=2
if want tests; then
cuda_tests="${TEST_FILTER:-*CudaConformance.*:Cuda*}"
sharded tests 200 "$bin/nascent_tests" --gtest_filter="$cuda_tests" \
  --gtest_brief=1
grep -aE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests? ran" \
  "$out/tests.log" | sort | uniq -c | sort -rn | head -40
# The other conv2d paths: cuDNN (NASCENT_CUDA_CONV=cudnn, opt-in) and
# im2col with 64-bit indices (im2col64, which only huge tensors take
# otherwise); CONV_ALT picks them.
convs='*CudaConformance.*/conv2d*:Ops/CudaAutodiff.*conv*:'
convs+='CudaBackend.Convolutions*'
for conv in ${CONV_ALT:-cudnn im2col64}; do
  echo "=== conv2d tests with NASCENT_CUDA_CONV=$conv ==="
  NASCENT_CUDA_CONV=$conv timeout 200 \
    "$bin/nascent_tests" --gtest_filter="$convs" --gtest_brief=1 \
    > "$out/tests_$conv.log" 2>&1
  grep -aE "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$out/tests_$conv.log"
done

fi

# ONNX import on the GPU: ONNX's node test cases and the PyTorch-exported
# models, each folder of ONNX_DATA in the node tests' layout (made on a
# machine with the onnx venv: build/release/tests/onnx-node-data/node, and
# tests/onnx/torch_export_test.py BIN --write-cases DIR).
if want onnx; then
echo "=== onnx ==="
if [[ -z "${ONNX_DATA:-}" ]]; then
  echo "skipped: ONNX_DATA names no folders of cases"
fi
for dir in ${ONNX_DATA:-}; do
  timeout 300 "$bin/nascent_onnx_node_suite" "$dir" --device cuda -v \
    > "$out/onnx_$(basename "$dir").log" 2>&1
  echo "$dir: exit $?"
  grep -av "^ok \|^unsupported " "$out/onnx_$(basename "$dir").log" | tail -20
done

fi

if want bench; then
echo "=== bench ==="
timeout 80 "$bin/cuda_bench" --json "$out/nascent.json" > "$out/bench.log" 2>&1
if [[ -s "$out/nascent.json" ]]; then
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/cuda_vs_torch.py \
    "$out/nascent.json" >> "$out/bench.log" 2>&1
fi
tail -22 "$out/bench.log"
# The row kernels twice more (the spread between runs).
for rep in 1 2; do
  timeout 30 "$bin/cuda_bench" --rows-only | grep -E "softmax|rms_norm"
done 2>&1 | tee -a "$out/bench.log"

fi

# conv2d on the CNN's layers through im2col (the default) and cuDNN
# (NASCENT_CUDA_CONV).
if want conv; then
echo "=== conv ==="
for conv in im2col cudnn; do
  echo "conv2d through $conv:"
  NASCENT_CUDA_CONV=$conv timeout 60 "$bin/cuda_bench" --conv-only
done 2>&1 | tee "$out/conv.log"

fi

# Training on the GPU: nascent's CUDA backend against PyTorch eager on the
# same models, batches and optimizer (bench/train_torch.py), then the main
# job itself on the GPU when the dataset came along.
if want train; then
echo "=== train ==="
# TRAIN_CONV: conv2d's paths to train with (NASCENT_CUDA_CONV);
# TRAIN_MODELS: the models.
for conv in ${TRAIN_CONV:-im2col}; do
  for batch in 64 256; do
    echo "conv2d through $conv:"
    NASCENT_CUDA_CONV=$conv timeout 120 python3 bench/train_torch.py \
      --device cuda --threads 1 --rounds 3 --seconds 2 --batch "$batch" \
      --models "${TRAIN_MODELS:-cnn,mlp}" --nascent "$bin/train_bench"
  done
done 2>&1 | tee "$out/train.log"
if [[ -n "${DATA:-}" ]]; then
  (cd "$out" && timeout 180 "$bin/nascent" train --device cuda --epochs 3 \
    --data "$DATA" -o gpu.safetensors && rm -f gpu.safetensors) 2>&1 |
    grep -v "^epoch .*\[" | tee -a "$out/train.log"
fi

fi

# The LLaMA model on the GPU: a TinyLlama-shaped random model as F16, Q8_0
# and Q4_K_M (VOCAB: a GGUF whose vocabulary it takes, e.g. llama.cpp's
# ggml-vocab-llama-spm.gguf; else a synthesised one), `nascent bench` on
# cuda, side by side with llama.cpp's CUDA build when LLAMA_BENCH names its
# llama-bench (bench/llama_cuda_vs_llamacpp.py), and a greedy `generate`.
if want llama; then
echo "=== llama ==="
dir="${LLAMA_DIR:-/tmp/nascent-llama}"
mkdir -p "$dir"
{
  if [[ -n "${VOCAB:-}" ]]; then vocab=(--vocab "$VOCAB"); else
    vocab=(--vocab-size 32000); fi
  "$bin/nascent" make-model "$dir/f16.gguf" --type f16 --dim 2048 \
    --layers 22 --heads 32 --kv-heads 4 --ffn 5632 "${vocab[@]}" \
    --ctx 2048 --seed 1 -t 16
  for q in q8_0 q4_k_m; do
    "$bin/nascent" quantize -q -t 16 "$dir/f16.gguf" "$dir/$q.gguf" "$q"
  done
  if [[ -n "${LLAMA_BENCH:-}" ]]; then
    timeout 400 python3 bench/llama_cuda_vs_llamacpp.py "$bin/nascent" \
      "$LLAMA_BENCH" --work "$dir" --keep --reps "${LLAMA_REPS:-3}" \
      --rounds "${LLAMA_ROUNDS:-2}"
  else
    for f in f16 q8_0 q4_k_m; do
      timeout 150 "$bin/nascent" bench -m "$dir/$f.gguf" -p 512 -n 128 -r 3 \
        -d cuda
    done
  fi
  timeout 60 "$bin/nascent" generate -m "$dir/q4_k_m.gguf" \
    -p "Once upon a time" -n 32 --temp 0 -d cuda
} 2>&1 | tee "$out/llama.log"
rm -rf "$dir"

fi

# Sanitizers on the bare backend: memcheck over the whole conformance suite,
# racecheck over the kernels that share memory between threads.
if want sanitize; then
export NASCENT_CUDA_CROSS_CHECK=0
# MEMCHECK_FILTER and RACECHECK_FILTER narrow them for a quick re-run;
# MEMCHECK_LIMIT (seconds a shard, default 120) gives memcheck longer.
sharded memcheck "${MEMCHECK_LIMIT:-120}" compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$bin/nascent_tests" --gtest_brief=1 --gtest_filter="${MEMCHECK_FILTER:-*CudaConformance.*:CudaMemory.RaiiReturnsBlocksToTheCacheAndTrimToTheDriver}"
grep -aE "ERROR SUMMARY|^\[  (PASSED|FAILED) " "$out/memcheck.log" |
  sort | uniq -c
subset=''
for op in sum mean argmax var logsumexp softmax log_softmax rms_norm \
  layer_norm; do
  subset+="*CudaConformance.*/$op:"
done
sharded racecheck 100 compute-sanitizer --tool racecheck --error-exitcode 9 \
  "$bin/nascent_tests" --gtest_filter="${RACECHECK_FILTER:-$subset}" \
  --gtest_brief=1
grep -aE "RACECHECK SUMMARY|^\[  (PASSED|FAILED) " "$out/racecheck.log" |
  sort | uniq -c

# Instruction counts of the element-wise gelu kernels (for bench/NOTES.md).
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$bin/nascent_tests" 2> /dev/null | awk '
    /Function : / { name = $3; n[name] = 0 }
    /^ +\/\*[0-9a-f]+\*\/ / { if (name != "") n[name]++ }
    END { for (k in n) if (k ~ /map1_flat.*Gelu/) print n[k], k }' \
    > "$out/sass.txt"
fi
fi
