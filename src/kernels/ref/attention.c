// kernels/ref/attention.c — the reference causal attention (contract in ops.h), and its bf16 twins.
//
// fp32 storage, the softmax statistics summed in double so the reference is the accurate side of
// every comparison. OpenMP splits independent (sequence, head) rows; each output is produced by
// one thread in a fixed order.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"

// ---------------------------------------------------------------------------------------------
// Causal attention, flash-style: forward keeps only the log-sum-exp per query; backward
// recomputes each probability row. Memory O(B·H·T) instead of O(B·H·T²). With a window, query t
// sees keys t-window .. t.
// ---------------------------------------------------------------------------------------------

// One query row each. bf16 = 1 gives the bf16 twins (--precision bf16): every product's operands
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
