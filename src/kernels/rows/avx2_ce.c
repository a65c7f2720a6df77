// kernels/rows/avx2_ce.c — the softcapped cross-entropy on AVX2 + FMA (contract of softcap_ce in
// kernels.h; avx2_ops.h): the AVX-512 loss (avx512_ce.c) on 8 lanes, for CPUs without AVX-512.
//
// Before it, the AVX2 table took the reference's loss: scalar tanhf, expf and expm1f were ~70%
// of the AVX2 fused head's samples (perf, `frontier kernels bench --op head_ce --variant avx2`)
// and the head more than half of an AVX2 training step (what this kernel is worth: docs/perf.md,
// "Moved from code comments").
//
// Per row, three sweeps as in avx512_ce.c: c = cap·tanh(z/cap) and its max; the exps of c - max
// and their sum (four partial sums, one per vector mod 4, combined in double); then the gradient
// exp·(1/sum)·dscale·(1 - (c/cap)²), the target's lane carrying the one-hot term. The loss is
// max + log(sum) - c[target] in double. Each element's capping and exp are avx512_ce.c's, with
// the same vector math (avx2_vmath.h, bit for bit avx512_vmath.h's); the row sum is grouped over
// 8 lanes instead of 16, so the loss and the gradients' scale 1/sum can differ from AVX-512's in
// the last bits.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/avx2_vmath.h"

// ---------------------------------------------------------------------------------------------
// Sweeps over one row
// ---------------------------------------------------------------------------------------------

// Sweep 1: c[i] = softcap(z[i]) (z itself without a cap); returns max c.
AVX2_INLINE __m256 ce_cap_at(float *c, const float *z, int i, __m256i m, int whole, int capped, __m256 vcap,
                             __m256 vinv, __m256 mx) {
    __m256 x = whole ? _mm256_loadu_ps(z + i) : _mm256_maskload_ps(z + i, m);
    if (capped) x = _mm256_mul_ps(vcap, v8_tanh(_mm256_mul_ps(x, vinv)));
    if (whole) {
        _mm256_storeu_ps(c + i, x);
        return _mm256_max_ps(mx, x);
    }
    _mm256_maskstore_ps(c + i, m, x);
    return _mm256_blendv_ps(mx, _mm256_max_ps(mx, x), _mm256_castsi256_ps(m));
}

static AVX2_FN float ce_cap_max(float *c, const float *z, int V, float cap) {
    __m256 mx = _mm256_set1_ps(-INFINITY);
    __m256 vcap = _mm256_set1_ps(cap), vinv = _mm256_set1_ps(cap > 0 ? 1.0f / cap : 1.0f);
    const __m256i all = _mm256_set1_epi32(-1);
    int i = 0, whole = V / 8 * 8;
    if (cap > 0)
        for (; i < whole; i += 8) mx = ce_cap_at(c, z, i, all, 1, 1, vcap, vinv, mx);
    else
        for (; i < whole; i += 8) mx = ce_cap_at(c, z, i, all, 1, 0, vcap, vinv, mx);
    if (i < V) mx = ce_cap_at(c, z, i, v8_mask_first(V - i), 0, cap > 0, vcap, vinv, mx);
    return v8_hmax(mx);
}

// Sweep 2: the exps of c - mx into d (when non-NULL) and their sum. Vector j goes to partial sum
// j % 4 (unrolled by 4 so the partial sums stay in registers); lanes past V count 0.
AVX2_INLINE __m256 ce_exp_at(float *d, const float *c, int i, __m256i m, int whole, __m256 vmx) {
    if (whole) {
        __m256 e = v8_exp(_mm256_sub_ps(_mm256_loadu_ps(c + i), vmx));
        if (d) _mm256_storeu_ps(d + i, e);
        return e;
    }
    __m256 e = _mm256_and_ps(v8_exp(_mm256_sub_ps(_mm256_maskload_ps(c + i, m), vmx)), _mm256_castsi256_ps(m));
    if (d) _mm256_maskstore_ps(d + i, m, e);
    return e;
}

static AVX2_FN double ce_expsum(float *d, const float *c, int V, float mx) {
    __m256 vmx = _mm256_set1_ps(mx);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    const __m256i all = _mm256_set1_epi32(-1);
    int i = 0;
    for (; i + 32 <= V; i += 32) {
        acc[0] = _mm256_add_ps(acc[0], ce_exp_at(d, c, i, all, 1, vmx));
        acc[1] = _mm256_add_ps(acc[1], ce_exp_at(d, c, i + 8, all, 1, vmx));
        acc[2] = _mm256_add_ps(acc[2], ce_exp_at(d, c, i + 16, all, 1, vmx));
        acc[3] = _mm256_add_ps(acc[3], ce_exp_at(d, c, i + 24, all, 1, vmx));
    }
    for (int u = 0; i < V; i += 8, u++)
        acc[u] = _mm256_add_ps(acc[u], ce_exp_at(d, c, i, v8_mask_first(V - i), V - i >= 8, vmx));
    return (v8_hsum_pd(acc[0]) + v8_hsum_pd(acc[1])) + (v8_hsum_pd(acc[2]) + v8_hsum_pd(acc[3]));
}

