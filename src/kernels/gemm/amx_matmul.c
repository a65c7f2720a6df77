// kernels/gemm/amx_matmul.c — bf16 products on AMX tiles, and their emulated twin (see amx_matmul.h).
#include "kernels/gemm/amx_matmul.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/gemm/simd_matmul.h"
#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/avx512_vmath.h"

#define BF16_FN AVX512_BF16_TARGET

#define AMX_MR 32                              // micro-tile rows: two A tiles
#define AMX_NR 32                              // micro-tile columns: two B tiles (the AVX512_BF16 NR)
#define AMX_DEPTH 32                           // k per TDPBF16PS: 16 pairs
#define AMX_A_ROW 64                           // bytes per packed A row of one depth block (32 bf16)
#define AMX_B_ROW (AMX_NR * 2 * 2)             // bytes per packed B k-pair row (32 columns x 2 bf16)
#define AMX_A_CHUNK (AMX_MR * AMX_A_ROW)       // packed A bytes per depth block
#define AMX_B_CHUNK (AMX_DEPTH / 2 * AMX_B_ROW)  // packed B bytes per depth block

// ---------------------------------------------------------------------------------------------
// Packing (AVX512_BF16, shared by both builds)
// ---------------------------------------------------------------------------------------------

// A strip as AMX_DEPTH-deep blocks of AMX_MR rows of 32 bf16: element (k, r) at
// [(k/32)·MR·32 + r·32 + k%32]. Rows w.. and depth kc.. up to the block are zero.

// Rows contiguous along k (nt, nn): each row's 32 values of a block converted and stored whole.
static BF16_FN void pack_a_rows(uint16_t *dst, const float *src, size_t ld, int w, int kc) {
    int blocks = (kc + AMX_DEPTH - 1) / AMX_DEPTH;
    for (int r = 0; r < AMX_MR; r++)
        for (int kb = 0; kb < blocks; kb++) {
            uint16_t *d = dst + ((size_t)kb * AMX_MR + r) * AMX_DEPTH;
            __m512i v = _mm512_setzero_si512();
            if (r < w) {
                int k0 = kb * AMX_DEPTH;
                const float *s = src + (size_t)r * ld + k0;
                __m512 lo = _mm512_maskz_loadu_ps(v_mask_first(kc - k0), s);
                __m512 hi = _mm512_maskz_loadu_ps(v_mask_first(kc - k0 - 16), s + 16);
                v = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
            }
            _mm512_storeu_si512(d, v);
        }
}

// 16 rows of 16 k pairs (v[p]: pair p of rows r0..r0+15) transposed into packed rows r0..r0+15
// of depth block k0.
static BF16_FN void store_pair_block(uint16_t *dst, __m512 v[16], int k0, int r0) {
    v_transpose16(v);
    for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + ((size_t)(k0 / AMX_DEPTH) * AMX_MR + r0 + i) * AMX_DEPTH, v[i]);
}

// Columns of a k-major source (tn: element (k, r) at src[k·ld + r]): per block and 16 rows, the
// 16 k pairs as rows of 32-bit words (two source rows interleaved), then a 16 x 16 transpose
// turns them into 16 packed rows of 16 k pairs. pair_row gives k pair (k, k+1) of rows r0..r0+15
// (lanes m; rows past kc are zero) from fp32 or bf16 storage, or from row pairs.
typedef __m512 (*PairRow)(const void *src, size_t ld, int r0, __mmask16 m, int k, int kc);

static inline __attribute__((always_inline)) BF16_FN __m512 pair_row_f32(const void *src, size_t ld, int r0, __mmask16 m,
                                                                         int k, int kc) {
    const float *s = src;
    __m512 even = k < kc ? _mm512_maskz_loadu_ps(m, s + (size_t)k * ld + r0) : _mm512_setzero_ps();
    __m512 odd = k + 1 < kc ? _mm512_maskz_loadu_ps(m, s + (size_t)(k + 1) * ld + r0) : _mm512_setzero_ps();
    return _mm512_castsi512_ps(v_pair_rows16((__m512i)_mm512_cvtne2ps_pbh(odd, even)));
}

static inline __attribute__((always_inline)) BF16_FN __m512 pair_row_bf16(const void *src, size_t ld, int r0,
                                                                          __mmask16 m, int k, int kc) {
    const uint16_t *s = src;
    __m256i even = k < kc ? _mm256_maskz_loadu_epi16(m, s + (size_t)k * ld + r0) : _mm256_setzero_si256();
    __m256i odd = k + 1 < kc ? _mm256_maskz_loadu_epi16(m, s + (size_t)(k + 1) * ld + r0) : _mm256_setzero_si256();
    return _mm512_castsi512_ps(v_pair_rows16(_mm512_inserti64x4(_mm512_castsi256_si512(even), odd, 1)));
}

