// kernels/gemm/avx512_matmul.c — AVX-512 fp32 matrix products, and the AVX512_BF16 variant
// (see simd_matmul.h; blocking and threading in gemm_driver.c).
//
// Micro-kernel 14 x 32: per k, two aligned loads of the packed B row (32 floats), 14 broadcasts
// of packed A (folded into the FMAs as {1to16} memory operands) and 28 FMAs into 28 zmm
// accumulators — 30 of the 32 registers, 16 loads per 28 FMAs, well under the two load ports.
// Edge tiles run the same code with fewer rows (a copy specialised for each row count, so a
// 2-row edge costs 2 rows, not 14) and masked loads/stores on the columns. A second kernel reads
// A unpacked from its rows (see use_direct_a in gemm_driver.c). Packing: 16 x 16 in-register
// transposes for the operands stored along k, masked copies for the others.
#include <string.h>
#include <stdint.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/vec_avx512.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/gemm/simd_matmul.h"

#define TARGET_FN AVX512_TARGET
#define INLINE_FN static inline __attribute__((always_inline)) TARGET_FN
#define BF16_FN AVX512_BF16_TARGET
#define BF16_INLINE static inline __attribute__((always_inline)) BF16_FN

#define MR 14
#define NR 32

// ---------------------------------------------------------------------------------------------
// Packing (fp32)
// ---------------------------------------------------------------------------------------------

// With `relu2` (a constant at every call) the packers below form relu²(operand) with v_relu2
// (avx512_vmath.h, relu2_rows' arithmetic) where the driver would otherwise write relu2_rows to
// scratch and pack that: the same bits, one pass less.

// dst (kc x W) <- transpose of the w x kc block at src (row stride ld), 16 x 16 at a time.
INLINE_FN void pack_transposed(float *dst, const float *src, size_t ld, int W, int w, int kc, int relu2) {
    for (int r0 = 0; r0 < W; r0 += 16) {
        int valid = w - r0, width = W - r0 < 16 ? W - r0 : 16;
        __mmask16 store = v_mask_first(width);
        for (int k0 = 0; k0 < kc; k0 += 16) {
            int kn = kc - k0 < 16 ? kc - k0 : 16;
            __mmask16 load = v_mask_first(kn);
            __m512 r[16];
            if (kn == 16)  // whole lines: plain loads (masked ones are slower on some cores)
                for (int i = 0; i < 16; i++)
                    r[i] = i < valid ? _mm512_loadu_ps(src + (size_t)(r0 + i) * ld + k0) : _mm512_setzero_ps();
            else
                for (int i = 0; i < 16; i++)
                    r[i] = i < valid ? _mm512_maskz_loadu_ps(load, src + (size_t)(r0 + i) * ld + k0) : _mm512_setzero_ps();
            if (relu2)
                for (int i = 0; i < 16; i++) r[i] = v_relu2(r[i]);
            v_transpose16(r);
            for (int j = 0; j < kn; j++) _mm512_mask_storeu_ps(dst + (size_t)(k0 + j) * W + r0, store, r[j]);
        }
    }
}

// dst (kc x W) <- the kc rows of w contiguous floats at src (row stride ld), zero-padded to W.
INLINE_FN void pack_copy(float *dst, const float *src, size_t ld, int W, int w, int kc, int relu2) {
    for (int k = 0; k < kc; k++)
        for (int r0 = 0; r0 < W; r0 += 16) {
            __m512 v = _mm512_maskz_loadu_ps(v_mask_first(w - r0), src + (size_t)k * ld + r0);
            if (relu2) v = v_relu2(v);
            _mm512_mask_storeu_ps(dst + (size_t)k * W + r0, v_mask_first(W - r0), v);
        }
}

static TARGET_FN void pack_a(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack_transposed(dst, src, ld, MR, w, kc, 0);
    else pack_copy(dst, src, ld, MR, w, kc, 0);
}

