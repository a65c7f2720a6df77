// kernels/ref.h — the reference kernels, one function per op (contracts in kernels.h). Exposed
// so tests and faster variants can call them directly.
#pragma once
#include "kernels/kernels.h"

// x rounded to the nearest bf16 (ties to even, as vcvtneps2bf16; NaN stays NaN), as a float.
float ref_round_bf16(float x);
void ref_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_embedding_fwd(float *out, const int32_t *idx, const float *wte, int N, int C);
void ref_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C);
void ref_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C);
void ref_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int accumulate);
void ref_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int D);
void ref_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D);
void ref_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T, int nh,
                          int D);
void ref_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                          const float *sin, int B, int T, int nh, int D);
void ref_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                       int Hkv, int D, int window);
void ref_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window);
void ref_relu2_fwd(float *out, const float *x, size_t n);
void ref_relu2_bwd(float *dx, const float *dout, const float *x, size_t n);
void ref_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void ref_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                          int K);
void ref_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                    float cap, float dscale);
