#!/usr/bin/env bash
# bench/research_replicate.sh — does what a research keeps replicate? Runs (or resumes) a research,
# then trains every kept change and the incumbent it beat on SEEDS fresh seeds (seeds the research
# never used), back to back seed by seed, and writes the table of replicated / not-replicated
# keeps into docs/research.md between <!-- bench:research_replication --> markers.
#
#   HOURS=2 BUDGET=5m bash bench/research_replicate.sh          # the issue's 2-hour research
#   OUT=runs/research-2h SKIP_RESEARCH=1 bash bench/research_replicate.sh   # replicate only
#
# A keep replicates when the fresh seeds' paired mean difference is negative with a one-sided
# t-test p below 0.05 (SEEDS - 1 degrees of freedom); "same sign" is the weaker reading (the mean
# moved the right way). Never run it beside another benchmark or test: budgets are wall clock.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
HOURS=${HOURS:-2}
BUDGET=${BUDGET:-5m}
SEEDS=${SEEDS:-3}
FIRST_SEED=${FIRST_SEED:-1001}   # the research's seeds start at the base's (42) and go up a few
OUT=${OUT:-runs/research-${HOURS}h}
FRONTIER=${FRONTIER:-./frontier}
RESEARCH_FLAGS=${RESEARCH_FLAGS:-}
[ -x "$FRONTIER" ] || { echo "build $FRONTIER first (make)"; exit 1; }
if [ -z "${SKIP_RESEARCH:-}" ]; then
  # shellcheck disable=SC2086
  "$FRONTIER" research --hours "$HOURS" --budget-per-trial "$BUDGET" --out "$OUT" $RESEARCH_FLAGS
fi
[ -s "$OUT/results.tsv" ] || { echo "$OUT/results.tsv: no ledger"; exit 1; }

# The kept changes and the incumbent each beat, from the ledger (a keep's group head is its
# candidate's first run; the incumbent is the previous keep's, or the baseline's first run).
pairs=$(/usr/bin/python3 - "$OUT/results.tsv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
group, inc = {}, "1"
for r in rows:
    t, k = r["trial"], r["kind"]
    group[t] = "1" if k == "baseline" else group[r["parent"]] if k in ("seed", "pair") else t
    if r["status"] == "keep" and k != "baseline":
        print(group[t], inc)
        inc = group[t]
PY
)
[ -n "$pairs" ] || echo "the research kept nothing: no keep to replicate"
rep="$OUT/replication"
mkdir -p "$rep"
results="$rep/results.tsv"
[ -f "$results" ] || printf 'keep\tincumbent\tseed\tcandidate_bpb\tincumbent_bpb\n' > "$results"
cfg() { printf '%s/trials/%04d/trial.json' "$OUT" "$1"; }
bpb() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["val_bpb"])' "$1/summary.json"; }
while read -r keep inc; do
  [ -n "$keep" ] || continue
  for s in $(seq "$FIRST_SEED" $((FIRST_SEED + SEEDS - 1))); do
    grep -q "^$keep	$inc	$s	" "$results" && continue  # done in an earlier sitting
    for who in "$inc" "$keep"; do
      d="$rep/t$who-s$s"
      [ -f "$d/summary.json" ] && continue
      rm -rf "$d"
      "$FRONTIER" train --config "$(cfg "$who")" --seed "$s" --quiet --run-dir "$d" > "$d.log" 2>&1 \
        || { echo "trial $who on seed $s failed:"; tail -5 "$d.log"; exit 1; }
    done
    printf '%s\t%s\t%s\t%s\t%s\n' "$keep" "$inc" "$s" "$(bpb "$rep/t$keep-s$s")" "$(bpb "$rep/t$inc-s$s")" >> "$results"
    tail -1 "$results"
  done
done <<<"$pairs"

table=$(mktemp)
{
  echo "$(bench_machine), git $(git rev-parse --short HEAD 2>/dev/null || echo '?'); \`HOURS=$HOURS BUDGET=$BUDGET SEEDS=$SEEDS bash bench/research_replicate.sh\` ($OUT)"
  echo
  /usr/bin/python3 - "$results" "$OUT/results.tsv" <<'PY'
import csv, math, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
ledger = {r["trial"]: r for r in csv.DictReader(open(sys.argv[2]), delimiter="\t")}
def t_sf(t, df):  # one-sided p of Student's t, by numerical integration of the density
    if not math.isfinite(t): return 0.0 if t > 0 else 1.0
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)
    hi, n = t + 60, 20000
    h = (hi - t) / n
    return h * (f(t) / 2 + sum(f(t + i * h) for i in range(1, n)) + f(hi) / 2)
print("| keep (trial) | change | research: paired d over its seeds | fresh seeds: d mean ± s.e. | seeds better | p (one-sided) | replicated |")
print("|---|---|---|---|---|---|---|")
for keep in dict.fromkeys(r["keep"] for r in rows):
    rs = [r for r in rows if r["keep"] == keep]
    d = [float(r["candidate_bpb"]) - float(r["incumbent_bpb"]) for r in rs]
    m = st.mean(d)
    se = st.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    p = t_sf(-m / se, len(d) - 1) if len(d) > 1 and se > 0 else float("nan")
    desc = ledger[keep]["description"].split("; ")[0]
    last = [r for r in ledger.values() if r["status"] == "keep" and (r["trial"] == keep or r["parent"] == keep)]
    verdict = last[-1]["description"].split(": d ")[-1].split(" (z")[0] if last else "?"
    ok = "yes" if m < 0 and p < 0.05 else ("same sign" if m < 0 else "no")
    print(f"| {keep} | {desc} | d {verdict} | {m:+.4f} ± {se:.4f} | {sum(x < 0 for x in d)}/{len(d)} | {p:.3f} | {ok} |")
PY
} > "$table"
cat "$table"
replace_doc_section "research_replication" "$table" docs/research.md
