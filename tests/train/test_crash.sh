#!/usr/bin/env bash
# tests/train/test_crash.sh — a run survives being killed at any instant: kill -9 (SIGKILL) at named
# points inside the training loop and inside every phase of writing a checkpoint (FRONTIER_CRASH_AT,
# util/faults.h), and at unplanned instants from outside; every interrupted run resumes with
# `frontier train --resume` to exactly the losses and the bits of an uninterrupted run, and leaves
# no temp file behind. Then SIGINT / SIGTERM: exit 130 / 143, a checkpoint, summary.json marked
# interrupted; a second signal exits at once. Then a full disk (a real 1 MiB tmpfs where the
# machine allows mounting one, and an injected ENOSPC always): the run stops with an error and the
# last checkpoint stays intact and resumable.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# the recipe on (its tensors are in every checkpoint), with a small bigram table: the default's
# 40,960 rows would make each of the many checkpoints below 50 MiB
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 1024
      --bigram 4096 --eval-tokens 2048 --quiet --threads 1)
STEPS=(--steps 16 --save-every 3steps --keep-checkpoints 2)

losses() { sed 's/.*"loss":\([^,]*\),.*/\1/' "$1/metrics.jsonl"; }
no_temps() { [ -z "$(find "$1" -name '*.tmp-*' 2>/dev/null)" ]; }

