#!/usr/bin/env bash
# bench/run.sh — run every benchmark in turn (never in parallel: the cores are shared).
# Each benchmark rewrites its own section of docs/perf.md.
set -euo pipefail
cd "$(dirname "$0")/.."
for b in bench/tokenizer.sh bench/gemm.sh bench/train_throughput.sh bench/mpi_scaling.sh bench/train.sh; do
  echo "== $b"
  bash "$b"
done
