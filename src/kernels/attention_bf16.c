// kernels/attention_bf16.c — causal attention with bf16 products: the twins of attention_fwd/bwd
// that `--precision bf16` swaps in (what PyTorch's bf16 autocast does to attention: its matmuls
// take bf16 operands and accumulate in fp32; the softmax stays fp32).
//
// Algorithm, per (batch, kv head) on one thread, for each q head of the group in order:
//   forward   S = Q Kᵀ;  P = softmax(S·scale) over keys j <= i (0 above), lse;  O = P V
//   backward  S = Q Kᵀ again, P = exp(S·scale - lse) (0 above the diagonal);  dP = dO Vᵀ;
//             dS = P ⊙ (dP - D_i)·scale with D_i = rowsum(dO ⊙ O);  dV += Pᵀ dO;  dQ = dS K;
//             dK += dSᵀ Q
// The products round their operands to bf16 (nearest even) and accumulate in fp32: Q, K, V, P,
// dO and dS are the rounded values; S, lse, D_i and the softmax are fp32.
//
// Fast variant: every product is one of the AVX512_BF16 GEMMs (simd_matmul.h), single-threaded
// inside the parallel loop over tasks, on blocks of queries against the keys they can see (an
// rb x (i0+rb) score block, in L2), in the causal mode that skips the micro-tiles above the
// diagonal (and the depth they would multiply by zero); the diagonal tiles are computed whole and
// their upper triangles zeroed. dK and dV sum over the group's heads and the query
// blocks in order. Each (batch, kv head) is one task with a fixed order of sums, so results do
// not depend on the thread count.
//
// Reference variant (ref_ops.c): the fp32 reference's loops with the same roundings.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention_bf16.h"
#include "kernels/avx512_vmath.h"
#include "kernels/simd_matmul.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Fast: whole score matrices through the bf16 GEMMs
// ---------------------------------------------------------------------------------------------

typedef struct {
    int B, T, H, Hkv, D, group;
    float scale;
    size_t ldq, ldkv;  // row strides of q/out/dout (H·D) and k/v (Hkv·D)
} Shape;

static Shape shape_of(int B, int T, int H, int Hkv, int D) {
    return (Shape){B, T, H, Hkv, D, H / Hkv, 1.0f / sqrtf((float)D), (size_t)H * D, (size_t)Hkv * D};
}

// A head's rows (T x D, row stride ld) as a contiguous T x D matrix, which the GEMMs need: the
// rows themselves when they already are (one head: ld == D), else a copy in buf.
static const float *head_rows(float *buf, const float *src, size_t ld, int T, int D) {
    if (ld == (size_t)D) return src;
    for (int t = 0; t < T; t++) memcpy(buf + (size_t)t * D, src + (size_t)t * ld, (size_t)D * sizeof *buf);
    return buf;
}

// Where a head's T x D result is formed: in place when its rows are contiguous, else in buf
// (then scattered with scatter()).
static float *head_out(float *buf, float *dst, size_t ld, int D) { return ld == (size_t)D ? dst : buf; }
static void scatter(float *dst, size_t ld, const float *src, int T, int D) {
    if (dst == src) return;
    for (int t = 0; t < T; t++) memcpy(dst + (size_t)t * ld, src + (size_t)t * D, (size_t)D * sizeof *dst);
}

// Row i of a score block n wide: P = softmax(S·scale) over j <= i, 0 above; returns lse.
static AVX512_FN float softmax_causal(float *row, int i, int T, float scale) {
    int n = i + 1;
    __m512 vs = _mm512_set1_ps(scale), mx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < n; j += 16) {
        __mmask16 m = v_mask_first(n - j);
        mx = _mm512_mask_max_ps(mx, m, mx, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, row + j), vs));
    }
    float m = _mm512_reduce_max_ps(mx);
    __m512 vm = _mm512_set1_ps(m), sum = _mm512_setzero_ps();
    for (int j = 0; j < n; j += 16) {
        __mmask16 k = v_mask_first(n - j);
        __m512 e = _mm512_maskz_mov_ps(k, v_exp(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, row + j), vs, vm)));
        _mm512_mask_storeu_ps(row + j, k, e);
        sum = _mm512_add_ps(sum, e);
    }
    double l = v_hsum_pd(sum);
    __m512 inv = _mm512_set1_ps((float)(1.0 / l));
    for (int j = 0; j < n; j += 16) {
        __mmask16 k = v_mask_first(n - j);
        _mm512_mask_storeu_ps(row + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), inv));
    }
    if (n < T) memset(row + n, 0, (size_t)(T - n) * sizeof *row);
    return m + (float)log(l);
}

