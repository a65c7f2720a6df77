#!/usr/bin/env bash
# bench/research_replicate.sh — do a research's keeps replicate on real training? In resumable
# pieces, with its whole state in the repository (bench/results/research_replicate/: the ledger,
# the trial configs and summaries, the replication rows — kilobytes; weights are not kept), so a
# fresh clone on another machine continues where the last piece stopped:
#   1. a research with BUDGET trials on the default space for HOURS of machine time (the ledger's
#      wall time, summed over pieces), in LANES lanes (2 where the machine has 2+ CPUs: pairs side
#      by side, each trial on half the cores);
#   2. every keep and the incumbent it beat, on SEEDS seeds the research never used (FIRST_SEED..),
#      the two side by side on their lanes' CPUs (as in the research), one row per seed; the same
#      for each near miss (better on average but discarded at the seed cap: was the discard right?);
#   3. the research's best config against its base at BIG_BUDGET on SEEDS more fresh seeds.
# Each invocation works at most MAX_MINUTES, then commits its state (COMMIT=1, only this folder)
# and exits 0; run it again until it prints the table, which also goes into docs/research.md
# between the <!-- bench:MARKER --> markers (MARKER=research_replication; another study, with its
# own STATE, names its own).
#
#   MAX_MINUTES=60 bash bench/research_replicate.sh        # one piece; again until the table
#
# A keep replicates when the fresh seeds' paired mean difference is negative with a one-sided
# t-test p below 0.05 (SEEDS - 1 degrees of freedom); "same sign": the mean moved the right way.
# Never beside another benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-60}
HOURS=${HOURS:-1.5}
BUDGET=${BUDGET:-2m}
BIG_BUDGET=${BIG_BUDGET:-5m}
SEEDS=${SEEDS:-3}
FIRST_SEED=${FIRST_SEED:-1001}   # the research's seeds start at the base's (42) and go up a few
LANES=${LANES:-$([ "$(nproc)" -ge 2 ] && echo 2 || echo 1)}
STATE=${STATE:-bench/results/research_replicate}
MARKER=${MARKER:-research_replication}
COMMIT=${COMMIT:-1}
F=${FRONTIER:-./frontier}
RESEARCH_FLAGS=${RESEARCH_FLAGS:-}
RUNS=${RUNS_DIR:-/tmp/frontier-research-replicate}
R=$STATE/research
ROWS=$STATE/replication.tsv
[ -x "$F" ] || { echo "research_replicate: build $F first (make)"; exit 1; }
mkdir -p "$STATE" "$RUNS"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
left() { echo $(( t_end - $(date +%s) )); }

commit_piece() { COMMIT=$COMMIT bench_commit "$STATE" "$1"; }  # the state, and nothing else
stop_piece() { commit_piece "$1"; echo "research_replicate: $1; run again to continue"; exit 0; }

# The state keeps no weights, checkpoints, per-step metrics or tokenizer copies: those are megabytes, and neither
# the research's resume nor the replication reads them.
[ -f "$STATE/.gitignore" ] || printf '*.safetensors\ncheckpoints/\nmetrics.jsonl\nprobe/\n*.html\ntokenizer/\n.lock\nlatest\n' > "$STATE/.gitignore"

# 1. The research (resumes from its ledger; --hours counts the wall time the ledger records).
if [ ! -f "$STATE/research.done" ]; then
  [ "$(left)" -gt 300 ] || stop_piece "no time left for a research trial"
  eval "extra=($RESEARCH_FLAGS)"  # shell words, quotes kept (e.g. a --trainer command)
  timeout -s INT -k 60 "$(( $(left) - 30 ))" "$F" research --hours "$HOURS" --budget-per-trial "$BUDGET" \
    --lanes "$LANES" --out "$R" "${extra[@]}"
  rc=$?
  case $rc in
    0) touch "$STATE/research.done"; commit_piece "the research ended (--hours $HOURS)" ;;
    124|130) stop_piece "MAX_MINUTES=$MAX_MINUTES reached during the research" ;;
    *) commit_piece "the research stopped with exit $rc"; echo "research_replicate: the research failed ($rc)"; exit 1 ;;
  esac
fi
[ -s "$R/results.tsv" ] || { echo "research_replicate: $R/results.tsv: no ledger"; exit 1; }

