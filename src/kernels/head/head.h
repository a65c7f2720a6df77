// kernels/head/head.h — the fused head: head_ce and head_dw (contracts in ops.h), per variant.
//
// Why fused: the lm_head's logits are the step's largest tensor (cpu preset: 4096 x 8192 fp32 =
// 128 MB). Unfused, the forward product writes them, the loss reads them back and writes
// dlogits, and both backward products read dlogits: five trips through memory at ~10 GB/s on a
// 2-core machine. Fused, each strip of MR rows is computed over the whole vocabulary into a
// per-thread buffer that stays in L2 (14 x 8192 floats = 448 KiB), goes through the loss there,
// and its dlogits through the dx product (dx = dlogits @ w) while still there. Only dlogits
// reach memory, for head_dw (dw += dlogitsᵀ @ x, which needs all rows of a column) — in bf16
// when the table's products are bf16 (they would round them to bf16 while packing anyway).
//
// dlogits element type: fp32 for ref, avx2 and avx512, row-major (N, V); bf16 (uint16) for
// ref_bf16, avx512bf16 and amx — a table's head_ce and head_dw always agree (the precision swaps
// both) — in "row pairs": rows 2p and 2p+1 interleaved, element (n, v) at head_dl16_at(n, v, V)
// (ops.h). Each pair of positions of one vocabulary entry is then one 32-bit word, which is how
// head_dw's bf16 product (dw += dlogitsᵀ x, depth = positions) takes its operand: it reads them
// in place instead of packing them.
// Every head_ce gives the same bits as its table's matmul_nt, then its softcap_ce (bf16: then
// rounded), then matmul_nn for dx; every head_dw the same bits as matmul_tn on fp32 dlogits:
//   ref, ref_bf16      ref(_bf16)_matmul_* on a bounded chunk of rows, ref_softcap_ce (ref/head.c)
//   avx2               the AVX2 GEMM's strips (gemm_rows_nt), avx2_softcap_ce's rows on each
//   avx512, avx512bf16 the AVX-512 fp32 / AVX512_BF16 GEMM's strips, the AVX-512 loss on each;
//                      avx512bf16's head_dw reads the row pairs as its packed operand
//                      (gemm_run_a16_pairs)
//   amx, amx_emu       the same bf16 code on AMX's GemmImpl (amx_head.c)
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm/gemm_driver.h"
#include "kernels/ops.h"

void avx2_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                  int N, int V, int C, float cap, float dscale);
void avx512_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                    int N, int V, int C, float cap, float dscale);
void avx512bf16_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w,
                        const int32_t *targets, int N, int V, int C, float cap, float dscale);

void avx2_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);
void avx512_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);
void avx512bf16_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);

// The bf16 head_ce / head_dw on any bf16 GemmImpl (avx512bf16_* are these on AVX512_BF16's, amx_*
// on AMX's): head_dw reads the row pairs in place (kernel_pairs) or packs them per strip
// (pack_a_pairs).
void bf16_head_ce_with(const GemmImpl *g, float *losses, void *dlogits, float *dx, const float *x, const float *w,
                       const int32_t *targets, int N, int V, int C, float cap, float dscale);
void bf16_head_dw_with(const GemmImpl *g, float *dw, const void *dlogits, const float *x, int N, int V, int C);

// AMX's (amx_head.c): bf16_head_*_with on the tile instructions' GemmImpl (amx_*: needs
// kernels_variant_available(KV_AMX)) or on the emulator's (amx_emu_*; gemm/amx_matmul.h).
void amx_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets, int N,
                 int V, int C, float cap, float dscale);
void amx_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);
void amx_emu_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                     int N, int V, int C, float cap, float dscale);
void amx_emu_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);
