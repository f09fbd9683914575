#!/usr/bin/env bash
# `nascent train --distributed nccl --nproc 2`: the launcher starts two
# ranks, one per GPU. With fewer than two GPUs (CI has none, the device
# machine one) a rank fails to open its GPU while the other waits for it
# in NCCL's set-up: the launcher must stop that one and exit non-zero,
# naming the failed rank, within seconds. With two or more GPUs the run
# must train.
#   launch_test.sh NASCENT
set -uo pipefail
nascent="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

out="$("$nascent" train --nproc 2 -e 1 2>&1)"
if [[ $? -eq 0 || "$out" != *"--nproc starts NCCL ranks"* ]]; then
  echo "FAIL: --nproc without --distributed nccl: $out"
  status=1
fi

gpus=0
if command -v nvidia-smi >/dev/null; then
  gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
fi
start=$SECONDS
out="$(timeout 120 "$nascent" train --distributed nccl --nproc 2 --device cuda \
  -m mlp -e 1 -o "$work/m.st" 2>&1)"
rc=$?
took=$((SECONDS - start))
echo "$out" | tail -n 8
echo "--- $gpus GPUs: exit $rc after $took s"
if ((gpus >= 2)); then
  if ((rc != 0)) || [[ ! -s "$work/m.st" ]]; then
    echo "FAIL: two ranks on $gpus GPUs did not train"
    status=1
  fi
elif ((rc == 0 || rc == 124 || took > 60)); then
  echo "FAIL: a rank without a GPU did not end the run quickly (exit $rc)"
  status=1
elif [[ "$out" != *"of 2 exited with status"*"stopping the others"* ]]; then
  echo "FAIL: the launcher did not name the failed rank"
  status=1
fi
exit $status