// Sweep 3: d[i] = e[i]·inv_ds·(1 - (c[i]·sk)²), sk = 1/cap (0 without a cap), the target's
// element dt; with `keep`, stored over c too. With `stream` (d 32-byte aligned, V a multiple of
// 8) d goes to memory with non-temporal stores (no read for ownership), as in avx512_ce.c.
AVX2_INLINE __m256 ce_grad_at(const float *e, float *c, int i, __m256i m, int whole, float inv_ds, float sk, int tgt,
                              float dt, int keep) {
    __m256 cv = whole ? _mm256_loadu_ps(c + i) : _mm256_maskload_ps(c + i, m);
    __m256 ev = whole ? _mm256_loadu_ps(e + i) : _mm256_maskload_ps(e + i, m);
    __m256 t = _mm256_mul_ps(cv, _mm256_set1_ps(sk));
    __m256 g = _mm256_mul_ps(ev, _mm256_set1_ps(inv_ds));
    __m256 y = _mm256_mul_ps(g, _mm256_fnmadd_ps(t, t, _mm256_set1_ps(1.0f)));
    if (tgt >= i && tgt < i + 8) {
        __m256i lane = _mm256_cmpeq_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(tgt - i));
        y = _mm256_blendv_ps(y, _mm256_set1_ps(dt), _mm256_castsi256_ps(lane));
    }
    if (keep) {
        if (whole) _mm256_storeu_ps(c + i, y);
        else _mm256_maskstore_ps(c + i, m, y);
    }
    return y;
}

static AVX2_FN void ce_grad(float *d, const float *e, float *c, int V, float inv_ds, float sk, int tgt, float dt,
                            int stream, int keep) {
    const __m256i all = _mm256_set1_epi32(-1);
    int i = 0;
    for (; i + 8 <= V; i += 8) {
        __m256 y = ce_grad_at(e, c, i, all, 1, inv_ds, sk, tgt, dt, keep);
        if (stream) _mm256_stream_ps(d + i, y);
        else _mm256_storeu_ps(d + i, y);
    }
    if (i < V) {
        __m256i m = v8_mask_first(V - i);
        _mm256_maskstore_ps(d + i, m, ce_grad_at(e, c, i, m, 0, inv_ds, sk, tgt, dt, keep));
    }
}

// One row (tgt >= 0): returns its loss; with d, writes its gradient, keeping the exps in e (which
// may be d) in between. c receives the capped logits (it may be z), then with `keep` the gradient.
static float ce_row(float *d, float *e, float *c, const float *z, int V, int tgt, float cap, float dscale,
                    int stream, int keep) {
    float mx = ce_cap_max(c, z, V, cap);
    double sum = ce_expsum(d ? e : NULL, c, V, mx);
    float ct = c[tgt], sk = cap > 0 ? 1.0f / cap : 0.0f;
    if (d) {
        float inv = (float)(1.0 / sum), et = e[tgt], tt = ct * sk;
        float dt = (et * inv - 1.0f) * (1.0f - tt * tt) * dscale;  // with the one-hot term
        ce_grad(d, e, c, V, inv * dscale, sk, tgt, dt, stream, keep);
    }
    return (float)((double)mx + log(sum) - (double)ct);
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

#define CE_ROWS_PER_TASK 8

static void ce_rows(float *losses, float *dlogits, const float *logits, const int32_t *targets, int n0, int n1,
                    int V, float cap, float dscale, float *c) {
    for (int n = n0; n < n1; n++) {
        int tgt = targets ? targets[n] : -1;
        float *d = dlogits ? dlogits + (size_t)n * V : NULL;
        if (tgt < 0) {  // ignored: zero loss, zero gradient row
            losses[n] = 0.0f;
            if (d) memset(d, 0, (size_t)V * sizeof *d);
            continue;
        }
        losses[n] = ce_row(d, d, c, logits + (size_t)n * V, V, tgt, cap, dscale, 0, 0);
    }
}

void avx2_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                     float cap, float dscale) {
#pragma omp parallel
    {
        // per-thread scratch for the capped row (whole vectors, so the tail's masked stores fit)
        float *c = aligned_alloc(32, ((size_t)V + 7) / 8 * 8 * sizeof *c);
        if (!c) abort();
#pragma omp for schedule(static)
        for (int n0 = 0; n0 < N; n0 += CE_ROWS_PER_TASK)
            ce_rows(losses, dlogits, logits, targets, n0, n0 + CE_ROWS_PER_TASK < N ? n0 + CE_ROWS_PER_TASK : N, V,
                    cap, dscale, c);
        free(c);
    }
}

static AVX2_FN void stream_zero(float *d, int V) {
    for (int i = 0; i < V; i += 8) _mm256_stream_ps(d + i, _mm256_setzero_ps());
}

void avx2_softcap_ce_inplace(float *losses, float *dlogits, float *logits, size_t ldz, const int32_t *targets, int N,
                             int V, float cap, float dscale, float *scratch) {
    for (int n = 0; n < N; n++) {
        float *z = logits + (size_t)n * ldz, *row = dlogits ? dlogits + (size_t)n * V : NULL;
        int tgt = targets ? targets[n] : -1, stream = row && V % 8 == 0 && ((uintptr_t)row & 31) == 0;
        if (tgt >= 0) {
            losses[n] = ce_row(row, scratch, z, z, V, tgt, cap, dscale, stream, row != NULL);
        } else {
            losses[n] = 0.0f;
            if (!row) continue;
            memset(z, 0, (size_t)V * sizeof *z);
            if (stream) stream_zero(row, V);
            else memset(row, 0, (size_t)V * sizeof *row);
        }
    }
    _mm_sfence();
}
