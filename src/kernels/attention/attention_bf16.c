// kernels/attention/attention_bf16.c — causal attention with bf16 products: the twins of attention_fwd/bwd
// that `--precision bf16` swaps in (what PyTorch's bf16 autocast does to attention: its matmuls
// take bf16 operands and accumulate in fp32; the softmax stays fp32).
//
// Algorithm, per (batch, kv head) on one thread, for each q head of the group in order:
//   forward   S = Q Kᵀ;  P = softmax(S·scale) over keys j <= i (0 above; with a window also 0
//             for j < i - window), lse;  O = P V
//   backward  S = Q Kᵀ again, P = exp(S·scale - lse) (0 above the diagonal);  dP = dO Vᵀ;
//             dS = P ⊙ (dP - D_i)·scale with D_i = rowsum(dO ⊙ O);  dV += Pᵀ dO;  dQ = dS K;
//             dK += dSᵀ Q
// The products round their operands to bf16 (nearest even) and accumulate in fp32: Q, K, V, P,
// dO and dS are the rounded values; S, lse, D_i and the softmax are fp32.
//
// Fast variants: every product is one of a bf16 GemmImpl's GEMMs (gemm_run_op, gemm_driver.h),
// AVX512_BF16's (avx512bf16_*) or AMX's (amx_attention.c), single-threaded inside the parallel loop
// over tasks, on blocks of queries against the keys they can see (an rb x (i0+rb) score block),
// in the causal mode that skips the micro-tiles above the diagonal (and the depth they would
// multiply by zero); the diagonal tiles are computed whole and their upper triangles zeroed. The
// products read Q, dO and write O, dQ, dK, dV in place through row strides (no per-head copies);
// K and V are packed once per (batch, kv head) and every query block reads its prefix of the
// keys; the softmax writes P (and the backward dS) in bf16, which the nn products read in place
// and the tn ones pack without converting. dK and dV sum over the group's heads and the
// query blocks in order. Each (batch, kv head) is one task with a fixed order of sums, so results
// do not depend on the thread count.
//
// Reference variant (ref/attention.c): the fp32 reference's loops with the same roundings.
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention/attention_bf16.h"
#include "kernels/simd/avx512_vmath.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/ops.h"
#include "kernels/gemm/simd_matmul.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Fast: query blocks through the bf16 GEMMs
// ---------------------------------------------------------------------------------------------

#define BF16_FN AVX512_BF16_TARGET

typedef struct {
    const GemmImpl *g; // the products' bf16 GEMM: AVX512_BF16's or AMX's
    int B, T, H, Hkv, D, group;
    int window;        // query i sees keys i-window .. i; 0 = all up to i
    int band;          // zeros a causal product reads beyond a row's visible keys (zero_band)
    float scale;
    size_t ldq, ldkv;  // row strides of q/out/dout (H·D) and k/v (Hkv·D)
    size_t ldp;        // row stride of the bf16 P and dS blocks (p_stride)
} Shape;

// bf16 rows of T: a whole number of 64-byte lines, and an odd number of them, so that the 14 rows
// a micro-kernel reads side by side fall in different L1 sets (T = 1024: 2 KiB rows would share two).
static size_t p_stride(int T) {
    size_t ld = ((size_t)T + 31) / 32 * 32;
    return ld / 32 % 2 ? ld : ld + 32;
}

// The bf16 P and dS rows are read by the causal nn and tn products, which skip the depth beyond
// a strip's diagonal (and before its window) in whole micro-tiles: a row's entries are read up to
// its strip's other rows and the depth step's rounding past its last visible key (nn: strip rows
// from i read depth < round_up(i + mr + diag, kstep); tn likewise over the queries), and as far
// before its first one with a window. Only those entries must be zero; the rest of the row, up to
// the block's width, is never read. The softmax used to zero all of it: on average half the block
// (128 entries per row at kit-d10's 256-row blocks, twice in the backward), with memset ~5% of
// `frontier kernels bench --op attention_bwd`'s samples (perf, dK and dV's zeroing included). In
// training the change did not show: alternated profiles (bench/ab_profile.sh HEAD .) gave
// attention_bwd 0.986x on cpu (5 pairs) and 0.996x on kit-d10 (3 pairs). Under the lab's poison
// the workspace starts as NaN (work_acquire), so a band too narrow fails `frontier kernels check`.
static int zero_band(const GemmImpl *g) { return g->mr + g->kstep; }

