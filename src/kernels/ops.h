// kernels/ops.h — the op contracts: the Kernels table (one function pointer per op, each with
// its contract), the precision its products take, and the layout helpers the contracts name.
// The bottom of kernels/: the references (ref/), the variants (rows/, gemm/, attention/, head/)
// include this, never kernels.h, whose table selection sits above them all (README.md, Layout).
//
// A Kernels table holds one function pointer per op. `ref` is the plain, obviously-correct
// implementation (fp32, OpenMP over independent outputs, deterministic whatever the thread
// count: every output element is reduced by one thread in a fixed order). Faster variants are
// further tables (kernels.h, "Variants"), checked against `ref` on many shapes by `frontier
// kernels check`; every variant keeps the determinism promise (same bits whatever the thread
// count), not bitwise equality with ref.
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
    // (The SIMD GEMMs compute X·Xᵀ — matmul_nt or matmul_tn with b == a, M == N, no
    // accumulate — as its upper triangle mirrored: the same bits as the full product, half the work.)

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

    // RoPE then QK-norm in one pass over the rows of x (B,T,nh,D): x is rotated in place as by
    // rope_fwd (and kept: backward reads it), then out (B,T,nh,D) and rstd (B*T*nh) are
    // rmsnorm_fwd of its B*T*nh head rows of D. bwd: dx = rope_bwd of rmsnorm_bwd(dout, x, rstd)
    // (not accumulated); dx may alias dout. Each row is rotated and normalised while in L1.
    void (*rope_rmsnorm_fwd)(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T,
                             int nh, int D);
    void (*rope_rmsnorm_bwd)(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                             const float *sin, int B, int T, int nh, int D);

    // Causal softmax attention, scale 1/sqrt(D). q (B,T,H,D); k, v (B,T,Hkv,D) with Hkv | H
    // (q head h reads kv head h / (H/Hkv)). out (B,T,H,D); lse (B,H,T) = log-sum-exp of each
    // query's scaled scores, kept for backward instead of the (B,H,T,T) probabilities.
    // window: query t sees keys t-window .. t (a sliding window: FlashAttention's
    // window_size=(window, 0), nanochat's "S" layers); 0 = all keys 0 .. t.
    void (*attention_fwd)(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                          int Hkv, int D, int window);
    // dq, dk, dv are overwritten. Recomputes probabilities from q, k and lse.
    void (*attention_bwd)(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                          const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                          int window);

    // ReLU²: out = max(x,0)². bwd: dx = dout * 2 max(x,0).
    void (*relu2_fwd)(float *out, const float *x, size_t n);
    void (*relu2_bwd)(float *dx, const float *dout, const float *x, size_t n);

    // ReLU² fused into the linear layer that reads it (the MLP's c_proj): act = relu²(fc) is
    // formed while the product packs its operand and never stored; backward forms it again.
    // fwd: c (M,N) (+)= relu²(fc (M,K)) @ w (N,K)ᵀ — as relu2_fwd then matmul_nt (in the table's
    // precision). bwd: dw (N,K) += dc (M,N)ᵀ @ relu²(fc) as matmul_tn, and dfc (M,K) =
    // relu2_bwd(dc @ w, fc) as matmul_nn then relu2_bwd. No output may alias an input.
    void (*relu2_linear_fwd)(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
    void (*relu2_linear_bwd)(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                             int K);

    // Softcapped cross-entropy over rows of V logits: c = cap*tanh(z/cap) (cap 0 = no cap),
    // losses[n] = logsumexp(c) - c[target] in nats (0 where target < 0). If dlogits is non-NULL
    // it receives dscale * d(loss_n)/dz (0 rows for ignored targets); it may alias logits.
    void (*softcap_ce)(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                       float cap, float dscale);

    // The head's forward, loss and dx fused: logits (N,V) = x (N,C) @ w (V,C)ᵀ as by this table's
    // matmul_nt (in its precision), then softcap_ce on them as above (dlogits NULL: losses only),
    // then with dlogits and dx (N,C) non-NULL dx = dlogits @ w as by matmul_nn. The (N, V) logits
    // are never stored: each strip of rows goes through the loss and the dx product while in
    // cache (head/head.h). dlogits (N,V) are fp32, or bf16 (uint16, rounded to nearest even) in
    // a table whose products are bf16, laid out in row pairs (head_dl16_at below: rows 2p, 2p+1
    // interleaved, head_dl16_elems(N, V) elements) — the format its head_dw reads; no output may
    // alias an input.
    void (*head_ce)(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                    int N, int V, int C, float cap, float dscale);
    // The head's weight gradient from head_ce's dlogits (the same table's format): dw (V,C) +=
    // dlogitsᵀ @ x — as matmul_tn on the fp32 values.
    void (*head_dw)(float *dw, const void *dlogits, const float *x, int N, int V, int C);

    // Dropout with a mask drawn from a counter: element i is kept where dropout_bits(key, i0 + i)
    // >= dropout_threshold(p) (below), so the same (key, i0) gives the same mask on every
    // variant, thread count and call; backward calls it again with the same key on the gradient.
    // out (n) (+)= kept ? x·(1/(1−p)) : 0, for 0 <= p < 1. out may alias x when not accumulating.
    void (*dropout)(float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0, int accumulate);
} Kernels;

