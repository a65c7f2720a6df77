#!/usr/bin/env bash
# bench/train_throughput.sh — frontier's trainer against the PyTorch implementation of the same
# model and optimizers (bench/torch_train.py on tests/model/torch_ref.py: Debian's python3-torch,
# bf16 autocast, and fp32 for reference), same config, same batch, same thread count, run
# alternately (frontier, PyTorch bf16, PyTorch fp32, repeated ROUNDS times) so drift on a shared
# machine hits both. Reports median tok/s, the ratio and MFU; writes the "throughput" section of
# docs/perf.md ("throughput_amx" where frontier's bf16 kernels run on AMX tiles).
#
#   bench/train_throughput.sh [ROUNDS]      (default 2; ~15 minutes on 2 cores with both presets)
#   PRESETS=cpu bench/train_throughput.sh   (only these presets; default "cpu kit-d10")
#
# frontier runs twice per round: --precision bf16 (mixed precision, compared with PyTorch's bf16
# autocast) where the CPU has AVX512_BF16, and --precision fp32 (compared with PyTorch fp32).
#
# The peer is PyTorch set up as its CPU performance guides say, not as a bare install runs it:
#   - tcmalloc (LD_PRELOAD of Debian's libtcmalloc-minimal4). PyTorch's CPU allocator hands every
#     large tensor back to glibc, which returns blocks over 32 MiB to the kernel; each step then
#     faults its logits-sized tensors in again, 4 KiB at a time. On a VM where a first touch costs
#     ~10 us a page (measured here: 128 MiB first touch 330 ms, second 5 ms) that is most of
#     PyTorch's step: ~2,000 tok/s with glibc's malloc, ~17,000 with tcmalloc on the cpu preset.
#   - OpenBLAS (libopenblas0-openmp) as the system BLAS. Debian's python3-torch is built against
#     the generic BLAS interface; with only the reference libblas3 installed its fp32 matmuls
#     (autocast's fp32 ops and Muon's Polar Express) run at ~4 GFLOP/s.
# scripts/setup.sh installs both. PyTorch bf16 with glibc's malloc is measured too (a column of
# its own): that is how `python3 train.py` runs on a fresh Debian machine.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-2}
PRESETS=${PRESETS:-cpu kit-d10}
PRECISIONS="fp32"; grep -qw avx512_bf16 /proc/cpuinfo && PRECISIONS="bf16 fp32"
THREADS=$(nproc)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TCMALLOC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
[ -f "$TCMALLOC" ] || { echo "train_throughput: $TCMALLOC missing (Debian libtcmalloc-minimal4; scripts/setup.sh installs it)" >&2; exit 1; }
BLAS=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo "?")
# Timed steps per run: a few seconds on both sides (cpu: frontier's 60 steps ~5 s, PyTorch's 12
# ~4 s with tcmalloc; kit-d10: frontier's 6 ~20 s, PyTorch's 3 ~26 s), so that a few seconds of
# interference from the shared machine cannot take a whole measurement on one side only. Both
# sides leave their first steps out (frontier: the 2 excluded warm-up steps; PyTorch: --warmup).
declare -A STEPS=([cpu]=60 [kit-d10]=6)        # frontier
declare -A TORCH_STEPS=([cpu]=12 [kit-d10]=3)  # PyTorch
declare -A FLAGS=([cpu]="--preset cpu" [kit-d10]="--preset kit-d10 --seq-len 1024 --batch-tokens 4096 --device-batch 2")

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
jv() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# torch_run CONFIG STEPS DTYPE OUTFILE [VAR=value...]: one PyTorch run of a frontier run's config, in
# that environment; its tok/s is appended to OUTFILE
torch_run() {
  local config=$1 steps=$2 dt=$3 out=$4; shift 4
  env "$@" /usr/bin/python3 bench/torch_train.py "$config" --threads "$THREADS" --steps "$steps" --dtype "$dt" > "$tmp/t.json"
  jv "$tmp/t.json" tok_per_s >> "$out"
}