// Row i of S and dP (n wide): P = exp(S·scale - lse), dS = P (dP - D_i)·scale for j <= i, 0 above.
static AVX512_FN void grad_causal(float *prow, float *dsrow, int i, int T, float scale, float lse, float di) {
    int n = i + 1;
    __m512 vs = _mm512_set1_ps(scale), vl = _mm512_set1_ps(lse), vd = _mm512_set1_ps(di);
    for (int j = 0; j < n; j += 16) {
        __mmask16 k = v_mask_first(n - j);
        __m512 p = _mm512_maskz_mov_ps(k, v_exp(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, prow + j), vs, vl)));
        __m512 ds = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dsrow + j), vd)), vs);
        _mm512_mask_storeu_ps(prow + j, k, p);
        _mm512_mask_storeu_ps(dsrow + j, k, ds);
    }
    if (n < T) {
        memset(prow + n, 0, (size_t)(T - n) * sizeof *prow);
        memset(dsrow + n, 0, (size_t)(T - n) * sizeof *dsrow);
    }
}

static AVX512_FN float row_dot(const float *a, const float *b, int D) {
    __m512 acc = _mm512_setzero_ps();
    for (int d = 0; d < D; d += 16) {
        __mmask16 k = v_mask_first(D - d);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + d), _mm512_maskz_loadu_ps(k, b + d), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

// Query block [i0, i0+rb) sees keys [0, i0+rb): its scores are an rb x (i0+rb) matrix. Blocks
// are as tall as 1 MiB of scores allows (at least 64 rows; T <= 512: one block; kit-d10's
// T = 1024: 4 blocks), so K and V are packed once per block, and the causal products
// (avx512bf16_matmul_causal) skip the micro-tiles above the diagonal inside it. Every block
// packs K and V again, which at 256 KiB (16 blocks of 64 rows at T = 1024) cost as much as the
// products' own work per key row; at 1 MiB `frontier kernels bench --preset kit-d10` gives
// attention_fwd 14.8-16.7 -> 13.1-13.3 ms and attention_bwd 36.2-37.6 -> 34.1-35.3 ms on this
// Zen 5, though S and dS (1 MiB each) no longer fit in L2.
#define SCORE_FLOATS (256 << 10)

static int block_rows(int T) {
    int rb = SCORE_FLOATS / T / 64 * 64;
    rb = rb < 64 ? 64 : rb;
    return rb < T ? rb : T;
}

typedef struct {  // per-thread workspace
    float *S, *dS;              // block_rows x T: one query block's scores / probabilities, dP / dS
    float *Q, *K, *V, *dO, *O;  // T x D head copies
    float *dK, *dV, *dQ;        // T x D
} Work;

static Work work_alloc(const Shape *s) {
    size_t st = (size_t)block_rows(s->T) * s->T, td = (size_t)s->T * s->D;
    size_t bytes = ((2 * st + 8 * td) * sizeof(float) + 63) / 64 * 64 + 64;  // a multiple of the alignment
    float *p = aligned_alloc(64, bytes);  // not zeroed: every element is written before it is read
    if (!p) abort();
    Work w = {p, p + st, p + 2 * st, p + 2 * st + td, p + 2 * st + 2 * td, p + 2 * st + 3 * td, p + 2 * st + 4 * td,
              p + 2 * st + 5 * td, p + 2 * st + 6 * td, p + 2 * st + 7 * td};
    return w;
}

static void fwd_task(const Shape *s, Work *w, float *out, float *lse, const float *q, const float *k, const float *v,
                     int b, int hk) {
    int T = s->T, D = s->D;
    size_t koff = (size_t)b * T * s->ldkv + (size_t)hk * D;
    const float *K = head_rows(w->K, k + koff, s->ldkv, T, D), *V = head_rows(w->V, v + koff, s->ldkv, T, D);
    for (int h = hk * s->group; h < (hk + 1) * s->group; h++) {
        size_t qoff = (size_t)b * T * s->ldq + (size_t)h * D;
        float *l = lse + ((size_t)b * s->H + h) * T, *O = head_out(w->O, out + qoff, s->ldq, D);
        const float *Q = head_rows(w->Q, q + qoff, s->ldq, T, D);
        for (int i0 = 0, RB = block_rows(T); i0 < T; i0 += RB) {
            int rb = T - i0 < RB ? T - i0 : RB, n = i0 + rb;
            avx512bf16_matmul_causal(GEMM_NT, w->S, Q + (size_t)i0 * D, K, rb, n, D, 0, i0);  // S = Q Kᵀ
            for (int r = 0; r < rb; r++) l[i0 + r] = softmax_causal(w->S + (size_t)r * n, i0 + r, n, s->scale);
            avx512bf16_matmul_causal(GEMM_NN, O + (size_t)i0 * D, w->S, V, rb, D, n, 0, i0);  // O = P V
        }
        scatter(out + qoff, s->ldq, O, T, D);
    }
}

void avx512bf16_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                              int H, int Hkv, int D) {
    if (B <= 0 || T <= 0 || H <= 0) return;
    Shape s = shape_of(B, T, H, Hkv, D);
#pragma omp parallel
    {
        Work w = work_alloc(&s);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < B * Hkv; task++) fwd_task(&s, &w, out, lse, q, k, v, task / Hkv, task % Hkv);
        free(w.S);
    }
}

