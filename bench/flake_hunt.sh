#!/usr/bin/env bash
# bench/flake_hunt.sh — run tests again and again to find the ones that fail sometimes, recording
# every run as a row of bench/results/flake_hunt.tsv (resumable: a rerun skips the rows recorded for
# this commit, and stops by itself after MAX_MINUTES).
#
#   PLAN='tests/dist/test_mpi.sh=20 tests/train/test_crash.sh=10' bash bench/flake_hunt.sh
#   LOAD=1 PLAN='tests/train/test_crash.sh=1' bash bench/flake_hunt.sh   # with a competing load
#   CI_RUNS=3 bash bench/flake_hunt.sh   # .ci/run's `CI=true make test` and `make sanitize` from clean clones
#
# PLAN: TEST=N pairs (a shell test under tests/, or a unit-test binary's path under build/release).
# LOAD=1: a `frontier train` on both cores runs in the background during each test (restarted when
# it ends), the load CI machines see when a neighbour trains. Each row: date, commit, test, mode
# (idle|load), run number, exit code, seconds, the 1-minute load average when it started, and the
# test's last FAIL line. A failing run's whole log is kept in bench/results/flake_logs/.
# A row is printed as it is recorded; the summary at the end counts passes per test and mode.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=bench/results/flake_hunt.tsv
LOGS=bench/results/flake_logs
MAX_MINUTES=${MAX_MINUTES:-120}
LOAD=${LOAD:-0}
PLAN=${PLAN:-}
CI_RUNS=${CI_RUNS:-0}
mkdir -p bench/results "$LOGS"
[ -s "$OUT" ] || printf 'date\tcommit\ttest\tmode\trun\trc\tseconds\tload1\tfirst_fail\n' > "$OUT"
commit=$(git rev-parse --short HEAD)
[ -z "$(git status --porcelain --untracked-files=no -- src tests Makefile)" ] || commit="$commit+dirty"
mode=$([ "$LOAD" = 1 ] && echo load || echo idle)
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))

recorded() {  # test, run -> 0 if this commit's row exists
  awk -F'\t' -v c="$commit" -v t="$1" -v m="$mode" -v r="$2" '$2 == c && $3 == t && $4 == m && $5 == r { f = 1 } END { exit !f }' "$OUT"
}

load_pid=""
start_load() {
  [ "$LOAD" = 1 ] || return 0
  ( while :; do ./frontier train --steps 100000 --quiet --run-dir "$(mktemp -d)/load" --overwrite > /dev/null 2>&1; done ) &
  load_pid=$!
}
stop_load() {
  [ -n "$load_pid" ] || return 0
  pkill -P "$load_pid" 2>/dev/null; kill "$load_pid" 2>/dev/null; wait "$load_pid" 2>/dev/null; load_pid=""
  pkill -f -- "--steps 100000 --quiet --run-dir /tmp/tmp" 2>/dev/null
}
trap stop_load EXIT

run_one() {  # name, run, command...
  local name=$1 run=$2; shift 2
  local log; log=$(mktemp)
  local load1; load1=$(cut -d' ' -f1 /proc/loadavg)
  local t0; t0=$(date +%s)
  "$@" > "$log" 2>&1; local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  local fail; fail=$(grep -m1 -E '^FAIL|FAILED|failed:' "$log" | tr '\t' ' ' | cut -c1-200)
  if [ $rc != 0 ]; then cp "$log" "$LOGS/$(echo "$name" | tr '/' '_')-$commit-$mode-$run.log"; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$name" "$mode" "$run" "$rc" "$dt" "$load1" "$fail" | tee -a "$OUT"
  rm -f "$log"
}

start_load
for item in $PLAN; do
  t=${item%=*} n=${item##*=}
  for r in $(seq 1 "$n"); do
    [ "$(date +%s)" -lt "$t_end" ] || { echo "flake_hunt: MAX_MINUTES=$MAX_MINUTES reached; run again to continue"; break 2; }
    recorded "$t" "$r" && continue
    case $t in
      *.sh) run_one "$t" "$r" bash "$t";;
      *) run_one "$t" "$r" "$t";;
    esac
  done
done
for r in $(seq 1 "$CI_RUNS"); do
  [ "$(date +%s)" -lt "$t_end" ] || { echo "flake_hunt: MAX_MINUTES=$MAX_MINUTES reached; run again to continue"; break; }
  recorded ".ci/run:sanitize" "$r" && continue
  # a clean clone beside this checkout, so that ../shared/data resolves as it does here; .ci/run's
  # two commands, each its own row (make test's time is the one the 15-minute budget is about)
  d=$(dirname "$PWD")/ci-clone-$r; rm -rf "$d"; git clone -q "$PWD" "$d"
  run_one ".ci/run:test" "$r" env -C "$d" CI=true make test
  if [ "$(tail -1 "$OUT" | cut -f6)" = 0 ]; then run_one ".ci/run:sanitize" "$r" env -C "$d" CI=true make sanitize; fi
  rm -rf "$d"
done
stop_load
echo "== $OUT, commit $commit, mode $mode: passes / runs per test"
awk -F'\t' -v c="$commit" -v m="$mode" 'NR > 1 && $2 == c && $4 == m { n[$3]++; if ($6 == 0) p[$3]++ }
  END { for (t in n) printf "%-40s %d / %d\n", t, p[t], n[t] }' "$OUT" | sort
