#!/usr/bin/env bash
# tests/train/test_run_folder.sh — the run folder is guarded and what is read back from it is
# checked: a folder holding a run is refused without --resume / --overwrite; two processes cannot
# train into one folder (flock); a resumed run's metrics.jsonl holds each step once and its stale
# summary.json is gone; a corrupt or edited train_state / config.json / checkpoint is refused with
# exit 2 and a message naming the file and the field; NaN weights are refused by eval and sample;
# an eval batch that cannot fit is refused before training.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
      --eval-tokens 2048 --quiet --threads 1)
edit() { /usr/bin/python3 tests/train/st_edit.py "$@"; }

$F train "${TINY[@]}" --steps 6 --run-dir "$tmp/a" > /dev/null 2>&1 || bad "train"
# 1. the guard: a folder that holds a run
check "train into a folder holding a run" 2 "holds a run already" $F train "${TINY[@]}" --steps 6 --run-dir "$tmp/a"
check "--overwrite replaces it" 0 "" $F train "${TINY[@]}" --steps 4 --run-dir "$tmp/a" --overwrite
[ "$(wc -l < "$tmp/a/metrics.jsonl")" = 4 ] && ok "the overwritten run's metrics are its own" || bad "metrics after --overwrite: $(wc -l < "$tmp/a/metrics.jsonl") lines"
check "--overwrite with --resume" 2 "contradict" $F train --resume "$tmp/a" --overwrite
check "--resume of no folder" 2 "no such run folder" $F train --resume "$tmp/none"
mkdir -p "$tmp/empty"
check "--resume of a folder without a checkpoint" 2 "holds no checkpoint" $F train --resume "$tmp/empty"
check "--save-every garbage" 2 "--save-every" $F train "${TINY[@]}" --steps 2 --save-every 5parsecs --run-dir "$tmp/x"
check "--save-every 0steps" 2 "--save-every" $F train "${TINY[@]}" --steps 2 --save-every 0steps --run-dir "$tmp/x"

# 2. two processes, one folder: the second is refused while the first trains (the lock names it)
$F train "${TINY[@]}" --steps 400 --run-dir "$tmp/busy" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/busy/metrics.jsonl" ] && break; sleep 0.1; done
check "a second process into a busy folder" 1 "in use by another frontier process (pid $pid)" \
  $F train "${TINY[@]}" --steps 4 --run-dir "$tmp/busy" --overwrite
check "a resume of a busy folder" 1 "in use by another frontier process" $F train --resume "$tmp/busy" --steps 800
kill -TERM $pid; wait $pid
check "after the first one stopped, the folder resumes" 0 "" $F train --resume "$tmp/busy" --steps 30 --quiet

# 3. resume: metrics.jsonl holds every step once, the stale summary is gone until the new one
$F train "${TINY[@]}" --steps 12 --save-every 4steps --run-dir "$tmp/m" > /dev/null 2>&1
# pretend a kill after step 10: the checkpoint at 8 is the newest, metrics ran on to step 10
rm -rf "$tmp/m/checkpoints/step-00000012"; ln -sfn checkpoints/step-00000008 "$tmp/m/latest"
head -n 10 "$tmp/m/metrics.jsonl" > "$tmp/m10"; printf '{"step":11,"lo' >> "$tmp/m10"; cp "$tmp/m10" "$tmp/m/metrics.jsonl"
$F train --resume "$tmp/m" --threads 1 --quiet > /dev/null 2>&1 || bad "resume after the pretend kill"
steps=$(sed 's/{"step":\([0-9]*\),.*/\1/' "$tmp/m/metrics.jsonl" | tr '\n' ' ')
[ "$steps" = "1 2 3 4 5 6 7 8 9 10 11 12 " ] && ok "metrics.jsonl: steps 1..12 once each after resuming from step 8" || bad "metrics steps: $steps"

