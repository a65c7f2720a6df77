// kernels/simd/isa_avx512.h — the AVX-512 kernels' intrinsics and target attributes (internal).
//
// Every AVX-512 kernel file includes this instead of <immintrin.h>. Normally it is
// <immintrin.h>, and the attributes compile each function for AVX-512 (F/BW/VL/DQ, and BF16
// where named) whatever the build's -march; callers check cpu_info() first.
//
// Built with -DFRONTIER_EMULATE_AVX512 (`make emulate-avx512`, run by `make test`), the same
// source compiles against SIMDe's portable AVX-512 (libsimde-dev) on an AVX2 machine, and
// cpu_info() reports AVX-512 + AVX512_BF16 (never AMX): the AVX-512 kernels' logic — packing,
// masks, tails, blocking, the schedules — then runs and is checked against the references on a
// CPU without AVX-512. It proves correctness, not speed, and not the hardware's rounding of
// vdpbf16ps (emulated here per the SDM's pseudocode: see simde_emu_dpbf16_ps).
#pragma once

#ifndef FRONTIER_EMULATE_AVX512

#include <immintrin.h>
#define AVX512_TARGET_LIST "avx512f,avx512bw,avx512vl,avx512dq"
#define AVX512_BF16_TARGET_LIST AVX512_TARGET_LIST ",avx512bf16"

#else

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define AVX512_TARGET_LIST "avx2,fma"
#define AVX512_BF16_TARGET_LIST AVX512_TARGET_LIST

// What SIMDe 0.7 lacks, lane by lane. Masked loads read only the selected lanes (a masked tail
// must not touch memory past the end), as the instructions do.
#define SIMDE_EMU_INLINE static inline __attribute__((always_inline, unused))

// Lanes i of `lanes` (each `size` bytes) where bit i of m is set, copied from src to dst; the
// others are neither read nor written.
SIMDE_EMU_INLINE void simde_emu_mask_copy(void *dst, const void *src, uint32_t m, int lanes, size_t size) {
    for (int i = 0; i < lanes; i++)
        if (m >> i & 1) memcpy((char *)dst + size * i, (const char *)src + size * i, size);
}
SIMDE_EMU_INLINE simde__m512 simde_emu_maskz_loadu_ps(uint16_t m, const void *p) {
    float v[16] = {0};
    simde_emu_mask_copy(v, p, m, 16, 4);
    return simde_mm512_loadu_ps(v);
}
SIMDE_EMU_INLINE simde__m512i simde_emu_maskz_loadu_epi32(uint16_t m, const void *p) {
    return simde_mm512_castps_si512(simde_emu_maskz_loadu_ps(m, p));
}
SIMDE_EMU_INLINE void simde_emu_mask_storeu_ps(void *p, uint16_t m, simde__m512 x) {
    float v[16];
    simde_mm512_storeu_ps(v, x);
    simde_emu_mask_copy(p, v, m, 16, 4);
}
SIMDE_EMU_INLINE simde__m512i simde_emu_maskz_loadu_epi16(uint32_t m, const void *p) {
    uint16_t v[32] = {0};
    simde_emu_mask_copy(v, p, m, 32, 2);
    return simde_mm512_loadu_si512(v);
}
SIMDE_EMU_INLINE void simde_emu_mask_storeu_epi16(void *p, uint32_t m, simde__m512i x) {
    uint16_t v[32];
    simde_mm512_storeu_si512(v, x);
    simde_emu_mask_copy(p, v, m, 32, 2);
}
SIMDE_EMU_INLINE simde__m256i simde_emu256_maskz_loadu_epi16(uint16_t m, const void *p) {
    uint16_t v[16] = {0};
    simde_emu_mask_copy(v, p, m, 16, 2);
    return simde_mm256_loadu_si256(v);
}
SIMDE_EMU_INLINE void simde_emu256_mask_storeu_epi16(void *p, uint16_t m, simde__m256i x) {
    uint16_t v[16];
    simde_mm256_storeu_si256(v, x);
    simde_emu_mask_copy(p, v, m, 16, 2);
}

