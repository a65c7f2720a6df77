// kernels/attention/avx2_attention.c — AVX2 + FMA flash-style causal attention (contract in kernels.h):
// flash_attention.c's blocking and schedules with 8-lane vector pieces, for CPUs without
// AVX-512 (before it the AVX2 table took the reference's attention).
//
// mm4: 4 rows × up to 16 columns (2 ymm per row: 8 accumulators, 2 B vectors and a broadcast of
// the 16 registers); K and V panels transposed in plain C (a pass over K or V per call, small
// next to the tile products); the softmax's row reductions over 8 lanes, so the results differ
// from the AVX-512 attention's in the last bits. exp is avx2_vmath.h's, the AVX-512 one's bits.
// What it is worth against the reference's attention: docs/perf.md, "Moved from code comments".
#include <math.h>
#include <stdlib.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/avx2_vmath.h"
#include "kernels/attention/flash_attention.h"

#ifdef __clang__
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL _Pragma("GCC unroll 8")
#endif

// ---------------------------------------------------------------------------------------------
// The micro-kernel
// ---------------------------------------------------------------------------------------------

// Rows r < 4, columns [col, col + 8·NV): C[r] (+)= sum_{k<K} A(r,k) B[k]; NV (1 or 2) is a
// constant after inlining, so acc lives in 4·NV registers.
AVX2_INLINE void mm4_chunk(float *const crow[4], int col, const float *const arow[4], size_t aks, const float *bm,
                           size_t ldb, int K, int zero_init, const int NV) {
    __m256 acc[4][2];
    UNROLL_FULL
    for (int r = 0; r < 4; r++)
        UNROLL_FULL
        for (int c = 0; c < NV; c++)
            acc[r][c] = zero_init ? _mm256_setzero_ps() : _mm256_loadu_ps(crow[r] + col + 8 * c);
    const float *ap[4] = {arow[0], arow[1], arow[2], arow[3]};
    for (int k = 0; k < K; k++) {
        const float *b = bm + (size_t)k * ldb + col;
        __m256 bv[2];
        UNROLL_FULL
        for (int c = 0; c < NV; c++) {
            bv[c] = _mm256_loadu_ps(b + 8 * c);
            __asm__("" : "+x"(bv[c]));  // one load per B vector, not one per FMA (avx512_attention.c)
        }
        UNROLL_FULL
        for (int r = 0; r < 4; r++) {
            __m256 a = _mm256_broadcast_ss(ap[r] + (size_t)k * aks);
            UNROLL_FULL
            for (int c = 0; c < NV; c++) acc[r][c] = _mm256_fmadd_ps(a, bv[c], acc[r][c]);
        }
    }
    UNROLL_FULL
    for (int r = 0; r < 4; r++)
        UNROLL_FULL
        for (int c = 0; c < NV; c++) _mm256_storeu_ps(crow[r] + col + 8 * c, acc[r][c]);
}

static AVX2_FN void mm4(float *const crow[4], const float *const arow[4], size_t aks, const float *bm, size_t ldb,
                        int K, int ncols, int zero_init) {
    int v0 = 0;
    for (; v0 + 2 <= ncols; v0 += 2) mm4_chunk(crow, 8 * v0, arow, aks, bm, ldb, K, zero_init, 2);
    if (v0 < ncols) mm4_chunk(crow, 8 * v0, arow, aks, bm, ldb, K, zero_init, 1);
}

// ---------------------------------------------------------------------------------------------
// Packing and row pieces
// ---------------------------------------------------------------------------------------------

// dst[d·ATT_BLK + j] = src[j·ld + d], zero for keys past nk.
static void pack_panel(float *dst, const float *src, size_t ld, int nk, int D) {
    for (int j = 0; j < ATT_BLK; j++)
        for (int d = 0; d < D; d++) dst[(size_t)d * ATT_BLK + j] = j < nk ? src[(size_t)j * ld + d] : 0.0f;
}

