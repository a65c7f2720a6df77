#!/usr/bin/env bash
# bench/paired_arms.sh — a training-quality comparison of a few arms (flag sets) on paired seeds,
# in resumable pieces: every arm trains on seeds 1..SEEDS for BUDGET, the arms alternated within
# each seed (so slow periods of the machine land on every arm), one finished run per row of
# bench/results/NAME.tsv (committed as they come; a rerun skips recorded runs and stops by itself
# after MAX_MINUTES). The table: per arm the mean and sd of val_bpb, and against the first arm
# the paired difference with its 95% interval; with DOC, also written between DOC's
# <!-- bench:NAME --> markers.
#
#   NAME=repeat_validate BUDGET=30m SEEDS=2 \
#     ARMS='default=|levers=--ema-steps 150 --ema-blend 0.4' MAX_MINUTES=60 bash bench/paired_arms.sh
#   NAME=mix_offset BUDGET=5m SEEDS=3 ARMS='default=|wiki=--mix extra_wiki=0.3,extra_textbooks=0.05' ...
#
# ARMS: NAME=FLAGS items separated by '|' (FLAGS: `frontier train` flags, shell words); the first
# arm is the reference. BASE: flags every arm gets (default `--preset cpu`). Never beside another
# benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
: "${NAME:?NAME=... names the results file}" "${ARMS:?ARMS='a=FLAGS|b=FLAGS'}"
MAX_MINUTES=${MAX_MINUTES:-60}
BUDGET=${BUDGET:-5m}
SEEDS=${SEEDS:-3}
BASE=${BASE:---preset cpu}
F=${FRONTIER:-./frontier}
OUT=bench/results/$NAME.tsv
RUNS=${RUNS_DIR:-/tmp/frontier-$NAME}
IFS='|' read -r -a items <<<"$ARMS"
names=()
declare -A flags=()
for it in "${items[@]}"; do
  n=${it%%=*}
  [ -n "$n" ] && [ "$n" != "$it" ] || { echo "paired_arms: ARMS item '$it' is not NAME=FLAGS"; exit 2; }
  [ -z "${flags[$n]+x}" ] || { echo "paired_arms: arm '$n' twice in ARMS"; exit 2; }
  names+=("$n") flags[$n]=${it#*=}
done
[ "${#names[@]}" -ge 2 ] || { echo "paired_arms: ARMS needs at least two arms"; exit 2; }
mkdir -p bench/results "$RUNS"
[ -s "$OUT" ] || printf 'budget\tarm\tseed\tval_bpb\tval_bpb_raw\tepochs\tsteps\ttokens\ttok_per_s\tflags\tdate\tgit\tmachine\n' > "$OUT"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "paired_arms: prepare did not report a data folder"; exit 1; }
need=$(( $(duration_s "$BUDGET") + 120 ))

recorded() { awk -F'\t' -v b="$BUDGET" -v a="$1" -v s="$2" '$1 == b && $2 == a && $3 == s { f = 1 } END { exit !f }' "$OUT"; }
for s in $(seq 1 "$SEEDS"); do
  seed_fits paired_arms "$s" "$need" "$t_end" "${names[@]}" || exit 0
  for arm in "${names[@]}"; do
    recorded "$arm" "$s" && continue
    d=$RUNS/$BUDGET-$arm-s$s
    rm -rf "$d"
    eval "extra=($BASE ${flags[$arm]})"  # shell words, quotes kept
    $F train "${extra[@]}" --budget "$BUDGET" --data "$data" --seed "$s" --quiet --run-dir "$d" > "$d.log" 2>&1 \
      || { echo "paired_arms: $arm seed $s failed:"; tail -5 "$d.log"; exit 1; }
    /usr/bin/python3 - "$d/summary.json" "$BUDGET" "$arm" "$s" "${flags[$arm]:--}" "$(date -u +%F)" "$(bench_machine)" >> "$OUT" <<'PY'
import json, math, sys
s = json.load(open(sys.argv[1]))
raw = s.get("val_bpb_raw", float("nan"))
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], f"{s['val_bpb']:.5f}", "" if math.isnan(raw) else f"{raw:.5f}",
                 f"{s['epochs']:.2f}", str(s["steps"]), str(s["tokens_trained"]), f"{s['tok_per_s']:.0f}", sys.argv[5],
                 sys.argv[6], s.get("git_commit", "?"), sys.argv[7]]))
PY
    tail -1 "$OUT"
    rm -rf "$d/checkpoints" "$d"/*.safetensors
  done
done

table=$(mktemp)
{
  echo "$(bench_machine); \`NAME=$NAME BUDGET=$BUDGET SEEDS=$SEEDS ARMS='$ARMS' bash bench/paired_arms.sh\` with BASE='$BASE' (rows in $OUT)"
  echo
  /usr/bin/python3 - "$OUT" "$BUDGET" "${names[@]}" <<'PY'
import csv, math, statistics as st, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["budget"] == sys.argv[2]]
arms = sys.argv[3:]
by = {a: {r["seed"]: r for r in rows if r["arm"] == a} for a in arms}
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
print(f"| arm | flags | runs | epochs | val_bpb mean ± sd | vs {arms[0]} (paired, 95% CI) |")
print("|---|---|---|---|---|---|")
for a in arms:
    if not by[a]: continue
    v = [float(r["val_bpb"]) for r in by[a].values()]
    sd = f" ± {st.stdev(v):.4f}" if len(v) > 1 else ""
    ep = st.mean(float(r["epochs"]) for r in by[a].values())
    seeds = sorted(set(by[a]) & set(by[arms[0]]))
    d = [float(by[a][s]["val_bpb"]) - float(by[arms[0]][s]["val_bpb"]) for s in seeds]
    vs = "—" if a == arms[0] or not d else f"{st.mean(d):+.4f}" + (
        f" ± {T975.get(len(d) - 1, 2.0) * st.stdev(d) / math.sqrt(len(d)):.4f} ({len(d)} seeds)" if len(d) > 1 else " (1 seed)")
    flags = next(iter(by[a].values()))["flags"]
    print(f"| {a} | `{flags}` | {len(v)} | {ep:.2f} | {st.mean(v):.4f}{sd} | {vs} |")
PY
} > "$table"
cat "$table"
[ -z "${DOC:-}" ] || replace_doc_section "$NAME" "$table" "$DOC"
