#!/usr/bin/env bash
# bench/recipe_cost.sh — what each recipe feature costs per token: short `frontier train` runs of
# each preset with one feature on at a time (and all of them), the arms alternated round by round
# in one sitting, tok/s and MFU from each run's summary (its timed steps, warm-up left out). MFU
# counts nanochat's FLOPs per token, which leave out lookups (value embeddings, the bigram table)
# and the gates' 12- and 24-wide products, so a feature's whole cost shows as lower tok/s and MFU.
# Writes a table into docs/training.md between <!-- bench:recipe_cost --> markers.
#
#   bash bench/recipe_cost.sh [ROUNDS]          (default 2; ~20 minutes on 2 cores)
#   PRESETS=cpu bash bench/recipe_cost.sh 3
#
# Never beside another benchmark or test: every figure is a rate.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-2}
PRESETS=${PRESETS:-cpu kit-d10}
ARMS=${ARMS:-'default=|lambdas=--lambdas 1|backout=--backout 1|qk-scale=--qk-scale 1.2|value-embeds=--value-embeds 1|smear=--smear 1|bigram=--bigram 40960|all-on=--lambdas 1 --backout 1 --qk-scale 1.2 --value-embeds 1 --smear 1 --bigram 40960'}
[ -x ./frontier ] || { echo "build ./frontier first (make)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
IFS='|' read -r -a arms <<<"$ARMS"
results="$tmp/results.tsv"
for round in $(seq 1 "$ROUNDS"); do
  for preset in $PRESETS; do
    # cpu: 16 steps of its 16384 tokens (~25 s on 2 AVX2 cores); kit-d10 at 4096-token batches (as
    # bench/train_throughput.sh: the per-token cost is the batch's, not the step count's), 8 steps;
    # the first 2 are warm-up, left out of tok/s
    steps=16 shape=""; [ "$preset" = kit-d10 ] && steps=8 shape="--batch-tokens 4096 --device-batch 2"
    for arm in "${arms[@]}"; do
      name=${arm%%=*} flags=${arm#*=} dir="$tmp/$preset-$name-$round"
      # shellcheck disable=SC2086
      ./frontier train --preset "$preset" $shape --steps "$steps" --eval-tokens 4096 --quiet --run-dir "$dir" $flags \
        > "$dir.log" 2>&1 || { echo "train $preset $name failed:"; tail -5 "$dir.log"; exit 1; }
      /usr/bin/python3 - "$dir/summary.json" "$preset" "$name" >> "$results" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{s['tok_per_s']:.1f}\t{s['mfu']:.5f}")
PY
      tail -1 "$results"
    done
  done
done
table=$(mktemp)
{
  echo "$(bench_machine); \`bash bench/recipe_cost.sh $ROUNDS\` (PRESETS='$PRESETS'), precision auto"
  echo
  /usr/bin/python3 - "$results" "$ARMS" "$PRESETS" <<'PY'
import statistics as st, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
order = [a.split("=", 1)[0] for a in sys.argv[2].split("|")]
flags = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in sys.argv[2].split("|")}
presets = sys.argv[3].split()
print("| arm | flags | " + " | ".join(f"{p} tok/s (median) | {p} MFU | {p} vs default" for p in presets) + " |")
print("|---|---|" + "---|---|---|" * len(presets))
for a in order:
    cells = []
    for p in presets:
        v = [float(r[2]) for r in rows if r[0] == p and r[1] == a]
        u = [float(r[3]) for r in rows if r[0] == p and r[1] == a]
        b = [float(r[2]) for r in rows if r[0] == p and r[1] == order[0]]
        if not v:
            cells += ["—"] * 3
            continue
        rel = "—" if a == order[0] else f"{100 * (st.median(v) / st.median(b) - 1):+.1f}%"
        cells += [f"{st.median(v):.0f}", f"{100 * st.median(u):.1f}%", rel]
    print(f"| {a} | `{flags[a] or '(defaults)'}` | " + " | ".join(cells) + " |")
PY
} > "$table"
cat "$table"
replace_doc_section "recipe_cost" "$table" docs/training.md