static void bwd_task(const Shape *s, Work *w, float *dq, float *dk, float *dv, const float *dout, const float *out,
                     const float *lse, const float *q, const float *k, const float *v, int b, int hk) {
    int T = s->T, D = s->D;
    size_t koff = (size_t)b * T * s->ldkv + (size_t)hk * D;
    const float *K = head_rows(w->K, k + koff, s->ldkv, T, D), *V = head_rows(w->V, v + koff, s->ldkv, T, D);
    float *dK = head_out(w->dK, dk + koff, s->ldkv, D), *dV = head_out(w->dV, dv + koff, s->ldkv, D);
    memset(dK, 0, (size_t)T * D * sizeof *dK);  // summed over the group's heads and query blocks
    memset(dV, 0, (size_t)T * D * sizeof *dV);
    for (int h = hk * s->group; h < (hk + 1) * s->group; h++) {
        size_t qoff = (size_t)b * T * s->ldq + (size_t)h * D;
        const float *l = lse + ((size_t)b * s->H + h) * T;
        const float *Q = head_rows(w->Q, q + qoff, s->ldq, T, D), *dO = head_rows(w->dO, dout + qoff, s->ldq, T, D);
        const float *O = head_rows(w->O, out + qoff, s->ldq, T, D);
        float *dQ = head_out(w->dQ, dq + qoff, s->ldq, D);
        for (int i0 = 0, RB = block_rows(T); i0 < T; i0 += RB) {
            int rb = T - i0 < RB ? T - i0 : RB, n = i0 + rb;
            const float *Qb = Q + (size_t)i0 * D, *dOb = dO + (size_t)i0 * D;
            avx512bf16_matmul_causal(GEMM_NT, w->S, Qb, K, rb, n, D, 0, i0);    // S = Q Kᵀ
            avx512bf16_matmul_causal(GEMM_NT, w->dS, dOb, V, rb, n, D, 0, i0);  // dP = dO Vᵀ
            for (int r = 0; r < rb; r++) {
                float di = row_dot(dOb + (size_t)r * D, O + (size_t)(i0 + r) * D, D);
                grad_causal(w->S + (size_t)r * n, w->dS + (size_t)r * n, i0 + r, n, s->scale, l[i0 + r], di);
            }
            avx512bf16_matmul_causal(GEMM_TN, dV, w->S, dOb, n, D, rb, 1, i0);                   // dV += Pᵀ dO
            avx512bf16_matmul_causal(GEMM_NN, dQ + (size_t)i0 * D, w->dS, K, rb, D, n, 0, i0);  // dQ = dS K
            avx512bf16_matmul_causal(GEMM_TN, dK, w->dS, Qb, n, D, rb, 1, i0);                   // dK += dSᵀ Q
        }
        scatter(dq + qoff, s->ldq, dQ, T, D);
    }
    scatter(dk + koff, s->ldkv, dK, T, D);
    scatter(dv + koff, s->ldkv, dV, T, D);
}

void avx512bf16_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                              const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D) {
    if (B <= 0 || T <= 0 || H <= 0) return;
    Shape s = shape_of(B, T, H, Hkv, D);
#pragma omp parallel
    {
        Work w = work_alloc(&s);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < B * Hkv; task++)
            bwd_task(&s, &w, dq, dk, dv, dout, out, lse, q, k, v, task / Hkv, task % Hkv);
        free(w.S);
    }
}
