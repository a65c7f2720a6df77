#!/usr/bin/env bash
# tests/fuzz/run.sh — run the fuzz harnesses one after the other (make fuzz; README.md here).
#
#   FUZZ_SECONDS=60 bash tests/fuzz/run.sh [TARGET ...]     # each for FUZZ_SECONDS (default 60)
#   FUZZ_RUNS=1000000 bash tests/fuzz/run.sh shard          # or for a number of executions
#
# Targets are the fuzz_<target> binaries in $FUZZ_BUILD (default build/fuzz/tests/fuzz; `make
# fuzz-build` makes them). Each starts from its committed seeds (corpus/<target>/) plus what
# earlier runs found ($FUZZ_WORK/<target>/, default build/fuzz/corpus/, where new inputs go: the
# committed seeds are never written). A crash, leak, sanitizer report, timeout or out-of-memory leaves its input in
# build/fuzz/crashes/ and fails the run. Prints per target: executions, exec/s, coverage
# (libFuzzer's cov: edges, ft: features), corpus size, and the outcome; exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin_dir=${FUZZ_BUILD:-build/fuzz/tests/fuzz}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(shard tokenizer safetensors ckpt config ledger core)
declare -A max_len=([shard]=16384 [tokenizer]=8192 [safetensors]=16384 [ckpt]=16384 [config]=4096 [ledger]=8192 [core]=8192)
limit=(-max_total_time="${FUZZ_SECONDS:-60}")
[ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
export OMP_NUM_THREADS=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0"
mkdir -p build/fuzz/crashes build/fuzz/logs
failed=0
printf '%-12s %10s %8s %7s %7s %7s  %s\n' target execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  bin=$bin_dir/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz: $bin is not built (make fuzz-build)" >&2; failed=1; continue; }
  work=${FUZZ_WORK:-build/fuzz/corpus}/$t log=build/fuzz/logs/$t.log
  mkdir -p "$work"
  "$bin" "${limit[@]}" -max_len="${max_len[$t]:-8192}" -timeout=20 -rss_limit_mb=2560 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/crashes/$t-" "$work" "tests/fuzz/corpus/$t" > "$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -ao 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -ao 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if [ $rc -eq 0 ]; then result=ok
  else
    failed=1
    crash=$(grep -o "build/fuzz/crashes/$t-[a-z-]*[0-9a-f]*" "$log" | tail -1)
    result="FAILED (exit $rc): $(grep -m1 -E 'ERROR: |fuzz property failed|runtime error' "$log" | cut -c1-160); input ${crash:-?}; log $log"
  fi
  printf '%-12s %10s %8s %7s %7s %7s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
exit $failed
