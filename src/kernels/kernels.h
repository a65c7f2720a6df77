// kernels/kernels.h — the one place every compute op goes through.
//
// A Kernels table holds one function pointer per op. `ref` is the plain, obviously-correct
// implementation (fp32, OpenMP over independent outputs, deterministic whatever the thread
// count: every output element is reduced by one thread in a fixed order). Faster variants
// (AVX-512, AMX) are added as further tables and checked against `ref` on many shapes;
// FRONTIER_KERNELS=ref forces the reference path.
//
// Matrix layout: row-major. "nt" means the second operand is used transposed, as nn.Linear
// stores its weight (out, in): y (M,N) = x (M,K) @ W(N,K)^T.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    // c (M,N) (+)= a (M,K) @ b (N,K)^T
    void (*matmul_nt)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // c (M,N) (+)= a (M,K) @ b (K,N)
    void (*matmul_nn)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // c (M,N) (+)= a (K,M)^T @ b (K,N)
    void (*matmul_tn)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

    // Token embedding. fwd: out (N,C) = wte[idx[n]]. bwd: dwte[idx[n]] += dout[n], summed in
    // position order for each vocabulary row (deterministic).
    void (*embedding_fwd)(float *out, const int32_t *idx, const float *wte, int N, int C);
    void (*embedding_bwd)(float *dwte, const float *dout, const int32_t *idx, int N, int C);

    // Parameter-free RMSNorm over rows of C: out = x * rstd, rstd (N) = 1/sqrt(mean(x²) + eps).
    // bwd: dx (+)= rstd * (dout - out * mean(dout * out)), out recomputed from x and rstd.
    void (*rmsnorm_fwd)(float *out, float *rstd, const float *x, int N, int C);
    void (*rmsnorm_bwd)(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int accumulate);

    // Rotary embedding in place on x (B,T,nh,D), half-split: (x1,x2) -> (x1 c + x2 s, -x1 s + x2 c)
    // with c,s = cos,sin (T, D/2) at the row's position t. bwd applies the inverse rotation to dx.
    void (*rope_fwd)(float *x, const float *cos, const float *sin, int B, int T, int nh, int D);
    void (*rope_bwd)(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D);

    // Causal softmax attention, scale 1/sqrt(D). q (B,T,H,D); k, v (B,T,Hkv,D) with Hkv | H
    // (q head h reads kv head h / (H/Hkv)). out (B,T,H,D); lse (B,H,T) = log-sum-exp of each
    // query's scaled scores, kept for backward instead of the (B,H,T,T) probabilities.
    void (*attention_fwd)(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                          int Hkv, int D);
    // dq, dk, dv are overwritten. Recomputes probabilities from q, k and lse.
    void (*attention_bwd)(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                          const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D);

    // ReLU²: out = max(x,0)². bwd: dx = dout * 2 max(x,0).
    void (*relu2_fwd)(float *out, const float *x, size_t n);
    void (*relu2_bwd)(float *dx, const float *dout, const float *x, size_t n);

    // Softcapped cross-entropy over rows of V logits: c = cap*tanh(z/cap) (cap 0 = no cap),
    // losses[n] = logsumexp(c) - c[target] in nats (0 where target < 0). If dlogits is non-NULL
    // it receives dscale * d(loss_n)/dz (0 rows for ignored targets); it may alias logits.
    void (*softcap_ce)(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                       float cap, float dscale);
} Kernels;

extern const Kernels KERNELS_REF;

// The active table (default: the best available; FRONTIER_KERNELS=ref forces the reference).
const Kernels *kernels(void);
// Route every op through the profiler (profile/profile.h) or back; results are unchanged.
void kernels_set_profiling(int on);
const Kernels *kernels_profiled(const Kernels *base);  // the wrapper table around `base`
