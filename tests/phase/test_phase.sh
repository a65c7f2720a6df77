#!/usr/bin/env bash
# tests/phase/test_phase.sh — `frontier run --phase 1|2` scaled down to seconds, with the planner's
# throughput model seeded in a fresh cache (calibrating takes minutes; test_plan_cli.sh and
# test_planner.c cover it):
#   1. phase 1 (--mix auto: the plan chooses the data, here the corpus alone): every output
#      (plan.json and plan.md, the training folder, report.html, result.json) and the result line;
#      run again, every step is skipped and the result is the same;
#   2. a phase interrupted by SIGTERM during its training exits 143 and, run again, continues the
#      training from its checkpoint (not from scratch) to the end;
#   3. phase 2 on 2 MPI ranks (mpirun started by the command) with a CORE subset: core.json, the
#      composite, the result line; with --compare the composite places it among two runs;
#   4. usage errors exit 2.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
command -v mpirun >/dev/null || skip_test "no mpirun (scripts/setup.sh installs openmpi-bin)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
       OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
prepare_data
core_dir="${FRONTIER_DATA:-../shared/data}/core"
C=$tmp/cache
mkdir -p "$C"
key=$($F info | sed -n 's/^plan layout: *//p')
seed_throughput "$C/throughput.json" "$key"
P1=(--phase 1 --budget 4s --data "$data" --cache "$C" --eval-tokens 4096 --mix auto)

# 1. phase 1, and again
out=$($F run "${P1[@]}" --run-dir "$tmp/p1" 2>&1); rc=$?
line=$(grep '^phase 1 result: val_bpb' <<<"$out")
if [ $rc = 0 ] && [ -n "$line" ]; then ok "phase 1: $line"; else bad "phase 1: exit $rc"; echo "$out" | tail -8; fi
for f in plan.json plan.md report.html result.json train/summary.json train/config.json; do
  [ -s "$tmp/p1/$f" ] || bad "phase 1 left no $f"
done
/usr/bin/python3 - "$tmp/p1" <<'PY' || fails=$((fails + 1))
import json, sys
d = sys.argv[1]
r, p, c = (json.load(open(f"{d}/{f}")) for f in ("result.json", "plan.json", "train/config.json"))
s = json.load(open(f"{d}/train/summary.json"))
ok = r["phase"] == 1 and r["val_bpb"] == s["val_bpb"] and r["depth"] == p["depth"] == c["depth"] and c["budget"] == "4s"
# --mix auto is the planner's: with nothing to price a mixture by, the plan says so and the
# training gets no --mix (a --mix auto passed on would stop it)
auto = "--mix auto: no loss model" in open(f"{d}/plan.md").read() and c.get("mix") is None and "mix" not in p
print(("ok" if ok and auto else "FAIL") + f": result.json = the run's val_bpb {r['val_bpb']:.4f}; it trained the planned "
      f"depth {p['depth']}; --mix auto {'planned the corpus alone and said why' if auto else 'MISHANDLED'}")
ok = ok and auto
sys.exit(0 if ok else 1)
PY
out2=$($F run "${P1[@]}" --run-dir "$tmp/p1" 2>&1); rc=$?
if [ $rc = 0 ] && grep -q "the plan stands" <<<"$out2" && grep -q "has finished training" <<<"$out2" \
   && [ "$(grep '^phase 1 result' <<<"$out2")" = "$line" ]; then ok "phase 1 again: every step skipped, the same result"
else bad "phase 1 again: exit $rc"; echo "$out2" | tail -5; fi

# 2. interrupted during its training, continued by running it again
$F run --phase 1 --budget 12s --data "$data" --cache "$C" --eval-tokens 4096 --save-every 2s --run-dir "$tmp/pi" > "$tmp/pi.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/pi/train/metrics.jsonl" ] && [ -e "$tmp/pi/train/latest" ] && break; sleep 0.1; done
kill -TERM $pid; wait $pid; rc=$?
steps=$(wc -l < "$tmp/pi/train/metrics.jsonl")
if [ $rc = 143 ] && grep -q "run the same command again to continue" "$tmp/pi.log" && [ -e "$tmp/pi/train/latest" ]; then
  ok "SIGTERM during the phase's training: exit 143, the checkpoint kept ($steps steps logged)"
else bad "interrupted phase: exit $rc"; tail -5 "$tmp/pi.log"; fi
out=$($F run --phase 1 --budget 12s --data "$data" --cache "$C" --eval-tokens 4096 --save-every 2s --run-dir "$tmp/pi" 2>&1); rc=$?
total=$(sed -n 's/^[[:space:]]*"steps":[[:space:]]*\([0-9]*\).*/\1/p' "$tmp/pi/train/summary.json" | head -1)
if [ $rc = 0 ] && grep -q "training (continued): train --resume" <<<"$out" && grep -q '^phase 1 result' <<<"$out" \
   && grep -q '"stopped_by":[[:space:]]*"budget"' "$tmp/pi/train/summary.json" && [ "${total:-0}" -gt "$steps" ]; then
  ok "run again: the training continued from its checkpoint (--resume) to the budget, $total steps in all"
else bad "continued phase: exit $rc"; echo "$out" | tail -5; fi

# 3. phase 2 on 2 ranks, CORE subset; the planner's model for 2 ranks of 1 thread (the phase gives
# each local rank its share of the cores)
k2=${key/ranks=1/ranks=2}
seed_throughput "$C/throughput.json" "${k2/threads=0/threads=$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))}"
P2=(--phase 2 --ranks 2 --budget 4s --data "$data" --cache "$C" --eval-tokens 4096 --core-dir "$core_dir"
    --core-tasks copa,hellaswag_zeroshot --core-max-per-task 16)
out=$($F run "${P2[@]}" --run-dir "$tmp/p2" 2>&1); rc=$?
line=$(grep '^phase 2 result: val_bpb' <<<"$out")
if [ $rc = 0 ] && grep -q "composite 1.0000" <<<"$line" && grep -q "mpirun -np 2" <<<"$out"; then ok "phase 2 on 2 ranks: $line"
else bad "phase 2: exit $rc"; echo "$out" | tail -8; fi
[ -s "$tmp/p2/train/core.json" ] && [ -s "$tmp/p2/report.html" ] && grep -q '"ranks":[[:space:]]*2' "$tmp/p2/train/summary.json" \
  && ok "phase 2: core.json, report.html, and the training ran on 2 ranks" || bad "phase 2 outputs missing"
cp -r "$tmp/p2" "$tmp/p2b"
sed -i 's/"core":[[:space:]]*[0-9.e+-]*/"core": 0.001/' "$tmp/p2b/train/core.json"
out=$($F run "${P2[@]}" --run-dir "$tmp/p2" --compare "$tmp/p2b/train" 2>&1); rc=$?
grep -q "min-max over 2 runs" <<<"$out" && [ $rc = 0 ] && ok "--compare: the composite among 2 runs" \
  || { bad "--compare: exit $rc"; echo "$out" | tail -3; }

# 4. usage
check "no phase number" 2 "--phase '3'" $F run --phase 3
check "phase 1 takes no ranks" 2 "phase 2's" $F run --phase 1 --ranks 2
check "an unknown option" 2 "unknown option '--bogus'" $F run --phase 1 --bogus 1
check "a phase resumes by itself" 2 "resumes by itself" $F run --phase 1 --resume x
echo "phase: $fails failed"
[ "$fails" -eq 0 ]
