// kernels/rows/avx512_ops.c — AVX-512 embedding, RMSNorm, RoPE and ReLU² (contracts in ops.h):
// row_kernels.inc on 16 lanes, and what only AVX-512 has: the embedding gather, the GEMMs' ReLU²
// hooks and the symmetric GEMMs' mirror. Cross-entropy is in avx512_ce.c, attention in
// avx512_attention.c.
#include <math.h>
#include <string.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/vec_avx512.h"
#include "kernels/rows/row_ops.h"

#include "kernels/rows/row_kernels.inc"

// A gather of whole rows: memcpy is already the best copy loop.
void avx512_embedding_fwd(float *out, const int32_t *idx, const float *wte, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, wte + (size_t)idx[n] * C, (size_t)C * sizeof *out);
}

// Block (i0, j0) of the lower triangle is the transpose of block (j0, i0) of the upper one: its
// source rows are read as 16-float pieces and transposed in registers (one element per cache
// line, as the scalar copy reads them, was ~12% of the samples of a 640 x 640 x 640 symmetric
// avx512bf16_matmul_nt on one thread under `perf record`, a scratch harness; this, ~8%). On a
// diagonal block only the lanes left of the diagonal are stored. Plain copies: the same bits.
AVX512_FN void avx512_mirror_upper(float *c, int M, int i_begin, int i_end) {
    for (int i0 = i_begin; i0 < i_end && i0 < M; i0 += 16) {
        int rows = M - i0 < 16 ? M - i0 : 16;  // destination rows i0.. (source columns)
        for (int j0 = 0; j0 <= i0; j0 += 16) {
            int cols = M - j0 < 16 ? M - j0 : 16;  // destination columns j0.. (source rows)
            __m512 v[16];
            for (int r = 0; r < 16; r++)
                v[r] = r < cols ? _mm512_maskz_loadu_ps(v_mask_first(rows), c + (size_t)(j0 + r) * M + i0)
                                : _mm512_setzero_ps();
            v_transpose16(v);  // v[k] lane r: c[j0 + r][i0 + k]
            for (int k = 0; k < rows; k++) {
                __mmask16 m = v_mask_first(j0 == i0 ? k : cols);
                _mm512_mask_storeu_ps(c + (size_t)(i0 + k) * M + j0, m, v[k]);
            }
        }
    }
}

void avx512_relu2_rows(float *dst, const float *src, size_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) relu2_fwd_span(dst + (size_t)r * cols, src + (size_t)r * ld, (size_t)cols);
}

void avx512_relu2_grad_rows(float *c, const float *x, size_t ld, int rows, int cols) {
    for (int r = 0; r < rows; r++) relu2_bwd_span(c + (size_t)r * ld, c + (size_t)r * ld, x + (size_t)r * ld, (size_t)cols);
}