// gcc's reduction trees (avx512fintrin.h), so sums come out in the order the real build uses.
SIMDE_EMU_INLINE float simde_emu_reduce_add_ps(simde__m512 a) {
    float v[16];
    simde_mm512_storeu_ps(v, a);
    float t[8], u[4];
    for (int i = 0; i < 8; i++) t[i] = v[8 + i] + v[i];
    for (int i = 0; i < 4; i++) u[i] = t[4 + i] + t[i];
    float w0 = u[0] + u[2], w1 = u[1] + u[3];
    return w0 + w1;
}
SIMDE_EMU_INLINE float simde_emu_reduce_max_ps(simde__m512 a) {
    simde__m256 t = simde_mm256_max_ps(simde_mm256_castpd_ps(simde_mm512_extractf64x4_pd(simde_mm512_castps_pd(a), 1)),
                                       simde_mm256_castpd_ps(simde_mm512_extractf64x4_pd(simde_mm512_castps_pd(a), 0)));
    simde__m128 u = simde_mm_max_ps(simde_mm256_extractf128_ps(t, 1), simde_mm256_extractf128_ps(t, 0));
    simde__m128 w = simde_mm_max_ps(u, simde_mm_shuffle_ps(u, u, SIMDE_MM_SHUFFLE(1, 0, 3, 2)));
    w = simde_mm_max_ps(w, simde_mm_shuffle_ps(w, w, SIMDE_MM_SHUFFLE(0, 1, 0, 1)));
    return simde_mm_cvtss_f32(w);
}
SIMDE_EMU_INLINE double simde_emu_reduce_add_pd(simde__m512d a) {
    double v[8];
    simde_mm512_storeu_pd(v, a);
    double t[4];
    for (int i = 0; i < 4; i++) t[i] = v[4 + i] + v[i];
    double u0 = t[2] + t[0], u1 = t[3] + t[1];
    return u0 + u1;
}
SIMDE_EMU_INLINE simde__m512d simde_emu_cvtps_pd(simde__m256 a) {
    float v[8];
    double d[8];
    simde_mm256_storeu_ps(v, a);
    for (int i = 0; i < 8; i++) d[i] = v[i];
    return simde_mm512_loadu_pd(d);
}

// VCVTNEPS2BF16's conversion (SDM): round to nearest even, NaN quieted, denormal inputs to a zero
// of their sign; MXCSR not consulted.
SIMDE_EMU_INLINE uint16_t simde_emu_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(u >> 16 | 0x40);
    if ((u & 0x7f800000u) == 0) return (uint16_t)(u >> 16 & 0x8000);
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}
SIMDE_EMU_INLINE simde__m512bh simde_emu_cvtne2ps_pbh(simde__m512 a, simde__m512 b) {
    float va[16], vb[16];
    uint16_t r[32];
    simde_mm512_storeu_ps(va, a);
    simde_mm512_storeu_ps(vb, b);
    for (int i = 0; i < 16; i++) r[i] = simde_emu_bf16(vb[i]), r[16 + i] = simde_emu_bf16(va[i]);
    simde__m512bh out;
    memcpy(&out, r, sizeof r);
    return out;
}
SIMDE_EMU_INLINE simde__m256bh simde_emu_cvtneps_pbh(simde__m512 a) {
    float va[16];
    uint16_t r[16];
    simde_mm512_storeu_ps(va, a);
    for (int i = 0; i < 16; i++) r[i] = simde_emu_bf16(va[i]);
    simde__m256bh out;
    memcpy(&out, r, sizeof r);
    return out;
}

// VDPBF16PS per the SDM's pseudocode: per fp32 lane, the odd pair's product added first, then
// the even one's, each add rounded to nearest even with denormal inputs and results flushed.
SIMDE_EMU_INLINE float simde_emu_ftz(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    memcpy(&x, &u, 4);
    return x;
}
SIMDE_EMU_INLINE float simde_emu_bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return simde_emu_ftz(f);
}
SIMDE_EMU_INLINE simde__m512 simde_emu_dpbf16_ps(simde__m512 src, simde__m512bh a, simde__m512bh b) {
    float s[16];
    uint16_t va[32], vb[32];
    simde_mm512_storeu_ps(s, src);
    memcpy(va, &a, sizeof va);
    memcpy(vb, &b, sizeof vb);
    for (int i = 0; i < 16; i++) {
        float c = simde_emu_ftz(s[i]);
        volatile float p1 = simde_emu_bf16_value(va[2 * i + 1]) * simde_emu_bf16_value(vb[2 * i + 1]);
        c = simde_emu_ftz(c + p1);
        volatile float p0 = simde_emu_bf16_value(va[2 * i]) * simde_emu_bf16_value(vb[2 * i]);
        s[i] = simde_emu_ftz(c + p0);
    }
    return simde_mm512_loadu_ps(s);
}