// Lanes of vector c (keys 8c .. 8c+7) inside [lo, lim), as an all-bits mask.
AVX2_INLINE __m256 lanes_in(int c, int lo, int lim) {
    return _mm256_castsi256_ps(_mm256_andnot_si256(v8_mask_first(lo - 8 * c), v8_mask_first(lim - 8 * c)));
}

// flash_attention.h's softmax_row on 8-lane vectors (up to 8 of them: ATT_BLK keys).
static AVX2_FN float softmax_row(float *srow, int nv, int lo, int lim, float scale, float *m, float *l) {
    if (lo >= lim) {
        for (int c = 0; c < nv; c++) _mm256_storeu_ps(srow + 8 * c, _mm256_setzero_ps());
        return 1.0f;
    }
    __m256 vs = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY);
    __m256 x[ATT_BLK / 8], mx = ninf;
    for (int c = 0; c < nv; c++) {
        x[c] = _mm256_blendv_ps(ninf, _mm256_mul_ps(_mm256_loadu_ps(srow + 8 * c), vs), lanes_in(c, lo, lim));
        mx = _mm256_max_ps(mx, x[c]);
    }
    float mnew = fmaxf(*m, v8_hmax(mx));
    float alpha = expf(*m - mnew);
    __m256 vm = _mm256_set1_ps(mnew), sum = _mm256_setzero_ps();
    for (int c = 0; c < nv; c++) {
        __m256 p = v8_exp(_mm256_sub_ps(x[c], vm));
        _mm256_storeu_ps(srow + 8 * c, p);
        sum = _mm256_add_ps(sum, p);
    }
    *l = *l * alpha + v8_hadd(sum);
    *m = mnew;
    return alpha;
}

static AVX2_FN void scale_row(float *o, float a, int D) {
    __m256 va = _mm256_set1_ps(a);
    for (int d = 0; d < D; d += 8) _mm256_storeu_ps(o + d, _mm256_mul_ps(_mm256_loadu_ps(o + d), va));
}

static AVX2_FN void finish_row(float *out, float *lse, const float *o, float m, float l, int D) {
    __m256 inv = _mm256_set1_ps(1.0f / l);
    for (int d = 0; d < D; d += 8) _mm256_storeu_ps(out + d, _mm256_mul_ps(_mm256_loadu_ps(o + d), inv));
    *lse = m + logf(l);
}

static AVX2_FN void bwd_row(float *prow, float *dsrow, int nv, int lo, int lim, int valid, float scale, float lse,
                            float di) {
    __m256 vs = _mm256_set1_ps(scale), vl = _mm256_set1_ps(lse), vd = _mm256_set1_ps(di);
    for (int c = 0; c < nv; c++) {
        __m256 in = valid ? lanes_in(c, lo, lim) : _mm256_setzero_ps();
        __m256 p = _mm256_and_ps(in, v8_exp(_mm256_fmsub_ps(_mm256_loadu_ps(prow + 8 * c), vs, vl)));
        __m256 ds = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_sub_ps(_mm256_loadu_ps(dsrow + 8 * c), vd)), vs);
        _mm256_storeu_ps(prow + 8 * c, p);
        _mm256_storeu_ps(dsrow + 8 * c, ds);
    }
}

static AVX2_FN float dot(const float *g, const float *o, int D) {
    __m256 acc = _mm256_setzero_ps();
    for (int d = 0; d < D; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(g + d), _mm256_loadu_ps(o + d), acc);
    return (float)v8_hsum_pd(acc);
}

static const AttIsa AVX2_ATT = {.vl = 8, .mm4 = mm4, .pack_panel = pack_panel, .softmax_row = softmax_row,
                                .scale_row = scale_row, .finish_row = finish_row, .bwd_row = bwd_row, .dot = dot};

void avx2_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                        int Hkv, int D, int window) {
    flash_attention_fwd(&AVX2_ATT, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void avx2_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                        int window) {
    flash_attention_bwd(&AVX2_ATT, dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}
