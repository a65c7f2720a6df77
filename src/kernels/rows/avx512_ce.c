// kernels/rows/avx512_ce.c — AVX-512 softcapped cross-entropy (contract in kernels.h).
//
// One row at a time per thread, three sweeps while the row sits in L1/L2:
//   1. c = cap·tanh(z/cap) into per-thread scratch, lane-wise running max;
//   2. e = exp(c - max), summed (4 × 16 float lanes, each adding at most V/64 terms, combined in
//      double), e kept in the output row when a gradient is wanted;
//   3. dlogits = dscale · (e/sum - onehot) · (1 - (c/cap)²).
// tanh and exp run once per logit (avx512_vmath.h) and bound the speed: the extra sweeps over
// L1-resident data cost nothing measurable (a fused single sweep using cap as the softmax shift
// was tried: no faster, and less accurate through cancellation against cap).
// dlogits may alias logits: z is read only in sweep 1, before the row is written.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/avx512_vmath.h"

// ---------------------------------------------------------------------------------------------
// Sweeps over one row
// ---------------------------------------------------------------------------------------------

AVX512_INLINE double ce_total(const __m512 acc[4]) {
    return (v_hsum_pd(acc[0]) + v_hsum_pd(acc[1])) + (v_hsum_pd(acc[2]) + v_hsum_pd(acc[3]));
}

// Sweep 1: c[i] = softcap(z[i]) into scratch; returns max c.
// Vector i of the row (lanes m), capped when `capped`, stored to c and folded into the max.
AVX512_INLINE __m512 ce_cap_at(float *c, const float *z, int i, __mmask16 m, int capped, __m512 vcap, __m512 vinv,
                               __m512 mx) {
    __m512 x = _mm512_maskz_loadu_ps(m, z + i);
    if (capped) x = _mm512_mul_ps(vcap, v_tanh(_mm512_mul_ps(x, vinv)));
    _mm512_mask_storeu_ps(c + i, m, x);
    return _mm512_mask_max_ps(mx, m, mx, x);
}

// The whole vectors in a loop of their own, the cap decided once (not per vector), then the tail.
static AVX512_FN float ce_cap_max(float *c, const float *z, int V, float cap) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    __m512 vcap = _mm512_set1_ps(cap), vinv = _mm512_set1_ps(cap > 0 ? 1.0f / cap : 1.0f);
    int i = 0, whole = V / 16 * 16;
    if (cap > 0)
        for (; i < whole; i += 16) mx = ce_cap_at(c, z, i, (__mmask16)0xffff, 1, vcap, vinv, mx);
    else
        for (; i < whole; i += 16) mx = ce_cap_at(c, z, i, (__mmask16)0xffff, 0, vcap, vinv, mx);
    if (i < V) mx = ce_cap_at(c, z, i, v_mask_first(V - i), cap > 0, vcap, vinv, mx);
    return _mm512_reduce_max_ps(mx);
}

// Sweep 2: sum of exp(c - mx); the exps go to d when non-NULL. Vector j of the row goes to
// partial sum j % 4; the loop is unrolled by 4 so the partial sums stay in registers (indexed by
// a loop variable, gcc kept them on the stack: a store-forwarding round trip per vector).
AVX512_INLINE __m512 ce_exp_at(float *d, const float *c, __mmask16 m, int i, __m512 vmx) {
    __m512 e = _mm512_maskz_mov_ps(m, v_exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, c + i), vmx)));
    if (d) _mm512_mask_storeu_ps(d + i, m, e);
    return e;
}

