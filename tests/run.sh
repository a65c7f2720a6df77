#!/usr/bin/env bash
# tests/run.sh — run the given cmocka test binaries, then (unless FRONTIER_UNIT_ONLY=1) the
# end-to-end shell tests tests/**/test_*.sh. Runs from the project root. Ends with the line
# "N passed, N failed, N skipped" and exits non-zero if anything failed.
#
# Outcomes. Exit 0: PASS. Exit 77: SKIP, the test could not run its subject here; it prints a
# line "SKIP: <reason>" (something missing that setup could install) or "SKIP hardware: <reason>"
# (this CPU lacks an instruction set: nothing can install that). Anything else: FAIL.
# A test that passes but skipped part of its subject prints such lines too: it stays PASS and the
# reasons are shown next to it. Under CI=true a skip is a failure, whole or partial, unless every
# reason it gives is a "SKIP hardware:" one: CI's machine is set up by scripts/setup.sh, so
# anything else missing there is a broken setup, not a reason to pass.
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0; failed=0; skipped=0; failures=()
ci=0; [ "${CI:-}" = true ] && ci=1
run_one() {  # name, command...
  local name=$1; shift
  local log; log=$(mktemp)
  local t0=$SECONDS rc
  "$@" >"$log" 2>&1; rc=$?
  local dt=$((SECONDS - t0))
  # The reasons it gave for what it did not run, and whether any of them is not about hardware.
  local reasons soft
  reasons=$(grep -E '^SKIP( hardware)?:' "$log" | sed -E 's/^SKIP:[[:space:]]*//; s/^SKIP hardware:[[:space:]]*/hardware: /' | sort -u | paste -sd ';' -)
  soft=$(grep -cE '^SKIP:' "$log")
  if [ "$rc" = 77 ] && [ -z "$reasons" ]; then
    rc=1; echo "    (exit 77 without a 'SKIP: reason' line)" >> "$log"
  fi
  if [ "$rc" = 77 ] && [ "$ci" = 1 ] && [ "$soft" -gt 0 ]; then
    failed=$((failed + 1)); failures+=("$name")
    echo "FAIL  $name (skipped, and CI=true: $reasons)"
  elif [ "$rc" = 77 ]; then
    skipped=$((skipped + 1)); echo "SKIP  $name ($reasons)"
  elif [ "$rc" = 0 ] && [ "$ci" = 1 ] && [ "$soft" -gt 0 ]; then
    failed=$((failed + 1)); failures+=("$name")
    echo "FAIL  $name (${dt}s; passed but skipped part of its subject, and CI=true: $reasons)"
  elif [ "$rc" = 0 ]; then
    passed=$((passed + 1)); echo "PASS  $name (${dt}s${reasons:+; skipped inside: $reasons})"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAIL  $name (${dt}s)"; sed 's/^/    /' "$log" | tail -40
  fi
  rm -f "$log"
}
# A second lane: shell tests that keep one core busy at most (one training thread, or processes
# that mostly wait) run beside the others, which use both cores, instead of after them. Its
# results are printed, and counted, when both lanes are done. (The tests themselves hold under a
# competing load: bench/flake_hunt.sh LOAD=1 runs each beside a training on both cores.)
LANE2="tests/train/test_crash.sh tests/train/test_average.sh tests/train/test_repeat.sh tests/train/test_mix.sh tests/research/test_research_cli.sh tests/research/test_research_promote.sh tests/research/test_research_sim.sh tests/cli/test_bad_flags.sh"
[ "${FRONTIER_TEST_LANES:-2}" = 1 ] && LANE2=""
lane2_out=$(mktemp)
if [ "${FRONTIER_UNIT_ONLY:-0}" != 1 ] && [ -n "$LANE2" ]; then
  ( passed=0; failed=0; skipped=0; failures=()
    for t in $LANE2; do [ -f "$t" ] && run_one "$t" bash "$t"; done
    echo "LANE2 $passed $failed $skipped ${failures[*]:-}" ) > "$lane2_out" 2>&1 &
  lane2_pid=$!
fi
for bin in "$@"; do run_one "${bin#build/*/}" "$bin"; done
if [ "${FRONTIER_UNIT_ONLY:-0}" != 1 ]; then
  for t in $(find tests -name 'test_*.sh' | sort); do
    case " $LANE2 " in *" $t "*) continue;; esac
    run_one "$t" bash "$t"
  done
  if [ -n "${lane2_pid:-}" ]; then
    wait "$lane2_pid"
    grep -v '^LANE2 ' "$lane2_out"
    read -r _ p2 f2 s2 fl2 < <(grep '^LANE2 ' "$lane2_out" || echo "LANE2 0 1 0 lane2-did-not-finish")
    passed=$((passed + p2)); failed=$((failed + f2)); skipped=$((skipped + s2))
    [ -n "${fl2:-}" ] && failures+=($fl2)
  fi
fi
rm -f "$lane2_out"
[ "$failed" -gt 0 ] && printf 'failed: %s\n' "${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
