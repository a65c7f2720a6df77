// kernels/attention/avx512_attention.c — AVX-512 flash-style causal attention (contract in kernels.h):
// flash_attention.c's blocking and schedules with 16-lane vector pieces.
//
// mm4: 4 rows × up to 64 columns (4 zmm per row) of accumulators; K and V panels transposed 16 ×
// 16 in registers; the softmax's row reductions over 16 lanes.
#include <math.h>
#include <stdlib.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/avx512_vmath.h"
#include "kernels/attention/flash_attention.h"

static inline int imin(int a, int b) { return a < b ? a : b; }

// Fully unrolled loops over the 4 rows and NV vectors, so the accumulators stay in registers
// (each compiler needs its own spelling).
#ifdef __clang__
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL _Pragma("GCC unroll 16")
#endif

// Rows r < 4, columns [0, 16·NV): C[r] (+)= sum_{k<K} A(r,k) B[k], A(r,k) = arow[r][k·aks],
// B[k] = bm + k·ldb. NV is a constant after inlining, so acc lives in 4·NV registers.
AVX512_INLINE void mm4_chunk(float *const crow[4], int col, const float *const arow[4], size_t aks,
                             const float *bm, size_t ldb, int K, int zero_init, const int NV) {
    __m512 acc[4][4];
    UNROLL_FULL
    for (int r = 0; r < 4; r++)
        UNROLL_FULL
        for (int c = 0; c < NV; c++)
            acc[r][c] = zero_init ? _mm512_setzero_ps() : _mm512_loadu_ps(crow[r] + col + 16 * c);
    const float *ap[4] = {arow[0], arow[1], arow[2], arow[3]};  // locals: not re-read each step
    for (int k = 0; k < K; k++) {
        const float *b = bm + (size_t)k * ldb + col;
        __m512 bv[4];
        UNROLL_FULL
        for (int c = 0; c < NV; c++) {
            bv[c] = _mm512_loadu_ps(b + 16 * c);
            // Keep the B vector in a register: compilers otherwise fold the load into each of
            // the 4 FMAs using it, and 4 loads per B vector make the loop load-bound.
            AVX512_KEEP_IN_REGISTER(bv[c]);
        }
        UNROLL_FULL
        for (int r = 0; r < 4; r++) {
            __m512 a = _mm512_set1_ps(ap[r][(size_t)k * aks]);
            UNROLL_FULL
            for (int c = 0; c < NV; c++) acc[r][c] = _mm512_fmadd_ps(a, bv[c], acc[r][c]);
        }
    }
    UNROLL_FULL
    for (int r = 0; r < 4; r++)
        UNROLL_FULL
        for (int c = 0; c < NV; c++) _mm512_storeu_ps(crow[r] + col + 16 * c, acc[r][c]);
}

// mm4 over ncols vectors of 16 columns, in chunks of 4 vectors.
static AVX512_FN void mm4(float *const crow[4], const float *const arow[4], size_t aks, const float *bm, size_t ldb,
                          int K, int ncols, int zero_init) {
    for (int v0 = 0; v0 < ncols; v0 += 4) {
        int col = 16 * v0;
        switch (imin(4, ncols - v0)) {
        case 1: mm4_chunk(crow, col, arow, aks, bm, ldb, K, zero_init, 1); break;
        case 2: mm4_chunk(crow, col, arow, aks, bm, ldb, K, zero_init, 2); break;
        case 3: mm4_chunk(crow, col, arow, aks, bm, ldb, K, zero_init, 3); break;
        default: mm4_chunk(crow, col, arow, aks, bm, ldb, K, zero_init, 4); break;
        }
    }
}

// dst[d·ATT_BLK + j] = src[j·ld + d], zero for keys past nk; 16 × 16 blocks at a time.
static AVX512_FN void pack_panel(float *dst, const float *src, size_t ld, int nk, int D) {
    for (int j0 = 0; j0 < ATT_BLK; j0 += 16)
        for (int d0 = 0; d0 < D; d0 += 16) {
            __m512 r[16];
            UNROLL_FULL
            for (int i = 0; i < 16; i++)
                r[i] = j0 + i < nk ? _mm512_loadu_ps(src + (size_t)(j0 + i) * ld + d0) : _mm512_setzero_ps();
            v_transpose16(r);
            UNROLL_FULL
            for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + (size_t)(d0 + i) * ATT_BLK + j0, r[i]);
        }
}

