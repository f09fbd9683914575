#!/usr/bin/env bash
# Builds the `fuzz` preset (clang 14, libFuzzer, ASan + UBSan) and runs
# every fuzz target for a fixed time, failing on any finding: a crash, a
# sanitizer report, an exception other than nascent::Error, an input slower
# than 10 s, an allocation over 2 GB. scripts/test.sh runs it with 30 s per
# target; fuzz/README.md says how to run longer campaigns and keep findings.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 60, all)
#
# Each target starts from seeds written by the project's writers
# (fuzz/make_seeds.cpp), its regression inputs (fuzz/regressions/<target>/)
# and the corpus earlier runs grew (build/fuzz/corpus/<target>/, kept).
# A finding's input lands in build/fuzz/findings/<target>/; copy it to
# fuzz/regressions/<target>/ once fixed, and the test suite replays it.
# NASCENT_JOBS: build parallelism (default 2). NASCENT_FUZZ_VOCAB_DIR: the
# llama.cpp vocab files of tokenizer_text (default: the configured test
# data's tokenizer folder).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs="${1:-60}"
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(gguf gguf_tokenizer tokenizer_text safetensors checkpoint idx)
fi

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "${NASCENT_JOBS:-2}"

build=build/fuzz
bin="$build/fuzz"
rm -rf "$build/seeds"
"$bin/nascent_fuzz_make_seeds" "$build/seeds"

failed=()
summary=()
for t in "${targets[@]}"; do
  if [[ ! -x "$bin/fuzz_$t" ]]; then
    echo "fuzz.sh: no target $t"
    failed+=("$t")
    continue
  fi
  corpus="$build/corpus/$t"
  findings="$build/findings/$t"
  log="$build/logs/$t.log"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  inputs=("$corpus" "$build/seeds/$t")
  [[ -d "fuzz/regressions/$t" ]] && inputs+=("fuzz/regressions/$t")
  flags=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048
    -print_final_stats=1 -artifact_prefix="$findings/")
  [[ -f "fuzz/dicts/$t.dict" ]] && flags+=(-dict="fuzz/dicts/$t.dict")
  echo "=== fuzz $t: ${secs} s ==="
  rc=0
  "$bin/fuzz_$t" "${flags[@]}" "${inputs[@]}" >"$log" 2>&1 || rc=$?
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
    grep -o '[0-9]*$' || echo '?')"
  cov="$(grep -oE '(DONE|#[0-9]+) +cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 |
    grep -oE 'cov: [0-9]+ ft: [0-9]+' || echo 'cov: ?')"
  if ((rc != 0)); then
    tail -n 60 "$log"
    echo "fuzz.sh: $t FAILED (exit $rc); inputs in $findings, log $log"
    failed+=("$t")
    summary+=("$(printf '%-15s %10s execs  %-20s FINDING' "$t" "$execs" "$cov")")
  else
    summary+=("$(printf '%-15s %10s execs  %-20s ok' "$t" "$execs" "$cov")")
  fi
done

echo
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "fuzz.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz.sh: no finding in ${#targets[@]} targets, ${secs} s each"
