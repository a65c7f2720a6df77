// kernels/simd/avx2_vmath.h — vector math for the AVX2 + FMA kernels (internal header): the
// AVX-512 kernels' exp and tanh (avx512_vmath.h) on 8 lanes.
//
// The same algorithms, constants and operation order lane for lane, so every lane gives the bits
// the AVX-512 version gives: only the scaling by 2^n is done differently (AVX2 has no vscalefps),
// with the same result. tests/kernels/rows/test_avx2_ops.c compares them with libm and, where the CPU
// has AVX-512, with avx512_vmath.h bit for bit.
// Every function carries the AVX2 + FMA target attribute; the caller must have checked
// cpu_info() (see avx512_vmath.h for why parallel regions must only call such functions).
#pragma once
#include <immintrin.h>

#include "kernels/simd/vmath_consts.h"

#define AVX2_TARGET __attribute__((target("avx2,fma")))
#define AVX2_FN AVX2_TARGET
#define AVX2_INLINE static inline __attribute__((always_inline)) AVX2_TARGET

// Lanes [0, n) of 8 set (all bits), n clamped to [0, 8]: a mask for maskload/maskstore/and.
AVX2_INLINE __m256i v8_mask_first(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// y · 2^n for integral n in [-150, 128] (exp's clamped range) and y in [0.7, 1.5] (exp's
// polynomial), as two multiplies by normal powers of two, n = n1 + n2 with both in [-75, 64]:
// the first is exact, the second rounds once — to a subnormal or to inf where the result leaves
// the normal range — so the value is vscalefps(y, n)'s.
AVX2_INLINE __m256 v8_scale2(__m256 y, __m256 n) {
    __m256i ni = _mm256_cvtps_epi32(n), n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, p1), p2);
}

// exp and tanh (vmath.inc): v8_exp, v8_tanh. Inputs above 89 give +inf (the clamp keeps 2^n
// within v8_scale2's range).
#define VM_T __m256
#define VM_MASK __m256
#define VM_NAME(x) v8_##x
#define VM_INLINE AVX2_INLINE
#define VM_SET1 _mm256_set1_ps
#define VM_ADD _mm256_add_ps
#define VM_SUB _mm256_sub_ps
#define VM_MUL _mm256_mul_ps
#define VM_DIV _mm256_div_ps
#define VM_MIN _mm256_min_ps
#define VM_MAX _mm256_max_ps
#define VM_FMADD _mm256_fmadd_ps
#define VM_FNMADD _mm256_fnmadd_ps
#define VM_ROUND(x) _mm256_round_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM_SCALE2 v8_scale2
#define VM_EXP_HI 89.0f
#define VM_ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (x))
#define VM_WITH_SIGN(t, x) _mm256_or_ps((t), _mm256_and_ps(_mm256_set1_ps(-0.0f), (x)))
#define VM_GE(a, b) _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define VM_ANY(m) (_mm256_movemask_ps(m) != 0)
#define VM_BLEND(a, b, m) _mm256_blendv_ps((a), (b), (m))
#include "kernels/simd/vmath.inc"

// The largest of 8 lanes.
AVX2_INLINE float v8_hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// Sum of 8 lanes in float, in a fixed order: (0+4, 1+5, 2+6, 3+7), then pairs, then the two.
AVX2_INLINE float v8_hadd(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Sum of 8 lanes in double, in a fixed order: (0+4, 1+5, 2+6, 3+7), then pairs, then the two.
AVX2_INLINE double v8_hsum_pd(__m256 v) {
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    __m256d s = _mm256_add_pd(lo, hi);
    __m128d t = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(t, _mm_unpackhi_pd(t, t)));
}