static AVX512_FN double ce_expsum(float *d, const float *c, int V, float mx) {
    __m512 vmx = _mm512_set1_ps(mx);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    int i = 0;
    const __mmask16 all = 0xffff;  // whole vectors: the mask is a constant, not worked out per vector
    for (; i + 64 <= V; i += 64) {
        acc[0] = _mm512_add_ps(acc[0], ce_exp_at(d, c, all, i, vmx));
        acc[1] = _mm512_add_ps(acc[1], ce_exp_at(d, c, all, i + 16, vmx));
        acc[2] = _mm512_add_ps(acc[2], ce_exp_at(d, c, all, i + 32, vmx));
        acc[3] = _mm512_add_ps(acc[3], ce_exp_at(d, c, all, i + 48, vmx));
    }
    for (int u = 0; i < V; i += 16, u++) acc[u] = _mm512_add_ps(acc[u], ce_exp_at(d, c, v_mask_first(V - i), i, vmx));
    return ce_total(acc);
}

// Sweep 3: d[i] = e[i]·(inv·dscale)·(1 - (c[i]·sk)²), where e holds the exps (e may be d) and
// sk is 1/cap (0 without a cap); d[tgt] = dt, the value with the one-hot term. With `stream`
// (d 64-byte aligned, V a multiple of 16) d is written with non-temporal stores: the row goes
// to memory without first being read into cache (half the traffic of a plain store's
// read-for-ownership), and the target's lane is patched in the register, not stored twice.
// Vector i of the gradient row (lanes m): e·(inv·dscale)·(1 - (c·sk)²), the target's lane
// replaced by dt; with `keep`, also stored over c.
AVX512_INLINE __m512 ce_grad_at(const float *e, float *c, int i, __mmask16 m, float inv_ds, float sk, int tgt,
                                float dt, int keep) {
    __m512 t = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, c + i), _mm512_set1_ps(sk));
    __m512 g = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, e + i), _mm512_set1_ps(inv_ds));
    __m512 y = _mm512_mul_ps(g, _mm512_fnmadd_ps(t, t, _mm512_set1_ps(1.0f)));
    if (tgt >= i && tgt < i + 16) y = _mm512_mask_mov_ps(y, (__mmask16)(1u << (tgt - i)), _mm512_set1_ps(dt));
    if (keep) _mm512_mask_storeu_ps(c + i, m, y);
    return y;
}

static AVX512_FN void ce_grad(float *d, const float *e, float *c, int V, float inv_ds, float sk, int tgt,
                              float dt, int stream, int keep) {
    for (int i = 0; i < V; i += 16) {
        __mmask16 m = v_mask_first(V - i);
        __m512 y = ce_grad_at(e, c, i, m, inv_ds, sk, tgt, dt, keep);
        if (stream) _mm512_stream_ps(d + i, y);
        else _mm512_mask_storeu_ps(d + i, m, y);
    }
}

// The same, writing d in bf16 (vcvtneps2bf16: nearest even, as the bf16 GEMMs round what they
// pack — so their products from this row equal those from the fp32 row). stream: d 32-byte
// aligned, V a multiple of 16.
#define BF16_FN AVX512_BF16_TARGET
static BF16_FN void ce_grad16(uint16_t *d, const float *e, float *c, int V, float inv_ds, float sk, int tgt,
                              float dt, int stream, int keep) {
    for (int i = 0; i < V; i += 16) {
        __mmask16 m = v_mask_first(V - i);
        __m256i y16 = (__m256i)_mm512_cvtneps_pbh(ce_grad_at(e, c, i, m, inv_ds, sk, tgt, dt, keep));
        if (stream) _mm256_stream_si256((__m256i *)(d + i), y16);
        else _mm256_mask_storeu_epi16(d + i, m, y16);
    }
}