# The kept changes and the incumbent each beat, from the ledger (a keep's group head is its
# candidate's first run; the incumbent is the previous keep's, or the baseline's first run).
pairs=$(/usr/bin/python3 - "$R/results.tsv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
group, inc = {}, "1"
for r in rows:
    t, k = r["trial"], r["kind"]
    group[t] = "1" if k == "baseline" else group[r["parent"]] if k in ("seed", "pair") else t
    if r["status"] == "keep" and k != "baseline":
        print(group[t], inc)
        inc = group[t]
    elif r["status"] == "discard" and "(the seed cap)" in r["description"] and ": d -" in r["description"]:
        print("near", group[t], inc)  # a near miss: better on average, discarded at the seed cap
print("best", inc)  # the research's final incumbent, against its base
PY
)
[ -s "$ROWS" ] || printf 'stage\tbudget\tkeep\tincumbent\tseed\tcandidate_bpb\tincumbent_bpb\tthreads\tdate\tgit\tmachine\n' > "$ROWS"
cfg() { printf '%s/trials/%04d/trial.json' "$R" "$1"; }
bpb() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["val_bpb"])' "$1/summary.json"; }
threads() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("threads", 0))' "$1"; }
train() {  # trial, seed, budget, run folder, CPU (or "" for any)
  local pin=(); [ -n "$5" ] && pin=(taskset -c "$5")
  rm -rf "$4"
  "${pin[@]}" "$F" train --config "$(cfg "$1")" --seed "$2" --budget "$3" --quiet --run-dir "$4" > "$4.log" 2>&1 \
    || { echo "research_replicate: trial $1 on seed $2 failed:"; tail -5 "$4.log"; return 1; }
}
# 2 and 3: each pair of runs side by side on the lanes' CPUs (the incumbent in lane 1's), or
# back to back in one lane; a row when both finished.
while read -r keep inc near_inc; do
  [ -n "$keep" ] || continue
  stage=replicate budget=$BUDGET first=$FIRST_SEED
  if [ "$keep" = near ]; then
    keep=$inc inc=$near_inc stage=near-miss
  elif [ "$keep" = best ]; then
    keep=$inc inc=1 stage=best budget=$BIG_BUDGET first=$((FIRST_SEED + 100))
    [ "$keep" != 1 ] || { echo "research_replicate: the research kept nothing: no best config to scale up"; continue; }
  fi
  for s in $(seq "$first" $((first + SEEDS - 1))); do
    awk -F'\t' -v st="$stage" -v k="$keep" -v i="$inc" -v s="$s" '$1 == st && $3 == k && $4 == i && $5 == s { f = 1 } END { exit !f }' \
      "$ROWS" && continue
    need=$(( $(duration_s "$budget") * (LANES == 2 ? 1 : 2) + 180 ))
    [ "$(left)" -gt "$need" ] || stop_piece "MAX_MINUTES=$MAX_MINUTES reached during the replication"
    d=$RUNS/$stage-$keep-$inc-s$s
    mkdir -p "$d"
    if [ "$LANES" = 2 ]; then
      half=$(( $(nproc) / 2 ))
      train "$inc" "$s" "$budget" "$d/inc" "0-$((half - 1))" & p1=$!
      train "$keep" "$s" "$budget" "$d/cand" "$half-$((2 * half - 1))" & p2=$!
      wait $p1 && wait $p2 || { commit_piece "a replication run failed"; exit 1; }
    else
      train "$inc" "$s" "$budget" "$d/inc" "" && train "$keep" "$s" "$budget" "$d/cand" "" \
        || { commit_piece "a replication run failed"; exit 1; }
    fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$stage" "$budget" "$keep" "$inc" "$s" "$(bpb "$d/cand")" \
      "$(bpb "$d/inc")" "$(threads "$(cfg "$keep")")" "$(date -u +%F)" "$(bench_build "$F")" \
      "$(bench_machine)" | tee -a "$ROWS"
    rm -rf "$d"
  done
done <<<"$pairs"
commit_piece "the replication rows"

table=$(mktemp)
{
  how="MAX_MINUTES=60"  # the command that resumes this study: its own state, marker and research flags
  [ "$STATE" = bench/results/research_replicate ] || how="STATE=$STATE MARKER=$MARKER $how"
  [ -z "$RESEARCH_FLAGS" ] || how="RESEARCH_FLAGS='$RESEARCH_FLAGS' $how"
  echo "$(bench_machine); \`$how bash bench/research_replicate.sh\` (HOURS=$HOURS BUDGET=$BUDGET LANES=$LANES SEEDS=$SEEDS BIG_BUDGET=$BIG_BUDGET; state in $STATE)"
  echo
  /usr/bin/python3 - "$ROWS" "$R/results.tsv" <<'PY'
import csv, math, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
ledger = {r["trial"]: r for r in csv.DictReader(open(sys.argv[2]), delimiter="\t")}
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
def t_sf(t, df):  # one-sided p of Student's t, by numerical integration of the density
    if not math.isfinite(t): return 0.0 if t > 0 else 1.0
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)
    hi, n = t + 60, 20000
    h = (hi - t) / n
    return h * (f(t) / 2 + sum(f(t + i * h) for i in range(1, n)) + f(hi) / 2)