static inline __attribute__((always_inline)) BF16_FN void pack_cols(uint16_t *dst, const void *src, size_t ld, int w,
                                                                    int kc, PairRow pair_row) {
    for (int k0 = 0; k0 < kc; k0 += AMX_DEPTH)
        for (int r0 = 0; r0 < AMX_MR; r0 += 16) {
            __mmask16 m = v_mask_first(w - r0);
            __m512 v[16];
            for (int p = 0; p < 16; p++) v[p] = pair_row(src, ld, r0, m, k0 + 2 * p, kc);
            store_pair_block(dst, v, k0, r0);
        }
}

static BF16_FN void pack_a_cols(uint16_t *dst, const float *src, size_t ld, int w, int kc) {
    pack_cols(dst, src, ld, w, kc, pair_row_f32);
}

static void amx_pack_a(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack_a_rows(dst, src, ld, w, kc);
    else pack_a_cols(dst, src, ld, w, kc);
}

// The same layout from sources already in bf16 (GemmPack16: the bf16 P and dS of attention, the
// head's bf16 dlogits strips when they cannot be read in place): no conversion, so the same
// packed bits as their fp32 originals rounded by vcvtneps2bf16.
// Rows contiguous along k (nn): each row's 32 values of a block copied whole.
static BF16_FN void pack_a16_rows(uint16_t *dst, const uint16_t *src, size_t ld, int w, int kc) {
    int blocks = (kc + AMX_DEPTH - 1) / AMX_DEPTH;
    for (int r = 0; r < AMX_MR; r++)
        for (int kb = 0; kb < blocks; kb++) {
            int k0 = kb * AMX_DEPTH;
            __m512i v = r < w ? _mm512_maskz_loadu_epi16(v_mask_first32(kc - k0), src + (size_t)r * ld + k0) : _mm512_setzero_si512();
            _mm512_storeu_si512(dst + ((size_t)kb * AMX_MR + r) * AMX_DEPTH, v);
        }
}

// Columns of a k-major bf16 source (tn): as pack_a_cols, without the conversion.
static BF16_FN void pack_a16_cols(uint16_t *dst, const uint16_t *src, size_t ld, int w, int kc) {
    pack_cols(dst, src, ld, w, kc, pair_row_bf16);
}

static void amx_pack_a16(void *dst, const uint16_t *src, size_t ld, int w, int kc, int transpose) {
    if (transpose) pack_a16_rows(dst, src, ld, w, kc);
    else pack_a16_cols(dst, src, ld, w, kc);
}

// A in row pairs (the head's bf16 dlogits for head_dw, GemmPackPairs): the pairs are already the
// 32-bit words a tile row holds, so a depth block is 16 pair rows transposed. A tile row needs
// 16 consecutive pairs of one row, which lie `stride` words apart: read in place, every tile
// would be a transpose; packed, each strip is transposed once for all of B's column panels.
static inline __attribute__((always_inline)) BF16_FN __m512 pair_row_pairs(const void *src, size_t stride, int r0,
                                                                           __mmask16 m, int k, int kc) {
    const uint32_t *a = src;
    return k < kc ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi32(m, a + (size_t)(k / 2) * stride + r0))
                  : _mm512_setzero_ps();
}

static BF16_FN void amx_pack_a_pairs(void *dst, const uint32_t *a, size_t stride, int w, int kc) {
    pack_cols(dst, a, stride, w, kc, pair_row_pairs);
}

// B: the AVX512_BF16 impl's k-pair panels (the driver zeroes the depth padding past kc's pairs).
static void amx_pack_b(void *dst, const float *src, size_t ld, int w, int kc, int transpose) {
    avx512bf16_gemm_impl()->pack_b(dst, src, ld, w, kc, transpose);
}

// Palette 1; tiles 0-7 of 16 rows x 64 bytes (bytes 16-31: colsb as uint16, 48-55: rows).
static const _Alignas(64) uint8_t AMX_TILE_CONFIG[64] = {
    1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0, 64, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0,
};

// ---------------------------------------------------------------------------------------------
// The emulator: tile registers in thread-local memory, each instruction as Intel's pseudo-code
// describes it (LDTILECFG, TILEZERO, TILELOADD, TILESTORED, TDPBF16PS).
// ---------------------------------------------------------------------------------------------

typedef struct {
    _Alignas(64) uint8_t data[8][16][64];
    int rows[8], colsb[8];
    int configured;
} EmuTiles;

static _Thread_local EmuTiles emu;

static void emu_config(const uint8_t cfg[64]) {
    memset(&emu, 0, sizeof emu);
    for (int t = 0; t < 8; t++) {
        emu.colsb[t] = cfg[16 + 2 * t] | cfg[17 + 2 * t] << 8;
        emu.rows[t] = cfg[48 + t];
    }
    emu.configured = cfg[0] == 1;
}