static Shape shape_of(const GemmImpl *g, int B, int T, int H, int Hkv, int D, int window) {
    return (Shape){g, B, T, H, Hkv, D, H / Hkv, window, zero_band(g), 1.0f / sqrtf((float)D), (size_t)H * D,
                   (size_t)Hkv * D, p_stride(T)};
}

// Zero row entries [a, b) clipped to [0, n) (the band around a row's visible keys).
static inline void zero_span(uint16_t *row, int a, int b, int n) {
    a = a < 0 ? 0 : a, b = b < n ? b : n;
    if (a < b) memset(row + a, 0, (size_t)(b - a) * sizeof *row);
}

// Lanes [lo, hi) of the 16 from j.
static inline BF16_FN __mmask16 lanes_between(int j, int lo, int hi) {
    return v_mask_first(hi - j) & (__mmask16)~v_mask_first(lo - j);
}

// Lanes m of v rounded to bf16 (nearest even: as the GEMMs round what they pack, so a product
// reading these equals one packing the fp32 values) at dst.
static inline __attribute__((always_inline)) BF16_FN void store_bf16(uint16_t *dst, __mmask16 m, __m512 v) {
    _mm256_mask_storeu_epi16(dst, m, (__m256i)_mm512_cvtneps_pbh(v));
}

// Row i of a score block n wide (row: S, fp32, overwritten with the exps): P = softmax(S·scale)
// over the keys lo <= j <= i into p (bf16), 0 for `band` keys either side; returns lse.
static BF16_FN float softmax_causal(float *row, uint16_t *p, int lo, int i, int n, float scale, int band) {
    int m = i + 1, j0 = lo / 16 * 16;
    __m512 vs = _mm512_set1_ps(scale), mx = _mm512_set1_ps(-INFINITY);
    for (int j = j0; j < m; j += 16) {
        __mmask16 k = lanes_between(j, lo, m);
        mx = _mm512_mask_max_ps(mx, k, mx, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), vs));
    }
    float top = _mm512_reduce_max_ps(mx);
    __m512 vm = _mm512_set1_ps(top), sum = _mm512_setzero_ps();
    for (int j = j0; j < m; j += 16) {
        __mmask16 k = lanes_between(j, lo, m);
        __m512 e = _mm512_maskz_mov_ps(k, v_exp(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, row + j), vs, vm)));
        _mm512_mask_storeu_ps(row + j, k, e);
        sum = _mm512_add_ps(sum, e);
    }
    double l = v_hsum_pd(sum);
    __m512 inv = _mm512_set1_ps((float)(1.0 / l));
    zero_span(p, lo - band, lo, n);
    for (int j = j0; j < m; j += 16) {
        __mmask16 k = lanes_between(j, lo, m);
        store_bf16(p + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), inv));
    }
    zero_span(p, m, m + band, n);
    return top + (float)log(l);
}

// Row i of S and dP (fp32, n wide): P = exp(S·scale - lse), dS = P (dP - D_i)·scale for
// lo <= j <= i, 0 for `band` keys either side, both into bf16 rows p and ds.
static BF16_FN void grad_causal(const float *srow, const float *dprow, uint16_t *p, uint16_t *ds, int lo, int i,
                                int n, float scale, float lse, float di, int band) {
    int m = i + 1;
    __m512 vs = _mm512_set1_ps(scale), vl = _mm512_set1_ps(lse), vd = _mm512_set1_ps(di);
    zero_span(p, lo - band, lo, n);
    zero_span(ds, lo - band, lo, n);
    for (int j = lo / 16 * 16; j < m; j += 16) {
        __mmask16 k = lanes_between(j, lo, m);
        __m512 pj = _mm512_maskz_mov_ps(k, v_exp(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(k, srow + j), vs, vl)));
        store_bf16(p + j, k, pj);
        store_bf16(ds + j, k, _mm512_mul_ps(_mm512_mul_ps(pj, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dprow + j), vd)), vs));
    }
    zero_span(p, m, m + band, n);
    zero_span(ds, m, m + band, n);
}

