#!/usr/bin/env bash
# bench/plan_validate.sh — does the planner pick well, and does its choice of data hold? A
# resumable benchmark in pieces: each invocation works for at most MAX_MINUTES and exits; the next
# continues from what was recorded. Its state — the calibration's, the ladder's and the worth
# runs' folders pruned to their configs and summaries (kilobytes), the fits, and one TSV row per
# finished validation run — lives in bench/results/plan/ and is committed after every piece
# (COMMIT=1, that folder only), so that a fresh clone on another machine of the same kind
# continues where the last piece stopped.
#
#   MAX_MINUTES=60 bash bench/plan_validate.sh        # one piece; run it again until it says "done"
#
# The pieces, in order:
#   1. calibrate the throughput model (13 short runs) and check it on 6 held-out shapes
#      (`frontier plan --calibrate --check`): throughput.md;
#   2. the loss ladder and its fit (`frontier plan --fit`, FIT_MINUTES of training budgets): fit.md,
#      and the fit copied into plan/ (the reference loss model frontier ships; commit it);
#   3. the worth of every opt-in folder of text/ (`frontier plan --worth --mix auto`: the corpus
#      alone and each folder at half the tokens, paired seeds, 2 minutes each), then of the likely
#      ones at WORTH_LONG (5m): worth.md, with what --mix auto then picks at 5m, 30m and 4h;
#   4. validation runs, arms alternated seed by seed (SEEDS each), at each of BUDGETS: the plan's
#      pick on the corpus (`pick`), the plan with `--mix auto` (`pick-mix`: its own pick and
#      mixture; skipped where it chooses the corpus alone, since it is then `pick`), and the `cpu`
#      preset; each run's predicted val_bpb beside the measured one (validation.tsv);
#   5. the tables into docs/planning.md (between the bench:planning markers), and every run's
#      predicted against measured val_bpb as a plot, docs/plan_validation.svg.
# Never beside another benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-60}
FIT_MINUTES=${FIT_MINUTES:-60}
SEEDS=${SEEDS:-2}
BUDGETS=${BUDGETS:-"30m 5m"}
# The second length of the sources' worth: the sources that 2-minute runs price above a fifth of a
# corpus token (the others are never chosen), at a budget that still reads the corpus once at most.
WORTH_LONG=${WORTH_LONG:-5m}
WORTH_LONG_MIX=${WORTH_LONG_MIX:-extra_books,extra_wiki}
F=${FRONTIER:-./frontier}
R=bench/results/plan
C=$R/cache
[ -x "$F" ] || { echo "plan_validate: build $F first (make)"; exit 1; }
mkdir -p "$C" "$R/runs"
[ -f "$R/.gitignore" ] || printf 'runs/\ncache/shards/\ncache/tokenizers/\n*.safetensors\ncheckpoints/\nmetrics.jsonl\ntrain.log\ntokenizer/\n.lock\nlatest\n' > "$R/.gitignore"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
time_left() { [ "$(date +%s)" -lt "$t_end" ]; }
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "plan_validate: prepare did not report a data folder"; exit 1; }
# Only what a run's verdict needs stays: the configs and summaries (the rest is megabytes).
prune() { find "$C/plan" \( -name metrics.jsonl -o -name train.log -o -name '*.safetensors' -o -name tokenizer -o -name checkpoints \) -prune -exec rm -rf {} + 2>/dev/null; true; }
stop() { prune; bench_commit "$R" "$1"; echo "plan_validate: $1; run again to continue"; exit 0; }
fail() { tail -5 "$1"; prune; bench_commit "$R" "stopped: $2"; echo "plan_validate: $2 failed ($1)"; exit 1; }
# bounded LOG CMD...: run a resumable frontier command until it ends or MAX_MINUTES is up (then
# SIGTERM: its finished runs stay, and the next piece continues them)
bounded() {
  local log=$1; shift
  "$@" > "$log" 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null; do
    time_left || { kill -TERM $pid; wait $pid; return 124; }
    sleep 5
  done
  wait $pid
}
P=(--budget 30m --data "$data" --cache "$C")

# 1. throughput
if [ ! -s "$R/throughput.md" ]; then
  time_left || stop "MAX_MINUTES reached before the calibration"
  bounded "$R/calibrate.log" $F plan --calibrate --check "${P[@]}" --out "$R/plan-30m.json"
  case $? in 0) ;; 124) stop "MAX_MINUTES reached during the calibration" ;; *) fail "$R/calibrate.log" "the calibration" ;; esac
  { echo "$(bench_machine), build $(bench_build "$F"). Command: \`frontier plan --calibrate --check\`."; echo
    grep -E '^\| |^held-out|^throughput model' "$R/calibrate.log"; } > "$R/throughput.md"
  prune; bench_commit "$R" "the throughput model"
