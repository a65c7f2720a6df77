// kernels/rows/ref_ops.c — reference implementations of the model's non-matmul ops (see kernels.h).
//
// fp32 storage, with reductions over a row accumulated in double where a row is long (norms,
// softmax statistics) so the reference is the accurate side of every comparison. OpenMP splits
// independent rows/heads; each output is produced by one thread in a fixed order.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention/attention_bf16.h"
#include "kernels/head/head.h"
#include "kernels/ref.h"
#include "util/mem.h"

#define RMS_EPS 1.1920929e-7f

// ---------------------------------------------------------------------------------------------
// Embedding
// ---------------------------------------------------------------------------------------------

void ref_embedding_fwd(float *out, const int32_t *idx, const float *wte, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)idx[n] * C, (size_t)C * sizeof *out);
}

// Parallel over channels: each thread owns a slice of columns of every vocabulary row, and
// walks positions in order, so the sum order is fixed whatever the thread count.
void ref_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        for (int n = 0; n < N; n++) {
            float *d = dwte + (size_t)idx[n] * C;
            const float *g = dout + (size_t)n * C;
            for (int c = c0; c < c1; c++) d[c] += g[c];
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RMSNorm
// ---------------------------------------------------------------------------------------------

void ref_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)xn[c] * xn[c];
        float r = (float)(1.0 / sqrt(ss / C + RMS_EPS));
        rstd[n] = r;
        float *o = out + (size_t)n * C;
        for (int c = 0; c < C; c++) o[c] = xn[c] * r;
    }
}

void ref_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int accumulate) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *xn = x + (size_t)n * C, *g = dout + (size_t)n * C;
        float r = rstd[n];
        double dot = 0;  // mean(dout * out), out = x * r
        for (int c = 0; c < C; c++) dot += (double)g[c] * xn[c] * r;
        float m = (float)(dot / C);
        float *d = dx + (size_t)n * C;
        for (int c = 0; c < C; c++) {
            float v = r * (g[c] - xn[c] * r * m);
            d[c] = accumulate ? d[c] + v : v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding (half-split)
// ---------------------------------------------------------------------------------------------

static void rope_rotate(float *x, const float *cos, const float *sin, int B, int T, int nh, int D, float dir) {
    int half = D / 2;
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        int t = bt % T;
        const float *c = cos + (size_t)t * half, *s = sin + (size_t)t * half;
        for (int h = 0; h < nh; h++) {
            float *v = x + ((size_t)bt * nh + h) * D;
            for (int j = 0; j < half; j++) {
                float x1 = v[j], x2 = v[j + half], sj = dir * s[j];
                v[j] = x1 * c[j] + x2 * sj;
                v[j + half] = -x1 * sj + x2 * c[j];
            }
        }
    }
}

void ref_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int D) {
    rope_rotate(x, cos, sin, B, T, nh, D, 1.0f);
}

// The rotation is orthogonal: its backward is the inverse rotation (sin -> -sin).
void ref_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D) {
    rope_rotate(dx, cos, sin, B, T, nh, D, -1.0f);
}

// RoPE + QK-norm: the two reference ops in turn. The fused kernels are checked against this.
void ref_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T, int nh,
                          int D) {
    ref_rope_fwd(x, cos, sin, B, T, nh, D);
    ref_rmsnorm_fwd(out, rstd, x, B * T * nh, D);
}

void ref_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                          const float *sin, int B, int T, int nh, int D) {
    ref_rmsnorm_bwd(dx, dout, x, rstd, B * T * nh, D, 0);
    ref_rope_bwd(dx, cos, sin, B, T, nh, D);
}

// ---------------------------------------------------------------------------------------------
// Causal attention, flash-style: forward keeps only the log-sum-exp per query; backward
// recomputes each probability row. Memory O(B·H·T) instead of O(B·H·T²). With a window, query t
// sees keys t-window .. t.
// ---------------------------------------------------------------------------------------------