static TARGET_FN void pack_b(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack_transposed(dst, src, ld, NR, w, kc, 0);
    else pack_copy(dst, src, ld, NR, w, kc, 0);
}

static TARGET_FN void pack_a_relu2(void *dst, const float *src, size_t ld, int w, int kc) {
    pack_transposed(dst, src, ld, MR, w, kc, 1);
}
static TARGET_FN void pack_b_relu2(void *dst, const float *src, size_t ld, int w, int kc) {
    pack_copy(dst, src, ld, NR, w, kc, 1);
}

// ---------------------------------------------------------------------------------------------
// Micro-kernel (fp32)
// ---------------------------------------------------------------------------------------------

#define TILE_ROWS_HOLD_POINTERS 0
#include "kernels/gemm/fp32_tiles.inc"

static const GemmImpl AVX512_F32 = {.mr = MR, .nr = NR, .kstep = 1, .elem = sizeof(float), .pack_a = pack_a,
                                    .pack_b = pack_b, .kernel = kernel, .kernel_rows = kernel_rows,
                                    .pack_a_relu2 = pack_a_relu2, .pack_b_relu2 = pack_b_relu2,
                                    .relu2_rows = avx512_relu2_rows, .relu2_grad_rows = avx512_relu2_grad_rows,
                                    .mirror_upper = avx512_mirror_upper};

GEMM_DEFINE_ENTRY_POINTS(avx512, AVX512_F32)
void avx512_matmul_nt_rows(const float *a, const float *b, int M, int N, int K, GemmRowsFn fn, void *ctx,
                           size_t scratch_floats, const GemmRowsNext *next) {
    gemm_rows_nt(&AVX512_F32, a, b, M, N, K, fn, ctx, scratch_floats, next);
}

// ---------------------------------------------------------------------------------------------
// bf16: packed as k pairs — element (k, r) at [(k/2) * W * 2 + r * 2 + k % 2] — so that one
// 32-bit broadcast of A and one load of B feed vdpbf16ps, which adds a(2p)b(2p) + a(2p+1)b(2p+1)
// to each fp32 lane. vcvtne2ps2bf16 rounds to nearest even; padding (r >= w, k >= kc) is zero.
// ---------------------------------------------------------------------------------------------

// 32 floats -> 32 bf16 in order: lanes 0-15 from lo, 16-31 from hi.
BF16_INLINE __m512i bf16x32(__m512 lo, __m512 hi) { return (__m512i)_mm512_cvtne2ps_pbh(hi, lo); }

// Transposed source: a row's pair (k, k+1) is adjacent in memory, so each row becomes 16 32-bit
// pairs; a 16 x 16 transpose of those turns rows into the packed k-pair rows, stored here.
BF16_INLINE void store_pair_rows(uint32_t *dst, __m512 v[16], int W, int r0, int k0, int kc) {
    v_transpose16(v);
    __mmask16 store = v_mask_first(W - r0);
    for (int p = 0; p < 16 && k0 + 2 * p < kc; p++)
        _mm512_mask_storeu_ps((float *)dst + (size_t)(k0 / 2 + p) * W + r0, store, v[p]);
}

// With `relu2` (a constant at every call), of max(x, 0)² (see pack_bf16_copy_at).
BF16_INLINE void pack_bf16_transposed(uint32_t *dst, const float *src, size_t ld, int W, int w, int kc, int relu2) {
    for (int r0 = 0; r0 < W; r0 += 16)
        for (int k0 = 0; k0 < kc; k0 += 32) {
            __mmask16 m0 = v_mask_first(kc - k0), m1 = v_mask_first(kc - k0 - 16);
            __m512 v[16];
            for (int i = 0; i < 16; i++) {
                v[i] = _mm512_setzero_ps();  // rows past w: padding
                if (i >= w - r0) continue;
                const float *row = src + (size_t)(r0 + i) * ld + k0;
                __m512 lo = _mm512_maskz_loadu_ps(m0, row), hi = _mm512_maskz_loadu_ps(m1, row + 16);
                if (relu2) lo = v_relu2(lo), hi = v_relu2(hi);
                v[i] = _mm512_castsi512_ps(bf16x32(lo, hi));
            }
            store_pair_rows(dst, v, W, r0, k0, kc);
        }
}