// One row: returns its loss; writes its gradient row when d (fp32) or d16 (bf16) is non-NULL
// (tgt >= 0), keeping the exps in e (which may be d; not d16) in between. c receives the capped
// logits (it may be z), then with `keep` the fp32 gradient too. The loss is formed in double:
// max + log(sum) - c[tgt] cancels to a few nats from terms up to ~2·cap.
static float ce_row(float *d, uint16_t *d16, float *e, float *c, const float *z, int V, int tgt, float cap,
                    float dscale, int stream, int keep) {
    float mx = ce_cap_max(c, z, V, cap);
    double sum = ce_expsum(d || d16 ? e : NULL, c, V, mx);
    float ct = c[tgt], sk = cap > 0 ? 1.0f / cap : 0.0f;
    if (d || d16) {
        float inv = (float)(1.0 / sum), et = e[tgt], tt = ct * sk;
        float dt = (et * inv - 1.0f) * (1.0f - tt * tt) * dscale;  // with the one-hot term
        if (d16) ce_grad16(d16, e, c, V, inv * dscale, sk, tgt, dt, stream, keep);
        else ce_grad(d, e, c, V, inv * dscale, sk, tgt, dt, stream, keep);
    }
    return (float)((double)mx + log(sum) - (double)ct);
}

static void ce_rows(float *losses, float *dlogits, const float *logits, const int32_t *targets, int n0, int n1,
                    int V, float cap, float dscale, float *c) {
    for (int n = n0; n < n1; n++) {
        int tgt = targets ? targets[n] : -1;
        float *d = dlogits ? dlogits + (size_t)n * V : NULL;
        if (tgt < 0) {  // ignored: zero loss, zero gradient row, nothing to compute
            losses[n] = 0.0f;
            if (d) memset(d, 0, (size_t)V * sizeof *d);
            continue;
        }
        losses[n] = ce_row(d, NULL, d, c, logits + (size_t)n * V, V, tgt, cap, dscale, 0, 0);
    }
}

// The fused head's epilogue (head.c): rows of logits already in cache, overwritten by their
// capped values (each logit is read just before its capped value replaces it), one thread, the
// exps in `scratch` (V floats). fp32 dlogits rows whose alignment allows go out with streaming
// stores (ce_grad), and the logits rows are left holding the fp32 gradient (zeros for ignored
// targets), for the fused dx product. bf16 dlogits: see avx512_softcap_ce_pairs. Stores are
// fenced before returning, so that any thread may read the dlogits next.
static AVX512_FN void stream_zero(void *d, size_t bytes) {
    for (size_t i = 0; i < bytes; i += 64) _mm512_stream_si512((void *)((char *)d + i), _mm512_setzero_si512());
}

void avx512_softcap_ce_inplace(float *losses, float *dlogits, float *logits, size_t ldz, const int32_t *targets, int N,
                               int V, float cap, float dscale, float *scratch) {
    size_t row_bytes = (size_t)V * sizeof(float);
    for (int n = 0; n < N; n++) {
        float *z = logits + (size_t)n * ldz, *row = dlogits ? dlogits + (size_t)n * V : NULL;
        int tgt = targets ? targets[n] : -1, stream = row && V % 16 == 0 && ((uintptr_t)row & 63) == 0;
        if (tgt >= 0) {
            losses[n] = ce_row(row, NULL, scratch, z, z, V, tgt, cap, dscale, stream, row != NULL);
        } else {
            losses[n] = 0.0f;
            if (!row) continue;
            memset(z, 0, row_bytes);
            if (stream) stream_zero(row, row_bytes);
            else memset(row, 0, row_bytes);
        }
    }
    _mm_sfence();
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

// ---------------------------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------------------------

#define CE_ROWS_PER_TASK 8

void avx512_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                       float cap, float dscale) {
#pragma omp parallel
    {
        // Per-thread scratch for the capped row; rounded up so masked tail stores stay inside.
        float *c = aligned_alloc(64, ((size_t)V + 15) / 16 * 16 * sizeof *c);
        if (!c) abort();
#pragma omp for schedule(static)
        for (int n0 = 0; n0 < N; n0 += CE_ROWS_PER_TASK) {
            int n1 = n0 + CE_ROWS_PER_TASK < N ? n0 + CE_ROWS_PER_TASK : N;
            ce_rows(losses, dlogits, logits, targets, n0, n1, V, cap, dscale, c);
        }
        free(c);
    }
}
