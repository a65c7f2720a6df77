#!/usr/bin/env bash
# bench/plan_sustained.sh — does the sustained rate correct the planner's tokens? The runs of at
# least 10 minutes that bench/plan_validate.sh and bench/phases.sh finished (their configs and
# summaries are in the repository) against the throughput model of bench/results/plan/cache: each
# run's measured tok/s beside the calibrated prediction for its shape, and beside the prediction
# times the sustained factor learned from the *other* runs (leave one out: the factor a plan made
# before that run would have had). No training: seconds. The table goes to docs/planning.md
# (between the bench:plan_sustained markers).
#
#   bash bench/plan_sustained.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
F=${FRONTIER:-./frontier}
R=bench/results/plan
RUNS=${RUNS:-"$R/runs bench/results/phases/phase1-30m"}
[ -x "$F" ] || { echo "plan_sustained: build $F first (make)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the validation's throughput model, in a cache of its own: learning must not change the bench's
mkdir -p "$tmp/cache/plan" && cp "$R/cache/throughput.json" "$tmp/cache/"
ln -s "$(realpath "$R/cache/shards")" "$tmp/cache/shards"
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "plan_sustained: prepare did not report a data folder"; exit 1; }
reuse=(); for d in $RUNS; do reuse+=(--reuse "$d"); done
$F plan --budget 30m --data "$data" --cache "$tmp/cache" "${reuse[@]}" --out "$tmp/plan.json" > "$tmp/plan.log" 2>&1 \
  || { tail -5 "$tmp/plan.log"; echo "plan_sustained: frontier plan failed"; exit 1; }
out=$tmp/table.md
{ echo "$(bench_machine), build $(bench_build "$F"). Command: \`bash bench/plan_sustained.sh\` (no training: the finished runs' summaries against the throughput model of $R/cache)."
  echo
  /usr/bin/python3 - "$tmp/plan.log" <<'PY'
import math, re, sys
rows = [(m[1], float(m[2]), float(m[3])) for m in re.finditer(r"^plan: sustained: (\S+): (\d+) tok/s over \d+ s, predicted (\d+):", open(sys.argv[1]).read(), re.M)]
if len(rows) < 2: sys.exit("fewer than 2 long runs: nothing to leave out")
print("| run | measured tok/s | predicted (calibration) | error | predicted × factor of the others | error |")
print("|---|---|---|---|---|---|")
e0, e1 = [], []
for i, (run, meas, pred) in enumerate(rows):
    k = math.exp(sum(math.log(m / p) for j, (_, m, p) in enumerate(rows) if j != i) / (len(rows) - 1))
    e0.append(pred / meas - 1), e1.append(pred * k / meas - 1)
    print(f"| {run} | {meas:.0f} | {pred:.0f} | {e0[-1]:+.1%} | {pred * k:.0f} (×{k:.3f}) | {e1[-1]:+.1%} |")
rms = lambda v: math.sqrt(sum(x * x for x in v) / len(v))
print(f"| **rms over {len(rows)} runs** | | | **{rms(e0):.1%}** | | **{rms(e1):.1%}** |")
PY
} > "$out" || { cat "$out"; exit 1; }
cat "$out"
replace_doc_section plan_sustained "$out" docs/planning.md
