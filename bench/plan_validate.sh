#!/usr/bin/env bash
# bench/plan_validate.sh — does the planner pick well? A resumable benchmark in pieces: each
# invocation works for at most MAX_MINUTES and exits; the next continues from what was recorded.
# Its state — the calibration's and the ladder's run folders pruned to their configs and summaries
# (kilobytes), the fit, and one TSV row per finished validation run — lives in bench/results/plan/
# and is meant to be committed after every piece, so that a fresh clone on another machine of the
# same kind continues where the last piece stopped.
#
#   MAX_MINUTES=60 bash bench/plan_validate.sh        # one piece; run it again until it says "done"
#
# The pieces, in order:
#   1. calibrate the throughput model (11 short runs) and check it on 6 held-out shapes
#      (`frontier plan --calibrate --check`): the rows go to throughput.md;
#   2. the loss ladder and its fit (`frontier plan --fit`, FIT_MINUTES of training budgets);
#   3. validation runs, arms alternated seed by seed (SEEDS each): at 30 minutes the plan's pick
#      against the `cpu` preset; at 5 minutes the same; every run's predicted val_bpb is recorded
#      beside the measured one (validation.tsv);
#   4. the tables into docs/planning.md (between the bench:planning markers).
# Never beside another benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-60}
FIT_MINUTES=${FIT_MINUTES:-60}
SEEDS=${SEEDS:-2}
BUDGETS=${BUDGETS:-"30m 5m"}
F=${FRONTIER:-./frontier}
R=bench/results/plan
C=$R/cache
mkdir -p "$C" "$R/runs"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
time_left() { [ "$(date +%s)" -lt "$t_end" ]; }
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "plan_validate: prepare did not report a data folder"; exit 1; }
# Only what a run's verdict needs stays: the configs and summaries (the rest is megabytes).
prune() { find "$C/plan" \( -name metrics.jsonl -o -name train.log -o -name '*.safetensors' -o -name tokenizer -o -name checkpoints \) -prune -exec rm -rf {} + 2>/dev/null; true; }

# 1. throughput
if [ ! -s "$R/throughput.md" ] && time_left; then
  $F plan --calibrate --check --budget 30m --data "$data" --cache "$C" --out "$R/plan-30m.json" > "$R/calibrate.log" 2>&1 \
    || { tail -5 "$R/calibrate.log"; prune; exit 1; }
  { echo "$(bench_machine), build $(bench_build "$F"). Command: \`frontier plan --calibrate --check\`."; echo
    grep -E '^\| |^held-out|^throughput model' "$R/calibrate.log"; } > "$R/throughput.md"
  prune
  echo "plan_validate: throughput model calibrated and checked ($R/throughput.md)"
fi

# 2. the loss ladder (resumable by itself: finished runs are not trained again)
if [ ! -s "$R/fit.md" ] && time_left; then
  left=$(( (t_end - $(date +%s)) / 60 ))
  # each invocation adds runs whose budgets fit the minutes left (overheads aside)
  $F plan --fit --fit-minutes "$FIT_MINUTES" --budget 30m --data "$data" --cache "$C" --out "$R/plan-30m.json" \
    > "$R/fit.log" 2>&1 &
  pid=$!
  while kill -0 $pid 2>/dev/null; do
    if ! time_left; then kill -TERM $pid; wait $pid; prune; echo "plan_validate: MAX_MINUTES reached during the ladder; run again to continue"; exit 0; fi
    sleep 5
  done
  wait $pid || { tail -5 "$R/fit.log"; prune; exit 1; }
  { echo "$(bench_machine), build $(bench_build "$F"). Command: \`frontier plan --fit --fit-minutes $FIT_MINUTES\`; the page: \`$C/plan/scaling-*.html\`."; echo
    grep -E '^loss model|^\| ' "$R/fit.log"; } > "$R/fit.md"
  prune
  echo "plan_validate: the loss model fitted ($R/fit.md)"
fi

