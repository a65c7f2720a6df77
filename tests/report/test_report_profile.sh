#!/usr/bin/env bash
# tests/report/test_report_profile.sh — `frontier report` on a real `frontier profile` folder: its
# profile.csv names the op "(step, unattributed)", which holds a comma, so the file must quote it
# (RFC 4180) and the report must read it back as one field; the op is then on the page. Also a
# profile.csv that breaks the CSV rules is refused naming file:line. A 2-step profile of a tiny
# model: seconds. Runs from the project root.
set -uo pipefail
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

P=$tmp/prof
if ! $F profile --depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512 \
     --steps 2 --run-dir "$P" >"$tmp/profile.log" 2>&1; then
  tail -5 "$tmp/profile.log"; bad "frontier profile failed"; exit 1
fi
grep -q '^"(step, unattributed)",[0-9]' "$P/profile.csv" \
  && ok "profile.csv quotes \"(step, unattributed)\"" || bad "profile.csv: $(grep unattributed "$P/profile.csv")"
python3 - "$P/profile.csv" "$P/profile_shapes.csv" <<'PY' && ok "Python's csv module reads both files with one op column" || bad "profile CSVs are not RFC 4180"
import csv, sys
for path in sys.argv[1:]:
    rows = list(csv.reader(open(path, newline="")))
    assert all(len(r) == len(rows[0]) for r in rows), (path, [len(r) for r in rows])
ops = [r[0] for r in csv.reader(open(sys.argv[1], newline=""))]
assert "(step, unattributed)" in ops, ops
PY
check "report of a profile folder" 0 "report $P/report.html" $F report "$P"
grep -qF '(step, unattributed)' "$P/report.html" && ok "the page shows the op (step, unattributed)" \
  || bad "the page lacks (step, unattributed)"

# Malformed CSV: refused with the file and line, nothing written.
B=$tmp/bad
mkdir -p "$B"
cp "$P/metrics.jsonl" "$P/summary.json" "$P/config.json" "$B/"
printf 'op,calls,total_ms,pct_step\nmatmul,1,2.0,3.0\n(step, unattributed),2,1.0,0.5\n' >"$B/profile.csv"
check "an unquoted comma in an op name" 2 "profile.csv:3: 5 fields, but the header has 4" $F report "$B"
printf 'op,calls,total_ms,pct_step\nmat"mul,1,2.0,3.0\n' >"$B/profile.csv"
check "a quote inside an unquoted field" 2 "profile.csv:2: not valid CSV" $F report "$B"
printf 'op,calls,total_ms,pct_step\n"matmul,1,2.0,3.0\n' >"$B/profile.csv"
check "a quoted field never closed" 2 "ends inside a quoted field" $F report "$B"
[ -e "$B/report.html" ] && bad "a failed report left report.html" || ok "no report.html after the errors"
echo "report profile: $fails failed"
[ "$fails" -eq 0 ]