// Online-softmax update of one score row (nv vectors, lanes outside [lo, lim) masked): p
// overwrites the scores, the running max m and sum l are updated, and alpha = exp(m_old - m_new)
// is returned for rescaling the output row. A row the window hides the whole block from gets
// p = 0 and no update (its running max may still be -inf, which would make alpha NaN).
static AVX512_FN float softmax_row(float *srow, int nv, int lo, int lim, float scale, float *m, float *l) {
    if (lo >= lim) {
        for (int c = 0; c < nv; c++) _mm512_storeu_ps(srow + 16 * c, _mm512_setzero_ps());
        return 1.0f;
    }
    __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    __m512 x[4], mx = ninf;
    for (int c = 0; c < nv; c++) {
        __mmask16 k = v_mask_first(lim - 16 * c) & (__mmask16)~v_mask_first(lo - 16 * c);
        x[c] = _mm512_mask_mul_ps(ninf, k, _mm512_loadu_ps(srow + 16 * c), vs);
        mx = _mm512_max_ps(mx, x[c]);
    }
    float mnew = fmaxf(*m, _mm512_reduce_max_ps(mx));
    float alpha = expf(*m - mnew);
    __m512 vm = _mm512_set1_ps(mnew), sum = _mm512_setzero_ps();
    for (int c = 0; c < nv; c++) {
        __m512 p = v_exp(_mm512_sub_ps(x[c], vm));
        _mm512_storeu_ps(srow + 16 * c, p);
        sum = _mm512_add_ps(sum, p);
    }
    *l = *l * alpha + _mm512_reduce_add_ps(sum);
    *m = mnew;
    return alpha;
}

static AVX512_FN void scale_row(float *o, float a, int D) {
    __m512 va = _mm512_set1_ps(a);
    for (int d = 0; d < D; d += 16) _mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), va));
}

static AVX512_FN void fwd_finish_row(float *out, float *lse, const float *o, float m, float l, int D) {
    __m512 inv = _mm512_set1_ps(1.0f / l);
    for (int d = 0; d < D; d += 16) _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), inv));
    *lse = m + logf(l);
}

// P = exp(S·scale - lse) and dS = P (dP - D_i) scale for one row; lanes outside [lo, lim) and
// rows past the sequence (valid = 0) are 0.
static AVX512_FN void bwd_row(float *prow, float *dsrow, int nv, int lo, int lim, int valid, float scale, float lse,
                              float di) {
    __m512 vs = _mm512_set1_ps(scale), vl = _mm512_set1_ps(lse), vd = _mm512_set1_ps(di);
    for (int c = 0; c < nv; c++) {
        __mmask16 m = valid ? v_mask_first(lim - 16 * c) & (__mmask16)~v_mask_first(lo - 16 * c) : 0;
        __m512 p = _mm512_maskz_mov_ps(m, v_exp(_mm512_fmsub_ps(_mm512_loadu_ps(prow + 16 * c), vs, vl)));
        __m512 ds = _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(_mm512_loadu_ps(dsrow + 16 * c), vd)), vs);
        _mm512_storeu_ps(prow + 16 * c, p);
        _mm512_storeu_ps(dsrow + 16 * c, ds);
    }
}

// D_i's dot, in float lanes then summed in double (as the reference's float sum, to 1 ulp).
static AVX512_FN float dot(const float *g, const float *o, int D) {
    __m512 acc = _mm512_setzero_ps();
    for (int d = 0; d < D; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(g + d), _mm512_loadu_ps(o + d), acc);
    return (float)v_hsum_pd(acc);
}

static const AttIsa AVX512_ATT = {.vl = 16, .mm4 = mm4, .pack_panel = pack_panel, .softmax_row = softmax_row,
                                  .scale_row = scale_row, .finish_row = fwd_finish_row, .bwd_row = bwd_row, .dot = dot};

void avx512_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                          int H, int Hkv, int D, int window) {
    flash_attention_fwd(&AVX512_ATT, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void avx512_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                          const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                          int window) {
    flash_attention_bwd(&AVX512_ATT, dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}
