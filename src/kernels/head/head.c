// kernels/head/head.c — the fused head: logits, softcapped cross-entropy, dlogits and dx in one pass,
// and dw from those dlogits (see head.h).
#include "kernels/head/head.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/rows/avx512_ops.h"
#include "kernels/ref.h"
#include "kernels/gemm/simd_matmul.h"
#include "util/mem.h"

uint16_t head_bf16_bits(float x) {
    float r = ref_round_bf16(x);
    uint32_t u;
    memcpy(&u, &r, sizeof u);
    return (uint16_t)(u >> 16);
}

float head_bf16_value(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

size_t head_dl16_stride(int V) { return 2 * (size_t)V + ((4 * (size_t)V) % 4096 == 0 ? 32 : 0); }
size_t head_dl16_elems(int N, int V) { return (size_t)(N + 1) / 2 * head_dl16_stride(V); }

// ---------------------------------------------------------------------------------------------
// Reference: the reference ops in turn, on chunks of rows (the logits of all N rows would be the
// 128 MB this op exists to avoid). Rows are independent, so chunking changes no bits.
// ---------------------------------------------------------------------------------------------

#define REF_CHUNK_BYTES (16u << 20)

typedef void (*Matmul)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

// bf16 = 1: dlogits are stored rounded to bf16 (computed in fp32 in the chunk buffer first).
static void ref_head_with(Matmul nt, Matmul nn, int bf16, float *losses, void *dlogits, float *dx, const float *x,
                          const float *w, const int32_t *targets, int N, int V, int C, float cap, float dscale) {
    if (N <= 0 || V <= 0) return;
    size_t row_bytes = (size_t)V * sizeof(float);
    int rows = row_bytes >= REF_CHUNK_BYTES ? 1 : (int)(REF_CHUNK_BYTES / row_bytes);
    if (rows > N) rows = N;
    float *logits = xmalloc((size_t)rows * row_bytes);
    if (bf16 && dlogits) memset(dlogits, 0, head_dl16_elems(N, V) * sizeof(uint16_t));
    for (int r0 = 0; r0 < N; r0 += rows) {
        int n = N - r0 < rows ? N - r0 : rows;
        nt(logits, x + (size_t)r0 * C, w, n, V, C, 0);
        float *d = !dlogits ? NULL : bf16 ? logits : (float *)dlogits + (size_t)r0 * V;
        ref_softcap_ce(losses + r0, d, logits, targets ? targets + r0 : NULL, n, V, cap, dscale);
        if (!d) continue;
        if (bf16)  // in row pairs (pads and an odd N's missing row are zeroed below)
            for (int i = 0; i < n; i++)
                for (int v = 0; v < V; v++)
                    ((uint16_t *)dlogits)[head_dl16_at(r0 + i, v, V)] = head_bf16_bits(d[(size_t)i * V + v]);
        if (dx) nn(dx + (size_t)r0 * C, d, w, n, C, V, 0);
    }
    free(logits);
}

void ref_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                 int N, int V, int C, float cap, float dscale) {
    ref_head_with(ref_matmul_nt, ref_matmul_nn, 0, losses, dlogits, dx, x, w, targets, N, V, C, cap, dscale);
}

void ref_bf16_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w,
                      const int32_t *targets, int N, int V, int C, float cap, float dscale) {
    ref_head_with(ref_bf16_matmul_nt, ref_bf16_matmul_nn, 1, losses, dlogits, dx, x, w, targets, N, V, C, cap,
                  dscale);
}

void ref_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    ref_matmul_tn(dw, dlogits, x, V, C, N, 1);
}

// The bf16 values (row pairs) widened to fp32 (exact) and laid out (N, V), then the reference
// bf16 product (whose rounding of them is exact too).
void ref_bf16_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    size_t n = (size_t)N * V;
    float *d = xmalloc((n ? n : 1) * sizeof *d);
    for (int r = 0; r < N; r++)
        for (int v = 0; v < V; v++)
            d[(size_t)r * V + v] = head_bf16_value(((const uint16_t *)dlogits)[head_dl16_at(r, v, V)]);
    ref_bf16_matmul_tn(dw, d, x, V, C, N, 1);
    free(d);
}

// ---------------------------------------------------------------------------------------------
// SIMD: the GEMM hands each strip of whole rows to the loss while it is in L2, then (training)
// multiplies the strip's dlogits by w for its rows of dx (GemmRowsNext)
// ---------------------------------------------------------------------------------------------

typedef struct {
    float *losses;
    void *dlogits;
    int bf16;  // dlogits in bf16
    const int32_t *targets;
    int V;
    float cap, dscale;
    size_t keep16_ld;  // the strip's dlogits left as bf16 rows of this stride for the dx product (0: fp32)
} HeadCtx;

