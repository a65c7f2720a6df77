#!/usr/bin/env bash
# bench/recipe_ablation.sh — nanochat's residual-stream recipe at the budget: arms of
# `frontier train` runs with the same preset and budget, SEEDS seeds each, the arms alternated
# seed by seed in one sitting (so drift in the machine hits every arm alike), val_bpb on the
# whole pinned validation set. Prints per-arm mean and standard deviation and each arm's
# difference from the first with its standard error, and writes the table into
# docs/training.md between <!-- bench:recipe_ablation --> markers.
#
#   BUDGET=5m SEEDS=3 bash bench/recipe_ablation.sh    # plain block, the recipe, the recipe minus each
#   BUDGET=30m SEEDS=2 ARMS='recipe=|no-lambdas=--lambdas 0' bash bench/recipe_ablation.sh
#
# Never run it beside another benchmark or test: the budget is wall-clock, so a busy CPU trains
# fewer steps and the comparison is off.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
BUDGET=${BUDGET:-5m}
SEEDS=${SEEDS:-3}
PRESET=${PRESET:-cpu}
# The plain block (each feature off; the default before the recipe was measured), the recipe (the
# default), and the recipe but one (backout left in: at the cpu preset's depth 2 it is inert,
# docs/training.md)
PLAIN='--lambdas 0 --backout 0 --qk-scale 1 --value-embeds 0 --smear 0 --bigram 0'
ARMS=${ARMS:-"plain=$PLAIN|recipe=|no-lambdas=--lambdas 0|no-qk-scale=--qk-scale 1|no-value-embeds=--value-embeds 0|no-smear=--smear 0|no-bigram=--bigram 0"}
# The binary: a copy keeps a long sitting's arms on one build while the tree is rebuilt.
FRONTIER=${FRONTIER:-./frontier}
# The docs/training.md section the table goes to (a 30-minute sitting gets its own).
SECTION=${SECTION:-recipe_ablation}
OUT=${OUT:-runs/recipe_ablation}
[ -x "$FRONTIER" ] || { echo "build $FRONTIER first (make)"; exit 1; }
mkdir -p "$OUT"
IFS='|' read -r -a arms <<<"$ARMS"
results="$OUT/results.tsv"
[ -f "$results" ] || printf 'arm\tseed\tval_bpb\tsteps\ttok_per_s\n' > "$results"
for seed in $(seq 1 "$SEEDS"); do
  for arm in "${arms[@]}"; do
    name=${arm%%=*} flags=${arm#*=}
    dir="$OUT/$name-s$seed"
    if [ -f "$dir/summary.json" ] && grep -q "^$name	$seed	" "$results"; then continue; fi  # done in an earlier sitting
    rm -rf "$dir"
    # shellcheck disable=SC2086
    "$FRONTIER" train --preset "$PRESET" --budget "$BUDGET" --seed "$seed" --quiet --run-dir "$dir" $flags > "$dir.log" 2>&1 \
      || { echo "train $name seed $seed failed:"; tail -5 "$dir.log"; exit 1; }
    /usr/bin/python3 - "$dir/summary.json" "$name" "$seed" >> "$results" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{s['val_bpb']:.6f}\t{s['steps']}\t{s['tok_per_s']:.0f}")
PY
    tail -1 "$results"
  done
done
table=$(mktemp)
{
  echo "$(bench_machine), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); \`SECTION=$SECTION BUDGET=$BUDGET SEEDS=$SEEDS PRESET=$PRESET ARMS='$ARMS' bash bench/recipe_ablation.sh\`"
  echo
  /usr/bin/python3 - "$results" "$ARMS" <<'PY'
import math, statistics as st, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]).readlines()[1:]]
order = [a.split("=", 1)[0] for a in sys.argv[2].split("|")]
arms = {a: [r for r in rows if r[0] == a] for a in order}
print("| arm | flags | seeds | val_bpb mean | sd | vs " + order[0] + " (± s.e.) | paired by seed (± s.e.) | seeds better | steps | tok/s |")
print("|---|---|---|---|---|---|---|---|---|---|")
by_seed = {r[1]: float(r[2]) for r in arms[order[0]]}
flags = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in sys.argv[2].split("|")}
base = [float(r[2]) for r in arms[order[0]]]
for a in order:
    v = [float(r[2]) for r in arms[a]]
    if not v: continue
    m, sd = st.mean(v), (st.stdev(v) if len(v) > 1 else float("nan"))
    if a == order[0]:
        d = p = better = "—"
    else:
        se = math.sqrt(st.variance(v) / len(v) + st.variance(base) / len(base)) if len(v) > 1 and len(base) > 1 else float("nan")
        d = f"{m - st.mean(base):+.4f} ± {se:.4f}"
        # the same seed's runs differ only by the arm (same data order, same init where shapes
        # allow): their differences cancel what the seed does to both
        diffs = [float(r[2]) - by_seed[r[1]] for r in arms[a] if r[1] in by_seed]
        pse = st.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
        p = f"{st.mean(diffs):+.4f} ± {pse:.4f}" if diffs else "—"
        better = f"{sum(x < 0 for x in diffs)}/{len(diffs)}"
    steps = st.mean(float(r[3]) for r in arms[a]); tps = st.mean(float(r[4]) for r in arms[a])
    print(f"| {a} | `{flags[a] or '(defaults)'}` | {len(v)} | {m:.4f} | {sd:.4f} | {d} | {p} | {better} | {steps:.0f} | {tps:.0f} |")
PY
} > "$table"
cat "$table"
# into docs/training.md
replace_doc_section "$SECTION" "$table" docs/training.md
