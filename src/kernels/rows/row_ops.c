// kernels/rows/row_ops.c — the row ops' parallel loops over an instruction set's row kernels (see
// row_ops.h). Rows go to threads statically; each thread runs whole rows.
#include "kernels/rows/row_ops.h"

#include "kernels/ops.h"

#define ELEMS_PER_TASK 4096  // elementwise ops: 16 KB of each operand per task

// ---------------------------------------------------------------------------------------------
// Embedding gradient
// ---------------------------------------------------------------------------------------------

// Parallel over 16-column slices, as the reference: each (row, column) is summed by one thread
// in position order, so the result is the reference's bit for bit.
void rows_embedding_bwd(const RowIsa *isa, float *dwte, const float *dout, const int32_t *idx, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) isa->embedding_bwd_cols(dwte, dout, idx, N, C, c0);
}

// ---------------------------------------------------------------------------------------------
// RMSNorm
// ---------------------------------------------------------------------------------------------

void rows_rmsnorm_fwd(const RowIsa *isa, float *out, float *rstd, const float *x, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) isa->rmsnorm_fwd_row(out + (size_t)n * C, rstd + n, x + (size_t)n * C, C);
}

void rows_rmsnorm_bwd(const RowIsa *isa, float *dx, const float *dout, const float *x, const float *rstd, int N, int C,
                      int accumulate) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        isa->rmsnorm_bwd_row(dx + o, dout + o, x + o, rstd[n], C, accumulate);
    }
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding (half-split); its backward is the inverse rotation (dir = -1)
// ---------------------------------------------------------------------------------------------

void rows_rope(const RowIsa *isa, float *x, const float *cos, const float *sin, int B, int T, int nh, int D, float dir) {
    size_t half = (size_t)D / 2;
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        size_t t = (size_t)(bt % T);
        isa->rope_row(x + (size_t)bt * nh * D, cos + t * half, sin + t * half, nh, D, dir);
    }
}

// ---------------------------------------------------------------------------------------------
// RoPE + QK-norm, fused: one (b, t) row of nh heads is rotated then normalised (forward), or
// un-normalised then rotated back (backward), while it sits in L1; q and k then cross memory
// once per direction instead of twice. The row kernels are the separate ops', so the bits are
// those of rope_fwd followed by rmsnorm_fwd (and of rmsnorm_bwd followed by rope_bwd).
// ---------------------------------------------------------------------------------------------

void rows_rope_rmsnorm_fwd(const RowIsa *isa, float *out, float *rstd, float *x, const float *cos, const float *sin,
                           int B, int T, int nh, int D) {
    size_t half = (size_t)D / 2, row = (size_t)nh * D;
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        size_t t = (size_t)(bt % T);
        float *xr = x + (size_t)bt * row;
        isa->rope_row(xr, cos + t * half, sin + t * half, nh, D, 1.0f);
        for (int h = 0; h < nh; h++)
            isa->rmsnorm_fwd_row(out + (size_t)bt * row + (size_t)h * D, rstd + (size_t)bt * nh + h, xr + (size_t)h * D,
                                 D);
    }
}

void rows_rope_rmsnorm_bwd(const RowIsa *isa, float *dx, const float *dout, const float *x, const float *rstd,
                           const float *cos, const float *sin, int B, int T, int nh, int D) {
    size_t half = (size_t)D / 2, row = (size_t)nh * D;
#pragma omp parallel for schedule(static)
    for (int bt = 0; bt < B * T; bt++) {
        size_t t = (size_t)(bt % T), o = (size_t)bt * row;
        for (int h = 0; h < nh; h++) {
            size_t oh = o + (size_t)h * D;
            isa->rmsnorm_bwd_row(dx + oh, dout + oh, x + oh, rstd[(size_t)bt * nh + h], D, 0);
        }
        isa->rope_row(dx + o, cos + t * half, sin + t * half, nh, D, -1.0f);
    }
}

// ---------------------------------------------------------------------------------------------
// ReLU²
// ---------------------------------------------------------------------------------------------

void rows_relu2_fwd(const RowIsa *isa, float *out, const float *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += ELEMS_PER_TASK)
        isa->relu2_fwd_span(out + i, x + i, n - i < ELEMS_PER_TASK ? n - i : ELEMS_PER_TASK);
}

void rows_relu2_bwd(const RowIsa *isa, float *dx, const float *dout, const float *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += ELEMS_PER_TASK)
        isa->relu2_bwd_span(dx + i, dout + i, x + i, n - i < ELEMS_PER_TASK ? n - i : ELEMS_PER_TASK);
}

// ---------------------------------------------------------------------------------------------
// Dropout
// ---------------------------------------------------------------------------------------------

void rows_dropout(const RowIsa *isa, float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0,
                  int accumulate) {
    const uint32_t t = dropout_threshold(p);
    const float scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i += ELEMS_PER_TASK)
        isa->dropout_span(out + i, x + i, n - i < ELEMS_PER_TASK ? n - i : ELEMS_PER_TASK, key, i0 + (uint32_t)i, t,
                          scale, accumulate);
}
