// kernels/rows/avx512_ops.c — AVX-512 embedding, RMSNorm, RoPE and ReLU² (contracts in kernels.h).
// Cross-entropy is in avx512_ce.c, attention in avx512_attention.c.
//
// All of these are memory-bound: the point is full-width loads/stores with masked tails instead
// of whatever the compiler makes of the scalar reference, and per-row statistics accumulated in
// double (exact float products) so they track the reference's double sums. Parallel regions
// only call AVX512_FN functions (see avx512_vmath.h); every output element is written by one
// thread in a fixed order, so results do not depend on the thread count. The parallel loops
// over rows are row_ops.c's, shared with the AVX2 ops; these are the row kernels they run.
#include <string.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/avx512_vmath.h"
#include "kernels/rows/row_ops.h"

#define RMS_EPS 1.1920929e-7f  // as ref_ops.c

static const RowIsa AVX512_ROWS;  // the row kernels below, defined after them

// ---------------------------------------------------------------------------------------------
// Embedding
// ---------------------------------------------------------------------------------------------

// A gather of whole rows: memcpy is already the best copy loop.
void avx512_embedding_fwd(float *out, const int32_t *idx, const float *wte, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)idx[n] * C, (size_t)C * sizeof *out);
}

// Columns [c0, c0+16) of every vocabulary row, positions in order (the reference's sum order).
static AVX512_FN void embedding_bwd_cols(float *dwte, const float *dout, const int32_t *idx, int N, int C, int c0) {
    __mmask16 m = v_mask_first(C - c0);
    for (int n = 0; n < N; n++) {
        float *d = dwte + (size_t)idx[n] * C + c0;
        __m512 g = _mm512_maskz_loadu_ps(m, dout + (size_t)n * C + c0);
        _mm512_mask_storeu_ps(d, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), g));
    }
}

// Parallel over 16-column slices (rows_embedding_bwd): the reference's sums, bit for bit.
void avx512_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C) {
    rows_embedding_bwd(&AVX512_ROWS, dwte, dout, idx, N, C);
}

// ---------------------------------------------------------------------------------------------
// RMSNorm
// ---------------------------------------------------------------------------------------------

// sum(a[c] * b[c]) over a row, in double.
AVX512_INLINE double row_dot_pd(const float *a, const float *b, int C) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int c = 0; c < C; c += 16) {
        __mmask16 m = v_mask_first(C - c);
        v_dot_pd(&lo, &hi, _mm512_maskz_loadu_ps(m, a + c), _mm512_maskz_loadu_ps(m, b + c));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

static AVX512_FN void rmsnorm_fwd_row(float *o, float *rstd, const float *x, int C) {
    float r = (float)(1.0 / sqrt(row_dot_pd(x, x, C) / C + RMS_EPS));
    *rstd = r;
    __m512 vr = _mm512_set1_ps(r);
    for (int c = 0; c < C; c += 16) {
        __mmask16 m = v_mask_first(C - c);
        _mm512_mask_storeu_ps(o + c, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + c), vr));
    }
}

void avx512_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C) {
    rows_rmsnorm_fwd(&AVX512_ROWS, out, rstd, x, N, C);
}

// dx = r (g - x r m), m = mean(g · x r). The dot is finished before anything is written, so dx
// may alias dout (the model does this for the q/k norms).
static AVX512_FN void rmsnorm_bwd_row(float *d, const float *g, const float *x, float r, int C, int accumulate) {
    float mean = (float)(row_dot_pd(g, x, C) * r / C);
    __m512 vr = _mm512_set1_ps(r), vrm = _mm512_set1_ps(r * mean);
    for (int c = 0; c < C; c += 16) {
        __mmask16 m = v_mask_first(C - c);
        __m512 xv = _mm512_maskz_loadu_ps(m, x + c), gv = _mm512_maskz_loadu_ps(m, g + c);
        __m512 v = _mm512_mul_ps(vr, _mm512_fnmadd_ps(xv, vrm, gv));
        if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, d + c), v);
        _mm512_mask_storeu_ps(d + c, m, v);
    }
}

void avx512_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C,
                        int accumulate) {
    rows_rmsnorm_bwd(&AVX512_ROWS, dx, dout, x, rstd, N, C, accumulate);
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding (half-split)
// ---------------------------------------------------------------------------------------------

// All nh heads of one (b, t) row; sn = ±sin selects forward or inverse rotation.
static AVX512_FN void rope_row(float *x, const float *cos, const float *sin, int nh, int D, float dir) {
    int half = D / 2;
    __m512 vdir = _mm512_set1_ps(dir);
    for (int j = 0; j < half; j += 16) {
        __mmask16 m = v_mask_first(half - j);
        __m512 c = _mm512_maskz_loadu_ps(m, cos + j), s = _mm512_mul_ps(vdir, _mm512_maskz_loadu_ps(m, sin + j));
        for (int h = 0; h < nh; h++) {
            float *v = x + (size_t)h * D;
            __m512 x1 = _mm512_maskz_loadu_ps(m, v + j), x2 = _mm512_maskz_loadu_ps(m, v + j + half);
            _mm512_mask_storeu_ps(v + j, m, _mm512_fmadd_ps(x2, s, _mm512_mul_ps(x1, c)));
            _mm512_mask_storeu_ps(v + j + half, m, _mm512_fmsub_ps(x2, c, _mm512_mul_ps(x1, s)));
        }
    }
}

void avx512_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int D) {
    rows_rope(&AVX512_ROWS, x, cos, sin, B, T, nh, D, 1.0f);
}

