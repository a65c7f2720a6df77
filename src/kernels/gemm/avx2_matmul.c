// kernels/gemm/avx2_matmul.c — AVX2 + FMA fp32 matrix products (see simd_matmul.h; blocking and
// threading in gemm_driver.c).
//
// Micro-kernel 6 x 16: per k, two aligned loads of the packed B row (16 floats), 6 broadcasts
// of packed A and 12 FMAs into 12 ymm accumulators (15 of the 16 registers). The same FMA chain
// per element as the AVX-512 kernel, so both give the same bits. A second tile reads A unpacked
// from its rows (use_direct_a in gemm_driver.c). The transposing packer is plain C, the copying
// one masked ymm moves: this path exists for CPUs without AVX-512.
#include <immintrin.h>

#include "kernels/simd/avx2_vmath.h"
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

INLINE_FN void tile(const int rows, int kc, const float *ap, const float *bp, float *c, size_t ldc, int nr,
                    int load_c) {
    __m256i m0 = v8_mask_first(nr), m1 = v8_mask_first(nr - 8);
    __m256 x0[MR], x1[MR];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        x0[r] = load_c ? _mm256_maskload_ps(c + r * ldc, m0) : _mm256_setzero_ps();
        x1[r] = load_c ? _mm256_maskload_ps(c + r * ldc + 8, m1) : _mm256_setzero_ps();
    }
    for (int k = 0; k < kc; k++, ap += MR, bp += NR) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m256 a = _mm256_broadcast_ss(ap + r);
            x0[r] = _mm256_fmadd_ps(a, b0, x0[r]);
            x1[r] = _mm256_fmadd_ps(a, b1, x1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        _mm256_maskstore_ps(c + r * ldc, m0, x0[r]);
        _mm256_maskstore_ps(c + r * ldc + 8, m1, x1[r]);
    }
}

#define TILE_FN(n)                                                                                          \
    static TARGET_FN void tile_##n(int kc, const float *ap, const float *bp, float *c, size_t ldc, int nr, \
                                   int load_c) {                                                            \
        tile(n, kc, ap, bp, c, ldc, nr, load_c);                                                            \
    }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4) TILE_FN(5) TILE_FN(6)

typedef void (*TileFn)(int, const float *, const float *, float *, size_t, int, int);
static const TileFn TILES[MR + 1] = {NULL, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6};

static void kernel(int kc, const void *ap, const void *bp, float *c, size_t ldc, int mr, int nr, int load_c) {
    TILES[mr](kc, ap, bp, c, ldc, nr, load_c);
}

// The same tile reading A unpacked, row-major: element (k, r) at a[r·lda + k] (GemmKernelRows).
// A copy of tile() rather than one body with strides (element (k, r) at a[r·rs + k·ks]): that
// merge gave the same bits but ran the row-reading products 3-6% slower in AVX2 training (6
// alternated pairs against this code, faster in 0/6 and 1/6; the step 1.012x), its row pointers
// recomputed instead of held.
// The driver uses it for narrow nt/nn blocks (use_direct_a), where packing each strip cost more
// than it saved, as on AVX-512, and for the fused head's dx product. The same FMA chain as tile(),
// so the same bits (what it is worth: docs/perf.md, "Moved from code comments").
INLINE_FN void tile_rows(const int rows, int kc, const float *a, size_t lda, const float *bp, float *c, size_t ldc,
                         int nr, int load_c) {
    __m256i m0 = v8_mask_first(nr), m1 = v8_mask_first(nr - 8);
    __m256 x0[MR], x1[MR];
    const float *ar[MR];
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        ar[r] = a + (size_t)r * lda;
        x0[r] = load_c ? _mm256_maskload_ps(c + r * ldc, m0) : _mm256_setzero_ps();
        x1[r] = load_c ? _mm256_maskload_ps(c + r * ldc + 8, m1) : _mm256_setzero_ps();
    }
    for (int k = 0; k < kc; k++, bp += NR) {
        __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
#pragma GCC unroll 6
        for (int r = 0; r < rows; r++) {
            __m256 av = _mm256_broadcast_ss(ar[r] + k);
            x0[r] = _mm256_fmadd_ps(av, b0, x0[r]);
            x1[r] = _mm256_fmadd_ps(av, b1, x1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < rows; r++) {
        _mm256_maskstore_ps(c + r * ldc, m0, x0[r]);
        _mm256_maskstore_ps(c + r * ldc + 8, m1, x1[r]);
    }
}

#define TILE_ROWS_FN(n)                                                                                        \
    static TARGET_FN void tile_rows_##n(int kc, const float *a, size_t lda, const float *bp, float *c,         \
                                        size_t ldc, int nr, int load_c) {                                      \
        tile_rows(n, kc, a, lda, bp, c, ldc, nr, load_c);                                                      \
    }
TILE_ROWS_FN(1) TILE_ROWS_FN(2) TILE_ROWS_FN(3) TILE_ROWS_FN(4) TILE_ROWS_FN(5) TILE_ROWS_FN(6)

typedef void (*TileRowsFn)(int, const float *, size_t, const float *, float *, size_t, int, int);
static const TileRowsFn TILES_ROWS[MR + 1] = {NULL,        tile_rows_1, tile_rows_2, tile_rows_3,
                                              tile_rows_4, tile_rows_5, tile_rows_6};

static void kernel_rows(int kc, const float *a, size_t lda, const void *bp, float *c, size_t ldc, int mr, int nr,
                        int load_c) {
    TILES_ROWS[mr](kc, a, lda, bp, c, ldc, nr, load_c);
}

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
