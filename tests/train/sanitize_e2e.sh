#!/usr/bin/env bash
# tests/train/sanitize_e2e.sh — the whole path end to end with one binary, meant for the
# ASan + UBSan build (`make sanitize` runs it with FRONTIER_BIN=build/sanitize/frontier): train a
# few steps with periodic checkpoints, be killed inside a checkpoint save, resume, stop, resume to
# the end, evaluate val_bpb, score a CORE subset, sample. Any sanitizer report aborts the binary
# (halt_on_error / -fno-sanitize-recover), which fails the step that ran it.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=${FRONTIER_BIN:-./frontier}
source tests/lib.sh
[ -x "$F" ] || { echo "FAIL: no binary $F (build it first)"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:halt_on_error=1
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
      --eval-tokens 1024 --quiet --threads 2)
core_dir="${FRONTIER_DATA:-../shared/data}/core"

{ FRONTIER_CRASH_AT=ckpt-model:2 $F train "${TINY[@]}" --steps 8 --save-every 2steps --run-dir "$tmp/r" > "$tmp/1.log" 2>&1; rc=$?; } 2>/dev/null
[ $rc = 137 ] && ok "killed inside the second checkpoint save (exit $rc)" || { bad "the crash run: exit $rc"; tail -20 "$tmp/1.log"; }
check "resume after the kill, stop at step 5" 0 "" $F train --resume "$tmp/r" --stop-after 5 --threads 2 --quiet
check "resume to the end (val_bpb)" 0 "val_bpb" $F train --resume "$tmp/r" --threads 2 --quiet
check "eval" 0 "val_bpb" $F eval --ckpt "$tmp/r" --eval-tokens 1024
check "eval --core, two tasks" 0 "CORE" $F eval --core --ckpt "$tmp/r" --core-dir "$core_dir" --tasks copa,lambada_openai --max-per-task 4
check "sample" 0 "" $F sample --ckpt "$tmp/r" --prompt "The" -n 8
check "profile" 0 "trace" $F profile "${TINY[@]}" --steps 2 --run-dir "$tmp/p"

echo "sanitize e2e: $fails failed"
[ "$fails" -eq 0 ]