static AVX512_FN float row_dot(const float *a, const float *b, int D) {
    __m512 acc = _mm512_setzero_ps();
    for (int d = 0; d < D; d += 16) {
        __mmask16 k = v_mask_first(D - d);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + d), _mm512_maskz_loadu_ps(k, b + d), acc);
    }
    return _mm512_reduce_add_ps(acc);
}

// Query block [i0, i0+rb) sees keys [0, i0+rb): its scores are an rb x (i0+rb) matrix. Blocks
// are as tall as 1 MiB of fp32 scores allows (at least 64 rows; T <= 512: one block; kit-d10's
// T = 1024: 4 blocks), so that the causal products skip the micro-tiles above the diagonal
// inside each. (When K and V were packed again for every block, 256 KiB blocks, 16 of them at
// T = 1024, cost as much packing as the products' own work per key row, and 1 MiB was faster.)
#define SCORE_FLOATS (256 << 10)

static int block_rows(int T) {
    int rb = SCORE_FLOATS / T / 64 * 64;
    rb = rb < 64 ? 64 : rb;
    return rb < T ? rb : T;
}

typedef struct {     // per-thread workspace
    float *S, *dP;   // block_rows x T fp32: one query block's scores (then exps), dP = dO Vᵀ
    uint16_t *P, *dS;  // block_rows x ldp bf16: probabilities and dS, read by the products as A
    void *k_nt, *v_nt; // the task's K and V packed as an nt B (T keys of D): S = Q Kᵀ, dP = dO Vᵀ
    void *k_nn, *v_nn; // packed as an nn B (T keys deep, D wide): dQ = dS K, O = P V
    float *di;         // block_rows: the block's D_i = rowsum(dO ⊙ O)
    char *mem;
    int slot;          // its pool slot, or -1: allocated for this call alone
} Work;

// Workspaces are kept between calls, a pool slot per thread (util/mem.h). Allocated per call
// (~4 MiB per thread on kit-d10), they were faulted in again whenever glibc handed the memory
// back: 4-7% of `frontier kernels bench`'s attention samples were page faults.
#define WORK_SLOTS 64

static KeptBuf work_pool[WORK_SLOTS];

static size_t lines(size_t bytes) { return (bytes + 63) / 64 * 64; }

static Work work_acquire(const Shape *s) {
    const GemmImpl *g = s->g;
    size_t st = lines((size_t)block_rows(s->T) * s->T * sizeof(float));
    size_t pt = lines((size_t)block_rows(s->T) * s->ldp * sizeof(uint16_t));
    size_t nt = lines(gemm_packed_bytes(g, s->T, s->D)), nn = lines(gemm_packed_bytes(g, s->D, s->T));
    size_t dt = lines((size_t)block_rows(s->T) * sizeof(float));
    Work w;
    size_t bytes = 2 * st + 2 * pt + 2 * nt + 2 * nn + dt;
    char *p = w.mem = kept_claim(work_pool, WORK_SLOTS, bytes, &w.slot);  // written before read
    // lab checks: NaN everywhere (fp32 and bf16), so a product reading P or dS entries the
    // softmax left unwritten (outside zero_band) fails the check instead of reading old zeros
    if (gemm_poisoning()) memset(p, 0xff, bytes);
    w.S = (float *)p, p += st;
    w.dP = (float *)p, p += st;
    w.P = (uint16_t *)p, p += pt;
    w.dS = (uint16_t *)p, p += pt;
    w.k_nt = p, p += nt;
    w.v_nt = p, p += nt;
    w.k_nn = p, p += nn;
    w.v_nn = p, p += nn;
    w.di = (float *)p;
    return w;
}

