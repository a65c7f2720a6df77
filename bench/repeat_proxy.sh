#!/usr/bin/env bash
# bench/repeat_proxy.sh — what repeated data costs, and how much of it each lever wins back: the
# long budgets' data-limited regime at a small scale. A run trains the `cpu` preset for BUDGET on
# a fixed random sample of the corpus's documents up to SUBSET tokens (--train-tokens, the same
# sample for every seed and arm), read many times over; the same run on the whole corpus (which it
# never repeats) is the reference. (The first documents in file order, --train-subset first, are
# one or two books: their rows, bench/results/repeat_proxy_first.tsv, measured a narrow domain.) The repetition penalty is
# val_bpb(subset) − val_bpb(whole corpus); each lever's share of closing it is
# (val_bpb(subset) − val_bpb(subset + lever)) / penalty, paired by seed.
#
# Resumable in pieces: each invocation works at most MAX_MINUTES, one finished run per TSV row
# (bench/results/repeat_proxy.tsv; bench/backlog.sh commits them after every piece); a rerun skips
# recorded runs, and a seed starts only when the time left holds all its missing arms.
# Arms alternate within each seed, so slow periods of the machine hit every arm alike.
#
#   MAX_MINUTES=60 bash bench/repeat_proxy.sh     # one piece; again until it prints the table
#   BUDGET=10m SUBSET=4000000 bash bench/repeat_proxy.sh  # another proxy (more unique tokens per parameter): its own rows
#   SITTING=strong ARM_ORDER="fresh repeat combined dropout-0.3 wd-epochs-4 ema-rows" ...  # other arms, in a
#                                      # sitting of their own (bench/results/repeat_proxy-strong.tsv), with its own fresh and repeat
#   ... ARM_ORDER="fresh repeat combined ema" SEED_LIST=2  # a new arm for seed 2 only, in the sitting of its other arms
#
# Never beside another benchmark or test: budgets are wall clock.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-60}
BUDGET=${BUDGET:-3m}
SUBSET=${SUBSET:-1000000}
KIND=sample
SEEDS=${SEEDS:-3}
SEED_LIST=${SEED_LIST:-$(seq 1 "$SEEDS")}  # the seeds this invocation may run (e.g. "2": one seed's new arm in its own sitting)
F=${FRONTIER:-./frontier}
OUT=bench/results/repeat_proxy${SITTING:+-$SITTING}.tsv  # SITTING=NAME: a new sitting's rows, its own file
RUNS=${RUNS_DIR:-/tmp/frontier-repeat-proxy}
EMA=(--ema-steps 150 --ema-blend 0.4)
declare -A ARMS=(
  [fresh]=""
  [repeat]="--train-tokens $SUBSET --train-subset $KIND"
  [same-order]="--train-tokens $SUBSET --train-subset $KIND --epoch-order same"
  [rows]="--train-tokens $SUBSET --train-subset $KIND --data-order rows"
  [ema]="--train-tokens $SUBSET --train-subset $KIND ${EMA[*]}"
  [dropout]="--train-tokens $SUBSET --train-subset $KIND --dropout 0.1"
  [wd-epochs]="--train-tokens $SUBSET --train-subset $KIND --wd-per-epoch 1"
  [combined]="--train-tokens $SUBSET --train-subset $KIND ${EMA[*]} --dropout 0.1 --wd-per-epoch 1"
  # stronger regularisers, for ARM_ORDER (not in the default order: a table's arms run in one sitting)
  [dropout-0.3]="--train-tokens $SUBSET --train-subset $KIND --dropout 0.3"
  [wd-epochs-4]="--train-tokens $SUBSET --train-subset $KIND --wd-per-epoch 4"
  [ema-rows]="--train-tokens $SUBSET --train-subset $KIND ${EMA[*]} --data-order rows"
)
ORDER=${ARM_ORDER:-"fresh repeat same-order rows ema dropout wd-epochs combined"}
mkdir -p bench/results "$RUNS"
[ -s "$OUT" ] || printf 'budget\tsubset\tarm\tseed\tval_bpb\tval_bpb_raw\tepochs\tsteps\ttokens\ttok_per_s\tflags\tdate\tgit\tmachine\n' > "$OUT"
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "repeat_proxy: prepare did not report a data folder"; exit 1; }

need=$(( $(duration_s "$BUDGET") + 120 ))  # a run: its budget, the evaluation and the start

