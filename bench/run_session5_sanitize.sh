#!/usr/bin/env bash
# Session 5 device call 3: compute-sanitizer over the changed kernels, and
# the CNN training comparison once more.
set -uo pipefail
carry="$(cd "$1" && pwd)"
mkdir -p /tmp/nb && tar -xJf "$carry/bin.tar.xz" -C /tmp/nb || exit 1
f=''
for op in softmax log_softmax rms_norm layer_norm max_pool2d max_pool2d_backward sum mean; do
  f+="*CudaConformance.*/$op:"
done
f+="Ops/CudaAutodiff.*pool*"
STAGES="sanitize train" TRAIN_MODELS=cnn MEMCHECK_LIMIT=150 MEMCHECK_FILTER="$f" \
  bash "$carry/scripts/cuda_device_run.sh" /tmp/nb/bin