// Row-major source (k rows contiguous along r): rows k and k+1 as bf16 (lanes 0-15 and 16-31 of
// `both`) interleaved into one k-pair row W wide, pair rows `pstride` uint16 apart, stored here.
BF16_INLINE void store_interleaved(uint16_t *dst, size_t pstride, __m512i both, int W, int r0, int k) {
    int width = W - r0 < 16 ? W - r0 : 16;
    _mm512_mask_storeu_epi16(dst + (size_t)(k / 2) * pstride + 2 * r0, (__mmask32)((1ull << (2 * width)) - 1),
                             v_pair_rows16(both));
}

// Columns [w, W) are written as zeros; a packed panel's pair rows are 2W apart. With `relu2`
// (a constant at every call) each value is packed as max(x, 0)², formed in the registers: the
// same bits as relu2_rows into scratch and packing that, without the scratch round trip.
BF16_INLINE void pack_bf16_copy_at(uint16_t *dst, size_t pstride, const float *src, size_t ld, int W, int w, int kc,
                                   int relu2) {
    for (int k = 0; k < kc; k += 2)
        for (int r0 = 0; r0 < W; r0 += 16) {
            __mmask16 m = v_mask_first(w - r0);
            __m512 even = _mm512_maskz_loadu_ps(m, src + (size_t)k * ld + r0);
            __m512 odd = k + 1 < kc ? _mm512_maskz_loadu_ps(m, src + (size_t)(k + 1) * ld + r0) : _mm512_setzero_ps();
            if (relu2) even = v_relu2(even), odd = v_relu2(odd);
            store_interleaved(dst, pstride, bf16x32(even, odd), W, r0, k);
        }
}

BF16_INLINE void pack_bf16_copy(uint16_t *dst, const float *src, size_t ld, int W, int w, int kc) {
    pack_bf16_copy_at(dst, 2 * (size_t)W, src, ld, W, w, kc, 0);
}

// Sources already in bf16 (the fused head's dlogits): the same layouts, no conversion. Rounded
// by the same vcvtneps2bf16, they pack to the same bits as their fp32 originals above.
BF16_INLINE void pack16_transposed(uint32_t *dst, const uint16_t *src, size_t ld, int W, int w, int kc) {
    for (int r0 = 0; r0 < W; r0 += 16)
        for (int k0 = 0; k0 < kc; k0 += 32) {
            __mmask32 m = v_mask_first32(kc - k0);
            __m512 v[16];
            for (int i = 0; i < 16; i++)
                v[i] = i < w - r0 ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(m, src + (size_t)(r0 + i) * ld + k0))
                                  : _mm512_setzero_ps();
            store_pair_rows(dst, v, W, r0, k0, kc);
        }
}

BF16_INLINE void pack16_copy(uint16_t *dst, const uint16_t *src, size_t ld, int W, int w, int kc) {
    for (int k = 0; k < kc; k += 2)
        for (int r0 = 0; r0 < W; r0 += 16) {
            __mmask16 m = v_mask_first(w - r0);
            __m256i even = _mm256_maskz_loadu_epi16(m, src + (size_t)k * ld + r0);
            __m256i odd = k + 1 < kc ? _mm256_maskz_loadu_epi16(m, src + (size_t)(k + 1) * ld + r0) : _mm256_setzero_si256();
            store_interleaved(dst, 2 * (size_t)W, _mm512_inserti64x4(_mm512_castsi256_si512(even), odd, 1), W, r0, k);
        }
}

