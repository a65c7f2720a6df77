#!/usr/bin/env bash
# bench/lanes_pairing.sh — does side-by-side pairing (`frontier research --lanes 2`) make a paired
# difference less noisy than back-to-back pairing? The same two configs (A: the `cpu` preset; B: A
# with another matrix learning rate) train PAIRS times each way on seeds 1, 2, ..., each run on
# one CPU with one thread (what a trial has in 2 lanes on 2 cores):
#   side-by-side: A on CPU 0 and B on CPU 1 at the same moment;
#   back-to-back: A on CPU 0, then B on CPU 0 (the other CPU idle), as one lane would pair them.
# The two ways alternate pair by pair, so the machine's slow periods fall on both. Each finished
# pair is a row of bench/results/lanes_pairing.tsv (resumable: a rerun skips recorded pairs and
# stops by itself after MAX_MINUTES); the table gives the sd of d = val_bpb(B) − val_bpb(A) each
# way and their ratio.
#
#   MAX_MINUTES=60 bash bench/lanes_pairing.sh      # again until it prints the table
#
# Never beside another benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-60}
BUDGET=${BUDGET:-2m}
PAIRS=${PAIRS:-6}
B_FLAGS=${B_FLAGS:-"--matrix-lr 0.025"}
F=${FRONTIER:-./frontier}
OUT=bench/results/lanes_pairing.tsv
RUNS=${RUNS_DIR:-/tmp/frontier-lanes-pairing}
command -v taskset > /dev/null || { echo "lanes_pairing: taskset (util-linux) is missing"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "lanes_pairing: needs 2 CPUs"; exit 1; }
mkdir -p bench/results "$RUNS"
[ -s "$OUT" ] || printf 'budget\tmode\tpair\tseed\tval_a\tval_b\td\ttok_s_a\ttok_s_b\tb_flags\tdate\tgit\tmachine\n' > "$OUT"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "lanes_pairing: prepare did not report a data folder"; exit 1; }

train() {  # cpu, arm, seed, run folder
  local extra=""; [ "$2" = b ] && extra=$B_FLAGS
  # shellcheck disable=SC2086  # B's flags are words
  taskset -c "$1" $F train --preset cpu --budget "$BUDGET" --threads 1 --data "$data" --seed "$3" --quiet $extra \
    --run-dir "$4" > "$4.log" 2>&1
}
val() { /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(f\"{s['val_bpb']:.5f}\t{s['tok_per_s']:.0f}\")" "$1/summary.json"; }

for p in $(seq 1 "$PAIRS"); do
  for mode in side-by-side back-to-back; do
    awk -F'\t' -v b="$BUDGET" -v m="$mode" -v p="$p" '$1 == b && $2 == m && $3 == p { f = 1 } END { exit !f }' "$OUT" && continue
    [ "$(date +%s)" -lt "$t_end" ] || { echo "lanes_pairing: MAX_MINUTES=$MAX_MINUTES reached; run again to continue"; exit 0; }
    d=$RUNS/$BUDGET-$mode-$p
    rm -rf "$d"; mkdir -p "$d"
    if [ "$mode" = side-by-side ]; then
      train 0 a "$p" "$d/a" & pa=$!
      train 1 b "$p" "$d/b" & pb=$!
      wait $pa && wait $pb || { echo "lanes_pairing: a run failed ($d)"; exit 1; }
    else
      train 0 a "$p" "$d/a" && train 0 b "$p" "$d/b" || { echo "lanes_pairing: a run failed ($d)"; exit 1; }
    fi
    IFS=$'\t' read -r va ta < <(val "$d/a"); IFS=$'\t' read -r vb tb < <(val "$d/b")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%.5f\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BUDGET" "$mode" "$p" "$p" "$va" "$vb" \
      "$(/usr/bin/python3 -c "print($vb - $va)")" "$ta" "$tb" "$B_FLAGS" "$(date -u +%F)" "$(bench_build "$F")" \
      "$(bench_machine)" | tee -a "$OUT"
    rm -rf "$d"
  done
done

/usr/bin/python3 - "$OUT" "$BUDGET" <<'PY'
import csv, statistics as st, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["budget"] == sys.argv[2]]
print(f"## Side-by-side against back-to-back pairs: `cpu` preset, {sys.argv[2]}, 1 thread per run\n")
print("| pairing | pairs | mean d | sd of d | tok/s A, B (mean) |\n|---|---|---|---|---|")
sd = {}
for mode in ("side-by-side", "back-to-back"):
    r = [x for x in rows if x["mode"] == mode]
    d = [float(x["d"]) for x in r]
    if len(d) < 2: continue
    sd[mode] = st.stdev(d)
    ta, tb = st.mean(float(x["tok_s_a"]) for x in r), st.mean(float(x["tok_s_b"]) for x in r)
    print(f"| {mode} | {len(d)} | {st.mean(d):+.4f} | {sd[mode]:.4f} | {ta:.0f}, {tb:.0f} |")
if len(sd) == 2:
    print(f"\nsd ratio side-by-side / back-to-back: {sd['side-by-side'] / sd['back-to-back']:.2f} "
          f"(an F test needs ~10+ pairs each to call a ratio of 0.7)")
PY