// The causal products of a query block at i0 (diag i0): C (+)= A · B in the layout given, the
// tiles outside the causal band (and the window's, with one) skipped.
static void block_product(const Shape *s, GemmOp op, int i0) {
    op.causal = 1, op.diag = i0, op.window = s->window;
    gemm_run_op(s->g, &op);
}

static void fwd_task(const Shape *s, Work *w, float *out, float *lse, const float *q, const float *k, const float *v,
                     int b, int hk) {
    const GemmImpl *g = s->g;
    int T = s->T, D = s->D;
    size_t koff = (size_t)b * T * s->ldkv + (size_t)hk * D;
    gemm_pack_b(g, GEMM_NT, w->k_nt, k + koff, s->ldkv, T, D);
    gemm_pack_b(g, GEMM_NN, w->v_nn, v + koff, s->ldkv, D, T);
    for (int h = hk * s->group; h < (hk + 1) * s->group; h++) {
        size_t qoff = (size_t)b * T * s->ldq + (size_t)h * D;
        float *l = lse + ((size_t)b * s->H + h) * T;
        for (int i0 = 0, RB = block_rows(T); i0 < T; i0 += RB) {
            int rb = T - i0 < RB ? T - i0 : RB, n = i0 + rb;
            size_t at = qoff + (size_t)i0 * s->ldq;
            block_product(s, (GemmOp){.layout = GEMM_NT, .M = rb, .N = n, .K = D, .c = w->S, .a = q + at, .lda = s->ldq,
                                   .packed_b = w->k_nt, .packed_N = T, .packed_K = D}, i0);  // S = Q Kᵀ
            for (int r = 0; r < rb; r++)
                l[i0 + r] = softmax_causal(w->S + (size_t)r * n, w->P + (size_t)r * s->ldp, attention_first_key(i0 + r, s->window), i0 + r,
                                           n, s->scale, s->band);
            block_product(s, (GemmOp){.layout = GEMM_NN, .M = rb, .N = D, .K = n, .c = out + at, .ldc = s->ldq, .a16 = w->P,
                                   .lda = s->ldp, .packed_b = w->v_nn, .packed_N = D, .packed_K = T}, i0);  // O = P V
        }
    }
}

void bf16_attention_fwd_with(const GemmImpl *g, float *out, float *lse, const float *q, const float *k, const float *v,
                             int B, int T, int H, int Hkv, int D, int window) {
    if (B <= 0 || T <= 0 || H <= 0) return;
    Shape s = shape_of(g, B, T, H, Hkv, D, window);
#pragma omp parallel
    {
        Work w = work_acquire(&s);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < B * Hkv; task++) fwd_task(&s, &w, out, lse, q, k, v, task / Hkv, task % Hkv);
        kept_release(work_pool, w.mem, w.slot);
    }
}

