#!/usr/bin/env bash
# tests/eval/test_score_cli.sh — `frontier score`: phase-1 ranks by val_bpb, the phase-2 composite
# (0.5*bpb_norm + 0.5*core_norm, min-max over the runs given) checked against numbers worked out by
# hand, runs without core.json (n/a), the equal-values footnote, --json (file and stdout) and the
# error cases. Runs from the project root with ./frontier built.
set -uo pipefail
F=./frontier
PY=/usr/bin/python3
source tests/lib.sh
pycheck() {  # description, json file, python statements using `j` (assert ...)
  local what=$1 file=$2 code=$3
  if $PY -c "import json,sys
j=json.load(open(sys.argv[1]))
$code" "$file" 2>&1; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails+1)); fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" && F=$OLDPWD/frontier   # short run names in the table: a, b, c, ...

summary() {  # dir, val_bpb ("" = interrupted run), tokens_trained, parameters
  mkdir -p "$1"
  local bpb=""; [ -n "$2" ] && bpb="\"val_bpb\": $2, \"eval_tokens\": 1048576, \"eval_T\": 512,"
  printf '{%s "tokens_trained": %s, "parameters": %s, "config": {"depth": 4}}\n' "$bpb" "$3" "$4" > "$1/summary.json"
}
core() {  # dir, core, number of tasks scored (of 21; the rest are listed as missing)
  local tasks="" i
  for ((i = 0; i < $3; i++)); do tasks+="${tasks:+, }{\"label\": \"t$i\", \"accuracy\": 0.5, \"centered\": $2, \"rows\": 100}"; done
  printf '{"core": %s, "n_tasks": 21, "missing": ["coqa"], "tasks": [%s]}\n' "$2" "$tasks" > "$1/core.json"
}
summary a 2.0 120000000 20500000; core a 0.10 20
summary b 2.2 60000000  20500000; core b 0.05 20
summary c 2.1 90000000  20500000          # no core.json

# By hand: min/max bpb 2.0/2.2 -> bpb_norm a = 1, b = 0, c = (2.2-2.1)/0.2 = 0.5.
# CORE over a, b only: core_norm a = 1, b = 0. composite a = 1.0, b = 0.0, c = n/a.
# Phase 1 ranks a 1, c 2, b 3; phase 2 a 1, b 2, c none.
out=$($F score a b c 2>&1); rc=$?
echo "$out"
[ $rc = 0 ] && echo "ok: score a b c" || { echo "FAIL: score a b c exit $rc"; fails=$((fails+1)); }
row() { grep -E "^$1 " <<<"$out" | tr -s ' '; }
[ "$(row a)" = "a 2.0000 1 0.1000 20/21 1.0000 1 120.00M 20.50M" ] && echo "ok: row a" || { echo "FAIL: row a: '$(row a)'"; fails=$((fails+1)); }
[ "$(row b)" = "b 2.2000 3 0.0500 20/21 0.0000 2 60.00M 20.50M" ] && echo "ok: row b" || { echo "FAIL: row b: '$(row b)'"; fails=$((fails+1)); }
[ "$(row c)" = "c 2.1000 2 n/a - n/a - 90.00M 20.50M" ] && echo "ok: row c (n/a)" || { echo "FAIL: row c: '$(row c)'"; fails=$((fails+1)); }
[ "$(grep -E '^[abc] ' <<<"$out" | cut -c1)" = $'a\nc\nb' ] && echo "ok: table in phase-1 order" || { echo "FAIL: table order"; fails=$((fails+1)); }
grep -qF "runs without core.json have no composite (n/a)" <<<"$out" && echo "ok: n/a footnote" || { echo "FAIL: n/a footnote"; fails=$((fails+1)); }
grep -qF "(max == min)" <<<"$out" && { echo "FAIL: equal-values footnote where values differ"; fails=$((fails+1)); }

check "score --json FILE" 0 "scores $tmp/s.json" $F score a b c --json "$tmp/s.json"
pycheck "JSON file: ranks and composites" "$tmp/s.json" '
r = {x["run"]: x for x in j["runs"]}
assert [x["run"] for x in j["runs"]] == ["a", "c", "b"], j["runs"]
assert (r["a"]["phase1_rank"], r["c"]["phase1_rank"], r["b"]["phase1_rank"]) == (1, 2, 3)
assert (r["a"]["phase2_rank"], r["b"]["phase2_rank"], r["c"]["phase2_rank"]) == (1, 2, None)
assert abs(r["a"]["composite"] - 1.0) < 1e-12 and abs(r["b"]["composite"]) < 1e-12
assert r["c"]["composite"] is None and r["c"]["core"] is None and r["c"]["core_norm"] is None
assert abs(r["c"]["bpb_norm"] - 0.5) < 1e-9
assert r["a"]["tasks_scored"] == 20 and r["a"]["n_tasks"] == 21 and r["a"]["missing_tasks"] == ["coqa"]
assert r["a"]["tokens_trained"] == 120000000 and r["a"]["parameters"] == 20500000
assert j["skipped"] == []'
ls "$tmp"/s.json.tmp-* >/dev/null 2>&1 && { echo "FAIL: temp file left behind"; fails=$((fails+1)); }

# A fourth run with CORE: d bpb 2.15, core 0.08. Over a, b, d: bpb_norm d = (2.2-2.15)/0.2 = 0.25,
# core_norm d = (0.08-0.05)/(0.10-0.05) = 0.6, composite d = 0.5*0.25 + 0.5*0.6 = 0.425.
# c stays in the bpb min-max (it has val_bpb), which does not move it (2.0..2.2).
summary d 2.15 30000000 20500000; core d 0.08 20
$F score a b c d --json - > "$tmp/d.json" 2>"$tmp/d.err"; rc=$?
[ $rc = 0 ] && echo "ok: --json - exit 0" || { echo "FAIL: --json - exit $rc"; fails=$((fails+1)); }
grep -qE '^d +2\.1500 +3 +0\.0800 +20/21 +0\.4250 +2 ' "$tmp/d.err" && echo "ok: row d on stderr with --json -" || { echo "FAIL: row d"; cat "$tmp/d.err"; fails=$((fails+1)); }
pycheck "--json - is only JSON; composite d = 0.425" "$tmp/d.json" '
r = {x["run"]: x for x in j["runs"]}
assert abs(r["d"]["bpb_norm"] - 0.25) < 1e-9 and abs(r["d"]["core_norm"] - 0.6) < 1e-9
assert abs(r["d"]["composite"] - 0.425) < 1e-9
assert [x["run"] for x in j["runs"]] == ["a", "c", "d", "b"]
assert (r["a"]["phase2_rank"], r["d"]["phase2_rank"], r["b"]["phase2_rank"]) == (1, 2, 3)
assert (r["d"]["phase1_rank"], r["b"]["phase1_rank"]) == (3, 4)'

# Equal values: same val_bpb and same CORE everywhere -> both components 1.0, composite 1.0, footnotes.
summary e1 2.05 1000 100; core e1 0.07 21
summary e2 2.05 1000 100; core e2 0.07 21
out=$($F score e1 e2 --json "$tmp/e.json" 2>&1)
grep -qF "every run has the same val_bpb (max == min): its component is 1.0 for every run" <<<"$out" && echo "ok: equal val_bpb footnote" || { echo "FAIL: equal val_bpb footnote"; echo "$out"; fails=$((fails+1)); }
grep -qF "every run with CORE has the same CORE (max == min)" <<<"$out" && echo "ok: equal CORE footnote" || { echo "FAIL: equal CORE footnote"; fails=$((fails+1)); }
pycheck "equal values: composite 1.0, tied ranks" "$tmp/e.json" '
assert all(x["composite"] == 1.0 and x["bpb_norm"] == 1.0 and x["core_norm"] == 1.0 for x in j["runs"])
assert [x["phase1_rank"] for x in j["runs"]] == [1, 1] and [x["phase2_rank"] for x in j["runs"]] == [1, 1]
assert len(j["notes"]) == 2'

# Interrupted run (no val_bpb): an error naming it, or skipped with --skip-incomplete.
summary x "" 500 100
check "interrupted run is an error"  2 "x/summary.json has no val_bpb" $F score a b x
check "--skip-incomplete lists it"   0 "skipped: x (no val_bpb"        $F score a b x --skip-incomplete --json "$tmp/x.json"
pycheck "skipped in JSON" "$tmp/x.json" 'assert [s["run"] for s in j["skipped"]] == ["x"] and len(j["runs"]) == 2'
check "only interrupted runs"        2 "no run has val_bpb"            $F score x --skip-incomplete

# Errors.
check "no RUN_DIR"                   2 "usage: frontier score"         $F score
check "no RUN_DIR with --json"       2 "expected at least one RUN_DIR" $F score --json "$tmp/n.json"
check "unknown flag"                 2 "unknown flag --nope"           $F score a --nope
check "missing folder"               2 "nope: no such run folder"      $F score a nope
mkdir -p empty
check "missing summary.json"         2 "empty has no summary.json"            $F score a empty
mkdir -p bad; echo '{"val_bpb": 2.0,' > bad/summary.json
check "malformed summary.json"       2 "bad/summary.json: not a JSON object" $F score a bad
mkdir -p str; echo '{"val_bpb": "2.0"}' > str/summary.json
check "val_bpb not a number"         2 "str/summary.json: \"val_bpb\" is not a number" $F score str
summary badcore 2.0 1 1; echo 'nope' > badcore/core.json
check "malformed core.json"          2 "badcore/core.json: not a JSON object" $F score badcore
check "--help"                       0 "composite = 0.5*bpb_norm"      $F score --help
[ -e "$tmp/n.json" ] && { echo "FAIL: a failed score wrote $tmp/n.json"; fails=$((fails+1)); }
$F score a nope --json "$tmp/f.json" >/dev/null 2>&1
[ -e "$tmp/f.json" ] && { echo "FAIL: a failed score wrote f.json"; fails=$((fails+1)); } || echo "ok: failed score writes no JSON"
check "help lists score"             0 "score "                        $F help

echo "score: $fails failed"
[ "$fails" -eq 0 ]
