// kernels/simd/avx512_vmath.h — vector math shared by the AVX-512 kernels (internal header).
//
// Every function carries the AVX-512 target attribute so the kernels build without
// -march=native; the caller must have checked cpu_info(). Note for OpenMP: clang does not give
// the outlined body of a `#pragma omp parallel` the enclosing function's target features, so
// parallel regions in the kernels only ever *call* AVX512_FN functions and never touch __m512
// values themselves.
//
// exp and tanh follow Cephes' single-precision algorithms (range reduction + minimax
// polynomial; constants in vmath_consts.h, shared with avx2_vmath.h); measured against libm
// over the ranges the kernels use (tests/kernels/rows/test_avx512_ops.c, test_vmath_accuracy): exp
// max relative error 1.2e-7, tanh 1.4e-7 (1-2 ulp).
#pragma once
#include <math.h>

#include "kernels/simd/isa_avx512.h"
#include "kernels/simd/vmath_consts.h"

#define AVX512_FN AVX512_TARGET
#define AVX512_INLINE static inline __attribute__((always_inline)) AVX512_TARGET

// Lanes [0, n) of a 16-lane vector, n clamped to [0, 16].
AVX512_INLINE __mmask16 v_mask_first(int n) {
    return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

// The same for 32 lanes (16-bit elements, e.g. bf16).
AVX512_INLINE __mmask32 v_mask_first32(int n) {
    return n >= 32 ? (__mmask32)0xffffffffu : n <= 0 ? (__mmask32)0 : (__mmask32)((1u << n) - 1);
}

// max(x, 0)², ReLU²'s forward: vmaxps with 0 as its second operand, so a NaN or -0 gives +0 (as
// the reference's select), then one rounding. The op (avx512_ops.c) and the GEMM packers that form
// relu²(operand) while packing (avx512_matmul.c) share it, so both give the same bits.
AVX512_INLINE __m512 v_relu2(__m512 x) {
    __m512 r = _mm512_max_ps(x, _mm512_setzero_ps());
    return _mm512_mul_ps(r, r);
}

// exp and tanh (vmath.inc): v_exp, v_tanh.
#define VM_T __m512
#define VM_MASK __mmask16
#define VM_NAME(x) v_##x
#define VM_INLINE AVX512_INLINE
#define VM_SET1 _mm512_set1_ps
#define VM_ADD _mm512_add_ps
#define VM_SUB _mm512_sub_ps
#define VM_MUL _mm512_mul_ps
#define VM_DIV _mm512_div_ps
#define VM_MIN _mm512_min_ps
#define VM_MAX _mm512_max_ps
#define VM_FMADD _mm512_fmadd_ps
#define VM_FNMADD _mm512_fnmadd_ps
#define VM_ROUND(x) _mm512_roundscale_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
// vscalefps handles overflow to inf and gradual underflow without integer tricks.
#define VM_SCALE2 _mm512_scalef_ps
#define VM_ABS(x) _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_set1_epi32((int)0x80000000u), _mm512_castps_si512(x)))
#define VM_WITH_SIGN(t, x)                                                                      \
    _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),                                 \
                                        _mm512_and_si512(_mm512_set1_epi32((int)0x80000000u), \
                                                         _mm512_castps_si512(x))))
#define VM_GE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define VM_ANY(m) ((m) != 0)
#define VM_BLEND(a, b, m) _mm512_mask_mov_ps((a), (m), (b))
#include "kernels/simd/vmath.inc"

// In-register 16 x 16 transpose: r[i] lane j -> r[j] lane i. Three rounds of 16 shuffles
// (pairs of floats, then of doubles, then 128-bit lanes twice).
AVX512_INLINE void v_transpose16(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4g + q]: rows 4g..4g+3 of columns {q, q+4, q+8, q+12}, one column per 128-bit lane
    for (int g = 0; g < 4; g++) {
        __m512d t0 = _mm512_castps_pd(t[4 * g]), t1 = _mm512_castps_pd(t[4 * g + 1]);
        __m512d t2 = _mm512_castps_pd(t[4 * g + 2]), t3 = _mm512_castps_pd(t[4 * g + 3]);
        u[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    for (int q = 0; q < 4; q++) {
        __m512 w0 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0x88), w1 = _mm512_shuffle_f32x4(u[q], u[4 + q], 0xdd);
        __m512 w2 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0x88);
        __m512 w3 = _mm512_shuffle_f32x4(u[8 + q], u[12 + q], 0xdd);
        r[q] = _mm512_shuffle_f32x4(w0, w2, 0x88);
        r[q + 8] = _mm512_shuffle_f32x4(w0, w2, 0xdd);
        r[q + 4] = _mm512_shuffle_f32x4(w1, w3, 0x88);
        r[q + 12] = _mm512_shuffle_f32x4(w1, w3, 0xdd);
    }
}

// Two rows of 16 bf16 (lanes 0-15 of `both`: row k, 16-31: row k+1) as 16 k pairs: element j
// of each row side by side, row k first — the pair layout of vdpbf16ps operands.
AVX512_INLINE __m512i v_pair_rows16(__m512i both) {
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(interleave, both);
}

// Sum of 16 lanes in double, in a fixed order (so results do not depend on the compiler's
// choice of reduction tree).
AVX512_INLINE double v_hsum_pd(__m512 v) {
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

// Squares/products of 16 floats accumulated into two 8-wide double accumulators: exact
// products (a float times a float fits a double's mantissa), so row statistics keep the
// reference's double-precision accuracy at little cost.
AVX512_INLINE void v_dot_pd(__m512d *acc_lo, __m512d *acc_hi, __m512 a, __m512 b) {
    __m512d alo = _mm512_cvtps_pd(_mm512_castps512_ps256(a));
    __m512d ahi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
    __m512d blo = _mm512_cvtps_pd(_mm512_castps512_ps256(b));
    __m512d bhi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(b), 1)));
    *acc_lo = _mm512_fmadd_pd(alo, blo, *acc_lo);
    *acc_hi = _mm512_fmadd_pd(ahi, bhi, *acc_hi);
}