// The ops, in Kernels field order: X(name) for each.
#define KERNEL_OPS(X)                                                                         \
    X(matmul_nt) X(matmul_nn) X(matmul_tn) X(embedding_fwd) X(embedding_bwd) X(rmsnorm_fwd) \
    X(rmsnorm_bwd) X(rope_fwd) X(rope_bwd) X(rope_rmsnorm_fwd) X(rope_rmsnorm_bwd)          \
    X(attention_fwd) X(attention_bwd) X(relu2_fwd) X(relu2_bwd) X(relu2_linear_fwd) X(relu2_linear_bwd)     \
    X(softcap_ce) X(head_ce) X(head_dw) X(dropout)

enum { KERNEL_OP_COUNT = 21 };

// The precision of the products (the matmuls, ReLU²'s linear layer, the head, attention; kernels.h,
// "Matmul precision").
// KP_AUTO is a setting's value only (--precision auto): kernels_precision_auto() turns it into one
// of the others before anything computes.
typedef enum { KP_FP32, KP_BF16, KP_AUTO } KernelPrecision;

// The first key query (or key position) t sees under attention's window (0 = none): t - window,
// never before 0. Every attention variant and the evaluation's cached-prefix attention use it.
static inline int attention_first_key(int t, int window) { return window > 0 && t > window ? t - window : 0; }

// The head's bf16 dlogits (head_ce's output, head_dw's input in a table whose products are bf16;
// head/head.h says why): "row pairs", rows 2p and 2p+1 interleaved, element (n, v) at
// head_dl16_at(n, v, V) = (n/2)·P + 2v + n%2 with P = head_dl16_stride(V) (2V, + 32 zeros when 4V
// bytes is a multiple of 4 KiB); an odd N's last pair is completed by a zero row.
static inline size_t head_dl16_stride(int V) { return 2 * (size_t)V + ((4 * (size_t)V) % 4096 == 0 ? 32 : 0); }
static inline size_t head_dl16_at(int n, int v, int V) {
    return (size_t)(n / 2) * head_dl16_stride(V) + 2 * (size_t)v + (size_t)(n % 2);
}
// The uint16 elements of N rows of bf16 dlogits: ceil(N/2)·P.
static inline size_t head_dl16_elems(int N, int V) { return (size_t)(N + 1) / 2 * head_dl16_stride(V); }

// Dropout's mask bits: lowbias32 (Wellons' 32-bit integer hash: two multiply-xorshift rounds,
// full avalanche) of the element's index times the golden-ratio constant, xored with the key.
// Indices past 2^32 wrap: the mask then repeats with that period.
static inline uint32_t dropout_bits(uint32_t key, uint32_t i) {
    uint32_t x = (i * 0x9E3779B9u) ^ key;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
// An element is kept when its bits are >= p·2^32 (so P(kept) = 1 − p within 2^-32).
static inline uint32_t dropout_threshold(float p) {
    double t = (double)p * 4294967296.0;
    return t <= 0 ? 0 : t >= 4294967295.0 ? 4294967295u : (uint32_t)t;
}
