#!/usr/bin/env bash
# bench/backlog.sh — the open measurements, in order, as one resumable job: each step is a
# resumable benchmark that records every finished run under bench/results/ and skips what is
# recorded; this script gives each the minutes left of MAX_MINUTES, commits what it recorded (its
# results and the docs page its table goes to, nothing else), and moves to the next step once the
# step returns with time to spare (it finished). A step that finished before only prints its
# table again, in seconds; a failing step stops the job (its output says why).
#
#   nohup bash bench/backlog.sh > /tmp/backlog.log 2>&1 &     # MAX_MINUTES=150 by default
#   STEPS="plan repeat_validate" bash bench/backlog.sh         # only these, in this order
#
# Steps: replicate (bench/research_replicate.sh: the research's keeps on fresh seeds), plan
# (bench/plan_validate.sh: throughput, ladder fit, sources' worth, the picks against the cpu preset),
# repeat_validate (the repetition levers at 30 minutes on the full corpus, 2 seeds), repeat_strong
# (stronger regularisers on the 1M-token proxy, a sitting of their own: dropout 0.3, weight decay
# grown 4x per epoch, EMA with row-level order), repeat_up1 (the levers where the loss model holds:
# 9M unique tokens, one per parameter of the `cpu` preset, read 5-8 times in 25 minutes, 3 seeds:
# the combination and the weight average alone; the 1M-token proxy memorises), mix_offset
# (mixtures against the corpus alone at 5 minutes, 3 seeds),
# replicate_wide (the replication study again, candidates allowed 10 seeds: the first kept nothing),
# ema_validate (the weight average alone against the default at 30 minutes, 3 seeds: inside the
# combined levers it beat its own raw weights by 0.004-0.007 where the levers together cost 0.02),
# phases (bench/phases.sh: phase 1 at 30 minutes, phase 2 on 2 ranks at 30 minutes with the full CORE).
# Never beside another benchmark or test: budgets are wall clock. Run it on a frozen binary
# (FRONTIER=/tmp/x/frontier) when the checkout may be rebuilt meanwhile.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
MAX_MINUTES=${MAX_MINUTES:-150}
STEPS=${STEPS:-"replicate plan phases mix_offset repeat_validate repeat_up1 repeat_strong replicate_wide ema_validate"}
t_end=$(( $(date +%s) + MAX_MINUTES * 60 ))
left() { echo $(( (t_end - $(date +%s)) / 60 )); }
LEVERS='--ema-steps 150 --ema-blend 0.4 --dropout 0.1 --wd-per-epoch 1'

for step in $STEPS; do
  m=$(left)
  [ "$m" -ge 10 ] || { echo "backlog: MAX_MINUTES=$MAX_MINUTES reached before $step; run again to continue"; exit 0; }
  echo "backlog: $step ($m minutes left) at $(date -u +%T)"
  case $step in
    replicate) MAX_MINUTES=$m bash bench/research_replicate.sh; rc=$?; paths=(bench/results/research_replicate docs/research.md) ;;
    replicate_wide)  # the same protocol, candidates allowed 10 seeds: can the rule keep effects of ~0.015 bpb?
      STATE=bench/results/research_replicate_wide MARKER=research_replication_wide RESEARCH_FLAGS="--max-seeds 10" \
        MAX_MINUTES=$m bash bench/research_replicate.sh; rc=$?; paths=(bench/results/research_replicate_wide docs/research.md) ;;
    plan) MAX_MINUTES=$m bash bench/plan_validate.sh; rc=$?; paths=(bench/results/plan docs/planning.md plan) ;;
    phases) MAX_MINUTES=$m bash bench/phases.sh; rc=$?; paths=(bench/results/phases) ;;
    repeat_validate)
      NAME=repeat_validate BUDGET=30m SEEDS=2 ARMS="default=|combined=$LEVERS" DOC=docs/training.md MAX_MINUTES=$m \
        bash bench/paired_arms.sh; rc=$?; paths=(bench/results/repeat_validate.tsv docs/training.md) ;;
    ema_validate)
      NAME=ema_validate BUDGET=30m SEEDS=3 ARMS="default=|ema=${LEVERS%% --dropout*}" DOC=docs/training.md MAX_MINUTES=$m \
        bash bench/paired_arms.sh; rc=$?; paths=(bench/results/ema_validate.tsv docs/training.md) ;;
    repeat_strong)
      SITTING=strong ARM_ORDER="fresh repeat combined dropout-0.3 wd-epochs-4 ema-rows" MAX_MINUTES=$m \
        bash bench/repeat_proxy.sh; rc=$?; paths=(bench/results/repeat_proxy-strong.tsv) ;;
    repeat_up1)
      # seed 1's sitting ran before the ema arm joined: an arm added in another sitting is no pair
      SITTING=up1 BUDGET=25m SUBSET=9000000 ARM_ORDER="fresh repeat combined ema" SEED_LIST="2 3" MAX_MINUTES=$m \
        bash bench/repeat_proxy.sh; rc=$?; paths=(bench/results/repeat_proxy-up1.tsv) ;;
    mix_offset)
      NAME=mix_offset BUDGET=5m SEEDS=3 DOC=docs/planning.md MAX_MINUTES=$m \
        ARMS='default=|wiki=--mix extra_wiki=0.25,extra_textbooks=0.03|natural=--mix extra_wiki,extra_textbooks' \
        bash bench/paired_arms.sh; rc=$?; paths=(bench/results/mix_offset.tsv docs/planning.md) ;;
    *) echo "backlog: unknown step '$step' (replicate, plan, phases, repeat_validate, repeat_strong, repeat_up1, mix_offset, replicate_wide, ema_validate)"; exit 2 ;;
  esac
  for p in "${paths[@]}"; do [ -e "$p" ] && bench_commit "$p" "recorded by bench/backlog.sh ($step)"; done
  [ $rc = 0 ] || { echo "backlog: $step failed (exit $rc): the job stops here"; exit 1; }
done
echo "backlog: every step ran to its end (or the time was up: run again to continue)"
