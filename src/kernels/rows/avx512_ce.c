// kernels/rows/avx512_ce.c — AVX-512 softcapped cross-entropy (contract in ops.h):
// ce_kernels.inc on 16 lanes, plus what only AVX512_BF16 has: gradient rows in bf16 and the
// fused head's bf16 row pairs (avx512_softcap_ce_pairs).
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/vec_avx512.h"

#define BF16_FN AVX512_BF16_TARGET
#define CE_GRAD16
static BF16_FN void ce_grad16(uint16_t *d, const float *e, float *c, int V, float inv_ds, float sk, int tgt, float dt,
                              int stream, int keep);

#include "kernels/rows/ce_kernels.inc"

// The same, writing d in bf16 (vcvtneps2bf16: nearest even, as the bf16 GEMMs round what they
// pack — so their products from this row equal those from the fp32 row). stream: d 32-byte
// aligned, V a multiple of 16.
static BF16_FN void ce_grad16(uint16_t *d, const float *e, float *c, int V, float inv_ds, float sk, int tgt,
                              float dt, int stream, int keep) {
    for (int i = 0; i < V; i += 16) {
        __mmask16 m = v_mask_first(V - i);
        __m256i y16 = (__m256i)_mm512_cvtneps_pbh(ce_grad_at(e, c, i, V - i, inv_ds, sk, tgt, dt, keep));
        if (stream) _mm256_stream_si256((__m256i *)(d + i), y16);
        else _mm256_mask_storeu_epi16(d + i, m, y16);
    }
}

// Rows even and odd (NULL: zeros) of V bf16 interleaved into one row pair at dst, then zeros up
// to P: a 64-byte line per 16 values, streamed when dst is 64-byte aligned and P keeps it so.
static BF16_FN void store_pair(uint16_t *dst, const uint16_t *even, const uint16_t *odd, int V, size_t P) {
    int stream = ((uintptr_t)dst & 63) == 0 && P % 32 == 0;
    for (int v = 0; v < V; v += 16) {
        __mmask16 m = v_mask_first(V - v);
        __m256i e = _mm256_maskz_loadu_epi16(m, even + v), o = odd ? _mm256_maskz_loadu_epi16(m, odd + v) : _mm256_setzero_si256();
        __m512i both = v_pair_rows16(_mm512_inserti64x4(_mm512_castsi256_si512(e), o, 1));
        if (stream && m == 0xffff) _mm512_stream_si512((void *)(dst + 2 * (size_t)v), both);
        else _mm512_mask_storeu_epi16(dst + 2 * (size_t)v, (__mmask32)((1ull << (2 * (V - v < 16 ? V - v : 16))) - 1), both);
    }
    for (size_t i = 2 * (size_t)V; i < P; i += 32) {
        if (stream) _mm512_stream_si512((void *)(dst + i), _mm512_setzero_si512());
        else memset(dst + i, 0, (P - i < 32 ? P - i : 32) * sizeof *dst);
    }
}

void avx512_softcap_ce_pairs(float *losses, uint16_t *pairs, size_t P, float *logits, size_t ldz, size_t ld16,
                             const int32_t *targets, int N, int V, float cap, float dscale, float *scratch) {
    uint16_t *rows16 = (uint16_t *)logits;
    for (int n = 0; n < N; n++) {
        float *z = logits + (size_t)n * ldz;
        uint16_t *row16 = rows16 + (size_t)n * ld16;
        int tgt = targets ? targets[n] : -1;
        if (tgt >= 0) {
            losses[n] = ce_row(NULL, row16, scratch, z, z, V, tgt, cap, dscale, 0, 0);
        } else {
            losses[n] = 0.0f;
            memset(row16, 0, (size_t)V * sizeof *row16);
        }
        if (n % 2 == 1) store_pair(pairs + (size_t)(n / 2) * P, row16 - ld16, row16, V, P);
        else if (n == N - 1) store_pair(pairs + (size_t)(n / 2) * P, row16, NULL, V, P);
    }
    _mm_sfence();
}
