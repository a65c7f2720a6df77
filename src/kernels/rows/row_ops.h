// kernels/rows/row_ops.h — the row ops' parallel loops (internal header): RMSNorm, RoPE, RoPE +
// QK-norm, ReLU², dropout and the embedding gradient, run with one instruction set's row kernels.
// AVX-512 (avx512_ops.c) and AVX2 (avx2_ops.c) each supply a RowIsa; the contracts are in
// ops.h.
//
// Each output row (or span, or column slice) is written by one thread, and every sum is inside
// one row kernel, so results do not depend on the thread count. A row kernel is called through
// a pointer: one indirect call per row of at least a head's D floats.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    // o = x·r with r = 1/sqrt(mean(x²) + eps) over a row of C, r also into *rstd.
    void (*rmsnorm_fwd_row)(float *o, float *rstd, const float *x, int C);
    // d (+)= r (g - x r m), m = mean(g · x r): RMSNorm's backward over a row; d may alias g.
    void (*rmsnorm_bwd_row)(float *d, const float *g, const float *x, float r, int C, int accumulate);
    // The nh heads of D at x rotated in place by (cos, sin·dir), half-split; dir = ±1.
    void (*rope_row)(float *x, const float *cos, const float *sin, int nh, int D, float dir);
    void (*relu2_fwd_span)(float *out, const float *x, size_t n);                    // max(x, 0)²
    void (*relu2_bwd_span)(float *dx, const float *dout, const float *x, size_t n);  // dout·2x where x > 0
    // out[i] (+)= kept(key, i0 + i) ? x[i]·scale : 0 over a span (t: dropout_threshold(p))
    void (*dropout_span)(float *out, const float *x, size_t n, uint32_t key, uint32_t i0, uint32_t t, float scale,
                         int accumulate);
    // Columns [c0, c0+16) of dwte's rows idx[n] += dout's row n, for n in order.
    void (*embedding_bwd_cols)(float *dwte, const float *dout, const int32_t *idx, int N, int C, int c0);
} RowIsa;

void rows_embedding_bwd(const RowIsa *isa, float *dwte, const float *dout, const int32_t *idx, int N, int C);
void rows_rmsnorm_fwd(const RowIsa *isa, float *out, float *rstd, const float *x, int N, int C);
void rows_rmsnorm_bwd(const RowIsa *isa, float *dx, const float *dout, const float *x, const float *rstd, int N, int C,
                      int accumulate);
void rows_rope(const RowIsa *isa, float *x, const float *cos, const float *sin, int B, int T, int nh, int D, float dir);
void rows_rope_rmsnorm_fwd(const RowIsa *isa, float *out, float *rstd, float *x, const float *cos, const float *sin,
                           int B, int T, int nh, int D);
void rows_rope_rmsnorm_bwd(const RowIsa *isa, float *dx, const float *dout, const float *x, const float *rstd,
                           const float *cos, const float *sin, int B, int T, int nh, int D);
void rows_relu2_fwd(const RowIsa *isa, float *out, const float *x, size_t n);
void rows_relu2_bwd(const RowIsa *isa, float *dx, const float *dout, const float *x, size_t n);
void rows_dropout(const RowIsa *isa, float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0,
                  int accumulate);