static BF16_FN void pack_a16_bf16(void *dst, const uint16_t *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack16_transposed(dst, src, ld, MR, w, kc);
    else pack16_copy(dst, src, ld, MR, w, kc);
}

static BF16_FN void pack_a_bf16(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack_bf16_transposed(dst, src, ld, MR, w, kc, 0);
    else pack_bf16_copy(dst, src, ld, MR, w, kc);
}
static BF16_FN void pack_b_bf16(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack_bf16_transposed(dst, src, ld, NR, w, kc, 0);
    else pack_bf16_copy(dst, src, ld, NR, w, kc);
}
static BF16_FN void pack_a_relu2_bf16(void *dst, const float *src, size_t ld, int w, int kc) {
    pack_bf16_transposed(dst, src, ld, MR, w, kc, 1);
}
static BF16_FN void pack_b_relu2_bf16(void *dst, const float *src, size_t ld, int w, int kc) {
    pack_bf16_copy_at(dst, 2 * (size_t)NR, src, ld, NR, w, kc, 1);
}

// GemmImpl.convert_rows16: each row's 32 values at a time, converted and stored in order (no
// transpose), the same vcvtne2ps2bf16 rounding as the packers; with `relu2`, of max(x, 0)².
BF16_INLINE void convert_rows16_at(uint16_t *dst, size_t ld16, const float *src, size_t lda, int h, int kc, int relu2) {
    for (int r = 0; r < h; r++) {
        const float *s = src + (size_t)r * lda;
        uint16_t *d = dst + (size_t)r * ld16;
        for (int k0 = 0; k0 < kc; k0 += 32) {
            __m512 lo = _mm512_maskz_loadu_ps(v_mask_first(kc - k0), s + k0), hi = _mm512_maskz_loadu_ps(v_mask_first(kc - k0 - 16), s + k0 + 16);
            if (relu2) lo = v_relu2(lo), hi = v_relu2(hi);
            _mm512_mask_storeu_epi16(d + k0, v_mask_first32(kc - k0), bf16x32(lo, hi));
        }
        if (kc % 2) d[kc] = 0;
    }
}

BF16_FN void avx512bf16_convert_rows16(uint16_t *dst, size_t ld16, const float *src, size_t lda, int h, int kc) {
    convert_rows16_at(dst, ld16, src, lda, h, kc, 0);
}
static BF16_FN void convert_rows16_relu2(uint16_t *dst, size_t ld16, const float *src, size_t lda, int h, int kc) {
    convert_rows16_at(dst, ld16, src, lda, h, kc, 1);
}

// GemmImpl.convert_pairs: a TN product's A interleaved into row pairs as the packers do, but w
// wide (no padding) at the pairs' own stride.
static BF16_FN void avx512bf16_convert_pairs(uint16_t *dst, size_t pair_stride, const float *src, size_t lda, int w, int kc) {
    pack_bf16_copy_at(dst, pair_stride, src, lda, w, w, kc, 0);
}

