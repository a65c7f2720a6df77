// kernels/simd/vec_avx2.h — the vector-width layer on AVX2 + FMA: 8 float lanes (internal
// header). The names of vec_avx512.h, with the same results lane for lane; see there.
#pragma once
#include <stdint.h>

#include "kernels/simd/avx2_vmath.h"

#define VL 8  // float lanes
#define VEC_FN AVX2_FN
#define VEC_INLINE AVX2_INLINE
#define VEC_NAME(x) avx2_##x
typedef __m256 vf;

// Lanes [0, n) of the 8 at p (0 in the others), and the matching store.
VEC_INLINE vf vf_loadn(const float *p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, v8_mask_first(n));
}
VEC_INLINE void vf_storen(float *p, int n, vf v) {
    if (n >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, v8_mask_first(n), v);
}
VEC_INLINE vf vf_load(const float *p) { return _mm256_loadu_ps(p); }
VEC_INLINE void vf_store(float *p, vf v) { _mm256_storeu_ps(p, v); }
VEC_INLINE vf vf_set1(float x) { return _mm256_set1_ps(x); }
VEC_INLINE vf vf_zero(void) { return _mm256_setzero_ps(); }
VEC_INLINE vf vf_add(vf a, vf b) { return _mm256_add_ps(a, b); }
VEC_INLINE vf vf_sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
VEC_INLINE vf vf_mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
VEC_INLINE vf vf_max(vf a, vf b) { return _mm256_max_ps(a, b); }
VEC_INLINE vf vf_fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
VEC_INLINE vf vf_fmsub(vf a, vf b, vf c) { return _mm256_fmsub_ps(a, b, c); }
VEC_INLINE vf vf_fnmadd(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
VEC_INLINE vf vf_exp(vf x) { return v8_exp(x); }
VEC_INLINE vf vf_tanh(vf x) { return v8_tanh(x); }
// max(x, 0)²: vmaxps with 0 second, so a NaN or -0 gives +0 (as the reference's select).
VEC_INLINE vf vf_relu2(vf x) {
    __m256 r = _mm256_max_ps(x, _mm256_setzero_ps());
    return _mm256_mul_ps(r, r);
}
// dout·2x where x > 0, else +0: the product anded with the comparison's mask.
VEC_INLINE vf vf_relu2_grad(vf x, vf g) {
    __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
    return _mm256_and_ps(pos, _mm256_mul_ps(_mm256_add_ps(x, x), g));
}

// vec_avx512.h's vf_dropout on 8 lanes (the unsigned >= as a signed > with the sign bits flipped).
VEC_INLINE vf vf_dropout(vf x, uint32_t key, uint32_t i0, uint32_t t, float scale) {
    __m256i i = _mm256_add_epi32(_mm256_set1_epi32((int)i0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i h = _mm256_xor_si256(_mm256_mullo_epi32(i, _mm256_set1_epi32((int)0x9E3779B9u)), _mm256_set1_epi32((int)key));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32(0x7feb352d));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 15));
    h = _mm256_mullo_epi32(h, _mm256_set1_epi32((int)0x846ca68bu));
    h = _mm256_xor_si256(h, _mm256_srli_epi32(h, 16));
    const __m256i sign = _mm256_set1_epi32(INT32_MIN);
    __m256i drop = _mm256_cmpgt_epi32(_mm256_xor_si256(_mm256_set1_epi32((int)t), sign), _mm256_xor_si256(h, sign));
    return _mm256_andnot_ps(_mm256_castsi256_ps(drop), _mm256_mul_ps(x, _mm256_set1_ps(scale)));
}

