// kernels/ref/head.c — the reference head (contracts of head_ce and head_dw in ops.h), and its bf16
// twins: the reference ops in turn, which the fused heads (head/head.h) are checked against.
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
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

// ---------------------------------------------------------------------------------------------
// The reference ops in turn, on chunks of rows (the logits of all N rows would be the
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
