#!/usr/bin/env bash
# bench/preset_sweep.sh — how the `cpu` preset was chosen, and the check that it still wins with
# today's kernels. Figures are quoted in docs/perf.md's training section and in src/model/config.c.
# Run alone: the cores are shared, and every shape's result depends on the tokens it gets through.
#
#   bench/preset_sweep.sh           the re-check at the main job's own terms: 5 minutes of training
#                                   per shape, val_bpb on the whole pinned validation set, the
#                                   default kernels and precision; six shapes, ~35 minutes
#                                   (SEED=43 bench/preset_sweep.sh: the same with another seed)
#   bench/preset_sweep.sh --first   the original choice (reference kernels were all there was):
#                                   four shapes/batches, 90 s each, the first 100,000 validation
#                                   tokens; ~8 minutes (set FRONTIER_KERNELS=ref to repeat it as it was)
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mode=${1:-recheck}
budget=300s eval_tokens=0
[ "$mode" = --first ] && budget=90s eval_tokens=100000
run() {
  local name=$1; shift
  ./frontier train --budget "$budget" --eval-tokens "$eval_tokens" --seed "${SEED:-42}" --quiet --run-dir "$tmp/$name" "$@" > "$tmp/$name.out" 2>&1
  /usr/bin/python3 - "$name" "$tmp/$name/summary.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]}: val_bpb {d['val_bpb']:.4f}  {d['tok_per_s']:.0f} tok/s  {d['steps']} steps  "
      f"{d['tokens_trained'] / 1e6:.2f}M tokens  MFU {100 * d['mfu']:.1f}%")
PY
}
if [ "$mode" = --first ]; then
  run d4_t512_b4096_lrref2e19 --depth 4 --seq-len 512 --batch-tokens 4096 --device-batch 8 --lr-batch-ref 524288
  run d4_t512_b4096_lrref4096 --depth 4 --seq-len 512 --batch-tokens 4096 --device-batch 8 --lr-batch-ref 4096
  run d2_t256_b4096_lrref4096 --depth 2 --seq-len 256 --batch-tokens 4096 --device-batch 16 --lr-batch-ref 4096
  run d2_t256_b2048_lrref2048 --depth 2 --seq-len 256 --batch-tokens 2048 --device-batch 8 --lr-batch-ref 2048
  exit 0
fi
[ "$mode" = recheck ] || { echo "usage: bench/preset_sweep.sh [--first]" >&2; exit 2; }
# The preset (depth 2, width 128) against deeper, wider and shallower shapes; T 256, 4096-token
# batches and every other setting as the preset has them.
run cpu_preset_d2_w128
run d1_w128 --depth 1 --n-embd 128 --n-head 1
run d4_w128 --depth 4 --n-embd 128 --n-head 1
run d6_w128 --depth 6 --n-embd 128 --n-head 1
run d2_w256 --depth 2 --n-embd 256 --n-head 2
run d4_w256 --depth 4