// Pair p of row r at ap[p*pstride + r*rstride]: a packed strip (pstride MR, rstride 1), row
// pairs in place (pstride their stride, rstride 1) or bf16 rows in place (pstride 1, rstride half
// the row stride: the rows' k pairs are 32-bit words of them). Loaded with memcpy: the in-place
// operands are uint16 storage.
BF16_INLINE void tile_bf16(const int rows, int kc, const uint32_t *ap, size_t pstride, size_t rstride,
                           const uint16_t *bp, float *c, size_t ldc, int nr, int load_c) {
    __mmask16 m0 = v_mask_first(nr), m1 = v_mask_first(nr - 16);
    __m512 x0[MR], x1[MR];
#pragma GCC unroll 14
    for (int r = 0; r < rows; r++) {
        x0[r] = load_c ? _mm512_maskz_loadu_ps(m0, c + r * ldc) : _mm512_setzero_ps();
        x1[r] = load_c ? _mm512_maskz_loadu_ps(m1, c + r * ldc + 16) : _mm512_setzero_ps();
    }
    for (int p = 0; p < (kc + 1) / 2; p++, ap += pstride, bp += 2 * NR) {
        __m512bh b0 = (__m512bh)_mm512_load_si512(bp), b1 = (__m512bh)_mm512_load_si512(bp + NR);
#pragma GCC unroll 14
        for (int r = 0; r < rows; r++) {
            uint32_t pair;
            memcpy(&pair, ap + r * rstride, sizeof pair);
            __m512bh a = (__m512bh)_mm512_set1_epi32((int)pair);
            x0[r] = _mm512_dpbf16_ps(x0[r], a, b0);
            x1[r] = _mm512_dpbf16_ps(x1[r], a, b1);
        }
    }
#pragma GCC unroll 14
    for (int r = 0; r < rows; r++) {
        _mm512_mask_storeu_ps(c + r * ldc, m0, x0[r]);
        _mm512_mask_storeu_ps(c + r * ldc + 16, m1, x1[r]);
    }
}

// bf16 rows in place: a's rows are 4-byte aligned with an even lda (gemm_rows_nt's strips).
#define TILE_BF16_ROWS_FN(n)                                                                                  \
    static BF16_FN void tile_bf16_rows_##n(int kc, const uint16_t *a, size_t lda, const uint16_t *bp, float *c, \
                                           size_t ldc, int nr, int load_c) {                                  \
        tile_bf16(n, kc, (const uint32_t *)a, 1, lda / 2, bp, c, ldc, nr, load_c);                             \
    }
TILE_BF16_ROWS_FN(1) TILE_BF16_ROWS_FN(2) TILE_BF16_ROWS_FN(3) TILE_BF16_ROWS_FN(4) TILE_BF16_ROWS_FN(5)
TILE_BF16_ROWS_FN(6) TILE_BF16_ROWS_FN(7) TILE_BF16_ROWS_FN(8) TILE_BF16_ROWS_FN(9) TILE_BF16_ROWS_FN(10)
TILE_BF16_ROWS_FN(11) TILE_BF16_ROWS_FN(12) TILE_BF16_ROWS_FN(13) TILE_BF16_ROWS_FN(14)

typedef void (*TileBf16RowsFn)(int, const uint16_t *, size_t, const uint16_t *, float *, size_t, int, int);
static const TileBf16RowsFn TILES_BF16_ROWS[MR + 1] = {
    NULL,              tile_bf16_rows_1,  tile_bf16_rows_2,  tile_bf16_rows_3,  tile_bf16_rows_4,
    tile_bf16_rows_5,  tile_bf16_rows_6,  tile_bf16_rows_7,  tile_bf16_rows_8,  tile_bf16_rows_9,
    tile_bf16_rows_10, tile_bf16_rows_11, tile_bf16_rows_12, tile_bf16_rows_13, tile_bf16_rows_14};

static void kernel_rows16(int kc, const uint16_t *a, size_t lda, const void *bp, float *c, size_t ldc, int mr, int nr,
                          int load_c) {
    TILES_BF16_ROWS[mr](kc, a, lda, bp, c, ldc, nr, load_c);
}

#define TILE_BF16_FN(n)                                                                                       \
    static BF16_FN void tile_bf16_##n(int kc, const uint32_t *ap, const uint16_t *bp, float *c, size_t ldc, \
                                      int nr, int load_c) {                                                  \
        tile_bf16(n, kc, ap, MR, 1, bp, c, ldc, nr, load_c);                                                 \
    }                                                                                                        \
    static BF16_FN void tile_bf16_pairs_##n(int kc, const uint32_t *ap, size_t astride, const uint16_t *bp,  \
                                            float *c, size_t ldc, int nr, int load_c) {                      \
        tile_bf16(n, kc, ap, astride, 1, bp, c, ldc, nr, load_c);                                            \
    }
