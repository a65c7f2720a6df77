// kernels/rows/avx512_ops.h — AVX-512 implementations of the non-matmul ops (contracts in ops.h).
//
// Same signatures, aliasing rules and determinism guarantees as the ref_* functions in ref/ref.h:
// every output element is produced by one thread in a fixed order, so results are bitwise
// identical whatever the OpenMP thread count. Each function is compiled for AVX-512
// (F/BW/VL/DQ) whatever the build's -march, so callers must check cpu_info() first; choosing
// the table at run time is the registry's job.
//
//   avx512_ops.c        embedding, RMSNorm, RoPE, ReLU² (bit-identical to ref: embedding, ReLU²)
//   avx512_ce.c         softcapped cross-entropy, fused per row
//   avx512_attention.c  flash-style causal attention (head dims not a multiple of 16 fall back
//                       to ref); FRONTIER_ATTN_BWD=fused|split forces a backward schedule (both
//                       give the same bits; for tests and benchmarks)
//   avx512_vmath.h      vectorised exp/tanh (≤ 1.2e-7 / 1.4e-7 relative error vs libm)
#pragma once
#include <stddef.h>
#include <stdint.h>

void avx512_embedding_fwd(float *out, const int32_t *idx, const float *wte, int N, int C);
void avx512_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C);
void avx512_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C);
void avx512_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C,
                        int accumulate);
void avx512_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int D);
void avx512_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D);
void avx512_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T,
                             int nh, int D);
void avx512_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                             const float *sin, int B, int T, int nh, int D);
void avx512_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                          int H, int Hkv, int D, int window);
void avx512_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                          const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window);
void avx512_relu2_fwd(float *out, const float *x, size_t n);
void avx512_relu2_bwd(float *dx, const float *dout, const float *x, size_t n);
void avx512_dropout(float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0, int accumulate);
// The same on a block of rows, single-threaded (the GEMMs' ReLU² hooks, GemmImpl in gemm_driver.h).
void avx512_relu2_rows(float *dst, const float *src, size_t ld, int rows, int cols);
void avx512_relu2_grad_rows(float *c, const float *x, size_t ld, int rows, int cols);
// Rows [i0, i1) of the lower triangle (j < i) of a symmetric (M, M) c copied from its upper one,
// 16 x 16 blocks transposed in registers (GemmImpl.mirror_upper; i0, i1 multiples of 16 or M).
void avx512_mirror_upper(float *c, int M, int i0, int i1);
void avx512_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                       float cap, float dscale);
// softcap_ce on logits the caller no longer needs (they are overwritten), on the calling thread
// only, with scratch for V floats: the fused head's epilogue on a strip of rows in cache. Same
// bits as avx512_softcap_ce. Aligned dlogits rows are written with non-temporal stores (fenced
// before it returns). With dlogits, the logits rows end up holding the fp32 dlogits. Logits row n
// at logits + n·ldz (ldz >= V).
void avx512_softcap_ce_inplace(float *losses, float *dlogits, float *logits, size_t ldz, const int32_t *targets, int N,
                               int V, float cap, float dscale, float *scratch);
// The same with bf16 dlogits (those values rounded to nearest even; needs AVX512_BF16), always
// computed: each row's are left in place as bf16 rows of stride ld16 (V <= ld16 <= 2·ldz, e.g.
// gemm_rows16_ld(V): row n ends before fp32 row n+1 begins and is written behind its own row's
// reads), and row pairs
// (2p, 2p+1) go out interleaved to pairs + p·P, zeros after the 2V values up to P (head.h's
// layout; an odd N's last row is paired with zeros). N rows from an even row of the whole.
void avx512_softcap_ce_pairs(float *losses, uint16_t *pairs, size_t P, float *logits, size_t ldz, size_t ld16,
                             const int32_t *targets, int N, int V, float cap, float dscale, float *scratch);