// One query row each. bf16 = 1 gives the bf16 twins (attention_bf16.h): every product's operands
// rounded to bf16 (Q, K, V, the normalised P, dO and dS); sums, softmax, lse and D_i in fp32. The
// parallel loops stay in the callers (an OpenMP region is outlined before inlining, which would
// leave bf16 a run-time variable inside the fp32 reference's loops), so each caller's copy of the
// row has bf16 as a constant and the fp32 reference is the plain loops.
#define RND(x) (bf16 ? ref_round_bf16(x) : (x))

static inline __attribute__((always_inline)) void attention_fwd_row(const int bf16, float *out, float *lse,
                                                                     const float *q, const float *k, const float *v,
                                                                     int T, int H, int Hkv, int D, int window, int b,
                                                                     int h, int t, float *p) {
    float scale = 1.0f / sqrtf((float)D);
    int hk = h / (H / Hkv), s0 = attention_first_key(t, window);
    const float *qt = q + (((size_t)b * T + t) * H + h) * D;
    float mx = -INFINITY;
    for (int s = s0; s <= t; s++) {
        const float *ks = k + (((size_t)b * T + s) * Hkv + hk) * D;
        float dot = 0;
        if (bf16)  // (the rounding is a call: no simd loop to ask for)
            for (int d = 0; d < D; d++) dot += RND(qt[d]) * RND(ks[d]);
        else
#pragma omp simd reduction(+ : dot)
            for (int d = 0; d < D; d++) dot += qt[d] * ks[d];
        p[s] = dot * scale;
        if (p[s] > mx) mx = p[s];
    }
    double sum = 0;
    for (int s = s0; s <= t; s++) sum += (p[s] = expf(p[s] - mx));
    float inv = (float)(1.0 / sum);
    float *o = out + (((size_t)b * T + t) * H + h) * D;
    memset(o, 0, (size_t)D * sizeof *o);
    for (int s = s0; s <= t; s++) {
        const float *vs = v + (((size_t)b * T + s) * Hkv + hk) * D;
        float w = RND(p[s] * inv);
        for (int d = 0; d < D; d++) o[d] += w * RND(vs[d]);
    }
    lse[((size_t)b * H + h) * T + t] = mx + (float)log(sum);
}

static inline __attribute__((always_inline)) void attention_bwd_row(const int bf16, float *dq, float *dk, float *dv,
                                                                     const float *dout, const float *out,
                                                                     const float *lse, const float *q, const float *k,
                                                                     const float *v, int T, int H, int Hkv, int D,
                                                                     int window, int b, int hk, int h, int t) {
    float scale = 1.0f / sqrtf((float)D);
    size_t qi = (((size_t)b * T + t) * H + h) * D;
    const float *qt = q + qi, *go = dout + qi, *ot = out + qi;
    float *dqt = dq + qi;
    float l = lse[((size_t)b * H + h) * T + t];
    float di = 0;  // D_i = sum(dout * out): the softmax backward's row term
    for (int d = 0; d < D; d++) di += go[d] * ot[d];
    for (int s = attention_first_key(t, window); s <= t; s++) {
        size_t ki = (((size_t)b * T + s) * Hkv + hk) * D;
        const float *ks = k + ki, *vs = v + ki;
        float dot = 0, dp = 0;
        if (bf16)
            for (int d = 0; d < D; d++) { dot += RND(qt[d]) * RND(ks[d]); dp += RND(go[d]) * RND(vs[d]); }
        else
#pragma omp simd reduction(+ : dot, dp)
            for (int d = 0; d < D; d++) { dot += qt[d] * ks[d]; dp += go[d] * vs[d]; }
        float p = expf(dot * scale - l);
        float ds = RND(p * (dp - di) * scale), pr = RND(p);
        float *dks = dk + ki, *dvs = dv + ki;
        for (int d = 0; d < D; d++) {
            dvs[d] += pr * RND(go[d]);
            dqt[d] += ds * RND(ks[d]);
            dks[d] += ds * RND(qt[d]);
        }
    }
}
#undef RND

