// kernels/gemm/simd_matmul.h — fast fp32 matrix products for AVX2+FMA and AVX-512, and an optional
// bf16 product for AVX512_BF16 (contracts of matmul_nt/nn/tn in ops.h).
//
// All of them are BLIS-style: the output is split into one rectangular block per OpenMP thread
// (static, no barriers); each thread packs panels of B (kc x nc, in L2) and micro-panels of A
// (MR x kc, in L1) into contiguous buffers and runs a register-blocked MR x NR micro-kernel
// (AVX-512: 14 x 32, 28 zmm accumulators; AVX2: 6 x 16, 12 ymm accumulators).
//
// Rounding: every output element is one fused multiply-add chain c = fma(a_k, b_k, c) over
// k = 0, 1, ..., K-1 in ascending order, started from c (accumulate) or from 0. Blocking only
// decides where the chain is paused and resumed (the accumulator goes through C between kc
// blocks unchanged), so the result is bitwise identical whatever the thread count, the block
// sizes, M, the position of the element in its tile, and between the AVX2 and AVX-512 variants.
// It differs from ref_matmul_nt, which sums with a vectorised reduction (another order), by the
// usual fp32 rounding: |fast - exact| <~ 1e-6 * sum_k |a_ik||b_kj| on the model's shapes (the lab
// checks 1e-5). ref_matmul_nn/tn use the same chain as here and usually agree to the bit.
//
// Each function is compiled for its instruction set whatever the build's -march; the caller
// (the kernel registry) checks cpu_info() first. Operands may be unaligned; nothing outside the
// given extents is read or written.
#pragma once
#include "kernels/gemm/gemm_driver.h"  // GemmRowsFn

void avx512_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void avx512_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void avx512_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

void avx2_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void avx2_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void avx2_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

// bf16 operands (rounded to nearest even when packed), fp32 accumulation with vdpbf16ps, which
// sums the products of k pairs (2p, 2p+1) before adding them to the accumulator. Not used by any
// kernel table: each product has a relative error up to 2^-8, so |bf16 - exact| <~ 4e-3 *
// sum_k |a_ik||b_kj| — fine for a benchmark, measured in `frontier kernels bench`, not a
// drop-in for training. About twice the fp32 speed on Zen 4 (vdpbf16ps does 32 products per
// instruction at the FMA's rate). Needs cpu_info()->avx512_bf16.
void avx512bf16_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void avx512bf16_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void avx512bf16_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
// The AVX512_BF16 GemmImpl itself, for products described in full (gemm_run_op, gemm_pack_b in
// gemm_driver.h: causal attention's per-head products).
const GemmImpl *avx512bf16_gemm_impl(void);
// Its GemmImpl.convert_rows16 (AMX's impl uses it too).
void avx512bf16_convert_rows16(uint16_t *dst, size_t ld16, const float *src, size_t lda, int h, int kc);
// The same nn and tn products with a (the first operand) stored as bf16 (uint16, as vcvtneps2bf16
// rounds): the same bits as avx512bf16_matmul_nn/tn on the fp32 values it was rounded from.
void avx512bf16_matmul_nn_a16(float *c, const uint16_t *a, const float *b, int M, int N, int K, int accumulate);
void avx512bf16_matmul_tn_a16(float *c, const uint16_t *a, const float *b, int M, int N, int K, int accumulate);

// ReLU² fused into the product that reads it (Kernels.relu2_linear_fwd/bwd; gemm_relu2_linear_*
// in gemm_driver.h): the same bits as relu2_fwd/relu2_bwd around this instruction set's matmuls.
void avx2_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void avx2_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N, int K);
void avx512_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void avx512_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                             int K);
void avx512bf16_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void avx512bf16_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                                 int K);

// The NT product a (M,K) @ b (N,K)ᵀ a strip of whole rows at a time, each strip handed to fn
// instead of being stored (gemm_rows_nt in gemm_driver.h): the same bits as the *_matmul_nt of
// the same instruction set. The fused head (head_ce) runs the loss on each strip in cache (the
// bf16 heads call gemm_rows_nt with their GemmImpl: head.h).
void avx512_matmul_nt_rows(const float *a, const float *b, int M, int N, int K, GemmRowsFn fn, void *ctx,
                           size_t scratch_floats, const GemmRowsNext *next);
void avx2_matmul_nt_rows(const float *a, const float *b, int M, int N, int K, GemmRowsFn fn, void *ctx,
                         size_t scratch_floats, const GemmRowsNext *next);
