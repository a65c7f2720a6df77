// kernels/head.c — the fused head: logits, softcapped cross-entropy and dlogits in one pass
// (see head.h).
#include "kernels/head.h"

#include <stdlib.h>

#include "kernels/avx512_ops.h"
#include "kernels/ref.h"
#include "kernels/simd_matmul.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Reference: the two reference ops in turn, on chunks of rows (the logits of all N rows would
// be the 128 MB this op exists to avoid). Rows are independent, so chunking changes no bits.
// ---------------------------------------------------------------------------------------------

#define REF_CHUNK_BYTES (16u << 20)

typedef void (*MatmulNt)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);

static void ref_head_with(MatmulNt matmul, float *losses, float *dlogits, const float *x, const float *w,
                          const int32_t *targets, int N, int V, int C, float cap, float dscale) {
    if (N <= 0 || V <= 0) return;
    size_t row_bytes = (size_t)V * sizeof(float);
    int rows = row_bytes >= REF_CHUNK_BYTES ? 1 : (int)(REF_CHUNK_BYTES / row_bytes);
    if (rows > N) rows = N;
    float *logits = xmalloc((size_t)rows * row_bytes);
    for (int r0 = 0; r0 < N; r0 += rows) {
        int n = N - r0 < rows ? N - r0 : rows;
        matmul(logits, x + (size_t)r0 * C, w, n, V, C, 0);
        ref_softcap_ce(losses + r0, dlogits ? dlogits + (size_t)r0 * V : NULL, logits, targets ? targets + r0 : NULL,
                       n, V, cap, dscale);
    }
    free(logits);
}

void ref_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N, int V,
                 int C, float cap, float dscale) {
    ref_head_with(ref_matmul_nt, losses, dlogits, x, w, targets, N, V, C, cap, dscale);
}

void ref_bf16_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N,
                      int V, int C, float cap, float dscale) {
    ref_head_with(ref_bf16_matmul_nt, losses, dlogits, x, w, targets, N, V, C, cap, dscale);
}

// ---------------------------------------------------------------------------------------------
// SIMD: the GEMM hands each strip of whole rows to the loss while it is in L2
// ---------------------------------------------------------------------------------------------

typedef struct {
    float *losses, *dlogits;
    const int32_t *targets;
    int V;
    float cap, dscale;
} HeadCtx;

static void strip_loss_avx512(void *p, float *c, int row0, int rows, float *exps) {
    const HeadCtx *h = p;
    avx512_softcap_ce_inplace(h->losses + row0, h->dlogits ? h->dlogits + (size_t)row0 * h->V : NULL, c,
                              h->targets ? h->targets + row0 : NULL, rows, h->V, h->cap, h->dscale, exps);
}

// Inside the GEMM's parallel region: ref_softcap_ce's own region runs on this thread alone.
static void strip_loss_ref(void *p, float *c, int row0, int rows, float *unused) {
    (void)unused;
    const HeadCtx *h = p;
    ref_softcap_ce(h->losses + row0, h->dlogits ? h->dlogits + (size_t)row0 * h->V : NULL, c,
                   h->targets ? h->targets + row0 : NULL, rows, h->V, h->cap, h->dscale);
}

#define HEAD_CTX {losses, dlogits, targets, V, cap, dscale}

void avx2_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N, int V,
                  int C, float cap, float dscale) {
    HeadCtx h = HEAD_CTX;
    avx2_matmul_nt_rows(x, w, N, V, C, strip_loss_ref, &h, 0);
}

void avx512_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N,
                    int V, int C, float cap, float dscale) {
    HeadCtx h = HEAD_CTX;
    avx512_matmul_nt_rows(x, w, N, V, C, strip_loss_avx512, &h, (size_t)V);
}

void avx512bf16_head_ce(float *losses, float *dlogits, const float *x, const float *w, const int32_t *targets, int N,
                        int V, int C, float cap, float dscale) {
    HeadCtx h = HEAD_CTX;
    avx512bf16_matmul_nt_rows(x, w, N, V, C, strip_loss_avx512, &h, (size_t)V);
}