// Every (sequence, head, query) row, bf16 products or not (a constant after inlining).
static inline __attribute__((always_inline)) void attention_fwd_all(const int bf16, float *out, float *lse,
                                                                    const float *q, const float *k, const float *v,
                                                                    int B, int T, int H, int Hkv, int D, int window) {
#pragma omp parallel
    {
        float *p = malloc((size_t)T * sizeof *p);
#pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int t = 0; t < T; t++) attention_fwd_row(bf16, out, lse, q, k, v, T, H, Hkv, D, window, b, h, t, p);
        free(p);
    }
}

void ref_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                       int Hkv, int D, int window) {
    attention_fwd_all(0, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void ref_bf16_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                            int H, int Hkv, int D, int window) {
    attention_fwd_all(1, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

static void attention_bwd_zero(float *dq, float *dk, float *dv, int B, int T, int H, int Hkv, int D) {
    memset(dq, 0, (size_t)B * T * H * D * sizeof *dq);
    memset(dk, 0, (size_t)B * T * Hkv * D * sizeof *dk);
    memset(dv, 0, (size_t)B * T * Hkv * D * sizeof *dv);
}

// Every row, zeroed first: dk and dv sum over a kv head's query heads, all inside one
// iteration, so the order of their sums does not depend on the threads.
static inline __attribute__((always_inline)) void attention_bwd_all(
    const int bf16, float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
    const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window) {
    attention_bwd_zero(dq, dk, dv, B, T, H, Hkv, D);
    int group = H / Hkv;
#pragma omp parallel for schedule(dynamic, 1) collapse(2)
    for (int b = 0; b < B; b++)
        for (int hk = 0; hk < Hkv; hk++)
            for (int h = hk * group; h < (hk + 1) * group; h++)
                for (int t = 0; t < T; t++)
                    attention_bwd_row(bf16, dq, dk, dv, dout, out, lse, q, k, v, T, H, Hkv, D, window, b, hk, h, t);
}

void ref_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                       int window) {
    attention_bwd_all(0, dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void ref_bf16_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                            const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                            int window) {
    attention_bwd_all(1, dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

// ---------------------------------------------------------------------------------------------
// ReLU²
// ---------------------------------------------------------------------------------------------

void ref_relu2_fwd(float *out, const float *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float r = x[i] > 0 ? x[i] : 0;
        out[i] = r * r;
    }
}

void ref_relu2_bwd(float *dx, const float *dout, const float *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) dx[i] = x[i] > 0 ? 2.0f * x[i] * dout[i] : 0.0f;
}

// ReLU² fused into the product that reads it: here the ops in turn (act in a temporary), with
// the fp32 or the bf16 reference matmuls.
typedef void (*RefMatmul)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

static float *relu2_temp(const float *fc, size_t n) {
    float *act = xmalloc((n ? n : 1) * sizeof *act);
    ref_relu2_fwd(act, fc, n);
    return act;
}

static void relu2_linear_fwd_with(RefMatmul nt, float *c, const float *fc, const float *w, int M, int N, int K,
                                  int accumulate) {
    float *act = relu2_temp(fc, (size_t)M * K);
    nt(c, act, w, M, N, K, accumulate);
    free(act);
}

static void relu2_linear_bwd_with(RefMatmul tn, RefMatmul nn, float *dw, float *dfc, const float *dc, const float *w,
                                  const float *fc, int M, int N, int K) {
    float *act = relu2_temp(fc, (size_t)M * K);
    tn(dw, dc, act, N, K, M, 1);
    free(act);
    nn(dfc, dc, w, M, K, N, 0);
    ref_relu2_bwd(dfc, dfc, fc, (size_t)M * K);
}

void ref_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate) {
    relu2_linear_fwd_with(ref_matmul_nt, c, fc, w, M, N, K, accumulate);
}
void ref_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                          int K) {
    relu2_linear_bwd_with(ref_matmul_tn, ref_matmul_nn, dw, dfc, dc, w, fc, M, N, K);
}
void ref_bf16_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate) {
    relu2_linear_fwd_with(ref_bf16_matmul_nt, c, fc, w, M, N, K, accumulate);
}
void ref_bf16_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                               int K) {
    relu2_linear_bwd_with(ref_bf16_matmul_tn, ref_bf16_matmul_nn, dw, dfc, dc, w, fc, M, N, K);
}

