#!/bin/sh
# softmax, log_softmax, layer_norm and rms_norm: nascent against PyTorch CPU
# on the same shapes and thread counts, one table with ratios.
#   bench/run_softmax_norm.sh [path/to/reduce_bench]
# ratio = nascent / torch (below 1: nascent is faster). rms_norm's peer is
# the composed form (torch 1.13 has no fused rms_norm).
set -e
here=$(dirname "$0")
bench=${1:-build/rel/bench/reduce_bench}
ours=$(mktemp)
theirs=$(mktemp)
trap 'rm -f "$ours" "$theirs"' EXIT
"$bench" rows > "$ours"
/usr/bin/python3 "$here/torch_softmax_norm.py" > "$theirs"
printf '%-12s %-12s %7s %12s %12s %8s\n' op shape threads nascent_ms \
  torch_ms ratio
awk 'NR == FNR { t[$1" "$2" "$3" "$4] = $5; next }
     { k = $1" "$2" "$3" "$4
       printf "%-12s %-12s %7d %12.3f %12.3f %7.2fx\n", $1, $2"x"$3, $4,
              $5, t[k], $5 / t[k] }' "$theirs" "$ours"
