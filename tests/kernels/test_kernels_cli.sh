#!/usr/bin/env bash
# tests/kernels/test_kernels_cli.sh — `frontier kernels check|bench`, FRONTIER_KERNELS, FRONTIER_ABLATE and
# `frontier info` (per-op variants, --peak with its cache). Runs from the project root with
# ./frontier built. Only exit codes and output are checked, never timings.
set -uo pipefail
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check "kernels: no subcommand"     2 "usage: frontier kernels"          $F kernels
check "kernels: unknown"           2 "unknown command 'x'"              $F kernels x
check "check --quick"              0 "PASS:"                            $F kernels check --quick
check "check FRONTIER_KERNELS=ref" 0 "PASS: 21 op checks"               env FRONTIER_KERNELS=ref $F kernels check --quick
check "check FRONTIER_KERNELS=avx2" 0 "PASS:"                           env FRONTIER_KERNELS=avx2 $F kernels check --quick
check "check one op, 3 threads"    0 "matmul_tn"                        $F kernels check --quick --op matmul_tn --threads 1,3
check "check unknown op"           2 "unknown op 'matmul_xx'"           $F kernels check --op matmul_xx
check "check unknown variant"      2 "unknown variant 'fast'"           $F kernels check --variant fast
check "check bad threads"          2 "--threads expects a list"         $F kernels check --threads 1,x
check "bad FRONTIER_KERNELS"       2 "unknown kernel variant 'avx9'"    env FRONTIER_KERNELS=avx9 $F kernels check --quick
check "bad override op"            2 "unknown op 'matmul'"              env FRONTIER_KERNELS=ref,matmul=ref $F info
check "info lists op variants"     0 "softcap_ce"                       $F info
check "bad FRONTIER_ABLATE"        2 "unknown name 'pairs' (have: direct_a" env FRONTIER_ABLATE=pairs $F info
check "FRONTIER_ABLATE empty item"  2 "empty item in 'tn_pairs,'"       env FRONTIER_ABLATE=tn_pairs, $F kernels check --quick
check "bad FRONTIER_ABLATE in train" 2 "repeated name 'direct_a'"       env FRONTIER_ABLATE=direct_a,direct_a $F train --steps 1
check "info names the ablations"   0 "ablated:        tn_pairs,pinned_weights (FRONTIER_ABLATE)" env FRONTIER_ABLATE=" pinned_weights, tn_pairs" $F info
check "info with an override"      0 "ref,matmul_nt=ref"                env FRONTIER_KERNELS=ref,matmul_nt=ref $F info
want=fp32; grep -qw avx512_bf16 /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && want=bf16
check "info says the default precision" 0 "precision:      $want by default" $F info
# the twin: AMX's tiles where the CPU has them (and Linux grants them: it has since 5.16), else AVX512_BF16
twin=avx512_bf16; grep -qw amx_bf16 /proc/cpuinfo && twin=amx_bf16
if [ $want = bf16 ]; then check "info names the bf16 twins" 0 "attention_fwd    avx512  (bf16 training: $twin)" $F info
else skip_part_hardware "this CPU lacks AVX-512 BF16: info's bf16 twins and AMX's bf16 GEMMs (emulated) are not checked"; fi
check "check covers the bf16 matmuls" 0 "ref_bf16"                      $F kernels check --quick --op matmul_nt
if ! $F info | grep -q "amx (no:"; then
  check "amx forced"               0 "kernels:        amx"              env FRONTIER_KERNELS=amx $F info
  check "amx's bf16 GEMMs"         0 "matmul_nt        avx512  (bf16 training: amx_bf16)" env FRONTIER_KERNELS=amx $F info
else
  check "amx falls back"           0 "amx needs AMX-TILE"               env FRONTIER_KERNELS=amx $F info
fi
if [ $want = bf16 ]; then  # AMX's GEMMs: on the tiles, or where AMX is absent on the emulator
  amx=amx_emu; grep -qw amx_tile /proc/cpuinfo && grep -qw amx_bf16 /proc/cpuinfo && amx=amx_bf16
  check "check AMX's GEMMs"        0 "matmul_tn        $amx"             $F kernels check --quick --variant amx_bf16 --op matmul_tn
fi
check "info --peak measures"       0 "measured now, saved to $tmp/peak.json" $F info --peak --cache "$tmp"
check "info --peak is cached"      0 "cached in $tmp/peak.json"         $F info --peak --cache "$tmp"
python3 -c "import json,sys; m=json.load(open('$tmp/peak.json'))['machines'][0]; sys.exit(not (m['fp32_all_gflops'] > 0 and m['triad_gbs'] > 0))" \
  && ok "peak.json has the figures" || bad "peak.json lacks fp32_all_gflops / triad_gbs"
check "bench one op"               0 "| relu2_fwd"                      $F kernels bench --op relu2_fwd --variant ref --seconds 0.01 --cache "$tmp"
check "bench cold caches"          0 "| relu2_fwd"                      $F kernels bench --op relu2_fwd --variant ref --seconds 0.01 --cold --cache "$tmp"
check "bench unknown op"           2 "unknown op 'nope'"                $F kernels bench --op nope --cache "$tmp"
check "bench unknown preset"       2 "--preset: unknown preset 'big'"             $F kernels bench --preset big --op relu2_fwd --cache "$tmp"
[ "$fails" -eq 0 ]
