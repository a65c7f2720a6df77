// kernels/attention/avx512_attention.c — AVX-512 flash-style causal attention (contract in
// ops.h): attention_kernels.inc on 16 lanes.
//
// mm4: 4 rows × up to 64 columns (4 zmm per row) of accumulators; K and V panels transposed 16 ×
// 16 in registers.
#include <math.h>
#include <stdlib.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/vec_avx512.h"
#include "kernels/attention/flash_attention.h"

#define ATT_NV 4
// Fully unrolled loops over the 4 rows and NV vectors, so the accumulators stay in registers
// (each compiler needs its own spelling).
#ifdef __clang__
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL _Pragma("GCC unroll 16")
#endif

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

#include "kernels/attention/attention_kernels.inc"
