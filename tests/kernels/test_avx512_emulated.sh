#!/usr/bin/env bash
# tests/kernels/test_avx512_emulated.sh — the AVX-512, AVX512_BF16 and emulated-AMX kernels, run
# on SIMDe's portable intrinsics (the emulation build, build/emu512/, made by `make test`:
# kernels/simd/isa_avx512.h). On a CPU without AVX-512 this is the only place their logic runs:
#   1. the kernel unit tests (tests/kernels/**) built for emulation, every one passing;
#   2. `frontier kernels check`: every avx512 op on the full grid of shapes and thread counts,
#      the bf16 twins and the AMX tile kernels on the quick grid;
#   3. 10 training steps with FRONTIER_KERNELS=avx512, fp32 and bf16, against the release
#      binary's reference path (same data, seed and batches): mean loss of the last 5 steps and
#      val_bpb within 1% (test_fast_vs_ref.sh's bound).
# Emulation checks what the code computes, not its speed (nothing is timed). Without the build
# this fails: the AVX-512 code would otherwise go unchecked.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib.sh
E=build/emu512
F=./frontier
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

[ -x $E/frontier ] || { echo "FAIL: $E/frontier is missing: make test builds it (make emulated-avx512)"; exit 1; }
info=$($E/frontier info 2>&1)
if grep -q "emulated by SIMDe" <<<"$info"; then ok "info: the emulation build reports AVX-512 + BF16, emulated"
elif grep -qw avx512f /proc/cpuinfo; then ok "this CPU has AVX-512: SIMDe runs the real instructions"
else bad "the emulation build does not report emulated AVX-512: $(grep avx512 <<<"$info" | head -3)"; fi
grep -q "amx-tile:       no" <<<"$info" || grep -qw amx_tile /proc/cpuinfo && ok "AMX not claimed without the CPU's" \
  || bad "the emulation build claims AMX"

n=0
for t in $(find tests/kernels -name 'test_*.c' | sort); do
  bin=$E/${t%.c}
  if [ ! -x "$bin" ]; then bad "$bin is missing (make emulated-avx512)"; continue; fi
  out=$("$bin" 2>&1); rc=$?
  [ $rc -eq 0 ] && n=$((n + 1)) || { bad "$bin exited $rc"; tail -20 <<<"$out"; }
done
[ $n -gt 0 ] && ok "$n emulated kernel test binaries pass"

check "kernels check --variant avx512 (full grid)" 0 "0 failed" $E/frontier kernels check --variant avx512
check "kernels check bf16 twins and AMX tiles (quick grid)" 0 "0 failed" \
  $E/frontier kernels check --quick --variant avx512_bf16 --variant amx_bf16

TINY=(--depth 2 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 8 --batch-tokens 512
      --steps 10 --eval-tokens 8192 --quiet)
train() {  # name, binary, kernels, precision
  env FRONTIER_KERNELS="$3" "$2" train "${TINY[@]}" --precision "$4" --run-dir "$tmp/$1" > "$tmp/$1.out" 2>&1 \
    || { bad "train $1"; tail -5 "$tmp/$1.out"; }
}
last_loss() { tail -5 "$tmp/$1/metrics.jsonl" | sed 's/.*"loss":\([^,]*\),.*/\1/' | awk '{ s += $1 } END { if (NR) printf "%.6f", s / NR }'; }
bpb() { sed -n 's/.*"val_bpb":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/$1/summary.json" 2>/dev/null; }
within() {  # what, a, b, relative tolerance
  awk -v a="$2" -v b="$3" -v t="$4" 'BEGIN { d = (a > b ? a - b : b - a) / b; exit !(a > 0 && b > 0 && d <= t) }' \
    && ok "$1: $2 vs $3 (within $4)" || bad "$1: '$2' vs '$3' differ by more than $4"
}
train ref $F ref fp32
train ref16 $F ref bf16
train emu $E/frontier avx512 fp32
train emu16 $E/frontier avx512 bf16
for pair in "emu ref" "emu16 ref16"; do
  set -- $pair
  within "$1 vs $2 mean loss of steps 6-10" "$(last_loss "$1")" "$(last_loss "$2")" 0.01
  within "$1 vs $2 val_bpb" "$(bpb "$1")" "$(bpb "$2")" 0.01
done
grep -q '"kernels":[[:space:]]*"avx512+bf16"' "$tmp/emu16/summary.json" && ok "summary: kernels avx512+bf16" \
  || bad "emulated bf16 summary kernels: $(grep '"kernels"' "$tmp/emu16/summary.json")"
echo "avx512 emulated: $fails failed"
[ "$fails" -eq 0 ]
