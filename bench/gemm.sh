#!/usr/bin/env bash
# bench/gemm.sh — frontier's AVX-512 GEMMs against oneDNN's fp32 and bf16 matmuls on the model's
# forward and backward products (bench/bench_gemm.c), with 1 thread and with all threads; writes
# the "gemm" section of docs/perf.md ("gemm_amx" where the bf16 GEMMs run on AMX tiles).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
BUILD=${BUILD:-build/release}
make --no-print-directory "$BUILD/bench/bench_gemm" > /dev/null
section=gemm$(bench_isa_suffix)
title="## GEMM: frontier vs oneDNN" sub="###"
[ "$section" = gemm ] || title="#### GEMM on AMX tiles: frontier vs oneDNN" sub="#####"  # inside perf.md's AMX section
body=$(mktemp)
{
  echo "$title (\`bench/gemm.sh\`)"
  echo
  echo "$(bench_machine); git $(git rev-parse --short=12 HEAD). oneDNN from Debian's libdnnl-dev; calls interleaved in one process."
  for t in 1 "$(nproc)"; do
    echo
    echo "$sub $t thread(s)"
    echo
    "$BUILD/bench/bench_gemm" --preset all --threads "$t"
  done
} > "$body"
replace_section "$section" "$body"
rm -f "$body"
sed -n "/<!-- bench:$section -->/,/<!-- \/bench:$section -->/p" docs/perf.md