// vec_avx512.h's vf_row_dot_pd on 8 lanes: per 16 elements, elements 0-3, 4-7, 8-11 and 12-15
// into partial sums s[0..3]; then (s[1] + s[3]) + (s[0] + s[2]) lane-wise, the upper two lanes
// onto the lower two, and the last two — _mm512_reduce_add_pd's order on AVX-512's (lo, hi)
// accumulators.
VEC_INLINE void v8_dot_pd(__m256d *s_lo, __m256d *s_hi, __m256 a, __m256 b) {
    __m256d alo = _mm256_cvtps_pd(_mm256_castps256_ps128(a)), ahi = _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1));
    __m256d blo = _mm256_cvtps_pd(_mm256_castps256_ps128(b)), bhi = _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1));
    *s_lo = _mm256_fmadd_pd(alo, blo, *s_lo);
    *s_hi = _mm256_fmadd_pd(ahi, bhi, *s_hi);
}
VEC_INLINE double vf_row_dot_pd(const float *a, const float *b, int C) {
    __m256d s[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    for (int c = 0; c < C; c += 16) {
        v8_dot_pd(&s[0], &s[1], vf_loadn(a + c, C - c), vf_loadn(b + c, C - c));
        if (C - c > 8) v8_dot_pd(&s[2], &s[3], vf_loadn(a + c + 8, C - c - 8), vf_loadn(b + c + 8, C - c - 8));
    }
    __m256d t = _mm256_add_pd(_mm256_add_pd(s[1], s[3]), _mm256_add_pd(s[0], s[2]));
    __m128d u = _mm_add_pd(_mm256_extractf128_pd(t, 1), _mm256_castpd256_pd128(t));
    return _mm_cvtsd_f64(u) + _mm_cvtsd_f64(_mm_unpackhi_pd(u, u));
}

// Lanes [0, n) of max(mx, x), mx in the others.
VEC_INLINE vf vf_max_first(vf mx, vf x, int n) {
    if (n >= 8) return _mm256_max_ps(mx, x);
    return _mm256_blendv_ps(mx, _mm256_max_ps(mx, x), _mm256_castsi256_ps(v8_mask_first(n)));
}
// Lanes [0, n) of v, +0 in the others.
VEC_INLINE vf vf_keep_first(vf v, int n) {
    return n >= 8 ? v : _mm256_and_ps(v, _mm256_castsi256_ps(v8_mask_first(n)));
}
// v with lane `lane` replaced by x.
VEC_INLINE vf vf_set_lane(vf v, int lane, float x) {
    __m256i m = _mm256_cmpeq_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(lane));
    return _mm256_blendv_ps(v, _mm256_set1_ps(x), _mm256_castsi256_ps(m));
}
// A non-temporal store (p aligned to the vector).
VEC_INLINE void vf_stream(float *p, vf v) { _mm256_stream_ps(p, v); }
VEC_INLINE float vf_hmax(vf v) { return v8_hmax(v); }
VEC_INLINE double vf_hsum_pd(vf v) { return v8_hsum_pd(v); }

// Lanes [lo, hi) of yes, no in the others (lo and hi any ints: clamped to the vector).
VEC_INLINE vf vf_select_range(vf yes, vf no, int lo, int hi) {
    __m256i in = _mm256_andnot_si256(v8_mask_first(lo), v8_mask_first(hi));
    return _mm256_blendv_ps(no, yes, _mm256_castsi256_ps(in));
}
VEC_INLINE vf vf_broadcast(const float *p) { return _mm256_broadcast_ss(p); }
// Sum of the lanes in float: (0+4, 1+5, 2+6, 3+7), then pairs, then the two.
VEC_INLINE float vf_hadd(vf v) { return v8_hadd(v); }
// Keeps vector x in a register from here on (see isa_avx512.h's AVX512_KEEP_IN_REGISTER).
#define VEC_KEEP_IN_REGISTER(x) __asm__("" : "+x"(x))

// Lane masks for loops that reuse one: lanes [0, n), and loads/stores under them.
typedef __m256i vmask;
VEC_INLINE vmask vm_first(int n) { return v8_mask_first(n); }
VEC_INLINE vf vf_maskload(const float *p, vmask m) { return _mm256_maskload_ps(p, m); }
VEC_INLINE void vf_maskstore(float *p, vmask m, vf v) { _mm256_maskstore_ps(p, m, v); }
VEC_INLINE vf vf_load_aligned(const float *p) { return _mm256_load_ps(p); }
