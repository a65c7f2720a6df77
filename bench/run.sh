#!/usr/bin/env bash
# bench/run.sh — run every benchmark in turn (never in parallel: the cores are shared).
# Each benchmark rewrites its own section of docs/perf.md. BENCH_CORE=1 adds bench/core.sh
# (CORE at --max-per-task 500 on a kit-d10-sized model: ~0.8 h on 2 cores in fp32).
set -euo pipefail
cd "$(dirname "$0")/.."
benches=(bench/tokenizer.sh bench/gemm.sh bench/train_throughput.sh bench/mpi_scaling.sh bench/train.sh)
[ "${BENCH_CORE:-0}" = 1 ] && benches+=(bench/core.sh)
for b in "${benches[@]}"; do
  echo "== $b"
  bash "$b"
done
