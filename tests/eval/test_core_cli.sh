#!/usr/bin/env bash
# tests/eval/test_core_cli.sh — `frontier eval --core` end to end on a tiny trained run: one
# task of each type, a few rows each; prints the rows and the CORE mean, writes core.json whose
# numbers are consistent (centered from accuracy and baseline, CORE = mean of centered); bad
# --tasks and a missing bundle are clear errors.
set -uo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
./frontier train --steps 3 --depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 \
  --batch-tokens 512 --eval-tokens 2000 --run-dir "$tmp/r" --quiet > /dev/null 2>&1 || { echo "FAIL: train"; exit 1; }
out=$(./frontier eval --core --ckpt "$tmp/r" --tasks copa,winograd,jeopardy --max-per-task 12 2>&1) || { echo "FAIL: eval --core"; echo "$out"; exit 1; }
for t in copa winograd jeopardy; do grep -q "^$t " <<<"$out" || { echo "FAIL: no row for $t"; fails=$((fails+1)); }; done
grep -q "^CORE " <<<"$out" && echo "ok: CORE line" || { echo "FAIL: no CORE line"; fails=$((fails+1)); }
/usr/bin/python3 - "$tmp/r/core.json" <<'PY' && echo "ok: core.json consistent" || fails=$((fails+1))
import json, sys
d = json.load(open(sys.argv[1]))
ts = d["tasks"]
assert [t["label"] for t in ts] == ["jeopardy", "copa", "winograd"] or sorted(t["label"] for t in ts) == ["copa", "jeopardy", "winograd"], ts
for t in ts:
    assert t["rows"] == 12, t
    assert abs(t["centered"] - (t["accuracy"] - t["baseline"]) / (1 - t["baseline"])) < 1e-12, t
assert abs(d["core"] - sum(t["centered"] for t in ts) / len(ts)) < 1e-12
assert d["n_tasks"] == 3
PY
# Each thread scores whole rows of its own (core.c, score_task), in whatever order the threads
# take them. The counts must not depend on it: 1, 2 and 3 threads agree.
for n in 1 2 3; do
  ./frontier eval --core --ckpt "$tmp/r" --tasks copa,winograd,jeopardy,hellaswag_zeroshot --max-per-task 20 \
    --threads $n > /dev/null 2>&1 && cp "$tmp/r/core.json" "$tmp/t$n.json" || { echo "FAIL: eval --core --threads $n"; fails=$((fails+1)); }
done
/usr/bin/python3 - "$tmp"/t1.json "$tmp"/t2.json "$tmp"/t3.json <<'PY' && echo "ok: the same rows, tokens and CORE on 1, 2 and 3 threads" || { echo "FAIL: CORE depends on the thread count"; fails=$((fails+1)); }
import json, sys
runs = [json.load(open(f)) for f in sys.argv[1:]]
key = lambda d: (d["core"], [(t["label"], t["rows"], t["accuracy"], t["tokens"]) for t in d["tasks"]])
assert [d["threads"] for d in runs] == [1, 2, 3], [d["threads"] for d in runs]
assert all(key(d) == key(runs[0]) for d in runs), [key(d) for d in runs]
PY
./frontier eval --core --ckpt "$tmp/r" --tasks nosuchtask > "$tmp/e1" 2>&1 && { echo "FAIL: unknown task accepted"; fails=$((fails+1)); } || { grep -q "task" "$tmp/e1" && echo "ok: unknown task is an error"; }
./frontier eval --core --ckpt "$tmp/r" --core-dir "$tmp/none" > "$tmp/e2" 2>&1 && { echo "FAIL: missing bundle accepted"; fails=$((fails+1)); } || { grep -q "$tmp/none" "$tmp/e2" && echo "ok: missing bundle names the path"; }
# nanochat crashes when a task keeps fewer rows than its few-shot count (its issue #550): a clear error here
./frontier eval --core --ckpt "$tmp/r" --tasks jeopardy --max-per-task 6 > "$tmp/e3" 2>&1 && { echo "FAIL: 6 rows for 10 shots accepted"; fails=$((fails+1)); } || { grep -q "too few for 10 few-shot" "$tmp/e3" && echo "ok: too few rows for the shots is an error"; }
echo "core cli: $fails failed"
[ "$fails" -eq 0 ]
