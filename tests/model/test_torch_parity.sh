#!/usr/bin/env bash
# tests/model/test_torch_parity.sh — frontier against an independent PyTorch implementation
# (tests/model/torch_ref.py, float64): on real data, step 0's loss and every gradient, 10 steps
# of Muon + AdamW (the loss trajectory), and the val_bpb of a checkpoint written by frontier's
# own checkpoint writer on the first 100,000 validation target positions (|diff| <= 1e-4); then
# the same with every recipe feature on (resid/x0 lambdas, backout, q/k scale 1.2, value embeddings
# with their gates, smear, a 1021-row bigram table; depth 3), each in its own optimizer group. Tolerances are documented in torch_ref.py.
# PyTorch runs with tcmalloc preloaded, as its CPU guides prescribe: with glibc's malloc every
# logits-sized float64 temporary (above glibc's 32 MiB mmap ceiling) is mapped and faulted in
# afresh, which took the val_bpb check from ~11 s to ~105 s on a 2-core VM (sys time half of it).
# The numbers are the same either way: the allocator changes no arithmetic.
set -euo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || { echo "python3-torch is missing: run scripts/setup.sh"; exit 1; }
data=$(./frontier prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
[ -d "$data" ] || { echo "prepare did not report a data folder"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
[ -f "$TCMALLOC" ] || { echo "note: $TCMALLOC is missing (scripts/setup.sh installs libtcmalloc-minimal4): PyTorch runs on glibc's malloc, ~10x slower"; TCMALLOC=; }
torch_ref() { LD_PRELOAD=${TCMALLOC:+$TCMALLOC} /usr/bin/python3 tests/model/torch_ref.py "$@"; }
BUILD=${BUILD:-build/release}
"$BUILD/tests/model/tool_parity_dump" "$data" "$tmp"
torch_ref "$tmp/steps"
torch_ref "$tmp/val"
"$BUILD/tests/model/tool_parity_dump" "$data" "$tmp/recipe" recipe
torch_ref "$tmp/recipe/steps"
torch_ref "$tmp/recipe/val"
