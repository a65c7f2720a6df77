// kernels/head/head.c — the fused head: logits, softcapped cross-entropy, dlogits and dx in one pass,
// and dw from those dlogits (see head.h; the reference is ref/head.c, AMX's amx_head.c).
#include "kernels/head/head.h"

#include "kernels/gemm/simd_matmul.h"
#include "kernels/rows/avx2_ops.h"
#include "kernels/rows/avx512_ops.h"

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
// (amx_head.c). Its strips are whole micro-tiles of an even height (14, 32), as
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