// Leaves the strip holding its dlogits when there are any: fp32 (avx512_softcap_ce_inplace), or
// bf16 rows the bf16 dx product reads unpacked, also paired into dlogits (avx512_softcap_ce_pairs;
// row0 is even: strips are whole 14-row micro-tiles).
static void strip_loss_avx512(void *p, float *c, size_t ldc, int row0, int rows, float *exps) {
    const HeadCtx *h = p;
    const int32_t *tg = h->targets ? h->targets + row0 : NULL;
    if (h->dlogits && h->bf16)
        avx512_softcap_ce_pairs(h->losses + row0, (uint16_t *)h->dlogits + head_dl16_at(row0, 0, h->V),
                                head_dl16_stride(h->V), c, ldc, h->keep16_ld, tg, rows, h->V, h->cap, h->dscale, exps);
    else
        avx512_softcap_ce_inplace(h->losses + row0, h->dlogits ? (float *)h->dlogits + (size_t)row0 * h->V : NULL, c,
                                  ldc, tg, rows, h->V, h->cap, h->dscale, exps);
}

// The AVX2 head's: fp32 dlogits, left in the strip for the dx product (avx2_softcap_ce_inplace,
// the AVX2 table's softcap_ce row by row).
static void strip_loss_avx2(void *p, float *c, size_t ldc, int row0, int rows, float *exps) {
    const HeadCtx *h = p;
    avx2_softcap_ce_inplace(h->losses + row0, h->dlogits ? (float *)h->dlogits + (size_t)row0 * h->V : NULL, c, ldc,
                            h->targets ? h->targets + row0 : NULL, rows, h->V, h->cap, h->dscale, exps);
}

typedef void (*NtRows)(const float *, const float *, int, int, int, GemmRowsFn, void *, size_t, const GemmRowsNext *);

// fp32: the strip's dlogits stay fp32 rows for the dx product.
static void simd_head(NtRows rows, GemmRowsFn loss, size_t scratch, float *losses, void *dlogits, float *dx,
                      const float *x, const float *w, const int32_t *targets, int N, int V, int C, float cap,
                      float dscale) {
    HeadCtx h = {losses, dlogits, 0, targets, V, cap, dscale, 0};
    GemmRowsNext next = {w, dx, C, 0};
    rows(x, w, N, V, C, loss, &h, scratch, dlogits && dx ? &next : NULL);
}

void avx2_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                  int N, int V, int C, float cap, float dscale) {
    simd_head(avx2_matmul_nt_rows, strip_loss_avx2, (size_t)V, losses, dlogits, dx, x, w, targets, N, V, C, cap,
              dscale);
}

void avx512_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                    int N, int V, int C, float cap, float dscale) {
    simd_head(avx512_matmul_nt_rows, strip_loss_avx512, (size_t)V, losses, dlogits, dx, x, w, targets, N, V, C,
              cap, dscale);
}

// The bf16 head on a bf16 GemmImpl's strips: AVX512_BF16's (avx512bf16_head_ce) or AMX's
// (amx_matmul.h). Its strips are whole micro-tiles of an even height (14, 32), as
// avx512_softcap_ce_pairs needs. The loss leaves each strip's dlogits as bf16 rows in place
// (paired from there into dlogits), which the dx product reads instead of fp32 ones.
void bf16_head_ce_with(const GemmImpl *g, float *losses, void *dlogits, float *dx, const float *x, const float *w,
                       const int32_t *targets, int N, int V, int C, float cap, float dscale) {
    size_t ld16 = gemm_rows16_ld(V);
    HeadCtx h = {losses, dlogits, 1, targets, V, cap, dscale, ld16};
    GemmRowsNext next = {w, dx, C, dlogits ? ld16 : 0};
    gemm_rows_nt(g, x, w, N, V, C, strip_loss_avx512, &h, (size_t)V, dlogits && dx ? &next : NULL);
}

void bf16_head_dw_with(const GemmImpl *g, float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    gemm_run_a16_pairs(g, dw, dlogits, head_dl16_stride(V), x, V, C, N, 1);
}

void avx512bf16_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w,
                        const int32_t *targets, int N, int V, int C, float cap, float dscale) {
    bf16_head_ce_with(avx512bf16_gemm_impl(), losses, dlogits, dx, x, w, targets, N, V, C, cap, dscale);
}

void avx2_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    avx2_matmul_tn(dw, dlogits, x, V, C, N, 1);
}

void avx512_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    avx512_matmul_tn(dw, dlogits, x, V, C, N, 1);
}

void avx512bf16_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    bf16_head_dw_with(avx512bf16_gemm_impl(), dw, dlogits, x, N, V, C);
}
