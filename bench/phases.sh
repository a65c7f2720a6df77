#!/usr/bin/env bash
# bench/phases.sh — the competition's phases as a new user runs them, at their measured budgets:
# phase 1 at its full 30 minutes (`frontier run --phase 1`), phase 2 scaled down to P2_BUDGET on
# 2 local ranks with the full CORE (`frontier run --phase 2 --ranks 2 --budget P2_BUDGET`). Both
# use the default cache, so on a machine that has never planned they calibrate its throughput
# first (minutes) and rank by the reference loss model shipped in plan/ (or this machine's fit
# when it has one): what `frontier run --phase N` does for anyone.
#
# Resumable in pieces: each invocation works at most MAX_MINUTES and starts a phase only when it
# has the time to finish it (a phase cut short continues from its checkpoint only on the same
# machine); one row per finished phase in bench/results/phases/phases.tsv, with the phase folder's
# small files (plan.md, result.json, the summary, config and CORE scores; no weights) beside it,
# committed after each phase (COMMIT=1). A rerun skips recorded phases.
#
#   MAX_MINUTES=90 bash bench/phases.sh            # phase 1 (~40 min), then phase 2 (~45 min)
#   PHASES=2 P2_BUDGET=45m bash bench/phases.sh    # only phase 2, 45 minutes of training
# Never beside another benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-90}
PHASES=${PHASES:-"1 2"}
P2_BUDGET=${P2_BUDGET:-30m}
F=${FRONTIER:-./frontier}
R=bench/results/phases
RUNS=${RUNS_DIR:-runs/bench-phases}
OUT=$R/phases.tsv
[ -x "$F" ] || { echo "phases: build $F first (make)"; exit 1; }
mkdir -p "$R" "$RUNS"
machine=$(bench_machine); machine=${machine#*, }  # the row has its own date column
# Open MPI refuses root without these (a container's user); vader's single-copy needs ptrace rights
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
[ -s "$OUT" ] || printf 'phase\tbudget\tranks\tdepth\tval_bpb\tpredicted\tcore\tcore_full\tcomposite\ttokens\tepochs\twall_min\tresult_line\tdate\tgit\tmachine\n' > "$OUT"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
for p in $PHASES; do
  case $p in
    1) budget=30m; args=(--phase 1); margin=12 ;;
    2) budget=$P2_BUDGET; args=(--phase 2 --ranks 2 --budget "$P2_BUDGET"); margin=20 ;;  # calibration over ranks + full CORE
    *) echo "phases: PHASES holds '$p': 1 or 2"; exit 2 ;;
  esac
  awk -F'\t' -v p="$p" -v b="$budget" '$1 == p && $2 == b { f = 1 } END { exit !f }' "$OUT" && { echo "phases: phase $p ($budget) recorded"; continue; }
  need=$(( $(duration_s "$budget") + margin * 60 ))
  [ $(( t_end - $(date +%s) )) -ge "$need" ] || { echo "phases: phase $p needs ~$(( need / 60 )) minutes, fewer are left of MAX_MINUTES=$MAX_MINUTES; run again to continue"; exit 0; }
  d=$RUNS/phase$p-$budget
  rm -rf "$d"
  t0=$(date +%s)
  $F run "${args[@]}" --run-dir "$d" > "$d.log" 2>&1 || { tail -8 "$d.log"; echo "phases: phase $p failed ($d.log)"; exit 1; }
  wall=$(( ($(date +%s) - t0 + 30) / 60 ))
  line=$(grep -m1 "^phase $p result:" "$d.log")
  keep=$R/phase$p-$budget
  rm -rf "$keep" && mkdir -p "$keep"
  for f in plan.md plan.json result.json train/summary.json train/config.json train/core.json; do
    [ -f "$d/$f" ] && cp "$d/$f" "$keep/$(basename "$f")"
  done
  cp "$d.log" "$keep/run.log"
  /usr/bin/python3 - "$d" "$p" "$budget" "$wall" "$line" "$(date -u +%F)" "$(bench_build "$F")" "$machine" >> "$OUT" <<'PY'
import json, os, sys
d, p, budget, wall, line, date, git, machine = sys.argv[1:]
r = json.load(open(f"{d}/result.json"))
pred = "-"
for l in open(f"{d}/plan.md"):  # the plan's rank-1 row: its predicted val_bpb (+- spread)
    cells = [x.strip() for x in l.split("|")]
    if len(cells) > 14 and cells[1] == "1" and "+-" in cells[14]:
        pred = cells[14].replace(" +- ", "±")
f = lambda k, fmt="{:.4f}": fmt.format(r[k]) if k in r else "-"
print("\t".join([p, budget, str(r.get("ranks", 1)), f("depth", "{:.0f}"), f("val_bpb"), pred, f("core"),
                 str(r.get("core_full", "-")).lower(), f("composite"), f("tokens_trained", "{:.0f}"), f("epochs", "{:.2f}"),
                 wall, line, date, git, machine]))
PY
  tail -1 "$OUT"
  bench_commit "$R" "phase $p at $budget"
done
echo "phases: every phase recorded"
column -t -s $'\t' "$OUT" | cut -c1-200