TILE_BF16_FN(1) TILE_BF16_FN(2) TILE_BF16_FN(3) TILE_BF16_FN(4) TILE_BF16_FN(5) TILE_BF16_FN(6) TILE_BF16_FN(7)
TILE_BF16_FN(8) TILE_BF16_FN(9) TILE_BF16_FN(10) TILE_BF16_FN(11) TILE_BF16_FN(12) TILE_BF16_FN(13)
TILE_BF16_FN(14)

typedef void (*TileBf16Fn)(int, const uint32_t *, const uint16_t *, float *, size_t, int, int);
static const TileBf16Fn TILES_BF16[MR + 1] = {
    NULL,         tile_bf16_1,  tile_bf16_2,  tile_bf16_3,  tile_bf16_4,  tile_bf16_5,  tile_bf16_6, tile_bf16_7,
    tile_bf16_8,  tile_bf16_9,  tile_bf16_10, tile_bf16_11, tile_bf16_12, tile_bf16_13, tile_bf16_14};

static void kernel_bf16(int kc, const void *ap, const void *bp, float *c, size_t ldc, int mr, int nr, int load_c) {
    TILES_BF16[mr](kc, ap, bp, c, ldc, nr, load_c);
}

typedef void (*TileBf16PairsFn)(int, const uint32_t *, size_t, const uint16_t *, float *, size_t, int, int);
static const TileBf16PairsFn TILES_BF16_PAIRS[MR + 1] = {
    NULL,               tile_bf16_pairs_1,  tile_bf16_pairs_2,  tile_bf16_pairs_3,  tile_bf16_pairs_4,
    tile_bf16_pairs_5,  tile_bf16_pairs_6,  tile_bf16_pairs_7,  tile_bf16_pairs_8,  tile_bf16_pairs_9,
    tile_bf16_pairs_10, tile_bf16_pairs_11, tile_bf16_pairs_12, tile_bf16_pairs_13, tile_bf16_pairs_14};

static void kernel_pairs(int kc, const uint32_t *a, size_t stride, const void *bp, float *c, size_t ldc, int mr,
                         int nr, int load_c) {
    TILES_BF16_PAIRS[mr](kc, a, stride, bp, c, ldc, nr, load_c);
}

static const GemmImpl AVX512_BF16 = {.mr = MR, .nr = NR, .kstep = 2, .elem = sizeof(uint16_t), .pack_a = pack_a_bf16,
                                     .pack_b = pack_b_bf16, .kernel = kernel_bf16, .pack_a16 = pack_a16_bf16,
                                     .kernel_rows16 = kernel_rows16, .kernel_pairs = kernel_pairs,
                                     .convert_rows16 = avx512bf16_convert_rows16,
                                     .convert_rows16_relu2 = convert_rows16_relu2,
                                     .convert_pairs = avx512bf16_convert_pairs,
                                     .pack_a_relu2 = pack_a_relu2_bf16, .pack_b_relu2 = pack_b_relu2_bf16,
                                     .relu2_rows = avx512_relu2_rows, .relu2_grad_rows = avx512_relu2_grad_rows,
                                     .mirror_upper = avx512_mirror_upper};

GEMM_DEFINE_ENTRY_POINTS(avx512bf16, AVX512_BF16)
const GemmImpl *avx512bf16_gemm_impl(void) { return &AVX512_BF16; }
void avx512bf16_matmul_nn_a16(float *c, const uint16_t *a, const float *b, int M, int N, int K, int accumulate) {
    gemm_run_a16(&AVX512_BF16, GEMM_NN, c, a, b, M, N, K, accumulate);
}
void avx512bf16_matmul_tn_a16(float *c, const uint16_t *a, const float *b, int M, int N, int K, int accumulate) {
    gemm_run_a16(&AVX512_BF16, GEMM_TN, c, a, b, M, N, K, accumulate);
}
