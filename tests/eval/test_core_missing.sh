#!/usr/bin/env bash
# tests/eval/test_core_missing.sh — CORE when task data is missing, and `frontier score` on a CORE
# that covers fewer tasks. On a tiny trained run (seconds), with a copy of the CORE bundle that
# lacks one task's file:
#   - eval --core fails (exit 2) naming the task and its path, and writes no core.json;
#   - with --allow-missing-tasks it scores the rest; the CORE line and core.json say how many of
#     core.yaml's tasks it covers and list the missing one;
#   - the shared bundle works as it is: coqa, which it does not ship (its README), is reported as
#     not in the bundle, never an error; CORE over 21 of 22 tasks;
#   - score refuses (exit 2) a composite whose CORE lacks a task (missing data, --tasks, or one
#     another run scored), naming the run and the tasks, unless --allow-partial-core (flagged).
# Runs from the project root.
set -uo pipefail
F=$PWD/frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
CORE=${FRONTIER_DATA:-../shared/data}/core
[ -r "$CORE/core.yaml" ] || { bad "no CORE bundle at $CORE (FRONTIER_DATA?)"; exit 1; }
CORE=$(realpath "$CORE")
$F train --steps 2 --depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512 \
  --eval-tokens 2000 --run-dir "$tmp/full" --quiet >"$tmp/train.log" 2>&1 || { tail -5 "$tmp/train.log"; bad "train"; exit 1; }
for r in lacks subset; do cp -r "$tmp/full" "$tmp/$r"; done
M=(--max-per-task 11)   # more rows than the largest few-shot count (10), so every task can run

# A bundle without copa's file: core.yaml and the baselines copied, every other task file linked.
B=$tmp/bundle
mkdir -p "$B"
cp "$CORE/core.yaml" "$CORE/eval_meta_data.csv" "$B/"
(cd "$CORE" && find eval_data -name '*.jsonl') | while read -r f; do mkdir -p "$B/$(dirname "$f")"; ln -s "$CORE/$f" "$B/$f"; done
copa=$B/eval_data/commonsense_reasoning/copa.jsonl
[ -L "$copa" ] && rm "$copa" || bad "the bundle has no copa file to take away"

check "a missing task file is an error"     2 "CORE task data missing: copa ($copa)" \
  $F eval --core --ckpt "$tmp/lacks" --core-dir "$B" "${M[@]}"
check "... also when --tasks selects it"    2 "CORE task data missing: copa" \
  $F eval --core --ckpt "$tmp/lacks" --core-dir "$B" --tasks winograd,copa "${M[@]}"
[ ! -e "$tmp/lacks/core.json" ] && ok "no core.json after the error" || bad "a failed eval --core wrote core.json"
check "a task without data not selected: fine" 0 "CORE " \
  $F eval --core --ckpt "$tmp/lacks" --core-dir "$B" --tasks winograd "${M[@]}"
rm -f "$tmp/lacks/core.json"
out=$($F eval --core --ckpt "$tmp/lacks" --core-dir "$B" --allow-missing-tasks "${M[@]}" 2>/dev/null); rc=$?
[ $rc = 0 ] && ok "--allow-missing-tasks scores the rest" || bad "--allow-missing-tasks: exit $rc"
grep -q "^CORE .* over 20 of 22 tasks; not in the data bundle: coqa; data missing (--allow-missing-tasks): copa;" <<<"$out" \
  && ok "the CORE line says 20 of 22 and names coqa and copa" || bad "CORE line: $(grep '^CORE' <<<"$out")"
grep -q "^copa .*(not scored: data file missing, --allow-missing-tasks)" <<<"$out" && ok "copa's row says it is not scored" \
  || bad "copa row: $(grep '^copa' <<<"$out")"
python3 - "$tmp/lacks/core.json" "$copa" <<'PY' && ok "core.json: 20 of 22 scored, copa and coqa missing with reasons" || bad "core.json of the partial run"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["tasks_scored"], d["tasks_total"], d["n_tasks"]) == (20, 22, 20), d
assert sorted(d["missing"]) == ["copa", "coqa"], d["missing"]
why = {m["label"]: m for m in d["missing_detail"]}
assert why["copa"]["path"] == sys.argv[2] and "allow-missing-tasks" in why["copa"]["reason"], why
assert "known absent" in why["coqa"]["reason"], why
assert d["not_selected"] == [] and len(d["tasks"]) == 20
PY

# The shared bundle as it is: coqa is known absent.
out=$($F eval --core --ckpt "$tmp/full" "${M[@]}" 2>/dev/null); rc=$?
[ $rc = 0 ] && grep -q "^CORE .* over 21 of 22 tasks; not in the data bundle: coqa;" <<<"$out" \
  && ok "the shared bundle: CORE over 21 of 22 tasks, coqa not in the bundle" || bad "shared bundle: exit $rc, $(grep '^CORE' <<<"$out")"
check "only tasks without data: nothing to score" 2 "none of the tasks selected has data" \
  $F eval --core --ckpt "$tmp/subset" --tasks coqa "${M[@]}"
check "an unknown --tasks label"            2 "--tasks: 'nosuch', 'nope' are not in" \
  $F eval --core --ckpt "$tmp/subset" --tasks copa,nosuch,nope "${M[@]}"
check "a subset with --tasks"               0 "over 2 of 22 tasks; 20 not selected (--tasks)" \
  $F eval --core --ckpt "$tmp/subset" --tasks copa,winograd "${M[@]}"

# Scores: full (21 of 22) against lacks (copa missing) and subset (2 tasks).
cd "$tmp"
check "score refuses a CORE with missing data" 2 "lacks: its CORE covers 20 of 22 tasks and lacks copa" $F score full lacks
check "score refuses a --tasks subset"         2 "subset: its CORE covers 2 of 22 tasks and lacks" $F score full subset
# A run whose bundle had coqa (22 of 22) makes the 21-task CORE the smaller one.
cp -r full withcoqa
python3 - withcoqa/core.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["tasks"].append(dict(d["tasks"][0], label="coqa"))
d["missing"], d["missing_detail"], d["tasks_scored"], d["n_tasks"] = [], [], 22, 22
json.dump(d, open(sys.argv[1], "w"))
PY
check "score refuses fewer tasks than another run" 2 "full: its CORE covers 21 of 22 tasks and lacks coqa" $F score withcoqa full
out=$($F score full lacks --allow-partial-core --json s.json 2>&1); rc=$?
[ $rc = 0 ] && ok "--allow-partial-core ranks them" || bad "--allow-partial-core: exit $rc: $out"
grep -qE '^lacks .* 20/22\* ' <<<"$out" && grep -qE '^full .* 21/22 ' <<<"$out" && ok "the partial run is flagged 20/22*" \
  || bad "table: $out"
grep -qF "partial CORE (--allow-partial-core)" <<<"$out" && ok "a footnote says so" || bad "no partial-CORE footnote"
python3 - s.json <<'PY' && ok "JSON: partial_core and core_lacks" || bad "score JSON lacks the partial flags"
import json, sys
r = {x["run"]: x for x in json.load(open(sys.argv[1]))["runs"]}
assert r["lacks"]["partial_core"] is True and r["lacks"]["core_lacks"] == ["copa"], r["lacks"]
assert r["full"]["partial_core"] is False and r["full"]["core_lacks"] == [], r["full"]
assert (r["full"]["tasks_scored"], r["full"]["n_tasks"]) == (21, 22)
PY
check "a full CORE alone scores"            0 "21/22" $F score full
echo "core missing: $fails failed"
[ "$fails" -eq 0 ]