// The rotation is orthogonal: its backward is the inverse rotation (sin -> -sin).
void avx512_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D) {
    rows_rope(&AVX512_ROWS, dx, cos, sin, B, T, nh, D, -1.0f);
}

// RoPE + QK-norm, fused (rows_rope_rmsnorm_*): the bits of rope_fwd then rmsnorm_fwd, and of
// rmsnorm_bwd then rope_bwd.
void avx512_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T,
                             int nh, int D) {
    rows_rope_rmsnorm_fwd(&AVX512_ROWS, out, rstd, x, cos, sin, B, T, nh, D);
}

void avx512_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                             const float *sin, int B, int T, int nh, int D) {
    rows_rope_rmsnorm_bwd(&AVX512_ROWS, dx, dout, x, rstd, cos, sin, B, T, nh, D);
}

// ---------------------------------------------------------------------------------------------
// ReLU²
// ---------------------------------------------------------------------------------------------

static AVX512_FN void relu2_fwd_span(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = v_mask_first((int)(n - i < 16 ? n - i : 16));
        _mm512_mask_storeu_ps(out + i, m, v_relu2(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

// dx = dout · 2 max(x, 0), written as a masked 2x·dout so that x <= 0 gives +0 whatever dout is
// (as the reference's select), and dx may alias dout.
static AVX512_FN void relu2_bwd_span(float *dx, const float *dout, const float *x, size_t n) {
    __m512 zero = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 16) {
        __mmask16 m = v_mask_first((int)(n - i < 16 ? n - i : 16));
        __m512 xv = _mm512_maskz_loadu_ps(m, x + i), g = _mm512_maskz_loadu_ps(m, dout + i);
        __mmask16 pos = _mm512_cmp_ps_mask(xv, zero, _CMP_GT_OQ);
        __m512 v = _mm512_maskz_mul_ps(pos, _mm512_add_ps(xv, xv), g);
        _mm512_mask_storeu_ps(dx + i, m, v);
    }
}

// Block (i0, j0) of the lower triangle is the transpose of block (j0, i0) of the upper one: its
// source rows are read as 16-float pieces and transposed in registers (one element per cache
// line, as the scalar copy reads them, was ~12% of the samples of a 640 x 640 x 640 symmetric
// avx512bf16_matmul_nt on one thread under `perf record`, a scratch harness; this, ~8%). On a
// diagonal block only the lanes left of the diagonal are stored. Plain copies: the same bits.
AVX512_FN void avx512_mirror_upper(float *c, int M, int i_begin, int i_end) {
    for (int i0 = i_begin; i0 < i_end && i0 < M; i0 += 16) {
        int rows = M - i0 < 16 ? M - i0 : 16;  // destination rows i0.. (source columns)
        for (int j0 = 0; j0 <= i0; j0 += 16) {
            int cols = M - j0 < 16 ? M - j0 : 16;  // destination columns j0.. (source rows)
            __m512 v[16];
            for (int r = 0; r < 16; r++)
                v[r] = r < cols ? _mm512_maskz_loadu_ps(v_mask_first(rows), c + (size_t)(j0 + r) * M + i0)
                                : _mm512_setzero_ps();
            v_transpose16(v);  // v[k] lane r: c[j0 + r][i0 + k]
            for (int k = 0; k < rows; k++) {
                __mmask16 m = v_mask_first(j0 == i0 ? k : cols);
                _mm512_mask_storeu_ps(c + (size_t)(i0 + k) * M + j0, m, v[k]);
            }
        }
    }
}

void avx512_relu2_rows(float *dst, const float *src, size_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) relu2_fwd_span(dst + (size_t)r * cols, src + (size_t)r * ld, (size_t)cols);
}

void avx512_relu2_grad_rows(float *c, const float *x, size_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) relu2_bwd_span(c + (size_t)r * ld, c + (size_t)r * ld, x + (size_t)r * ld, (size_t)cols);
}

void avx512_relu2_fwd(float *out, const float *x, size_t n) { rows_relu2_fwd(&AVX512_ROWS, out, x, n); }

void avx512_relu2_bwd(float *dx, const float *dout, const float *x, size_t n) {
    rows_relu2_bwd(&AVX512_ROWS, dx, dout, x, n);
}

static const RowIsa AVX512_ROWS = {
    .rmsnorm_fwd_row = rmsnorm_fwd_row, .rmsnorm_bwd_row = rmsnorm_bwd_row, .rope_row = rope_row,
    .relu2_fwd_span = relu2_fwd_span, .relu2_bwd_span = relu2_bwd_span, .embedding_bwd_cols = embedding_bwd_cols,
};
