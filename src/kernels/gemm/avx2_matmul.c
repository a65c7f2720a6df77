// kernels/gemm/avx2_matmul.c — AVX2 + FMA fp32 matrix products (see simd_matmul.h; blocking and
// threading in gemm_driver.c).
//
// Micro-kernel 6 x 16: per k, two aligned loads of the packed B row (16 floats), 6 broadcasts
// of packed A and 12 FMAs into 12 ymm accumulators (15 of the 16 registers). The same FMA chain
// per element as the AVX-512 kernel, so both give the same bits. A second tile reads A unpacked
// from its rows (use_direct_a in gemm_driver.c). The transposing packer is plain C, the copying
// one masked ymm moves: this path exists for CPUs without AVX-512.
#include <immintrin.h>

#include "kernels/simd/vec_avx2.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/gemm/simd_matmul.h"

#define TARGET_FN __attribute__((target("avx2,fma")))
#define INLINE_FN static inline __attribute__((always_inline)) TARGET_FN

#define MR 6
#define NR 16

// ---------------------------------------------------------------------------------------------
// Packing
// ---------------------------------------------------------------------------------------------

INLINE_FN void pack(float *dst, const float *src, size_t ld, int W, int w, int kc, int transpose) {
    if (transpose) {
        // read each source row once, contiguously; the destination (<= 24 KiB) stays in L1
        for (int r = 0; r < w; r++)
            for (int k = 0; k < kc; k++) dst[(size_t)k * W + r] = src[(size_t)r * ld + k];
        for (int k = 0; k < kc; k++)
            for (int r = w; r < W; r++) dst[(size_t)k * W + r] = 0.0f;
        return;
    }
    // k rows of w floats, zero-padded to W, a masked ymm at a time (vmaskmov: masked-off lanes
    // are neither read nor written, so a ragged edge stays inside the operand): the scalar copy of 6-float
    // pieces was a large part of the AVX2 head_dw (TN products pack A this way; docs/perf.md).
    for (int k = 0; k < kc; k++)
        for (int r0 = 0; r0 < W; r0 += 8)
            _mm256_maskstore_ps(dst + (size_t)k * W + r0, v8_mask_first(W - r0),
                                _mm256_maskload_ps(src + (size_t)k * ld + r0, v8_mask_first(w - r0)));
}

static TARGET_FN void pack_a(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    pack(dst, src, ld, MR, w, kc, transpose);
}
static TARGET_FN void pack_b(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    pack(dst, src, ld, NR, w, kc, transpose);
}

// max(x, 0)² in ymm: vmaxps with 0 as its second operand (a NaN or -0 gives +0), one rounding.
// relu2_rows and pack_b_relu2 share it, so both give the same bits.
INLINE_FN __m256 relu2_ymm(__m256 x) {
    __m256 r = _mm256_max_ps(x, _mm256_setzero_ps());
    return _mm256_mul_ps(r, r);
}

// B's copy layout (nn, tn) of max(src, 0)², formed while packing: the same bits as relu2_rows
// into scratch and pack_b from there. (The transposed layout stays on that path: a scalar relu²
// in its element loop made the AVX2 relu2 ops 1.7x slower.)
static TARGET_FN void pack_b_relu2(void *dst, const float *src, size_t ld, int w, int kc) {
    float *d = dst;
    const __m256i m0 = v8_mask_first(w), m1 = v8_mask_first(w - 8);
    for (int k = 0; k < kc; k++) {
        const float *s = src + (size_t)k * ld;
        _mm256_store_ps(d + (size_t)k * NR, relu2_ymm(_mm256_maskload_ps(s, m0)));  // lanes past w: 0, the padding
        _mm256_store_ps(d + (size_t)k * NR + 8, relu2_ymm(_mm256_maskload_ps(s + 8, m1)));
    }
}

// ---------------------------------------------------------------------------------------------
// Micro-kernel
// ---------------------------------------------------------------------------------------------

#define TILE_ROWS_HOLD_POINTERS 1
#include "kernels/gemm/fp32_tiles.inc"

// ReLU² hooks: relu2_fwd/bwd's arithmetic (max(x, 0)²; 2x·c where x > 0, else +0) in ymm.
static TARGET_FN void relu2_rows(float *dst, const float *src, size_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *s = src + (size_t)r * ld;
        float *d = dst + (size_t)r * cols;
        int j = 0;
        for (; j + 8 <= cols; j += 8) _mm256_storeu_ps(d + j, relu2_ymm(_mm256_loadu_ps(s + j)));
        for (; j < cols; j++) {
            float v = s[j] > 0 ? s[j] : 0;
            d[j] = v * v;
        }
    }
}

static TARGET_FN void relu2_grad_rows(float *c, const float *x, size_t ld, int rows, int cols) {
    const __m256 zero = _mm256_setzero_ps();
    for (int r = 0; r < rows; r++) {
        float *cr = c + (size_t)r * ld;
        const float *xr = x + (size_t)r * ld;
        int j = 0;
        for (; j + 8 <= cols; j += 8) {
            __m256 xv = _mm256_loadu_ps(xr + j), pos = _mm256_cmp_ps(xv, zero, _CMP_GT_OQ);
            __m256 g = _mm256_mul_ps(_mm256_add_ps(xv, xv), _mm256_loadu_ps(cr + j));
            _mm256_storeu_ps(cr + j, _mm256_and_ps(pos, g));
        }
        for (; j < cols; j++) cr[j] = xr[j] > 0 ? (xr[j] + xr[j]) * cr[j] : 0.0f;
    }
}

static const GemmImpl AVX2_F32 = {.mr = MR, .nr = NR, .kstep = 1, .elem = sizeof(float), .pack_a = pack_a,
                                  .pack_b = pack_b, .kernel = kernel, .kernel_rows = kernel_rows,
                                  .pack_b_relu2 = pack_b_relu2,
                                  .relu2_rows = relu2_rows,
                                  .relu2_grad_rows = relu2_grad_rows};

GEMM_DEFINE_ENTRY_POINTS(avx2, AVX2_F32)
void avx2_matmul_nt_rows(const float *a, const float *b, int M, int N, int K, GemmRowsFn fn, void *ctx,
                         size_t scratch_floats, const GemmRowsNext *next) {
    gemm_rows_nt(&AVX2_F32, a, b, M, N, K, fn, ctx, scratch_floats, next);
}
