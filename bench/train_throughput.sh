#!/usr/bin/env bash
# bench/train_throughput.sh — frontier's trainer against the PyTorch implementation of the same
# model and optimizers (bench/torch_train.py on tests/model/torch_ref.py: Debian's python3-torch,
# bf16 autocast, and fp32 for reference), same config, same batch, same thread count, run
# alternately (frontier, PyTorch bf16, PyTorch fp32, repeated ROUNDS times) so drift on a shared
# machine hits both. Reports median tok/s, the ratio and MFU; writes the "throughput" section of
# docs/perf.md.
#
#   bench/train_throughput.sh [ROUNDS]      (default 2; ~10 minutes on 2 cores)
#   PRESETS=cpu bench/train_throughput.sh   (only these presets; default "cpu kit-d10")
#
# frontier runs twice per round: --precision bf16 (mixed precision, compared with PyTorch's bf16
# autocast) where the CPU has AVX512_BF16, and --precision fp32 (compared with PyTorch fp32).
#
# Presets: `cpu` (the default: depth 2, width 128, T 256, batch 4096 = 16 x 256) and `kit-d10`
# (depth 10, width 640) at a throughput batch of 2 rows x 1024 tokens x 2 accumulation steps
# instead of its 2^19-token training batch, so that a measurement takes minutes, not hours; both
# sides run the same batch, and the per-token cost is what is compared (the optimizer step, the
# same on both sides, is included).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-2}
PRESETS=${PRESETS:-cpu kit-d10}
PRECISIONS="fp32"; grep -qw avx512_bf16 /proc/cpuinfo && PRECISIONS="bf16 fp32"
THREADS=$(nproc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Timed steps per run: about the same wall-clock time on both sides (cpu: frontier's 60 steps
# ~8 s, PyTorch's 12 ~12 s), so that a few seconds of interference from the shared machine
# cannot take a whole measurement on one side only (12 frontier steps took under 2 s). Both
# sides leave their first steps out (frontier: the 2 excluded warm-up steps; PyTorch: --warmup).
declare -A STEPS=([cpu]=60 [kit-d10]=3)        # frontier
declare -A TORCH_STEPS=([cpu]=12 [kit-d10]=3)  # PyTorch
declare -A FLAGS=([cpu]="--preset cpu" [kit-d10]="--preset kit-d10 --seq-len 1024 --batch-tokens 4096 --device-batch 2")

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
jv() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

body=$(mktemp)
{
  echo "## Training throughput: frontier vs PyTorch (\`bench/train_throughput.sh\`)"
  echo
  echo "$(bench_machine); git $(git rev-parse --short=12 HEAD). $THREADS threads on both sides; kernels: \`$(./frontier info | sed -n 's/^kernels: *//p')\`."
  echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') (Debian python3-torch) running tests/model/torch_ref.py's model and optimizers; $ROUNDS alternating rounds, medians."
  echo
  echo "| preset | batch (tokens) | frontier bf16 tok/s (MFU) | frontier fp32 tok/s (MFU) | PyTorch bf16 tok/s | PyTorch fp32 tok/s | frontier / PyTorch, bf16 | frontier / PyTorch, fp32 |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$body"

for preset in $PRESETS; do
  for f in f_bf16 f_fp32 m_bf16 m_fp32 b x; do : > "$tmp/$f"; done
  for round in $(seq 1 "$ROUNDS"); do
    for prec in $PRECISIONS; do
      run="$tmp/$preset-$round-$prec"
      # shellcheck disable=SC2086
      ./frontier train ${FLAGS[$preset]} --precision "$prec" --steps $((STEPS[$preset] + 2)) \
        --stop-after $((STEPS[$preset] + 2)) --threads "$THREADS" --run-dir "$run" --quiet > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
      jv "$run/summary.json" tok_per_s >> "$tmp/f_$prec"
      jv "$run/summary.json" mfu >> "$tmp/m_$prec"
    done
    for dt in bf16 fp32; do
      /usr/bin/python3 bench/torch_train.py "$run/config.json" --threads "$THREADS" --steps "${TORCH_STEPS[$preset]}" \
        --dtype $dt > "$tmp/t.json"
      jv "$tmp/t.json" tok_per_s >> "$tmp/$([ $dt = bf16 ] && echo b || echo x)"
    done
    echo "$preset round $round: frontier bf16 $(tail -1 "$tmp/f_bf16") fp32 $(tail -1 "$tmp/f_fp32") tok/s, torch bf16 $(tail -1 "$tmp/b"), fp32 $(tail -1 "$tmp/x")" >&2
  done
  b=$(median < "$tmp/b"); x=$(median < "$tmp/x")
  cell() {  # tok/s (MFU) of frontier at a precision, or "-"
    [ -s "$tmp/f_$1" ] || { echo "-"; return; }
    printf '**%.0f** (%.1f%%)' "$(median < "$tmp/f_$1")" "$(awk -v m="$(median < "$tmp/m_$1")" 'BEGIN{print 100*m}')"
  }
  vs() { [ -s "$tmp/f_$1" ] && echo "**$(ratio "$(median < "$tmp/f_$1")" "$2")x**" || echo "-"; }
  bt=$(jv "$run/config.json" batch-tokens)
  printf '| %s | %s | %s | %s | %.0f | %.0f | %s | %s |\n' "$preset" "$bt" "$(cell bf16)" "$(cell fp32)" "$b" "$x" \
    "$(vs bf16 "$b")" "$(vs fp32 "$x")" >> "$body"
done
{
  echo
  echo "MFU: model FLOPs (nanochat's 6N + attention convention, SPEC §1) per second over the machine's measured peak as \`frontier train\` reports it: the fp32 FMA peak for fp32, the vdpbf16ps peak for bf16."
  echo "Each frontier run trains on the prepared corpus; PyTorch trains on random token ids (throughput does not depend on the data)."
  echo "Timed steps per run (after the warm-up steps): $(for p in $PRESETS; do printf '%s frontier %s, PyTorch %s; ' "$p" "${STEPS[$p]}" "${TORCH_STEPS[$p]}"; done | sed 's/; $//') — about the same wall-clock time on both sides."
} >> "$body"
replace_section throughput "$body"
rm -f "$body"
sed -n '/<!-- bench:throughput -->/,/<!-- \/bench:throughput -->/p' docs/perf.md
