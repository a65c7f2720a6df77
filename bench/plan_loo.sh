#!/usr/bin/env bash
# bench/plan_loo.sh — the loss model on runs it has not seen, and the law refitted on every run.
# Fits only (seconds each): the ladder's runs are read from bench/results/plan/cache and the
# validation runs' configs and summaries from bench/results/plan/runs; nothing trains (a fit that
# would train a ladder rung is stopped and reported).
#   - the ladder alone: the fit the validation's plans used;
#   - for each budget B of validation.tsv, the ladder plus the plan's picks at the other budgets
#     (`frontier plan --fit --reuse`): the law at the tokens B's runs trained, out of sample;
#   - the ladder plus every pick: bench/results/plan/refit/scaling-<key>.json, and with REFERENCE=1
#     copied to plan/ as the reference loss model frontier ships.
# Only the picks are points: the law is val_bpb of runs trained by the plan's rules (batch and
# weight decay by tokens, as the ladder's rungs are); the preset's runs have the same N and D and
# their own batch and weight decay, and at 30 minutes they measure 0.04 worse, which no L(N, D)
# can hold. The mixtures are priced by planner/worth.h, not the law. Both are shown, not fitted.
# Writes bench/results/plan/refit.md (the law of each fit, each run's error, the mean error per fit).
#
#   bash bench/plan_loo.sh               # ~1 minute
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
F=${FRONTIER:-./frontier}
R=bench/results/plan
FIT_MINUTES=${FIT_MINUTES:-60}  # the ladder's bound when it was run: the same rungs are read, none trained
[ -x "$F" ] || { echo "plan_loo: build $F first (make)"; exit 1; }
[ -s "$R/validation.tsv" ] && [ -d "$R/cache/plan" ] || { echo "plan_loo: no validation yet (bench/plan_validate.sh)"; exit 1; }
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "plan_loo: prepare did not report a data folder"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$R/refit"

# fit NAME [RUN...]: the ladder plus these validation runs -> $tmp/NAME.json and its log line
fit() {
  local name=$1; shift
  rm -rf "$tmp/cache" "$tmp/runs"; cp -r "$R/cache" "$tmp/cache"; mkdir -p "$tmp/runs"
  for r in "$@"; do ln -s "$(realpath "$R/runs/$r")" "$tmp/runs/$r"; done
  local before; before=$(ls -d "$tmp"/cache/plan/ladder-*/* | wc -l)
  timeout 300 $F plan --fit --fit-minutes "$FIT_MINUTES" --budget 30m --data "$data" --cache "$tmp/cache" \
    --reuse "$tmp/runs" --out "$tmp/$name-plan.json" > "$tmp/$name.log" 2>&1
  local rc=$? after; after=$(ls -d "$tmp"/cache/plan/ladder-*/* | wc -l)
  [ $rc = 0 ] && [ "$before" = "$after" ] || { tail -5 "$tmp/$name.log"; echo "plan_loo: the fit '$name' failed or trained (exit $rc, rung folders $before -> $after)"; exit 1; }
  cp "$tmp"/cache/plan/scaling-*.json "$tmp/$name.json"
  echo "| $name | $# | $(sed -n 's/^loss model: //p' "$tmp/$name.log" | head -1) |" >> "$tmp/laws.md"
}

# the picks whose folders are here, by budget
mapfile -t rows < <(awk -F'\t' 'NR > 1 && $2 == "pick" { print $1 "\t" $1 "-" $2 "-s" $3 }' "$R/validation.tsv")
budgets=$(printf '%s\n' "${rows[@]}" | cut -f1 | sort -u)
runs_except() { printf '%s\n' "${rows[@]}" | awk -F'\t' -v b="$1" '$1 != b { print $2 }' | while read -r r; do [ -s "$R/runs/$r/summary.json" ] && echo "$r"; done; }

fit ladder
for b in $budgets; do mapfile -t keep < <(runs_except "$b"); fit "without-$b" "${keep[@]}"; done
mapfile -t all < <(runs_except "-"); fit all "${all[@]}"

{
  echo "$(bench_machine), build $(bench_build "$F"). Command: \`bash bench/plan_loo.sh\`."
  echo
  echo "| fit | validation runs in it | law |"; echo "|---|---|---|"; cat "$tmp/laws.md"
  echo
  /usr/bin/python3 bench/plan_law_check.py --law "$tmp/ladder.json" --label "ladder alone"
  for b in $budgets; do /usr/bin/python3 bench/plan_law_check.py --law "$tmp/without-$b.json" --budget "$b" --label "without $b (out of sample)" --no-header; done
  /usr/bin/python3 bench/plan_law_check.py --law "$tmp/all.json" --label "every run (in sample)" --no-header
  echo
  echo "The law's error on the picks (the runs it models) and on every run on the corpus (the preset's too):"; echo
  echo "| fit, runs | runs | mean measured − law | mean abs | within 0.02 |"; echo "|---|---|---|---|---|"
  { /usr/bin/python3 bench/plan_law_check.py --law "$tmp/ladder.json" --label ladder --no-header
    for b in $budgets; do /usr/bin/python3 bench/plan_law_check.py --law "$tmp/without-$b.json" --budget "$b" --label "out of sample" --no-header; done
    /usr/bin/python3 bench/plan_law_check.py --law "$tmp/all.json" --label "every run (in sample)" --no-header
  } | awk -F'|' '{ gsub(/^ +| +$/, "", $2); e = $10 + 0; for (i = 0; i < 2; i++) { k = $2 (i ? ", every run" : ", the picks")
                    if (!i && $4 !~ / pick /) continue; n[k]++; s[k] += e; a[k] += (e < 0 ? -e : e); w[k] += (e < 0 ? -e : e) <= 0.02 } }
      END { for (k in n) printf "| %s | %d | %+.4f | %.4f | %d of %d |\n", k, n[k], s[k] / n[k], a[k] / n[k], w[k], n[k] }' | sort
} > "$R/refit.md"
cp "$tmp/all.json" "$R/refit/$(basename "$(ls "$R"/cache/plan/scaling-*.json | head -1)")"
[ "${REFERENCE:-0}" = 1 ] && cp "$tmp/all.json" "plan/$(basename "$(ls "$R"/cache/plan/scaling-*.json | head -1)")"
cat "$R/refit.md"