// VSCALEFPS with MXCSR's defaults (no DAZ/FTZ): a · 2^floor(b) rounded once, so results below
// the normal range are gradual (SIMDe 0.7 flushes them to 0). NaNs propagate; b = ±inf is
// outside what the kernels pass (their b is integral and finite) and is not modelled.
SIMDE_EMU_INLINE simde__m512 simde_emu_scalef_ps(simde__m512 a, simde__m512 b) {
    float va[16], vb[16];
    simde_mm512_storeu_ps(va, a);
    simde_mm512_storeu_ps(vb, b);
    for (int i = 0; i < 16; i++) {
        if (va[i] != va[i] || vb[i] != vb[i]) { va[i] = va[i] + vb[i]; continue; }
        float n = floorf(vb[i]);
        va[i] = scalbnf(va[i], n > 1000.0f ? 1000 : n < -1000.0f ? -1000 : (int)n);
    }
    return simde_mm512_loadu_ps(va);
}

// Non-temporal stores are plain stores here.
SIMDE_EMU_INLINE void simde_emu_stream_ps(void *p, simde__m512 x) { simde_mm512_storeu_ps(p, x); }
SIMDE_EMU_INLINE void simde_emu_stream_si512(void *p, simde__m512i x) { simde_mm512_storeu_si512(p, x); }

#define _mm512_maskz_loadu_ps(m, p) simde_emu_maskz_loadu_ps((uint16_t)(m), (p))
#define _mm512_maskz_loadu_epi32(m, p) simde_emu_maskz_loadu_epi32((uint16_t)(m), (p))
#define _mm512_mask_storeu_ps(p, m, x) simde_emu_mask_storeu_ps((p), (uint16_t)(m), (x))
#define _mm512_maskz_loadu_epi16(m, p) simde_emu_maskz_loadu_epi16((uint32_t)(m), (p))
#define _mm512_mask_storeu_epi16(p, m, x) simde_emu_mask_storeu_epi16((p), (uint32_t)(m), (x))
#define _mm256_maskz_loadu_epi16(m, p) simde_emu256_maskz_loadu_epi16((uint16_t)(m), (p))
#define _mm256_mask_storeu_epi16(p, m, x) simde_emu256_mask_storeu_epi16((p), (uint16_t)(m), (x))
#define _mm512_reduce_add_ps(a) simde_emu_reduce_add_ps(a)
#define _mm512_reduce_max_ps(a) simde_emu_reduce_max_ps(a)
#define _mm512_reduce_add_pd(a) simde_emu_reduce_add_pd(a)
#define _mm512_cvtps_pd(a) simde_emu_cvtps_pd(a)
#define _mm512_cvtne2ps_pbh(a, b) simde_emu_cvtne2ps_pbh((a), (b))
#define _mm512_cvtneps_pbh(a) simde_emu_cvtneps_pbh(a)
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps(s, a, b) simde_emu_dpbf16_ps((s), (a), (b))
#undef _mm512_scalef_ps
#define _mm512_scalef_ps(a, b) simde_emu_scalef_ps((a), (b))
#define _mm512_shuffle_f32x4(a, b, imm) simde_mm512_shuffle_f32x4((a), (b), (imm))
#define _mm512_stream_ps(p, x) simde_emu_stream_ps((p), (x))
#define _mm512_stream_si512(p, x) simde_emu_stream_si512((p), (x))

#endif

#define AVX512_TARGET __attribute__((target(AVX512_TARGET_LIST)))
// Keeps vector x in a register from here on (an empty asm that "changes" it: the compiler cannot
// fold x's load into each instruction that uses it). A no-op in the emulation build, where x is
// SIMDe's two-register struct.
#ifdef FRONTIER_EMULATE_AVX512
#define AVX512_KEEP_IN_REGISTER(x) ((void)0)
#else
#define AVX512_KEEP_IN_REGISTER(x) __asm__("" : "+v"(x))
#endif
#define AVX512_BF16_TARGET __attribute__((target(AVX512_BF16_TARGET_LIST)))
