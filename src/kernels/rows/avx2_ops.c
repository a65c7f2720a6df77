// kernels/rows/avx2_ops.c — AVX2 + FMA embedding gradient, RMSNorm, RoPE and ReLU² (contracts in
// kernels.h): avx512_ops.c's row kernels on 8-lane vectors.
//
// Memory-bound ops, like the AVX-512 ones; the point is the same: full-width loads and stores
// with masked tails, and the row statistics in double without the reference's serial chain of
// double adds (one add per element, each waiting for the last: ~5% of an AVX2 training step
// went to the reference's norms before these). Every sum is grouped as avx512_ops.c groups it —
// a row's dot product as four 4-double partial sums per 16 elements, combined in the order of
// _mm512_reduce_add_pd — so these give the AVX-512 ops' bits exactly (tests/kernels/
// test_avx2_ops.c checks that where the CPU has both). The parallel loops over rows are
// row_ops.c's, shared with the AVX-512 ops; these are the row kernels they run.
#include <math.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/avx2_vmath.h"
#include "kernels/rows/row_ops.h"

#define RMS_EPS 1.1920929e-7f  // as ref_ops.c

static const RowIsa AVX2_ROWS;  // the row kernels below, defined after them

// Lanes [0, n) of the 8 at p (0 in the others), and the matching store.
AVX2_INLINE __m256 v8_load(const float *p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, v8_mask_first(n));
}
AVX2_INLINE void v8_store(float *p, int n, __m256 v) {
    if (n >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, v8_mask_first(n), v);
}

// ---------------------------------------------------------------------------------------------
// Embedding gradient
// ---------------------------------------------------------------------------------------------

// Columns [c0, c0+16) of every vocabulary row, positions in order (the reference's sum order).
static AVX2_FN void embedding_bwd_cols(float *dwte, const float *dout, const int32_t *idx, int N, int C, int c0) {
    int w0 = C - c0, w1 = C - c0 - 8;
    for (int n = 0; n < N; n++) {
        float *d = dwte + (size_t)idx[n] * C + c0;
        const float *g = dout + (size_t)n * C + c0;
        v8_store(d, w0, _mm256_add_ps(v8_load(d, w0), v8_load(g, w0)));
        if (w1 > 0) v8_store(d + 8, w1, _mm256_add_ps(v8_load(d + 8, w1), v8_load(g + 8, w1)));
    }
}

// Parallel over 16-column slices (rows_embedding_bwd): the reference's sums, bit for bit.
void avx2_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C) {
    rows_embedding_bwd(&AVX2_ROWS, dwte, dout, idx, N, C);
}

// ---------------------------------------------------------------------------------------------
// RMSNorm
// ---------------------------------------------------------------------------------------------

// sum(a[c] · b[c]) over a row in double (each product exact), grouped as avx512_ops.c's
// row_dot_pd: per 16 elements, elements 0-3, 4-7, 8-11 and 12-15 into partial sums s[0..3];
// then (s[1] + s[3]) + (s[0] + s[2]) lane-wise, the upper two lanes onto the lower two, and the
// last two — _mm512_reduce_add_pd's order on AVX-512's (lo, hi) accumulators.
AVX2_INLINE void v8_dot_pd(__m256d *s_lo, __m256d *s_hi, __m256 a, __m256 b) {
    __m256d alo = _mm256_cvtps_pd(_mm256_castps256_ps128(a)), ahi = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
    __m256d blo = _mm256_cvtps_pd(_mm256_castps256_ps128(b)), bhi = _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1));
    *s_lo = _mm256_fmadd_pd(alo, blo, *s_lo);
    *s_hi = _mm256_fmadd_pd(ahi, bhi, *s_hi);
}

AVX2_INLINE double row_dot_pd(const float *a, const float *b, int C) {
    __m256d s[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (int c = 0; c < C; c += 16) {
        v8_dot_pd(&s[0], &s[1], v8_load(a + c, C - c), v8_load(b + c, C - c));
        if (C - c > 8) v8_dot_pd(&s[2], &s[3], v8_load(a + c + 8, C - c - 8), v8_load(b + c + 8, C - c - 8));
    }
    __m256d t = _mm256_add_pd(_mm256_add_pd(s[1], s[3]), _mm256_add_pd(s[0], s[2]));
    __m128d u = _mm_add_pd(_mm256_extractf128_pd(t, 1), _mm256_castpd256_pd128(t));
    return _mm_cvtsd_f64(u) + _mm_cvtsd_f64(_mm_unpackhi_pd(u, u));
}

static AVX2_FN void rmsnorm_fwd_row(float *o, float *rstd, const float *x, int C) {
    float r = (float)(1.0 / sqrt(row_dot_pd(x, x, C) / C + RMS_EPS));
    *rstd = r;
    __m256 vr = _mm256_set1_ps(r);
    for (int c = 0; c < C; c += 8) v8_store(o + c, C - c, _mm256_mul_ps(v8_load(x + c, C - c), vr));
}

void avx2_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C) {
    rows_rmsnorm_fwd(&AVX2_ROWS, out, rstd, x, N, C);
}

