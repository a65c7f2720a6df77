// kernels/attention/flash_attention.h — flash-style causal attention on fp32 SIMD vectors (internal
// header): the blocking, schedules and sums of flash_attention.c, run with one instruction set's
// vector pieces. AVX-512 (avx512_attention.c) and AVX2 (avx2_attention.c) each supply an
// AttIsa; the attention_fwd/bwd contracts are in ops.h.
//
// Every sum's order is fixed by the blocking and the schedule, not by the thread count, so
// results do not depend on it. The two instruction sets differ only inside the pieces (vector
// width, so the order of the row reductions in the softmax and in D_i), not in the tiling.
#pragma once
#include <stddef.h>

#define ATT_BLK 64  // query and key block (a multiple of 16)

typedef struct {
    int vl;  // floats per vector; head dims that are not a multiple of it go to the reference
    // Rows r < 4, vector columns [0, ncols): C[r] (+)= sum_{k<K} A(r,k) B[k], where A(r,k) =
    // arow[r][k·aks] and B[k] = bm + k·ldb; C starts from 0 when zero_init.
    void (*mm4)(float *const crow[4], const float *const arow[4], size_t aks, const float *bm, size_t ldb, int K,
                int ncols, int zero_init);
    // dst[d·ATT_BLK + j] = src[j·ld + d] for keys j < nk (0 for nk <= j < ATT_BLK), d < D.
    void (*pack_panel)(float *dst, const float *src, size_t ld, int nk, int D);
    // Online softmax of one score row (nv vectors; keys outside [lo, lim) masked): p over the
    // scores, running max m and sum l updated; returns the factor for the output row. lo >= lim:
    // p = 0, no update, 1.
    float (*softmax_row)(float *srow, int nv, int lo, int lim, float scale, float *m, float *l);
    void (*scale_row)(float *o, float a, int D);  // o *= a
    // out = o / l, *lse = m + log(l).
    void (*finish_row)(float *out, float *lse, const float *o, float m, float l, int D);
    // P = exp(S·scale - lse), dS = P (dP - D_i) scale over one row, 0 outside [lo, lim) or when
    // !valid: prow holds S and becomes P, dsrow holds dP and becomes dS.
    void (*bwd_row)(float *prow, float *dsrow, int nv, int lo, int lim, int valid, float scale, float lse, float di);
    float (*dot)(const float *a, const float *b, int D);  // sum a·b, for D_i
} AttIsa;

void flash_attention_fwd(const AttIsa *isa, float *out, float *lse, const float *q, const float *k, const float *v,
                         int B, int T, int H, int Hkv, int D, int window);
void flash_attention_bwd(const AttIsa *isa, float *dq, float *dk, float *dv, const float *dout, const float *out,
                         const float *lse, const float *q, const float *k, const float *v, int B, int T, int H, int Hkv,
                         int D, int window);
