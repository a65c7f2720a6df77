// kernels/ref/rows.c — the reference row ops (contracts in ops.h): embedding, RMSNorm, RoPE
// (+QK-norm), ReLU², ReLU²'s linear layer (+ its bf16 twin) and the softcapped cross-entropy.
//
// fp32 storage, with reductions over a row accumulated in double where a row is long (norms,
// softmax statistics) so the reference is the accurate side of every comparison. OpenMP splits
// independent rows/heads; each output is produced by one thread in a fixed order.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
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

// ---------------------------------------------------------------------------------------------
// Dropout
// ---------------------------------------------------------------------------------------------

void ref_dropout(float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0, int accumulate) {
    const uint32_t t = dropout_threshold(p);
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float v = dropout_bits(key, i0 + (uint32_t)i) >= t ? x[i] * scale : 0.0f;
        out[i] = accumulate ? out[i] + v : v;
    }
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