static void bwd_task(const Shape *s, Work *w, float *dq, float *dk, float *dv, const float *dout, const float *out,
                     const float *lse, const float *q, const float *k, const float *v, int b, int hk) {
    const GemmImpl *g = s->g;
    int T = s->T, D = s->D;
    size_t koff = (size_t)b * T * s->ldkv + (size_t)hk * D;
    gemm_pack_b(g, GEMM_NT, w->k_nt, k + koff, s->ldkv, T, D);
    gemm_pack_b(g, GEMM_NT, w->v_nt, v + koff, s->ldkv, T, D);
    gemm_pack_b(g, GEMM_NN, w->k_nn, k + koff, s->ldkv, D, T);
    for (int t = 0; t < T; t++) {  // dK and dV sum over the group's heads and query blocks
        memset(dk + koff + (size_t)t * s->ldkv, 0, (size_t)D * sizeof *dk);
        memset(dv + koff + (size_t)t * s->ldkv, 0, (size_t)D * sizeof *dv);
    }
    for (int h = hk * s->group; h < (hk + 1) * s->group; h++) {
        size_t qoff = (size_t)b * T * s->ldq + (size_t)h * D;
        const float *l = lse + ((size_t)b * s->H + h) * T;
        for (int i0 = 0, RB = block_rows(T); i0 < T; i0 += RB) {
            int rb = T - i0 < RB ? T - i0 : RB, n = i0 + rb;
            size_t at = qoff + (size_t)i0 * s->ldq;
            const float *Qb = q + at, *dOb = dout + at;
            // D_i first, for the whole block: O's rows come from memory (the forward wrote them
            // long ago), and read one per row between the rows' softmax work they were a miss
            // each, ~60% of this function's own samples (perf, kit-d10); back to back their
            // misses overlap
            for (int r = 0; r < rb; r++) w->di[r] = row_dot(dOb + (size_t)r * s->ldq, out + at + (size_t)r * s->ldq, D);
            block_product(s, (GemmOp){.layout = GEMM_NT, .M = rb, .N = n, .K = D, .c = w->S, .a = Qb, .lda = s->ldq,
                                   .packed_b = w->k_nt, .packed_N = T, .packed_K = D}, i0);  // S = Q Kᵀ
            block_product(s, (GemmOp){.layout = GEMM_NT, .M = rb, .N = n, .K = D, .c = w->dP, .a = dOb, .lda = s->ldq,
                                   .packed_b = w->v_nt, .packed_N = T, .packed_K = D}, i0);  // dP = dO Vᵀ
            for (int r = 0; r < rb; r++)
                grad_causal(w->S + (size_t)r * n, w->dP + (size_t)r * n, w->P + (size_t)r * s->ldp,
                            w->dS + (size_t)r * s->ldp, attention_first_key(i0 + r, s->window), i0 + r, n, s->scale, l[i0 + r],
                            w->di[r], s->band);
            block_product(s, (GemmOp){.layout = GEMM_TN, .M = n, .N = D, .K = rb, .accumulate = 1, .c = dv + koff,
                                   .ldc = s->ldkv, .a16 = w->P, .lda = s->ldp, .b = dOb, .ldb = s->ldq}, i0);  // dV += Pᵀ dO
            block_product(s, (GemmOp){.layout = GEMM_NN, .M = rb, .N = D, .K = n, .c = dq + at, .ldc = s->ldq, .a16 = w->dS,
                                   .lda = s->ldp, .packed_b = w->k_nn, .packed_N = D, .packed_K = T}, i0);  // dQ = dS K
            block_product(s, (GemmOp){.layout = GEMM_TN, .M = n, .N = D, .K = rb, .accumulate = 1, .c = dk + koff,
                                   .ldc = s->ldkv, .a16 = w->dS, .lda = s->ldp, .b = Qb, .ldb = s->ldq}, i0);  // dK += dSᵀ Q
        }
    }
}

void bf16_attention_bwd_with(const GemmImpl *g, float *dq, float *dk, float *dv, const float *dout, const float *out,
                             const float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                             int Hkv, int D, int window) {
    if (B <= 0 || T <= 0 || H <= 0) return;
    Shape s = shape_of(g, B, T, H, Hkv, D, window);
#pragma omp parallel
    {
        Work w = work_acquire(&s);
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < B * Hkv; task++)
            bwd_task(&s, &w, dq, dk, dv, dout, out, lse, q, k, v, task / Hkv, task % Hkv);
        kept_release(work_pool, w.mem, w.slot);
    }
}

void avx512bf16_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                              int H, int Hkv, int D, int window) {
    bf16_attention_fwd_with(avx512bf16_gemm_impl(), out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void avx512bf16_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                              const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                              int window) {
    bf16_attention_bwd_with(avx512bf16_gemm_impl(), dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}
