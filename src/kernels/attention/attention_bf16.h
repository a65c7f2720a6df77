// kernels/attention/attention_bf16.h — causal attention with bf16 products (contracts of attention_fwd /
// attention_bwd in ops.h): the twins that `--precision bf16` swaps in for the fp32 ones. Their
// products take Q, K, V, P, dO and dS rounded to bf16 and accumulate in fp32 (see
// attention_bf16.c); the softmax, lse and D_i stay fp32.
//   ref_bf16_*     the reference loops with those roundings (ref/attention.c, declared in
//                  ref/ref.h; runs anywhere)
//   avx512bf16_*   whole T x T score matrices through the AVX512_BF16 GEMMs (needs AVX512_BF16)
//   bf16_attention_*_with   the same on any bf16 GemmImpl
//   amx_*, amx_emu_*        those on AMX's (amx_attention.c): the tile instructions, the emulator
#pragma once
#include "kernels/gemm/gemm_driver.h"

void avx512bf16_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                              int H, int Hkv, int D, int window);
void avx512bf16_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                              const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window);
void bf16_attention_fwd_with(const GemmImpl *g, float *out, float *lse, const float *q, const float *k, const float *v,
                             int B, int T, int H, int Hkv, int D, int window);
void bf16_attention_bwd_with(const GemmImpl *g, float *dq, float *dk, float *dv, const float *dout, const float *out,
                             const float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                             int Hkv, int D, int window);
void amx_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                       int Hkv, int D, int window);
void amx_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window);
void amx_emu_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                           int Hkv, int D, int window);
void amx_emu_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                           const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                           int window);