section=throughput$(bench_isa_suffix)
title="## Training throughput: frontier vs PyTorch" bf16_peak="the vdpbf16ps peak"
[ "$section" = throughput ] || title="#### Training on AMX tiles: frontier vs PyTorch" bf16_peak="the AMX (TDPBF16PS) peak"
body=$(mktemp)
{
  echo "$title (\`bench/train_throughput.sh\`)"
  echo
  echo "$(bench_machine); git $(git rev-parse --short=12 HEAD). $THREADS threads on both sides; kernels: \`$(./frontier info | sed -n 's/^kernels: *//p')\`."
  echo "PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') (Debian python3-torch) running tests/model/torch_ref.py's model and optimizers, with tcmalloc (LD_PRELOAD) and the system BLAS \`$BLAS\`; $ROUNDS alternating rounds, medians."
  echo
  echo "| preset | batch (tokens) | frontier bf16 tok/s (MFU) | frontier fp32 tok/s (MFU) | PyTorch bf16 tok/s (MFU) | PyTorch fp32 tok/s (MFU) | frontier / PyTorch, bf16 | frontier / PyTorch, fp32 | bf16 ratio at 100% MFU | PyTorch bf16, glibc malloc, tok/s | frontier / that |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} > "$body"

for preset in $PRESETS; do
  for f in f_bf16 f_fp32 m_bf16 m_fp32 b x g; do : > "$tmp/$f"; done
  for round in $(seq 1 "$ROUNDS"); do
    for prec in $PRECISIONS; do
      run="$tmp/$preset-$round-$prec"
      # shellcheck disable=SC2086
      ./frontier train ${FLAGS[$preset]} --precision "$prec" --steps $((STEPS[$preset] + 2)) \
        --stop-after $((STEPS[$preset] + 2)) --threads "$THREADS" --run-dir "$run" --quiet > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
      jv "$run/summary.json" tok_per_s >> "$tmp/f_$prec"
      jv "$run/summary.json" mfu >> "$tmp/m_$prec"
    done
    torch_run "$run/config.json" "${TORCH_STEPS[$preset]}" bf16 "$tmp/b" LD_PRELOAD="$TCMALLOC"
    torch_run "$run/config.json" "${TORCH_STEPS[$preset]}" fp32 "$tmp/x" LD_PRELOAD="$TCMALLOC"
    torch_run "$run/config.json" "${TORCH_STEPS[$preset]}" bf16 "$tmp/g"
    echo "$preset round $round: frontier bf16 $(tail -1 "$tmp/f_bf16") fp32 $(tail -1 "$tmp/f_fp32") tok/s; torch (tcmalloc) bf16 $(tail -1 "$tmp/b") fp32 $(tail -1 "$tmp/x"); torch bf16 (glibc malloc) $(tail -1 "$tmp/g")" >&2
  done
  b=$(median < "$tmp/b"); x=$(median < "$tmp/x"); g=$(median < "$tmp/g")
  cell() {  # tok/s (MFU) of frontier at a precision, or "-"
    [ -s "$tmp/f_$1" ] || { echo "-"; return; }
    printf '**%.0f** (%.1f%%)' "$(median < "$tmp/f_$1")" "$(awk -v m="$(median < "$tmp/m_$1")" 'BEGIN{print 100*m}')"
  }
  peer_mfu() {  # PRECISION TOK/S: PyTorch's MFU (same FLOPs per token and peak as frontier's run)
    awk -v m="$(median < "$tmp/m_$1")" -v f="$(median < "$tmp/f_$1")" -v t="$2" 'BEGIN{print m*t/f}'
  }
  peer() {  # PyTorch tok/s at a precision with its MFU
    [ -s "$tmp/f_$1" ] || { printf '%.0f' "$2"; return; }
    printf '%.0f (%.1f%%)' "$2" "$(awk -v u="$(peer_mfu "$1" "$2")" 'BEGIN{print 100*u}')"
  }
  ceiling() {  # the bf16 ratio frontier would reach at 100% MFU: 1 / PyTorch's MFU
    [ -s "$tmp/f_bf16" ] || { echo "-"; return; }
    awk -v u="$(peer_mfu bf16 "$b")" 'BEGIN{printf "%.2fx", 1/u}'
  }
  vs() { [ -s "$tmp/f_$1" ] && echo "**$(ratio "$(median < "$tmp/f_$1")" "$2")x**" || echo "-"; }
  bt=$(jv "$run/config.json" batch-tokens)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f | %s |\n' "$preset" "$bt" "$(cell bf16)" "$(cell fp32)" \
    "$(peer bf16 "$b")" "$(peer fp32 "$x")" "$(vs bf16 "$b")" "$(vs fp32 "$x")" "$(ceiling)" "$g" "$(vs bf16 "$g")" >> "$body"
done
{
  echo
  echo "MFU: model FLOPs (nanochat's 6N + attention convention, SPEC §1) per second over the machine's measured peak as \`frontier train\` reports it: the fp32 FMA peak for fp32, $bf16_peak for bf16."
  echo "PyTorch's MFU: its tok/s over frontier's at the same precision, times frontier's MFU (same model FLOPs per token, same peak). A ratio above 1 / (PyTorch's MFU) would need frontier above 100% MFU."
  echo
  echo "The peer runs as PyTorch's CPU performance guides prescribe: tcmalloc preloaded (a caching malloc) and an optimised system BLAS (OpenBLAS), both installed by scripts/setup.sh. Run bare (glibc's malloc; its own column), PyTorch faults its logits-sized tensors in again every step, because glibc returns blocks above its 32 MiB mmap ceiling to the kernel, and on a VM where a first touch costs ~10 us per 4 KiB page that is most of its step. With only Debian's reference libblas3, its fp32 matmuls (fp32 runs; Muon's Polar Express in both precisions) run at ~4 GFLOP/s."
  echo "Each frontier run trains on the prepared corpus; PyTorch trains on random token ids (throughput does not depend on the data)."
  echo "Timed steps per run (after the warm-up steps): $(for p in $PRESETS; do printf '%s frontier %s, PyTorch %s; ' "$p" "${STEPS[$p]}" "${TORCH_STEPS[$p]}"; done | sed 's/; $//') — about the same wall-clock time on both sides."
} >> "$body"
replace_section "$section" "$body"
rm -f "$body"
sed -n "/<!-- bench:$section -->/,/<!-- \/bench:$section -->/p" docs/perf.md
