// kernels/simd/vec_avx512.h — the vector-width layer on AVX-512: 16 float lanes (internal header).
//
// Kernels written once for both instruction sets (rows/row_kernels.inc, rows/ce_kernels.inc,
// attention/attention_kernels.inc) use only these names; vec_avx2.h defines the same on 8 lanes.
// A file includes one of the two and then the template. Tails are masked loads and stores that
// touch only lanes [0, n).
#pragma once
#include <stdint.h>

#include "kernels/simd/avx512_vmath.h"

#define VL 16  // float lanes
#define VEC_FN AVX512_FN
#define VEC_INLINE AVX512_INLINE
#define VEC_NAME(x) avx512_##x
typedef __m512 vf;

VEC_INLINE vf vf_loadn(const float *p, int n) { return _mm512_maskz_loadu_ps(v_mask_first(n), p); }
VEC_INLINE void vf_storen(float *p, int n, vf v) { _mm512_mask_storeu_ps(p, v_mask_first(n), v); }
VEC_INLINE vf vf_load(const float *p) { return _mm512_loadu_ps(p); }
VEC_INLINE void vf_store(float *p, vf v) { _mm512_storeu_ps(p, v); }
VEC_INLINE vf vf_set1(float x) { return _mm512_set1_ps(x); }
VEC_INLINE vf vf_zero(void) { return _mm512_setzero_ps(); }
VEC_INLINE vf vf_add(vf a, vf b) { return _mm512_add_ps(a, b); }
VEC_INLINE vf vf_sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
VEC_INLINE vf vf_mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
VEC_INLINE vf vf_max(vf a, vf b) { return _mm512_max_ps(a, b); }
VEC_INLINE vf vf_fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }   // a·b + c
VEC_INLINE vf vf_fmsub(vf a, vf b, vf c) { return _mm512_fmsub_ps(a, b, c); }   // a·b - c
VEC_INLINE vf vf_fnmadd(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); } // c - a·b
VEC_INLINE vf vf_exp(vf x) { return v_exp(x); }
VEC_INLINE vf vf_tanh(vf x) { return v_tanh(x); }
VEC_INLINE vf vf_relu2(vf x) { return v_relu2(x); }
// dout·2x where x > 0, else +0 whatever dout is (the reference's select).
VEC_INLINE vf vf_relu2_grad(vf x, vf g) {
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
    return _mm512_maskz_mul_ps(pos, _mm512_add_ps(x, x), g);
}

// Dropout on lanes i0 .. i0+15 (ops.h): x·scale where dropout_bits(key, i0 + lane) >= t, else +0.
VEC_INLINE vf vf_dropout(vf x, uint32_t key, uint32_t i0, uint32_t t, float scale) {
    __m512i i = _mm512_add_epi32(_mm512_set1_epi32((int)i0), _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                                               12, 13, 14, 15));
    __m512i h = _mm512_xor_si512(_mm512_mullo_epi32(i, _mm512_set1_epi32((int)0x9E3779B9u)), _mm512_set1_epi32((int)key));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
    h = _mm512_mullo_epi32(h, _mm512_set1_epi32(0x7feb352d));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 15));
    h = _mm512_mullo_epi32(h, _mm512_set1_epi32((int)0x846ca68bu));
    h = _mm512_xor_si512(h, _mm512_srli_epi32(h, 16));
    __mmask16 keep = _mm512_cmpge_epu32_mask(h, _mm512_set1_epi32((int)t));
    return _mm512_maskz_mul_ps(keep, x, _mm512_set1_ps(scale));
}

// sum(a[c] · b[c]) over a row of C in double (each product exact): two 8-double accumulators
// over 16-element steps, combined by _mm512_reduce_add_pd. vec_avx2.h groups its sums the same
// way, so both give the same bits.
VEC_INLINE double vf_row_dot_pd(const float *a, const float *b, int C) {
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    for (int c = 0; c < C; c += 16) {
        __mmask16 m = v_mask_first(C - c);
        v_dot_pd(&lo, &hi, _mm512_maskz_loadu_ps(m, a + c), _mm512_maskz_loadu_ps(m, b + c));
    }
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

// Lanes [0, n) of max(mx, x), mx in the others.
VEC_INLINE vf vf_max_first(vf mx, vf x, int n) { return _mm512_mask_max_ps(mx, v_mask_first(n), mx, x); }
// Lanes [0, n) of v, +0 in the others.
VEC_INLINE vf vf_keep_first(vf v, int n) { return _mm512_maskz_mov_ps(v_mask_first(n), v); }
// v with lane `lane` replaced by x.
VEC_INLINE vf vf_set_lane(vf v, int lane, float x) {
    return _mm512_mask_mov_ps(v, (__mmask16)(1u << lane), _mm512_set1_ps(x));
}
// A non-temporal store (p aligned to the vector).
VEC_INLINE void vf_stream(float *p, vf v) { _mm512_stream_ps(p, v); }
VEC_INLINE float vf_hmax(vf v) { return _mm512_reduce_max_ps(v); }
VEC_INLINE double vf_hsum_pd(vf v) { return v_hsum_pd(v); }

// Lanes [lo, hi) of yes, no in the others (lo and hi any ints: clamped to the vector).
VEC_INLINE vf vf_select_range(vf yes, vf no, int lo, int hi) {
    return _mm512_mask_mov_ps(no, v_mask_first(hi) & (__mmask16)~v_mask_first(lo), yes);
}
VEC_INLINE vf vf_broadcast(const float *p) { return _mm512_set1_ps(*p); }
// Sum of the lanes in float, gcc's reduction tree.
VEC_INLINE float vf_hadd(vf v) { return _mm512_reduce_add_ps(v); }
#define VEC_KEEP_IN_REGISTER(x) AVX512_KEEP_IN_REGISTER(x)

// Lane masks for loops that reuse one: lanes [0, n), and loads/stores under them.
typedef __mmask16 vmask;
VEC_INLINE vmask vm_first(int n) { return v_mask_first(n); }
VEC_INLINE vf vf_maskload(const float *p, vmask m) { return _mm512_maskz_loadu_ps(m, p); }
VEC_INLINE void vf_maskstore(float *p, vmask m, vf v) { _mm512_mask_storeu_ps(p, m, v); }
VEC_INLINE vf vf_load_aligned(const float *p) { return _mm512_load_ps(p); }
