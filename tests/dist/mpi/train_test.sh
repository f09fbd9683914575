#!/usr/bin/env bash
# `nascent train --distributed mpi` on two ranks trains the model one
# process trains at the same (whole-step) batch, and a run resumed with
# another number of ranks continues it:
#   A: 2 ranks, 1 epoch          B: 1 process, 1 epoch      A == B
#   C: B resumed on 1 process    D: B resumed on 2 ranks    C == D
#      to 2 epochs                  to 2 epochs
#   train_test.sh MPIEXEC NASCENT PYTHON
set -euo pipefail
mpiexec="$1" nascent="$2" python="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
compare="$here/../compare_checkpoints.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# SGD without momentum, a small learning rate and a short run: the two
# runs differ only in the order floats are added up (a few ulps per step),
# which the tolerance below covers with room; chaotic growth of those
# differences over long runs is why the check is not over many epochs.
common=(-m mlp -b 256 --optimizer sgd --lr 0.01 -e 1 --seed 3)
two=("$mpiexec" -np 2 --oversubscribe "$nascent" train --distributed mpi -t 1)

"${two[@]}" "${common[@]}" -o "$work/a.st" >"$work/a.log" 2>&1 ||
  { cat "$work/a.log"; exit 1; }
"$nascent" train "${common[@]}" -t 2 -o "$work/b.st" >"$work/b.log" 2>&1 ||
  { cat "$work/b.log"; exit 1; }
grep -q "distributed: 2 ranks over mpi" "$work/a.log" ||
  { echo "no distributed line"; cat "$work/a.log"; exit 1; }
tail -n 2 "$work/a.log" "$work/b.log"
"$python" "$compare" "$work/a.st" "$work/b.st" --prefix model. \
  --atol 1e-5 --rtol 1e-4

cp "$work/b.st" "$work/c.st"
cp "$work/b.st" "$work/d.st"
"$nascent" train --resume "$work/c.st" -e 2 -t 2 -o "$work/c.st" \
  >"$work/c.log" 2>&1 || { cat "$work/c.log"; exit 1; }
"${two[@]}" --resume "$work/d.st" -e 2 -o "$work/d.st" >"$work/d.log" 2>&1 ||
  { cat "$work/d.log"; exit 1; }
grep -q "resumed from .* at epoch 2, batch 0" "$work/d.log" ||
  { echo "rank 0 did not resume at epoch 2"; cat "$work/d.log"; exit 1; }
tail -n 1 "$work/c.log" "$work/d.log"
"$python" "$compare" "$work/c.st" "$work/d.st" --prefix model. \
  --atol 1e-5 --rtol 1e-4
echo "train_test: two ranks = one process, and resume across rank counts"