# the uninterrupted reference
$F train "${TINY[@]}" "${STEPS[@]}" --run-dir "$tmp/ref" > "$tmp/ref.out" 2>&1 || { bad "reference run"; cat "$tmp/ref.out"; }
[ "$(ls "$tmp/ref/checkpoints" | wc -l)" = 2 ] && ok "keep-checkpoints 2: two checkpoint folders" || bad "checkpoints: $(ls "$tmp/ref/checkpoints")"
[ "$(readlink "$tmp/ref/latest")" = checkpoints/step-00000016 ] && ok "latest -> the final checkpoint" || bad "latest -> $(readlink "$tmp/ref/latest")"
ref_val=$(sed -n 's/.*"val_bpb":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/ref/summary.json")

# Resume DIR until it finishes (at most 4 tries). A kill before the first checkpoint leaves nothing
# to resume: that must be said (exit 2), and the run then starts again with --overwrite.
finish() {
  local dir=$1 i out rc
  for i in 1 2 3 4; do
    # the second kill may land after the run has finished (a fast machine): then there is nothing to resume
if grep -q '"stopped_by":[[:space:]]*"steps"' "$dir/summary.json" 2>/dev/null; then out="finished before the kill"; rc=0
else out=$($F train --resume "$dir" --threads 1 --quiet 2>&1); rc=$?; fi
    [ $rc = 0 ] && return 0
    if [ $rc = 2 ] && grep -q "holds no checkpoint" <<<"$out"; then
      $F train "${TINY[@]}" "${STEPS[@]}" --run-dir "$dir" --overwrite > /dev/null 2>&1 && return 0
    fi
    echo "resume exit $rc: $out" | tail -3
  done
  return 1
}

# Kill -9 at each point; every run must end with the reference's losses, weights and val_bpb.
check_crash() {  # point
  local point=$1 dir="$tmp/crash_${1//[:]/_}" rc
  { FRONTIER_CRASH_AT=$point $F train "${TINY[@]}" "${STEPS[@]}" --run-dir "$dir" > "$dir.out" 2>&1; rc=$?; } 2>/dev/null
  if [ $rc != 137 ]; then bad "$point: exit $rc, expected 137 (killed)"; return; fi
  if ! no_temps "$dir"; then :; fi  # a kill -9 cannot clean up: the resume below must
  if ! finish "$dir"; then bad "$point: could not finish after the kill"; return; fi
  local v; v=$(sed -n 's/.*"val_bpb":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$dir/summary.json")
  if cmp -s <(losses "$tmp/ref") <(losses "$dir") && same_tensors "$tmp/ref/model.safetensors" "$dir/model.safetensors" \
     && same_tensors "$tmp/ref/train_state.safetensors" "$dir/train_state.safetensors" && [ "$v" = "$ref_val" ] && no_temps "$dir"; then
    ok "kill -9 at $point: resumed to the same losses, weights, optimizer state and val_bpb $v"
  else
    bad "kill -9 at $point: differs from the uninterrupted run (val_bpb $v vs $ref_val; temps: $(find "$dir" -name '*.tmp-*'))"
    diff <(losses "$tmp/ref") <(losses "$dir") | head -5
  fi
}
# in the loop (before steps 2, 5, 7, 14), inside each phase of the 2nd/3rd/5th save, inside a
# file being written (the Nth atomic write: tokenizer, config, safetensors) and before its rename
for p in step:3 step:8 step:15 ckpt-begin:2 ckpt-state:2 ckpt-model:3 ckpt-renamed:2 ckpt-published:3 \
         ckpt-pruned:5 write:2 write:45 rename:7; do
  check_crash "$p"
done

# kill -9 from outside at unplanned instants, twice: once a random number of steps is logged (the
# kill then lands wherever the 50 ms poll finds the run: mid-step, mid-save), so the kills stay
# inside the 80 steps however fast the machine is (a random delay in seconds did not: a fast
# machine could finish the resumed run before the second kill)
wait_lines() { for _ in $(seq 600); do [ -s "$1/metrics.jsonl" ] && [ "$(wc -l < "$1/metrics.jsonl")" -ge "$2" ] && return; sleep 0.05; done; }
dir="$tmp/ext"
$F train "${TINY[@]}" --steps 80 --save-every 2steps --run-dir "$dir" > /dev/null 2>&1 &
pid=$!; wait_lines "$dir" $((3 + RANDOM % 30)); kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
$F train --resume "$dir" --threads 1 --quiet > /dev/null 2>&1 &
pid=$!; n=$(wc -l < "$dir/metrics.jsonl"); wait_lines "$dir" $((n + 2 + RANDOM % 20)); kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
$F train "${TINY[@]}" --steps 80 --save-every 2steps --run-dir "$tmp/ext_ref" > /dev/null 2>&1
out=$($F train --resume "$dir" --threads 1 --quiet 2>&1); rc=$?
if [ $rc = 0 ] && cmp -s <(losses "$tmp/ext_ref") <(losses "$dir") && same_tensors "$tmp/ext_ref/model.safetensors" "$dir/model.safetensors" && no_temps "$dir"; then
  ok "kill -9 from outside, twice: resumed to the uninterrupted run's losses and weights"
else bad "kill -9 from outside: exit $rc, or differs: $out"; fi

# SIGINT and SIGTERM: exit 130 / 143 with a checkpoint, a summary marked interrupted and the resume
# command; the resumed run reaches the uninterrupted one's losses (the abandoned step is redone).
$F train "${TINY[@]}" --steps 120 --run-dir "$tmp/sig_ref" > /dev/null 2>&1
for sig in INT TERM; do
  dir="$tmp/sig_$sig"
  $F train "${TINY[@]}" --steps 120 --run-dir "$dir" > "$dir.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -s "$dir/metrics.jsonl" ] && [ "$(wc -l < "$dir/metrics.jsonl")" -ge 3 ] && break; sleep 0.1; done
  kill -$sig $pid; wait $pid; rc=$?
  want=$([ $sig = INT ] && echo 130 || echo 143)
  step=$(sed -n 's/^[[:space:]]*"steps":[[:space:]]*\([0-9]*\).*/\1/p' "$dir/summary.json" 2>/dev/null | head -1)
  if [ $rc = "$want" ] && grep -q '"interrupted":[[:space:]]*true' "$dir/summary.json" && grep -q "frontier train --resume" "$dir.out" \
     && [ "$(readlink "$dir/latest")" = "checkpoints/step-$(printf %08d "$step")" ] && no_temps "$dir"; then
    ok "SIG$sig: exit $rc, checkpoint at step $step, summary marked interrupted, the resume command printed"
  else bad "SIG$sig: exit $rc (want $want), step '$step', latest $(readlink "$dir/latest"): $(tail -2 "$dir.out")"; fi
  $F train --resume "$dir" --threads 1 --quiet > /dev/null 2>&1 || bad "SIG$sig: resume failed"
  cmp -s <(losses "$tmp/sig_ref") <(losses "$dir") && same_tensors "$tmp/sig_ref/model.safetensors" "$dir/model.safetensors" \
    && ok "SIG$sig: resumed to the uninterrupted run's 120 losses and weights" || bad "SIG$sig: the resumed run differs"
done
# a second signal exits at once, leaving no temp file and the last periodic checkpoint intact. Both
# signals at known points (FRONTIER_SIGINT_AT): the first before the 6th step (saves after steps 2
# and 4), the second inside the save the first one asked for (step 5's), after its first file.
dir="$tmp/sig2"
out=$(FRONTIER_SIGINT_AT=step:6,ckpt-model:3 $F train "${TINY[@]}" --steps 120 --save-every 2steps --run-dir "$dir" 2>&1); rc=$?
if [ $rc = 130 ] && grep -q "interrupted again: exiting now" <<<"$out" && no_temps "$dir" \
   && [ "$(readlink "$dir/latest")" = checkpoints/step-00000004 ] && [ ! -e "$dir/checkpoints/step-00000005" ]; then
  ok "a second SIGINT inside the final save: exit 130 at once, no temp files, latest -> step 4 (the save of step 5 abandoned)"
else bad "two SIGINTs: exit $rc, latest -> $(readlink "$dir/latest"), temps: $(find "$dir" -name '*.tmp-*'): $(tail -2 <<<"$out")"; fi
$F train --resume "$dir" --threads 1 --quiet > /dev/null 2>&1 && cmp -s <(losses "$tmp/sig_ref") <(losses "$dir") \
  && ok "two SIGINTs: resumed from step 4 to the uninterrupted run's 120 losses" || bad "two SIGINTs: resume failed or differs"

# a full disk: the failing save is an error (exit 1) and the last checkpoint stays intact
check_full() {  # description, env/mount setup done by the caller; $1 = run dir
  local what=$1 dir=$2 out rc; shift 2
  out=$("$@" 2>&1); rc=$?
  if [ $rc = 1 ] && grep -qiE "disk|space|No space" <<<"$out" && [ -n "$(readlink "$dir/latest")" ] && no_temps "$dir"; then
    ok "$what: exit 1, '$(grep -oiE '[^:]*(space|disk)[^;]*' <<<"$out" | head -1)', latest -> $(readlink "$dir/latest")"
  else bad "$what: exit $rc: $(tail -2 <<<"$out"); temps: $(find "$dir" -name '*.tmp-*')"; fi
}
dir="$tmp/enospc"
check_full "ENOSPC in the 3rd checkpoint's write" "$dir" env FRONTIER_FAIL_AT=write:60 $F train "${TINY[@]}" "${STEPS[@]}" --run-dir "$dir"
$F train --resume "$dir" --threads 1 --quiet > /dev/null 2>&1 && cmp -s <(losses "$tmp/ref") <(losses "$dir") \
  && ok "after ENOSPC: resumed to the uninterrupted run's losses" || bad "after ENOSPC: resume failed or differs"
check_full "metrics.jsonl write fails" "$tmp/mfail" env FRONTIER_FAIL_AT=metrics:7 $F train "${TINY[@]}" "${STEPS[@]}" --run-dir "$tmp/mfail"
if mkdir -p "$tmp/small" && mount -t tmpfs -o size=52m tmpfs "$tmp/small" 2>/dev/null; then
  # each checkpoint of this model is ~21.4 MiB: the third does not fit beside the two kept
  out=$($F train "${TINY[@]}" --steps 16 --save-every 3steps --keep-checkpoints 2 --run-dir "$tmp/small/run" 2>&1); rc=$?
  if [ $rc = 1 ] && [ -n "$(readlink "$tmp/small/run/latest")" ] && no_temps "$tmp/small/run"; then
    ok "a real full disk (52 MiB tmpfs): exit 1, latest -> $(readlink "$tmp/small/run/latest"): $(grep -o 'not enough disk space[^:]*' <<<"$out" | head -1)"
  else bad "a real full disk: exit $rc: $(tail -2 <<<"$out")"; fi
  umount "$tmp/small"
  mount -t tmpfs -o size=8m tmpfs "$tmp/small"
  check "a disk too small for one checkpoint: refused before training" 1 "for one checkpoint: it needs" \
    $F train "${TINY[@]}" --steps 16 --run-dir "$tmp/small/run"
  [ ! -e "$tmp/small/run/metrics.jsonl" ] && ok "nothing trained" || bad "a refused run trained"
  umount "$tmp/small"
else
  echo "note: cannot mount a tmpfs here (not root?): the real full-disk case is left to the injected ENOSPC above"
fi

echo "crash: $fails failed"
[ "$fails" -eq 0 ]
