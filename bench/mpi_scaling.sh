#!/usr/bin/env bash
# bench/mpi_scaling.sh — data-parallel scaling on this machine: the same training steps with
# 1 rank x 1 thread, 1 rank x N threads, and N ranks x 1 thread (mpirun, shared memory), for the
# cpu preset and kit-d10 (at a 4096-token throughput batch); tok/s over the timed steps and the
# time rank 0 spends in the gradient reduce-scatter + parameter all-gather per step. Writes the
# "distributed" section of docs/perf.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
N=$(nproc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
       OMPI_MCA_btl_vader_single_copy_mechanism=none
declare -A FLAGS=([cpu]="--preset cpu --steps 42 --stop-after 42"
                  [kit-d10]="--preset kit-d10 --batch-tokens 4096 --device-batch 2 --steps 8 --stop-after 8")
jv() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
comm() { /usr/bin/python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
t = [r for r in rows if r["timed"]]
c = sum(r.get("comm_s", 0) for r in t) / len(t); d = sum(r["dt_s"] for r in t) / len(t)
print(f"{1e3*c:.1f} ms of {1e3*d:.0f} ms ({100*c/d:.1f}%)")' "$1"; }
body=$(mktemp)
{
  echo "## Data-parallel scaling (\`bench/mpi_scaling.sh\`)"
  echo
  echo "$(bench_machine); git $(git rev-parse --short=12 HEAD); $(./frontier info | sed -n 's/^mpi: *//p' | sed 's/ (.*//'), shared memory (vader)."
  echo
  echo "| preset | layout | tok/s | vs 1 x 1 | comm per step (rank 0) |"
  echo "|---|---|---|---|---|"
} > "$body"
for preset in ${PRESETS:-cpu kit-d10}; do
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=1 ./frontier train ${FLAGS[$preset]} --run-dir "$tmp/a" --quiet > /dev/null 2>&1
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=$N ./frontier train ${FLAGS[$preset]} --run-dir "$tmp/b" --quiet > /dev/null 2>&1
  # shellcheck disable=SC2086
  mpirun -np "$N" --bind-to core -x OMP_NUM_THREADS=1 ./frontier train ${FLAGS[$preset]} --run-dir "$tmp/c" --quiet > /dev/null 2>&1
  base=$(jv "$tmp/a/summary.json" tok_per_s)
  for x in "a:1 rank x 1 thread" "b:1 rank x $N threads" "c:$N ranks x 1 thread"; do
    d=${x%%:*}; label=${x#*:}; t=$(jv "$tmp/$d/summary.json" tok_per_s)
    c=$([ "$d" = c ] && comm "$tmp/c/metrics.jsonl" || echo "-")
    printf '| %s | %s | %.0f | %sx | %s |\n' "$preset" "$label" "$t" "$(ratio "$t" "$base")" "$c" >> "$body"
  done
done
replace_section distributed "$body"
rm -f "$body"
sed -n '/<!-- bench:distributed -->/,/<!-- \/bench:distributed -->/p' docs/perf.md
