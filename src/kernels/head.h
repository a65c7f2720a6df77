// kernels/head.h — the fused head, head_ce (contract in kernels.h), for each variant.
//
// Why fused: the lm_head's logits are the step's largest tensor (cpu preset: 4096 x 8192 fp32 =
// 128 MB). Unfused, the forward product writes them, the loss reads them back and writes
// dlogits: three trips through memory at ~10 GB/s on a 2-core machine. Fused, each strip of MR
// rows is computed over the whole vocabulary into a per-thread buffer that stays in L2 (14 x 8192
// floats = 448 KiB) and goes through the loss there; only dlogits reach memory.
//
// Every variant gives the same bits as its table's matmul_nt followed by its softcap_ce:
//   ref, ref_bf16      ref(_bf16)_matmul_nt into a bounded chunk of rows, then ref_softcap_ce
//   avx2               the AVX2 GEMM's strips (gemm_rows_nt), ref_softcap_ce on each
//   avx512, avx512bf16 the AVX-512 fp32 / AVX512_BF16 GEMM's strips, the AVX-512 loss on each
#pragma once
#include <stdint.h>

void ref_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N, int V,
                 int C, float cap, float dscale);
void ref_bf16_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N,
                      int V, int C, float cap, float dscale);
void avx2_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N, int V,
                  int C, float cap, float dscale);
void avx512_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N,
                    int V, int C, float cap, float dscale);
void avx512bf16_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N,
                        int V, int C, float cap, float dscale);
