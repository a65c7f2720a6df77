#!/usr/bin/env bash
# tests/run.sh — run the given cmocka test binaries, then (unless FRONTIER_UNIT_ONLY=1) the
# end-to-end shell tests tests/**/test_*.sh. Runs from the project root. Ends with the line
# "N passed, N failed" and exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0; failed=0; failures=()
run_one() {  # name, command...
  local name=$1; shift
  local log; log=$(mktemp)
  local t0=$SECONDS
  if "$@" >"$log" 2>&1; then
    passed=$((passed + 1)); echo "PASS  $name ($((SECONDS - t0))s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "FAIL  $name ($((SECONDS - t0))s)"; sed 's/^/    /' "$log" | tail -40
  fi
  rm -f "$log"
}
for bin in "$@"; do run_one "${bin#build/*/}" "$bin"; done
if [ "${FRONTIER_UNIT_ONLY:-0}" != 1 ]; then
  for t in $(find tests -name 'test_*.sh' | sort); do run_one "$t" bash "$t"; done
fi
[ "$failed" -gt 0 ] && printf 'failed: %s\n' "${failures[*]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