fi

# 2. the loss ladder (resumable by itself: finished runs are not trained again)
if [ ! -s "$R/fit.md" ]; then
  time_left || stop "MAX_MINUTES reached before the ladder"
  bounded "$R/fit.log" $F plan --fit --fit-minutes "$FIT_MINUTES" "${P[@]}" --out "$R/plan-30m.json"
  case $? in 0) ;; 124) stop "MAX_MINUTES reached during the ladder" ;; *) fail "$R/fit.log" "the ladder" ;; esac
  { echo "$(bench_machine), build $(bench_build "$F"). Command: \`frontier plan --fit --fit-minutes $FIT_MINUTES\`; the page: \`$C/plan/scaling-*.html\`."; echo
    grep -E '^loss model|^\| ' "$R/fit.log"; } > "$R/fit.md"
  cp "$C"/plan/scaling-*.json plan/  # the reference fit shipped for these tokens (plan/README.md)
  prune; bench_commit "$R" "the loss model"
fi

# 3. the opt-in folders' worth at two training lengths (resumable by itself: finished runs are read
#    back, and the discounts solved again with the law fitted now): every folder at 2 minutes, then
#    at WORTH_LONG the ones WORTH_LONG_MIX names. Then what --mix auto chooses at 5m, 30m and 4h.
WL=worth:2m,$WORTH_LONG:$WORTH_LONG_MIX
if ! grep -qxF "<!-- $WL -->" "$R/worth.md" 2>/dev/null; then
  time_left || stop "MAX_MINUTES reached before the worth runs"
  bounded "$R/worth.log" $F plan --worth --mix auto "${P[@]}" --out "$(mktemp -u)"
  case $? in 0) ;; 124) stop "MAX_MINUTES reached during the worth runs" ;; *) fail "$R/worth.log" "the worth runs" ;; esac
  bounded "$R/worth-long.log" $F plan --worth --mix "$WORTH_LONG_MIX" --worth-budget "$WORTH_LONG" "${P[@]}" \
    --out "$(mktemp -u)"
  case $? in 0) ;; 124) stop "MAX_MINUTES reached during the $WORTH_LONG worth runs" ;; *) fail "$R/worth-long.log" "the $WORTH_LONG worth runs" ;; esac
  for b in 5m 30m 4h; do
    $F plan --budget $b --mix auto --data "$data" --cache "$C" --out "$R/cache/mix-auto-$b.json" > "$R/mix-auto-$b.md" 2>&1 \
      || fail "$R/mix-auto-$b.md" "the $b plan with --mix auto"
  done
  { echo "<!-- $WL -->"
    echo "$(bench_machine), build $(bench_build "$F"). Commands: \`frontier plan --worth --mix auto\` (every folder at half the tokens against the corpus alone, paired seeds, 2-minute runs), then \`frontier plan --worth --mix $WORTH_LONG_MIX --worth-budget $WORTH_LONG\`; the table: \`$C/plan/worth-*.json\`."
    echo; echo '| source | length | tokens | discount δ ± se | a token worth | val_bpb at half the tokens vs the corpus alone | seeds |'; echo '|---|---|---|---|---|---|---|'
    /usr/bin/python3 - "$C"/plan/worth-*.json <<'PY'
import json, sys
for name, e in sorted(json.load(open(sys.argv[1]))["sources"].items()):
    for l in e.get("lengths", []):
        se = l["se"] if l["se"] is not None else float("nan")
        b = l["budget_s"]
        print(f"| {name} | {b / 60:g}m | {l['tokens'] / 1e6:.1f}M | {l['discount']:.3f} ± {se:.3f} | {1 - l['discount']:.2f} | "
              f"{l['dL']:+.4f} | {l['seeds']}{' (' + str(l['clamped']) + ' clamped)' if l['clamped'] else ''} |")
PY
    echo; echo "What \`frontier plan --budget B --mix auto\` chooses with these lengths (each source priced at the pick's training length):"; echo
    for b in 5m 30m 4h; do
      echo "- $b: $(grep -m1 '^| 1 |' "$R/mix-auto-$b.md" | awk -F'|' '{gsub(/ /, ""); sub(/\+-/, " ± ", $15); print "depth " $3 ", " $10 " tokens (" $11 " epochs), predicted " $15}'); $(grep -m1 '^mixture chosen' "$R/mix-auto-$b.md" | sed 's/.*: //')"
      grep -E '^  extra_(books|wiki)' "$R/mix-auto-$b.md" | sed 's/^  \([a-z_]*\) *[^;]*; /  - \1: /'
    done
  } > "$R/worth.md"
  prune; bench_commit "$R" "the sources' worth"