def change(t):
    return ledger[t]["change"] if t in ledger else "?"
def verdict(keep):  # the research's own paired d at its keep or near miss ("d X +- Y over N seeds")
    last = [r for r in ledger.values() if r["status"] in ("keep", "discard") and (r["trial"] == keep or (r["parent"] == keep and r["kind"] == "seed"))]
    return last[-1]["description"].split(": d ")[-1].split(" (z")[0] if last else "?"
def summary(rs):
    d = [float(r["candidate_bpb"]) - float(r["incumbent_bpb"]) for r in rs]
    m = st.mean(d)
    se = st.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    p = t_sf(-m / se, len(d) - 1) if len(d) > 1 and se > 0 else float("nan")
    ci = T975.get(len(d) - 1, 2.0) * se
    return d, m, ci, p
print("| stage | keep (trial) | change | research: paired d | fresh seeds: d mean ± 95% CI | seeds better | p (one-sided) | replicated |")
print("|---|---|---|---|---|---|---|---|")
n_keep = n_rep = 0
n_near = n_real = same = 0
for stage in ("replicate", "near-miss", "best"):
    for key in dict.fromkeys((r["keep"], r["incumbent"]) for r in rows if r["stage"] == stage):
        rs = [r for r in rows if r["stage"] == stage and (r["keep"], r["incumbent"]) == key]
        d, m, ci, p = summary(rs)
        ok = "yes" if m < 0 and p < 0.05 else ("same sign" if m < 0 else "no")
        what = f"`{change(key[0])}`" if stage != "best" else f"best (#{key[0]}) vs base, {rs[0]['budget']}"
        research = f"d {verdict(key[0])}" if stage != "best" else "—"
        print(f"| {stage} {rs[0]['budget']} | {key[0]} vs {key[1]} | {what} | {research} | {m:+.4f} ± {ci:.4f} | "
              f"{sum(x < 0 for x in d)}/{len(d)} | {p:.3f} | {ok} |")
        if stage == "replicate": n_keep += 1; n_rep += ok == "yes"
        if stage == "near-miss": n_near += 1; n_real += ok == "yes"; same += m < 0
threads = sorted({r["threads"] for r in rows})
if n_near:
    print(f"\nNear misses (better on average, discarded at the seed cap): {n_real} of {n_near} reached one-sided p < 0.05 on "
          f"the fresh seeds, {same} of {n_near} moved the same way. "
          + ("The rule discarded a change that holds: a miss." if n_real else
             "Fresh seeds this few resolve only effects about the size of their interval: weak evidence either way, "
             "no sign that the rule threw away a clear gain."))
if n_keep:
    print(f"\n{n_rep} of {n_keep} keeps replicated on fresh seeds. Every run had {'/'.join(threads)} thread(s) (the research's lane).")
else:  # what the research did try, so that "nothing kept" is read against it
    led = list(ledger.values())
    cands = [r for r in led if r["kind"] not in ("baseline", "seed", "pair", "twin", "replicate")]
    own = lambda c: [x for x in led if x["trial"] == c["trial"] or (x["parent"] == c["trial"] and x["kind"] == "seed")]
    print(f"\nThe research kept nothing: {len(led)} trials, {len(cands)} candidates "
          f"({sum(len(own(c)) for c in cands)} candidate runs, each beside a twin of the incumbent), nothing to replicate. "
          f"Each candidate's last verdict:\n")
    print("| trial | change | seeds | paired d at the verdict | verdict |")
    print("|---|---|---|---|---|")
    for c in cands:
        last = own(c)[-1]
        d = last["description"].split(": d ", 1)[-1].split(" (z")[0] if ": d " in last["description"] else "-"
        why = last["description"].rsplit(") (", 1)[-1].rstrip(")") if last["description"].endswith(")") and ") (" in last["description"] else ""
        print(f"| {c['trial']} | `{c['change']}` | {len(own(c))} | {d} | {last['status']}{' (' + why + ')' if why else ''} |")
PY
} > "$table"
cat "$table"
[ "${DOC:-docs/research.md}" = none ] || replace_doc_section "$MARKER" "$table" "${DOC:-docs/research.md}"
commit_piece "the table" 2>/dev/null || true