recorded() { awk -F'\t' -v b="$BUDGET" -v n="$SUBSET" -v a="$1" -v s="$2" \
  '$1 == b && $2 == n && $3 == a && $4 == s { f = 1 } END { exit !f }' "$OUT"; }
for s in $SEED_LIST; do
  # shellcheck disable=SC2086  # the order is words
  seed_fits repeat_proxy "$s" "$need" "$t_end" $ORDER || exit 0
  for arm in $ORDER; do
    recorded "$arm" "$s" && continue
    d=$RUNS/$BUDGET-$SUBSET-$arm-s$s
    rm -rf "$d"
    # shellcheck disable=SC2086  # the arm's flags are words
    $F train --preset cpu --budget "$BUDGET" --data "$data" --seed "$s" --quiet ${ARMS[$arm]} --run-dir "$d" \
      > "$d.log" 2>&1 || { tail -5 "$d.log"; exit 1; }
    /usr/bin/python3 - "$d/summary.json" "$BUDGET" "$SUBSET" "$arm" "$s" "${ARMS[$arm]}" "$(date -u +%F)" \
      "-" "$(bench_machine)" >> "$OUT" <<'PY'
import json, math, sys
s = json.load(open(sys.argv[1]))
raw = s.get("val_bpb_raw", float("nan"))
print("\t".join([sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], f"{s['val_bpb']:.5f}",
                 "" if math.isnan(raw) else f"{raw:.5f}", f"{s['epochs']:.2f}", str(s["steps"]), str(s["tokens_trained"]),
                 f"{s['tok_per_s']:.0f}", sys.argv[6] or "-", sys.argv[7], s.get("git_commit", "?"), sys.argv[9]]))
PY
    tail -1 "$OUT"
    rm -rf "$d/checkpoints" "$d"/*.safetensors
  done
done

# The table: per arm, mean and spread over seeds; against `repeat`, the paired difference with
# its 95% interval and the share of the penalty it wins back.
/usr/bin/python3 - "$OUT" "$BUDGET" "$SUBSET" <<'PY'
import csv, math, statistics as st, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["budget"] == sys.argv[2] and r["subset"] == sys.argv[3]]
by = {}
for r in rows: by.setdefault(r["arm"], {})[r["seed"]] = r
T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}
def paired(a, b):
    seeds = sorted(set(by.get(a, {})) & set(by.get(b, {})))
    d = [float(by[a][s]["val_bpb"]) - float(by[b][s]["val_bpb"]) for s in seeds]
    if len(d) < 2: return None
    m, sd = st.mean(d), st.stdev(d)
    return m, T975.get(len(d) - 1, 2.0) * sd / math.sqrt(len(d)), len(d)
pen = paired("repeat", "fresh")
print(f"## The repetition proxy: `cpu` preset, {sys.argv[2]} on a fixed sample of {int(sys.argv[3]):,} tokens\n")
print("| arm | flags | runs | epochs | val_bpb mean ± sd | vs repeat (paired, 95% CI) | penalty won back | average − own raw weights |")
print("|---|---|---|---|---|---|---|---|")
for arm in list(dict.fromkeys(["fresh", "repeat", "same-order", "rows", "ema", "dropout", "wd-epochs", "combined"] + list(by))):
    if arm not in by: continue
    v = [float(r["val_bpb"]) for r in by[arm].values()]
    ep = st.mean(float(r["epochs"]) for r in by[arm].values())
    flags = next(iter(by[arm].values()))["flags"]
    sd = f" ± {st.stdev(v):.4f}" if len(v) > 1 else ""
    d = paired(arm, "repeat") if arm != "repeat" else None
    vs = f"{d[0]:+.4f} ± {d[1]:.4f}" if d else "—"
    won = f"{-d[0] / pen[0]:.0%}" if d and pen and pen[0] > 0 and arm != "fresh" else "—"
    # the weight average against the raw weights of the same run: paired within the run, no seed noise
    gain = [float(r["val_bpb"]) - float(r["val_bpb_raw"]) for r in by[arm].values() if r.get("val_bpb_raw")]
    readout = ", ".join(f"{g:+.4f}" for g in gain) if gain else "—"
    print(f"| {arm} | `{flags}` | {len(v)} | {ep:.1f} | {st.mean(v):.4f}{sd} | {vs} | {won} | {readout} |")
if pen: print(f"\nRepetition penalty (repeat − fresh, paired): {pen[0]:+.4f} ± {pen[1]:.4f} over {pen[2]} seeds.")
PY