// ---------------------------------------------------------------------------------------------
// Softcapped cross-entropy
// ---------------------------------------------------------------------------------------------

// The softcap is applied in fp32 (nanochat: "softcapped fp32 logits"); the softmax normaliser is
// summed in double. One pass computes the capped row into scratch, so tanh/exp run once per
// logit.
void ref_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                    float cap, float dscale) {
#pragma omp parallel
    {
        float *c = malloc((size_t)V * sizeof *c);
#pragma omp for schedule(static)
        for (int n = 0; n < N; n++) {
            const float *z = logits + (size_t)n * V;
            int tgt = targets ? targets[n] : -1;
            float mx = -INFINITY;
            for (int i = 0; i < V; i++) {
                c[i] = cap > 0 ? cap * tanhf(z[i] / cap) : z[i];
                mx = c[i] > mx ? c[i] : mx;
            }
            // With a gradient to produce, keep each exp(c - max) in the output row (which may alias
            // z: z is not read again) so every logit costs one tanh and one exp in all.
            float *d = dlogits && tgt >= 0 ? dlogits + (size_t)n * V : NULL;
            double sum = 0;
            for (int i = 0; i < V; i++) {
                float e = expf(c[i] - mx);
                if (d) d[i] = e;
                sum += (double)e;
            }
            float lse = mx + (float)log(sum);
            losses[n] = tgt >= 0 ? lse - c[tgt] : 0.0f;
            if (!dlogits) continue;
            if (!d) {  // ignored target: zero gradient row
                memset(dlogits + (size_t)n * V, 0, (size_t)V * sizeof *dlogits);
                continue;
            }
            float inv = (float)(1.0 / sum);
            for (int i = 0; i < V; i++) {
                float g = d[i] * inv - (i == tgt ? 1.0f : 0.0f);         // softmax - onehot
                if (cap > 0) g *= 1.0f - (c[i] / cap) * (c[i] / cap);  // d(cap·tanh(z/cap))/dz
                d[i] = g * dscale;
            }
        }
        free(c);
    }
}

const Kernels KERNELS_REF = {
    .name = "ref",
    .matmul_nt = ref_matmul_nt,
    .matmul_nn = ref_matmul_nn,
    .matmul_tn = ref_matmul_tn,
    .embedding_fwd = ref_embedding_fwd,
    .embedding_bwd = ref_embedding_bwd,
    .rmsnorm_fwd = ref_rmsnorm_fwd,
    .rmsnorm_bwd = ref_rmsnorm_bwd,
    .rope_fwd = ref_rope_fwd,
    .rope_bwd = ref_rope_bwd,
    .rope_rmsnorm_fwd = ref_rope_rmsnorm_fwd,
    .rope_rmsnorm_bwd = ref_rope_rmsnorm_bwd,
    .attention_fwd = ref_attention_fwd,
    .attention_bwd = ref_attention_bwd,
    .relu2_fwd = ref_relu2_fwd,
    .relu2_bwd = ref_relu2_bwd,
    .relu2_linear_fwd = ref_relu2_linear_fwd,
    .relu2_linear_bwd = ref_relu2_linear_bwd,
    .softcap_ce = ref_softcap_ce,
    .head_ce = ref_head_ce,
    .head_dw = ref_head_dw,
};