fi

# 4. validation runs, arms alternated seed by seed
V=$R/validation.tsv
[ -s "$V" ] || printf 'budget\tarm\tseed\tdepth\tval_bpb\tpredicted\tpredicted_sd\ttokens\tepochs\tmix\tdate\tgit\n' > "$V"
for budget in $BUDGETS; do
  # The plans are made once per budget, before its first run: every seed of an arm then trains the
  # same settings (a later build or calibration would otherwise change an arm between pieces).
  # Delete plan-BUDGET*.json and the budget's rows to validate a new planner.
  if ! grep -q "^$budget	" "$V" || [ ! -s "$R/plan-$budget.json" ] || [ ! -s "$R/plan-$budget-mix.json" ]; then
    $F plan --budget "$budget" --data "$data" --cache "$C" --out "$R/plan-$budget.json" > "$R/plan-$budget.md" 2>&1 \
      || fail "$R/plan-$budget.md" "the $budget plan"
    $F plan --budget "$budget" --mix auto --data "$data" --cache "$C" --out "$R/plan-$budget-mix.json" > "$R/plan-$budget-mix.md" 2>&1 \
      || fail "$R/plan-$budget-mix.md" "the $budget plan with --mix auto"
  fi
  arms="pick preset"
  grep -q '"mix"' "$R/plan-$budget-mix.json" && arms="pick preset pick-mix" \
    || echo "plan_validate: at $budget --mix auto chooses the corpus alone: no pick-mix arm"
  for s in $(seq 1 "$SEEDS"); do
    for arm in $arms; do
      grep -q "^$budget	$arm	$s	" "$V" && continue
      [ $(( t_end - $(date +%s) )) -gt $(( $(duration_s "$budget") + 180 )) ] || stop "MAX_MINUTES reached during the validation"
      d=$R/runs/$budget-$arm-s$s
      rm -rf "$d"
      case $arm in
        pick) cfg=(--config "$R/plan-$budget.json"); table=$R/plan-$budget.md ;;
        pick-mix) cfg=(--config "$R/plan-$budget-mix.json"); table=$R/plan-$budget-mix.md ;;
        preset) cfg=(--preset cpu --budget "$budget"); table=$R/plan-$budget.md ;;
      esac
      $F train "${cfg[@]}" --data "$data" --cache "$C" --seed "$s" --quiet --run-dir "$d" > "$d.log" 2>&1 || fail "$d.log" "$arm seed $s"
      /usr/bin/python3 - "$d" "$table" "$budget" "$arm" "$s" "$(date -u +%F)" "$(bench_build "$F")" >> "$V" <<'PY'
import json, sys
d, table, budget, arm, seed, date, git = sys.argv[1:]
s, c = json.load(open(f"{d}/summary.json")), json.load(open(f"{d}/config.json"))
pred = sd = "-"
for line in open(table):  # the plan's row of this depth (the preset's depth has its row too)
    cells = [x.strip() for x in line.split("|")]
    if len(cells) > 14 and cells[2] == str(c["depth"]) and cells[3] == str(c["n-embd"]) and "+-" in cells[14]:
        pred, sd = (x.strip() for x in cells[14].split("+-"))
print("\t".join(map(str, [budget, arm, seed, c["depth"], f"{s['val_bpb']:.4f}", pred, sd, int(s["tokens_trained"]),
                          f"{s.get('epochs', 0):.2f}", c.get("mix") or "-", date, git])))
