#!/usr/bin/env bash
# A rank that dies, or stops answering, ends the whole run within seconds,
# with a message saying what happened, never a hang.
#   failure_test.sh MPIEXEC DIST_FAILURE_PROGRAM
set -uo pipefail
mpiexec="$1" program="$2"
flags=(-np 2 --oversubscribe)
status=0

run() {  # mode, limit in seconds, expected text
  local mode="$1" limit="$2" want="$3" start=$SECONDS out rc
  out="$(timeout 120 "$mpiexec" "${flags[@]}" "$program" "$mode" 2>&1)"
  rc=$?
  local took=$((SECONDS - start))
  echo "--- $mode: exit $rc after $took s"
  echo "$out" | tail -n 12
  if ((rc == 0 || rc == 124)); then
    echo "FAIL: $mode: the run ended with status $rc (0: success, 124: hung)"
    status=1
  elif ((took > limit)); then
    echo "FAIL: $mode: took $took s, more than $limit"
    status=1
  elif ! grep -q -- "$want" <<<"$out"; then
    echo "FAIL: $mode: no \"$want\" in the output"
    status=1
  fi
}

# mpirun reports the rank that exited and stops the other.
run die 30 "exited"
NASCENT_DIST_TIMEOUT=2 run timeout 30 "waited 2 s for the other ranks"
exit $status