// dx = r (g - x r m), m = mean(g · x r). The dot is finished before anything is written, so dx
// may alias dout (the model does this for the q/k norms).
static AVX2_FN void rmsnorm_bwd_row(float *d, const float *g, const float *x, float r, int C, int accumulate) {
    float mean = (float)(row_dot_pd(g, x, C) * r / C);
    __m256 vr = _mm256_set1_ps(r), vrm = _mm256_set1_ps(r * mean);
    for (int c = 0; c < C; c += 8) {
        __m256 v = _mm256_mul_ps(vr, _mm256_fnmadd_ps(v8_load(x + c, C - c), vrm, v8_load(g + c, C - c)));
        if (accumulate) v = _mm256_add_ps(v8_load(d + c, C - c), v);
        v8_store(d + c, C - c, v);
    }
}

void avx2_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int accumulate) {
    rows_rmsnorm_bwd(&AVX2_ROWS, dx, dout, x, rstd, N, C, accumulate);
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding (half-split)
// ---------------------------------------------------------------------------------------------

// All nh heads of one (b, t) row; dir = ±1 selects the forward or the inverse rotation.
static AVX2_FN void rope_row(float *x, const float *cos, const float *sin, int nh, int D, float dir) {
    int half = D / 2;
    __m256 vdir = _mm256_set1_ps(dir);
    for (int j = 0; j < half; j += 8) {
        int w = half - j;
        __m256 c = v8_load(cos + j, w), s = _mm256_mul_ps(vdir, v8_load(sin + j, w));
        for (int h = 0; h < nh; h++) {
            float *v = x + (size_t)h * D;
            __m256 x1 = v8_load(v + j, w), x2 = v8_load(v + j + half, w);
            v8_store(v + j, w, _mm256_fmadd_ps(x2, s, _mm256_mul_ps(x1, c)));
            v8_store(v + j + half, w, _mm256_fmsub_ps(x2, c, _mm256_mul_ps(x1, s)));
        }
    }
}

void avx2_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int D) {
    rows_rope(&AVX2_ROWS, x, cos, sin, B, T, nh, D, 1.0f);
}

// The rotation is orthogonal: its backward is the inverse rotation (sin -> -sin).
void avx2_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D) {
    rows_rope(&AVX2_ROWS, dx, cos, sin, B, T, nh, D, -1.0f);
}

// RoPE + QK-norm, fused (rows_rope_rmsnorm_*): a (b, t) row of nh heads is rotated then
// normalised, or un-normalised then rotated back, while it sits in L1.
void avx2_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T, int nh,
                           int D) {
    rows_rope_rmsnorm_fwd(&AVX2_ROWS, out, rstd, x, cos, sin, B, T, nh, D);
}

void avx2_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                           const float *sin, int B, int T, int nh, int D) {
    rows_rope_rmsnorm_bwd(&AVX2_ROWS, dx, dout, x, rstd, cos, sin, B, T, nh, D);
}

// ---------------------------------------------------------------------------------------------
// ReLU²
// ---------------------------------------------------------------------------------------------

// max(x, 0)²: vmaxps with 0 second, so a NaN or -0 gives +0 (as the reference's select).
static AVX2_FN void relu2_fwd_span(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
        int w = n - i < 8 ? (int)(n - i) : 8;
        __m256 r = _mm256_max_ps(v8_load(x + i, w), _mm256_setzero_ps());
        v8_store(out + i, w, _mm256_mul_ps(r, r));
    }
}

// dx = dout · 2x where x > 0, else +0 whatever dout is (as the reference's select): the product
// anded with the comparison's mask. dx may alias dout.
static AVX2_FN void relu2_bwd_span(float *dx, const float *dout, const float *x, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
        int w = n - i < 8 ? (int)(n - i) : 8;
        __m256 xv = v8_load(x + i, w), g = v8_load(dout + i, w);
        __m256 pos = _mm256_cmp_ps(xv, _mm256_setzero_ps(), _CMP_GT_OQ);
        v8_store(dx + i, w, _mm256_and_ps(pos, _mm256_mul_ps(_mm256_add_ps(xv, xv), g)));
    }
}

void avx2_relu2_fwd(float *out, const float *x, size_t n) { rows_relu2_fwd(&AVX2_ROWS, out, x, n); }

void avx2_relu2_bwd(float *dx, const float *dout, const float *x, size_t n) { rows_relu2_bwd(&AVX2_ROWS, dx, dout, x, n); }

static const RowIsa AVX2_ROWS = {
    .rmsnorm_fwd_row = rmsnorm_fwd_row, .rmsnorm_bwd_row = rmsnorm_bwd_row, .rope_row = rope_row,
    .relu2_fwd_span = relu2_fwd_span, .relu2_bwd_span = relu2_bwd_span, .embedding_bwd_cols = embedding_bwd_cols,
};
