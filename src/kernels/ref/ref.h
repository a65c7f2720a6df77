// kernels/ref/ref.h — the reference kernels: every op in plain C, the one each variant is checked
// against (contracts in ops.h; KERNELS_REF in kernels.c is the table of them). Exposed so tests
// and faster variants can call them directly. Listed, and filed, in the order a model runs them:
//   matmul.c     the three products; ref_round_bf16 and the bf16 twins of the products
//   rows.c       embedding, RMSNorm, RoPE (+ QK-norm), ReLU², ReLU²'s linear layer (+ bf16 twin),
//                the softcapped cross-entropy
//   attention.c  causal (sliding-window) attention forward and backward (+ bf16 twins)
//   head.c       the head: logits, loss, dlogits and dx (head_ce), dw (head_dw) (+ bf16 twins)
// A bf16 twin (ref_bf16_*) is the op with every product's operands rounded to bf16 and fp32 sums:
// what FRONTIER_KERNELS=ref --precision bf16 runs (kernels.h, "Matmul precision").
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"

// ---------------------------------------------------------------------------------------------
// Matrix products (matmul.c)
// ---------------------------------------------------------------------------------------------

void ref_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
// x rounded to the nearest bf16 (ties to even, as vcvtneps2bf16; NaN stays NaN), as a float.
float ref_round_bf16(float x);
// The bf16 matmuls: operands rounded by ref_round_bf16, then ref_matmul_*'s fp32 products and sums.
void ref_bf16_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_bf16_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_bf16_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

// ---------------------------------------------------------------------------------------------
// Row ops (rows.c)
// ---------------------------------------------------------------------------------------------

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
void ref_relu2_fwd(float *out, const float *x, size_t n);
void ref_relu2_bwd(float *dx, const float *dout, const float *x, size_t n);
void ref_dropout(float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0, int accumulate);
void ref_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void ref_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                          int K);
// relu2_linear_fwd/bwd with the bf16 products (ReLU² itself in fp32, as in every table).
void ref_bf16_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void ref_bf16_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                               int K);
void ref_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                    float cap, float dscale);

// ---------------------------------------------------------------------------------------------
// Attention (attention.c)
// ---------------------------------------------------------------------------------------------

void ref_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                       int Hkv, int D, int window);
void ref_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window);
// The same loops with Q, K, V, the normalised P, dO and dS rounded to bf16; sums, softmax, lse and
// D_i in fp32.
void ref_bf16_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                            int H, int Hkv, int D, int window);
void ref_bf16_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                            const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                            int window);

// ---------------------------------------------------------------------------------------------
// The head (head.c): matmul_nt, softcap_ce and matmul_nn in turn on bounded chunks of rows; dw
// as matmul_tn. The bf16 twins store dlogits as bf16 row pairs (ops.h, head_dl16_at).
// ---------------------------------------------------------------------------------------------

void ref_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                 int N, int V, int C, float cap, float dscale);
void ref_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);
void ref_bf16_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w,
                      const int32_t *targets, int N, int V, int C, float cap, float dscale);
void ref_bf16_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C);
// bf16 storage: the top half of a float rounded to nearest even (ref_round_bf16), and back.
uint16_t head_bf16_bits(float x);
float head_bf16_value(uint16_t h);