PY
      rm -rf "$d/checkpoints" "$d"/*.safetensors "$d/latest" "$d/tokenizer"
      echo "plan_validate: $(tail -1 "$V")"
      bench_commit "$R" "$budget $arm seed $s"
    done
  done
done

# 5. the tables
/usr/bin/python3 - "$V" > "$R/validation.md" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
sd = lambda v: st.stdev(v) if len(v) > 1 else 0.0
print("| budget | arm | depth | mixture | seeds | val_bpb mean ± sd | predicted (mean) | measured − predicted | vs preset, paired |")
print("|---|---|---|---|---|---|---|---|---|")
for b in sorted({r["budget"] for r in rows}):
    by = {a: {r["seed"]: r for r in rows if r["budget"] == b and r["arm"] == a} for a in ("pick", "pick-mix", "preset")}
    for a in ("pick", "pick-mix", "preset"):
        if not by[a]: continue
        v = [float(r["val_bpb"]) for r in by[a].values()]
        p = [float(r["predicted"]) for r in by[a].values() if r["predicted"] != "-"]
        seeds = sorted(set(by[a]) & set(by["preset"]))
        d = [float(by[a][s]["val_bpb"]) - float(by["preset"][s]["val_bpb"]) for s in seeds]
        diff = f"{st.mean(d):+.4f} ± {sd(d):.4f} ({len(d)} seeds)" if a != "preset" and d else ""
        first = next(iter(by[a].values()))
        pred = f"{st.mean(p):.4f}" if p else "-"
        err = f"{st.mean(v) - st.mean(p):+.4f}" if p else "-"
        print(f"| {b} | {a} | {first['depth']} | {first.get('mix', '-')} | {len(v)} | {st.mean(v):.4f} ± {sd(v):.4f} | "
              f"{pred} | {err} | {diff} |")
PY
# predicted against measured, every run: docs/plan_validation.svg (the goal's band: within 0.02)
/usr/bin/python3 - "$V" docs/plan_validation.svg <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["predicted"] != "-"]
W, H, M = 520, 520, 60
pts = [(float(r["predicted"]), float(r["val_bpb"]), float(r["predicted_sd"] or 0), r["arm"], r["budget"]) for r in rows]
vals = [v for p in pts for v in (p[0] - p[2], p[0] + p[2], p[1])] or [1.0, 2.0]
lo, hi = min(vals) - 0.03, max(vals) + 0.03
X = lambda v: M + (v - lo) / (hi - lo) * (W - 2 * M)
Y = lambda v: H - M - (v - lo) / (hi - lo) * (H - 2 * M)
col = {"pick": "#1f77b4", "pick-mix": "#2ca02c", "preset": "#d62728"}
o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
     f'<rect width="{W}" height="{H}" fill="white"/>',
     f'<polygon points="{X(lo)},{Y(lo + 0.02)} {X(hi - 0.02)},{Y(hi)} {X(hi)},{Y(hi)} {X(hi)},{Y(hi - 0.02)} {X(lo + 0.02)},{Y(lo)} {X(lo)},{Y(lo)}" fill="#eee"/>',
     f'<line x1="{X(lo)}" y1="{Y(lo)}" x2="{X(hi)}" y2="{Y(hi)}" stroke="#888"/>',
     f'<rect x="{M}" y="{M}" width="{W - 2 * M}" height="{H - 2 * M}" fill="none" stroke="black"/>',
     f'<text x="{W / 2}" y="{H - 20}" text-anchor="middle">predicted val_bpb (± the plan\'s sd)</text>',
     f'<text x="18" y="{H / 2}" text-anchor="middle" transform="rotate(-90 18 {H / 2})">measured val_bpb</text>',
     f'<text x="{W / 2}" y="30" text-anchor="middle">bench/plan_validate.sh: every validation run (grey: within 0.02)</text>']
for k in range(6):
    v = lo + (hi - lo) * k / 5
    o += [f'<text x="{X(v)}" y="{H - M + 16}" text-anchor="middle">{v:.2f}</text>',
          f'<text x="{M - 6}" y="{Y(v) + 4}" text-anchor="end">{v:.2f}</text>']
for p, m, sd, arm, budget in pts:
    c = col.get(arm, "black")
    o += [f'<line x1="{X(p - sd)}" y1="{Y(m)}" x2="{X(p + sd)}" y2="{Y(m)}" stroke="{c}"/>',
          f'<circle cx="{X(p)}" cy="{Y(m)}" r="{5 if budget == "30m" else 3}" fill="{c}"><title>{arm} {budget}: predicted {p:.4f}, measured {m:.4f}</title></circle>']
for i, (arm, c) in enumerate(col.items()):
    o += [f'<circle cx="{M + 14}" cy="{M + 16 + 16 * i}" r="4" fill="{c}"/>', f'<text x="{M + 24}" y="{M + 20 + 16 * i}">{arm}</text>']
o.append(f'<text x="{M + 14}" y="{M + 72}">large: 30m, small: other budgets</text></svg>')
open(sys.argv[2], "w").write("\n".join(o) + "\n")
PY
{ echo "$(bench_machine). Command: \`MAX_MINUTES=60 bash bench/plan_validate.sh\` (resumable; state in $R); every run's predicted against measured val_bpb: [plan_validation.svg](plan_validation.svg)."; echo
  cat "$R/throughput.md" 2>/dev/null; echo; cat "$R/fit.md" 2>/dev/null; echo; cat "$R/worth.md" 2>/dev/null; echo
  cat "$R/validation.md"; } > "$R/section.md"
replace_doc_section planning "$R/section.md" docs/planning.md
bench_commit "$R" "the tables"
echo "plan_validate: done; docs/planning.md and docs/plan_validation.svg updated (commit them)"