# 4. a corrupt or edited train_state: every field is checked before use
bad_state() {  # description, key, value, expected text
  rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"; rm -f "$tmp/s/.lock"
  edit "$tmp/s/train_state.safetensors" meta "$2" "$3"
  check "train_state $1" 2 "$4" $F train --resume "$tmp/s" --steps 8
}
bad_state "n_step_times < 0"     n_step_times -5   "n_step_times -5 is outside"
bad_state "n_step_times > step"  n_step_times 99   "n_step_times 99 is outside"
bad_state "timed_s = -inf"       timed_s -inf      "timed_s\" = -inf is not a duration"
bad_state "timed_s = nan"        timed_s nan       "timed_s\" = nan is not a duration"
bad_state "startup_s garbage"    startup_s 1x      "startup_s\" missing or not a number"
bad_state "tokens vs steps"      tokens 999        "999 tokens trained in 4 steps"
bad_state "optim_step"           optim_step 3      "optim_step 3 differs from step 4"
bad_state "step vs model"        step 3            "saved at step 3 but model.safetensors at step 4"
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"
edit "$tmp/s/train_state.safetensors" poke step_times 1 nan
check "train_state step_times NaN" 2 "step_times[1] = nan" $F train --resume "$tmp/s" --steps 8
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"
edit "$tmp/s/train_state.safetensors" poke "$( /usr/bin/python3 -c "import sys; sys.path.insert(0,'tests/util'); from safetensors_read import load; print(next(k for k,(d,_) in load('$tmp/s/train_state.safetensors')[0].items() if d=='F32' and k!='step_times'))")" 0 inf
check "optimizer state holds inf" 2 "the optimizer state is corrupt" $F train --resume "$tmp/s" --steps 8
# a broken `latest`
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"; ln -sfn /etc "$tmp/s/latest"
check "latest points elsewhere" 2 "points to '/etc'" $F train --resume "$tmp/s" --steps 8

# 5. config.json edited or truncated after the run: refused on resume (the checkpoint is the truth)
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"; sed -i 's/"n-embd":[[:space:]]*64/"n-embd": 128/' "$tmp/s/config.json"
check "config.json edited" 2 "gives another \"n-embd\"" $F train --resume "$tmp/s" --steps 8
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"; head -c 200 "$tmp/a/config.json" > "$tmp/s/config.json"
check "config.json truncated" 2 "not a JSON object" $F train --resume "$tmp/s" --steps 8
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"; sed -i 's/"budget":/"budget": "5m", "x-extra": 1, "budgetx":/' "$tmp/s/config.json"
check "config.json with an extra key" 2 "x-extra" $F train --resume "$tmp/s" --steps 8
rm -rf "$tmp/s"; cp -r "$tmp/a" "$tmp/s"; sed -i 's/"budget":[^,]*,/"budget": "2h",/' "$tmp/s/config.json"
check "config.json: only --budget differs (resumable)" 0 "" $F train --resume "$tmp/s" --steps 8

# 6. NaN / inf weights: eval, sample and resume refuse them
rm -rf "$tmp/n"; cp -r "$tmp/a" "$tmp/n"
edit "$tmp/n/model.safetensors" poke lm_head.weight 77 nan
check "eval of NaN weights" 2 "lm_head.weight holds NaN at element 77" $F eval --ckpt "$tmp/n" --eval-tokens 2048
check "sample from NaN weights" 2 "holds NaN" $F sample --ckpt "$tmp/n" --prompt "The" -n 4
check "resume of NaN weights" 2 "holds NaN" $F train --resume "$tmp/n" --steps 8
edit "$tmp/n/model.safetensors" poke lm_head.weight 77 0
edit "$tmp/n/model.safetensors" poke transformer.wte.weight 3 -inf
check "eval of inf weights" 2 "transformer.wte.weight holds an infinity at element 3" $F eval --ckpt "$tmp/n" --eval-tokens 2048

# 7. memory: an eval batch that cannot fit is refused before training, nothing trained
check "huge --eval-batch" 2 "GiB of memory" $F train "${TINY[@]}" --steps 2 --eval-batch 1000000 --run-dir "$tmp/mem"
[ ! -e "$tmp/mem/metrics.jsonl" ] && ok "the refused run trained nothing" || bad "the refused run left metrics"

# 8. token ids beyond the vocabulary: refused when the shards load (training: before the first
# step; validation: before training too, not after it), naming file, token, offset and id
data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
poke_shard() {  # shard, token index, id
  /usr/bin/python3 -c "import struct,sys; f=open(sys.argv[1],'r+b'); f.seek(1024+2*int(sys.argv[2])); f.write(struct.pack('<H',int(sys.argv[3])))" "$@"
}
rm -rf "$tmp/d1"; cp -r "$data" "$tmp/d1"; poke_shard "$(ls "$tmp/d1"/train_*.bin | head -1)" 100 9000
check "a training shard with id 9000 >= vocab 8192" 2 "token 100 (byte offset 1224) is id 9000, outside the tokenizer's vocabulary of 8192" \
  $F train "${TINY[@]}" --steps 2 --data "$tmp/d1" --run-dir "$tmp/bad1"
rm -rf "$tmp/d2"; cp -r "$data" "$tmp/d2"; poke_shard "$(ls "$tmp/d2"/val_*.bin | head -1)" 150 65535
check "a validation shard with id 65535" 2 "is id 65535, outside" $F train "${TINY[@]}" --steps 2 --data "$tmp/d2" --run-dir "$tmp/bad2"
[ ! -e "$tmp/bad2/metrics.jsonl" ] && ok "the bad validation shard was found before training" || bad "trained before finding the bad validation shard"

echo "run folder: $fails failed"
[ "$fails" -eq 0 ]
