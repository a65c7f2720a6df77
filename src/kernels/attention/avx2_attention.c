// kernels/attention/avx2_attention.c — AVX2 + FMA flash-style causal attention (contract in
// ops.h): attention_kernels.inc on 8 lanes, for CPUs without AVX-512 (before it the AVX2
// table took the reference's attention; what it is worth: docs/perf.md, "Moved from code
// comments").
//
// mm4: 4 rows × up to 16 columns (2 ymm per row: 8 accumulators, 2 B vectors and a broadcast of
// the 16 registers); K and V panels transposed in plain C (a pass over K or V per call, small
// next to the tile products).
#include <math.h>
#include <stdlib.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/vec_avx2.h"
#include "kernels/attention/flash_attention.h"

#define ATT_NV 2
#ifdef __clang__
#define UNROLL_FULL _Pragma("clang loop unroll(full)")
#else
#define UNROLL_FULL _Pragma("GCC unroll 8")
#endif

// dst[d·ATT_BLK + j] = src[j·ld + d], zero for keys past nk.
static void pack_panel(float *dst, const float *src, size_t ld, int nk, int D) {
    for (int j = 0; j < ATT_BLK; j++)
        for (int d = 0; d < D; d++) dst[(size_t)d * ATT_BLK + j] = j < nk ? src[(size_t)j * ld + d] : 0.0f;
}

#include "kernels/attention/attention_kernels.inc"
