#!/usr/bin/env bash
# bench/preset_sweep.sh — how the `cpu` preset was chosen: four shapes/batches, 90 s of training
# each, val_bpb on the first 100,000 validation tokens (figures quoted in docs/perf.md's training
# section and in src/model/config.c). Takes ~8 minutes; run alone (the cores are shared).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() {
  local name=$1; shift
  ./frontier train --budget 90s --eval-tokens 100000 --quiet --run-dir "$tmp/$name" "$@" > "$tmp/$name.out" 2>&1
  echo "$name: $(grep -E 'val_bpb|throughput' "$tmp/$name.out" | tr -s ' ' | tr '\n' ' ')"
}
run d4_t512_b4096_lrref2e19 --depth 4 --seq-len 512 --batch-tokens 4096 --device-batch 8 --lr-batch-ref 524288
run d4_t512_b4096_lrref4096 --depth 4 --seq-len 512 --batch-tokens 4096 --device-batch 8 --lr-batch-ref 4096
run d2_t256_b4096_lrref4096 --depth 2 --seq-len 256 --batch-tokens 4096 --device-batch 16 --lr-batch-ref 4096
run d2_t256_b2048_lrref2048 --depth 2 --seq-len 256 --batch-tokens 2048 --device-batch 8 --lr-batch-ref 2048