# 3. validation runs: the pick vs the cpu preset, alternated seed by seed
V=$R/validation.tsv
[ -s "$V" ] || printf 'budget\tarm\tseed\tdepth\tval_bpb\tpredicted\tpredicted_sd\ttokens\tepochs\tdate\tgit\n' > "$V"
for budget in $BUDGETS; do
  $F plan --budget "$budget" --data "$data" --cache "$C" --out "$R/plan-$budget.json" > "$R/plan-$budget.md" 2>&1 \
    || { tail -5 "$R/plan-$budget.md"; exit 1; }
  for s in $(seq 1 "$SEEDS"); do
    for arm in pick preset; do
      grep -q "^$budget	$arm	$s	" "$V" && continue
      time_left || { echo "plan_validate: MAX_MINUTES reached; run again to continue"; exit 0; }
      d=$R/runs/$budget-$arm-s$s
      rm -rf "$d"
      if [ $arm = pick ]; then cfg=(--config "$R/plan-$budget.json"); else cfg=(--preset cpu --budget "$budget"); fi
      $F train "${cfg[@]}" --data "$data" --seed "$s" --quiet --run-dir "$d" > "$d.log" 2>&1 || { tail -5 "$d.log"; exit 1; }
      /usr/bin/python3 - "$d" "$R/plan-$budget.md" "$budget" "$arm" "$s" "$(date -u +%F)" "$(git rev-parse --short HEAD)" >> "$V" <<'PY'
import json, sys
d, table, budget, arm, seed, date, git = sys.argv[1:]
s, c = json.load(open(f"{d}/summary.json")), json.load(open(f"{d}/config.json"))
pred = sd = "-"
for line in open(table):  # the plan's row of this depth (the preset's depth has its row too)
    cells = [x.strip() for x in line.split("|")]
    if len(cells) > 14 and cells[2] == str(c["depth"]) and cells[3] == str(c["n-embd"]) and "+-" in cells[14]:
        pred, sd = (x.strip() for x in cells[14].split("+-"))
print("\t".join(map(str, [budget, arm, seed, c["depth"], f"{s['val_bpb']:.4f}", pred, sd, int(s["tokens_trained"]),
                          f"{s.get('epochs', 0):.2f}", date, git])))
PY
      rm -rf "$d/checkpoints" "$d"/*.safetensors "$d/latest" "$d/tokenizer"
      echo "plan_validate: $(tail -1 "$V")"
    done
  done
done

# 4. the tables
/usr/bin/python3 - "$V" > "$R/validation.md" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("| budget | arm | depth | seeds | val_bpb mean ± sd | predicted (mean) | pick − preset, paired |")
print("|---|---|---|---|---|---|---|")
for b in sorted({r["budget"] for r in rows}):
    by = {a: {r["seed"]: r for r in rows if r["budget"] == b and r["arm"] == a} for a in ("pick", "preset")}
    seeds = sorted(set(by["pick"]) & set(by["preset"]))
    d = [float(by["pick"][s]["val_bpb"]) - float(by["preset"][s]["val_bpb"]) for s in seeds]
    for a in ("pick", "preset"):
        v = [float(r["val_bpb"]) for r in by[a].values()]
        p = [float(r["predicted"]) for r in by[a].values() if r["predicted"] != "-"]
        if not v: continue
        diff = f"{st.mean(d):+.4f} ± {st.stdev(d) if len(d) > 1 else 0:.4f} ({len(d)} seeds)" if a == "pick" and d else ""
        print(f"| {b} | {a} | {next(iter(by[a].values()))['depth']} | {len(v)} | {st.mean(v):.4f} ± {st.stdev(v) if len(v) > 1 else 0:.4f} | "
              f"{st.mean(p):.4f} | {diff} |" if p else f"| {b} | {a} | {next(iter(by[a].values()))['depth']} | {len(v)} | "
              f"{st.mean(v):.4f} ± {st.stdev(v) if len(v) > 1 else 0:.4f} | - | {diff} |")
PY
{ echo "$(bench_machine). Command: \`MAX_MINUTES=60 bash bench/plan_validate.sh\` (resumable)."; echo
  cat "$R/throughput.md" 2>/dev/null; echo; cat "$R/fit.md" 2>/dev/null; echo; cat "$R/validation.md"; } > "$R/section.md"
replace_doc_section planning "$R/section.md" docs/planning.md
echo "plan_validate: done; docs/planning.md updated"
