#!/bin/sh
# softmax, log_softmax, layer_norm and rms_norm: nascent against PyTorch CPU
# on the same shapes and thread counts, one table with ratios.
#   bench/run_softmax_norm.sh [path/to/reduce_bench] [rounds]
# (reduce_bench defaults to the bench preset's, build/bench/bench/.)
# The two programs run alternately `rounds` times (default 3) and each time
# is the minimum over all rounds, so a burst of load on a shared machine
# hits both sides alike. ratio = nascent / torch (below 1: nascent faster).
# rms_norm's peer is the composed form: torch 1.13 has no fused rms_norm.
set -e
here=$(dirname "$0")
bench=${1:-build/bench/bench/reduce_bench}
rounds=${2:-3}
ours=$(mktemp)
theirs=$(mktemp)
trap 'rm -f "$ours" "$theirs"' EXIT
i=0
while [ "$i" -lt "$rounds" ]; do
  "$bench" rows >> "$ours"
  /usr/bin/python3 "$here/torch_softmax_norm.py" >> "$theirs"
  i=$((i + 1))
done
printf '%-12s %-10s %7s %11s %11s %7s\n' op shape threads nascent_ms \
  torch_ms ratio
awk 'function keep(a, k, v) { if (!(k in a) || v < a[k]) a[k] = v }
     NR == FNR { keep(t, $1" "$2" "$3" "$4, $5); next }
     { k = $1" "$2" "$3" "$4; keep(n, k, $5)
       if (!(k in order)) { order[k] = ++count; keys[count] = k } }
     END { for (i = 1; i <= count; i++) { k = keys[i]; split(k, f, " ")
             printf "%-12s %-10s %7d %11.3f %11.3f %6.2fx\n", f[1],
                    f[2]"x"f[3], f[4], n[k], t[k], n[k] / t[k] } }' \
  "$theirs" "$ours"