// TILERELEASE: back to the initial state, unconfigured.
static void emu_release(void) { memset(&emu, 0, sizeof emu); }

// Using a tile before LDTILECFG (or after TILERELEASE) faults on the hardware (#UD): the emulator
// aborts likewise.
static void emu_check(int t) {
    if (!emu.configured || !emu.rows[t]) abort();
}

static void emu_zero(int t) {
    emu_check(t);
    memset(emu.data[t], 0, sizeof emu.data[t]);
}

static void emu_load(int t, const void *base, size_t stride) {
    emu_check(t);
    memset(emu.data[t], 0, sizeof emu.data[t]);
    for (int r = 0; r < emu.rows[t]; r++) memcpy(emu.data[t][r], (const char *)base + r * stride, (size_t)emu.colsb[t]);
}

static void emu_store(int t, void *base, size_t stride) {
    emu_check(t);
    for (int r = 0; r < emu.rows[t]; r++) memcpy((char *)base + r * stride, emu.data[t][r], (size_t)emu.colsb[t]);
}

// bf16 input with DAZ: a denormal (exponent 0) counts as a zero of its sign.
static float emu_bf16(uint16_t h) {
    uint32_t u = (uint32_t)((h & 0x7f80) ? h : h & 0x8000) << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float emu_ftz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }

float amx_emu_dot_pair(float c, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1) {
    c = emu_ftz(c + emu_bf16(a0) * emu_bf16(b0));  // exact product: contracting to an FMA changes nothing
    return emu_ftz(c + emu_bf16(a1) * emu_bf16(b1));
}

// dst.row[m].fp32[n] += Σ over k pairs in order of a.row[m].bf16[2k, 2k+1] · b.row[k].bf16[2n, 2n+1].
static void emu_dpbf16ps(int dst, int a, int b) {
    emu_check(dst), emu_check(a), emu_check(b);
    int M = emu.rows[dst], N = emu.colsb[dst] / 4, K = emu.colsb[a] / 4;
    for (int m = 0; m < M; m++) {
        float c[16];
        uint16_t ar[32];
        memcpy(c, emu.data[dst][m], sizeof c);
        memcpy(ar, emu.data[a][m], sizeof ar);
        for (int k = 0; k < K; k++) {
            uint16_t br[32];
            memcpy(br, emu.data[b][k], sizeof br);
            for (int n = 0; n < N; n++) c[n] = amx_emu_dot_pair(c[n], ar[2 * k], ar[2 * k + 1], br[2 * n], br[2 * n + 1]);
        }
        memcpy(emu.data[dst][m], c, sizeof c);
    }
}

// ---------------------------------------------------------------------------------------------
// The two builds of the kernel
// ---------------------------------------------------------------------------------------------

// Emulated.
#define AMX_NAME(x) amx_emu_##x
#define AMX_PREFIX amx_emu
#define AMX_FN
#define TILE_CONFIG(cfg) emu_config(cfg)
#define TILE_ZERO(t) emu_zero(t)
#define TILE_LOAD(t, p, s) emu_load(t, p, s)
#define TILE_STORE(t, p, s) emu_store(t, p, s)
#define TILE_DP(c, a, b) emu_dpbf16ps(c, a, b)
#define TILE_RELEASE() emu_release()
#include "kernels/gemm/amx_tile_kernel.h"
#undef AMX_NAME
#undef AMX_PREFIX
#undef AMX_FN
#undef TILE_CONFIG
#undef TILE_RELEASE
#undef TILE_ZERO
#undef TILE_LOAD
#undef TILE_STORE
#undef TILE_DP

// The instructions. gcc's tile intrinsics are asm statements that do not tell the compiler which
// memory they read or write: a compiler barrier before each load and after each store keeps the
// scratch tile's copies in order around them.
#define AMX_NAME(x) amx_##x
#define AMX_PREFIX amx
#define AMX_FN __attribute__((target("amx-tile,amx-bf16")))
#define AMX_BARRIER() __asm__ volatile("" ::: "memory")
#define TILE_CONFIG(cfg)      \
    do {                      \
        AMX_BARRIER();        \
        _tile_loadconfig(cfg); \
    } while (0)
#define TILE_ZERO(t) _tile_zero(t)
#define TILE_LOAD(t, p, s) \
    do {                   \
        AMX_BARRIER();     \
        _tile_loadd(t, p, s); \
    } while (0)
#define TILE_STORE(t, p, s) \
    do {                    \
        _tile_stored(t, p, s); \
        AMX_BARRIER();      \
    } while (0)
#define TILE_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#define TILE_RELEASE() _tile_release()
#include "kernels/gemm/amx_tile_kernel.h"
