// kernels/attention/flash_attention.c — flash-style causal attention (contract in ops.h) on an
// instruction set's vector pieces (flash_attention.h: AttIsa).
//
// Queries and keys are cut into blocks of ATT_BLK (equal sizes, so the causal tiles are
// kb <= qb and only kb == qb straddles the diagonal). A tile is processed in groups of 4 query
// rows, and every product in it is one register-blocked micro-kernel, the AttIsa's mm4(): 4 rows
// of vector accumulators, one broadcast of an A element per row and one load of a B row per
// reduction step. Within the diagonal tile each 4-row group only computes the key vectors that
// reach its last row, and reductions over keys or queries stop/start at the diagonal, so the
// masked half costs little. The vector pieces (mm4, the packing transpose, the softmax and
// gradient rows, D_i's dot) are the instruction set's: avx512_attention.c, avx2_attention.c.
//
// K and V are first packed per (batch, kv head, key block) as transposed D × ATT_BLK panels,
// so S = Q K^T (and dP = dO V^T) read contiguous 64-key vectors.
//
// Forward: one task per (b, h, query block), online softmax over the key blocks, lse saved.
// Backward recomputes P = exp(S·scale - lse) per tile. dK, dV for a key block are summed over
// (q head in the group, query block) in that order by the one task owning the key block; dQ for
// a query block is summed over key blocks in ascending order. Two schedules produce exactly
// these sums:
//   fused  — one task per (b, kv head) walks key blocks and accumulates dQ as it goes
//            (5 tile products per tile);
//   split  — one task per (b, kv head, key block) for dK/dV, then one per (b, h, query block)
//            for dQ, recomputing S and dP (7 products per tile, but finer-grained).
// Both run the same tile code on the same operands in the same order, so they give identical
// bits; the fused one is used when there are enough (b, kv head) pairs to keep every thread
// busy. Results therefore never depend on the thread count.
//
// Head dims that are not a multiple of the vector width go to the reference implementation.
#include "kernels/attention/flash_attention.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "util/mem.h"

typedef struct {
    const AttIsa *isa;
    int B, T, H, Hkv, D, group, nblk, vl;
    int window;        // query t sees keys t-window .. t; 0 = all up to t
    float scale;
    size_t ldq, ldkv;  // row strides of q/out/dout (H·D) and k/v (Hkv·D)
} AttShape;

static AttShape att_shape(const AttIsa *isa, int B, int T, int H, int Hkv, int D, int window) {
    return (AttShape){.isa = isa, .vl = isa->vl, .B = B, .T = T, .H = H, .Hkv = Hkv, .D = D, .group = H / Hkv, .window = window,
                      .nblk = (T + ATT_BLK - 1) / ATT_BLK, .scale = 1.0f / sqrtf((float)D),
                      .ldq = (size_t)H * D, .ldkv = (size_t)Hkv * D};
}

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int imax(int a, int b) { return a > b ? a : b; }

// Number of keys of block k0 visible to query row q0+i: min(nk, q0+i-k0+1).
static inline int key_limit(int q0, int i, int k0, int nk) { return imin(nk, q0 + i - k0 + 1); }

// The window's side: the first key of block k0 that query row q0+i sees (0: the block's first).
// Keys before it are masked like those after the diagonal: probability 0.
static inline int key_first(const AttShape *s, int q0, int i, int k0) {
    return imax(0, attention_first_key(q0 + i, s->window) - k0);
}

// Block skipping for the window: the first key block query block qb reaches, and the last query
// block that reaches key block kb.
static inline int first_key_block(const AttShape *s, int qb) {
    return s->window > 0 ? imax(0, qb * ATT_BLK - s->window) / ATT_BLK : 0;
}
static inline int last_query_block(const AttShape *s, int kb) {
    int k1 = imin(s->T, (kb + 1) * ATT_BLK) - 1;  // the block's last key
    return s->window > 0 ? imin(s->nblk - 1, (k1 + s->window) / ATT_BLK) : s->nblk - 1;
}

// Pointers to 4 consecutive rows of a buffer.
static inline void rows4(float *out[4], float *base, size_t ld) {
    for (int r = 0; r < 4; r++) out[r] = base + r * ld;
}
static inline void crows4(const float *out[4], const float *base, size_t ld) {
    for (int r = 0; r < 4; r++) out[r] = base + r * ld;
}

// ---------------------------------------------------------------------------------------------
// Packing and shared tile pieces
// ---------------------------------------------------------------------------------------------

static float *panel(float *packed, const AttShape *s, int b, int hk, int kb) {
    return packed + (((size_t)b * s->Hkv + hk) * s->nblk + kb) * (size_t)s->D * ATT_BLK;
}

// Row pointers of 4 query rows starting at q0+i0 of head h; rows past the end repeat the last
// valid row (their results are discarded or masked, and this keeps every read in bounds).
static void qrows4(const float *out[4], const float *x, const AttShape *s, int b, int h, int q0, int i0, int nq) {
    for (int r = 0; r < 4; r++) {
        int i = imin(i0 + r, nq - 1);
        out[r] = x + ((size_t)b * s->T + q0 + i) * s->ldq + (size_t)h * s->D;
    }
}

// ---------------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------------

typedef struct {  // per-thread forward workspace
    float *S;     // ATT_BLK × ATT_BLK scores / probabilities
    float *O;     // ATT_BLK × D unnormalised output
    float m[ATT_BLK], l[ATT_BLK];
} FwdWork;

// One 4-row group of query block q0 against key block k0 (nk keys).
static void fwd_group(FwdWork *w, const float *q, const float *v, const float *kpanel, const AttShape *s, int b,
                      int h, int q0, int nq, int k0, int nk, int i0) {
    int jl = key_limit(q0, i0 + 3, k0, nk), nv = (jl + s->vl - 1) / s->vl;
    const float *qr[4], *sr_c[4];
    float *sr[4], *orow[4];
    qrows4(qr, q, s, b, h, q0, i0, nq);
    rows4(sr, w->S + (size_t)i0 * ATT_BLK, ATT_BLK);
    rows4(orow, w->O + (size_t)i0 * s->D, s->D);
    s->isa->mm4(sr, qr, 1, kpanel, ATT_BLK, s->D, nv, 1);  // S = Q K^T
    for (int r = 0; r < 4; r++) {
        int i = i0 + r;
        float a = s->isa->softmax_row(sr[r], nv, key_first(s, q0, i, k0), key_limit(q0, i, k0, nk), s->scale, &w->m[i],
                              &w->l[i]);
        if (a != 1.0f) s->isa->scale_row(orow[r], a, s->D);  // 1 whenever the running max held
    }
    crows4(sr_c, w->S + (size_t)i0 * ATT_BLK, ATT_BLK);
    const float *vb = v + ((size_t)b * s->T + k0) * s->ldkv + (size_t)(h / s->group) * s->D;
    s->isa->mm4(orow, sr_c, 1, vb, s->ldkv, jl, s->D / s->vl, 0);  // O += P V
}

static void fwd_task(FwdWork *w, float *out, float *lse, const float *q, const float *v, float *kpack,
                     const AttShape *s, int b, int h, int qb) {
    int q0 = qb * ATT_BLK, nq = imin(ATT_BLK, s->T - q0), ng = (nq + 3) / 4;
    memset(w->O, 0, (size_t)4 * ng * s->D * sizeof *w->O);
    for (int i = 0; i < 4 * ng; i++) w->m[i] = -INFINITY, w->l[i] = 0.0f;
    for (int kb = first_key_block(s, qb); kb <= qb; kb++) {
        int k0 = kb * ATT_BLK, nk = imin(ATT_BLK, s->T - k0);
        const float *kp = panel(kpack, s, b, h / s->group, kb);
        for (int g = 0; g < ng; g++) fwd_group(w, q, v, kp, s, b, h, q0, nq, k0, nk, 4 * g);
    }
    for (int i = 0; i < nq; i++) {
        size_t t = (size_t)b * s->T + q0 + i;
        s->isa->finish_row(out + t * s->ldq + (size_t)h * s->D, lse + ((size_t)b * s->H + h) * s->T + q0 + i,
                       w->O + (size_t)i * s->D, w->m[i], w->l[i], s->D);
    }
}

// Task index -> (batch·heads + head, block) with the block varying slowest: callers map block
// order so that, with dynamic scheduling, the longest tasks (most tiles) are handed out first.
static void task_coords(int idx, int nbh, int *bh, int *blk) {
    *bh = idx % nbh;
    *blk = idx / nbh;
}

// Key block kb of (b, kv head hk) of src (K or V) as a transposed D × ATT_BLK panel.
static void pack_panel(float *dst, const float *src, const AttShape *s, int b, int hk, int kb) {
    int k0 = kb * ATT_BLK;
    s->isa->pack_panel(dst, src + ((size_t)b * s->T + k0) * s->ldkv + (size_t)hk * s->D, s->ldkv,
                       imin(ATT_BLK, s->T - k0), s->D);
}

static void pack_all(float *pack, const float *src, const AttShape *s) {
    int n = s->B * s->Hkv * s->nblk;
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++) {
        int kb = i % s->nblk, bh = i / s->nblk;
        pack_panel(panel(pack, s, bh / s->Hkv, bh % s->Hkv, kb), src, s, bh / s->Hkv, bh % s->Hkv, kb);
    }
}

static float *alloc_floats(size_t n) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64 + 64);  // never 0 bytes (T = 0)
    if (!p) abort();
    return p;
}

// The packed K and V (megabytes: the model's whole K) and D_i are kept between calls, one buffer
// per role (util/mem.h). Allocated per call they were faulted in again on every step: perf's
// page-fault samples of fp32 training put 57% in pack_panel (cpu preset: ~2,000 faults a step;
// kit-d10: ~50,000).
static KeptBuf kept_k, kept_v, kept_di;

static float *kept_floats(KeptBuf *k, size_t n, int *slot) { return kept_claim(k, 1, (n ? n : 1) * sizeof(float), slot); }

void flash_attention_fwd(const AttIsa *isa, float *out, float *lse, const float *q, const float *k, const float *v,
                         int B, int T, int H, int Hkv, int D, int window) {
    if (D % isa->vl) { ref_attention_fwd(out, lse, q, k, v, B, T, H, Hkv, D, window); return; }
    AttShape s = att_shape(isa, B, T, H, Hkv, D, window);
    int slot_k;
    float *kpack = kept_floats(&kept_k, (size_t)B * Hkv * s.nblk * D * ATT_BLK, &slot_k);
    int ntask = B * H * s.nblk;
#pragma omp parallel
    {
        FwdWork w = {.S = alloc_floats((size_t)ATT_BLK * ATT_BLK), .O = alloc_floats((size_t)ATT_BLK * D)};
        pack_all(kpack, k, &s);
#pragma omp for schedule(dynamic, 1)
        for (int idx = 0; idx < ntask; idx++) {
            int bh, blk;
            task_coords(idx, B * H, &bh, &blk);
            fwd_task(&w, out, lse, q, v, kpack, &s, bh / H, bh % H, s.nblk - 1 - blk);
        }
        free(w.S);
        free(w.O);
    }
    kept_release(&kept_k, kpack, slot_k);
}

// ---------------------------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------------------------

typedef struct {  // read-only operands of one backward call
    AttShape s;
    const float *q, *k, *v, *dout, *lse;
    float *kpack, *vpack, *di;  // packed K, V panels; D_i = rowsum(dout · out) per (b, h, t)
    float *dq, *dk, *dv;
} BwdCtx;

typedef struct {          // per-thread backward workspace
    float *P, *dS;        // ATT_BLK × ATT_BLK
    float *dK, *dV;       // ATT_BLK × D accumulators of the key block
    float *dummy;         // D floats: where dQ rows past the end of the sequence go
} BwdWork;

// P and dS of tile (query block qb, key block kb) of head h, in w->P and w->dS.
static void bwd_tile(const BwdCtx *cx, BwdWork *w, int b, int h, int qb, int kb) {
    const AttShape *s = &cx->s;
    int q0 = qb * ATT_BLK, nq = imin(ATT_BLK, s->T - q0), k0 = kb * ATT_BLK, nk = imin(ATT_BLK, s->T - k0);
    int hk = h / s->group;
    const float *kp = panel(cx->kpack, s, b, hk, kb), *vp = panel(cx->vpack, s, b, hk, kb);
    const float *lse = cx->lse + ((size_t)b * s->H + h) * s->T + q0, *di = cx->di + ((size_t)b * s->H + h) * s->T + q0;
    for (int i0 = 0; i0 < nq; i0 += 4) {
        int nv = (key_limit(q0, i0 + 3, k0, nk) + s->vl - 1) / s->vl;
        const float *qr[4], *gr[4];
        float *pr[4], *dsr[4];
        qrows4(qr, cx->q, s, b, h, q0, i0, nq);
        qrows4(gr, cx->dout, s, b, h, q0, i0, nq);
        rows4(pr, w->P + (size_t)i0 * ATT_BLK, ATT_BLK);
        rows4(dsr, w->dS + (size_t)i0 * ATT_BLK, ATT_BLK);
        s->isa->mm4(pr, qr, 1, kp, ATT_BLK, s->D, nv, 1);   // S = Q K^T
        s->isa->mm4(dsr, gr, 1, vp, ATT_BLK, s->D, nv, 1);  // dP = dO V^T
        for (int r = 0; r < 4; r++) {
            int i = i0 + r, ok = i < nq, ii = ok ? i : nq - 1;
            s->isa->bwd_row(pr[r], dsr[r], nv, key_first(s, q0, i, k0), key_limit(q0, i, k0, nk), ok, s->scale, lse[ii],
                    di[ii]);
        }
    }
}

// dV += P^T dO and dK += dS^T Q for the tile's key rows, summing queries in order; the
// reduction for key rows j0..j0+3 starts at the first query that can see key j0.
static void bwd_accum_kv(const BwdCtx *cx, BwdWork *w, int b, int h, int qb, int kb) {
    const AttShape *s = &cx->s;
    int q0 = qb * ATT_BLK, nq = imin(ATT_BLK, s->T - q0), k0 = kb * ATT_BLK, nk = imin(ATT_BLK, s->T - k0);
    for (int j0 = 0; j0 < nk; j0 += 4) {
        int i0 = imax(0, k0 + j0 - q0);
        if (i0 >= nq) break;
        // with a window, queries after k0+j0+3+window see none of the 4 keys: their P and dS are 0
        int i1 = s->window > 0 ? imin(nq, k0 + j0 + 3 + s->window - q0 + 1) : nq;
        if (i1 <= i0) continue;
        size_t qoff = ((size_t)b * s->T + q0 + i0) * s->ldq + (size_t)h * s->D;
        const float *ap[4], *as[4];
        float *cv[4], *ck[4];
        crows4(ap, w->P + (size_t)i0 * ATT_BLK + j0, 1);
        crows4(as, w->dS + (size_t)i0 * ATT_BLK + j0, 1);
        rows4(cv, w->dV + (size_t)j0 * s->D, s->D);
        rows4(ck, w->dK + (size_t)j0 * s->D, s->D);
        s->isa->mm4(cv, ap, ATT_BLK, cx->dout + qoff, s->ldq, i1 - i0, s->D / s->vl, 0);
        s->isa->mm4(ck, as, ATT_BLK, cx->q + qoff, s->ldq, i1 - i0, s->D / s->vl, 0);
    }
}

// dQ += dS K for the tile's query rows, straight into dq (rows past the end go to a dummy).
static void bwd_accum_q(const BwdCtx *cx, BwdWork *w, int b, int h, int qb, int kb) {
    const AttShape *s = &cx->s;
    int q0 = qb * ATT_BLK, nq = imin(ATT_BLK, s->T - q0), k0 = kb * ATT_BLK, nk = imin(ATT_BLK, s->T - k0);
    const float *kb_rows = cx->k + ((size_t)b * s->T + k0) * s->ldkv + (size_t)(h / s->group) * s->D;
    for (int i0 = 0; i0 < nq; i0 += 4) {
        const float *as[4];
        float *cq[4];
        crows4(as, w->dS + (size_t)i0 * ATT_BLK, ATT_BLK);
        for (int r = 0; r < 4; r++)
            cq[r] = i0 + r < nq ? cx->dq + ((size_t)b * s->T + q0 + i0 + r) * s->ldq + (size_t)h * s->D : w->dummy;
        s->isa->mm4(cq, as, 1, kb_rows, s->ldkv, key_limit(q0, i0 + 3, k0, nk), s->D / s->vl, 0);
    }
}

static void zero_dq_head(const BwdCtx *cx, int b, int h) {
    const AttShape *s = &cx->s;
    for (int t = 0; t < s->T; t++)
        memset(cx->dq + ((size_t)b * s->T + t) * s->ldq + (size_t)h * s->D, 0, (size_t)s->D * sizeof(float));
}

// Key block kb of (b, hk): dK and dV over every q head of the group and every query block at or
// after kb; with_dq also adds each tile's dQ contribution (fused schedule).
static void bwd_kv_task(const BwdCtx *cx, BwdWork *w, int b, int hk, int kb, int with_dq) {
    const AttShape *s = &cx->s;
    int k0 = kb * ATT_BLK, nk = imin(ATT_BLK, s->T - k0);
    memset(w->dK, 0, (size_t)ATT_BLK * s->D * sizeof(float));
    memset(w->dV, 0, (size_t)ATT_BLK * s->D * sizeof(float));
    for (int h = hk * s->group; h < (hk + 1) * s->group; h++)
        for (int qb = kb; qb <= last_query_block(s, kb); qb++) {
            bwd_tile(cx, w, b, h, qb, kb);
            bwd_accum_kv(cx, w, b, h, qb, kb);
            if (with_dq) bwd_accum_q(cx, w, b, h, qb, kb);
        }
    for (int j = 0; j < nk; j++) {
        size_t o = ((size_t)b * s->T + k0 + j) * s->ldkv + (size_t)hk * s->D;
        memcpy(cx->dk + o, w->dK + (size_t)j * s->D, (size_t)s->D * sizeof(float));
        memcpy(cx->dv + o, w->dV + (size_t)j * s->D, (size_t)s->D * sizeof(float));
    }
}

// Fused schedule: everything for (b, hk), key blocks in ascending order.
static void bwd_fused_task(const BwdCtx *cx, BwdWork *w, int b, int hk) {
    for (int h = hk * cx->s.group; h < (hk + 1) * cx->s.group; h++) zero_dq_head(cx, b, h);
    for (int kb = 0; kb < cx->s.nblk; kb++) bwd_kv_task(cx, w, b, hk, kb, 1);
}

// Split schedule, dQ part: query block qb of (b, h), key blocks in ascending order.
static void bwd_q_task(const BwdCtx *cx, BwdWork *w, int b, int h, int qb) {
    const AttShape *s = &cx->s;
    int q0 = qb * ATT_BLK, nq = imin(ATT_BLK, s->T - q0);
    for (int i = 0; i < nq; i++)
        memset(cx->dq + ((size_t)b * s->T + q0 + i) * s->ldq + (size_t)h * s->D, 0, (size_t)s->D * sizeof(float));
    for (int kb = first_key_block(s, qb); kb <= qb; kb++) {
        bwd_tile(cx, w, b, h, qb, kb);
        bwd_accum_q(cx, w, b, h, qb, kb);
    }
}

static void bwd_prepare(const BwdCtx *cx, const float *out) {
    const AttShape *s = &cx->s;
    int n = s->B * s->Hkv * s->nblk;
#pragma omp for schedule(static) nowait
    for (int i = 0; i < n; i++) {
        int kb = i % s->nblk, bh = i / s->nblk, b = bh / s->Hkv, hk = bh % s->Hkv;
        pack_panel(panel(cx->kpack, s, b, hk, kb), cx->k, s, b, hk, kb);
        pack_panel(panel(cx->vpack, s, b, hk, kb), cx->v, s, b, hk, kb);
    }
#pragma omp for schedule(static)
    for (int bt = 0; bt < s->B * s->T; bt++)  // D_i = sum_d dout·out, every head of row (b, t)
        for (int h = 0; h < s->H; h++) {
            size_t off = (size_t)bt * s->ldq + (size_t)h * s->D;
            cx->di[((size_t)(bt / s->T) * s->H + h) * s->T + bt % s->T] = s->isa->dot(cx->dout + off, out + off, s->D);
        }
}

static void bwd_run(const BwdCtx *cx, const float *out, int fused) {
    const AttShape *s = &cx->s;
    int nkv = s->B * s->Hkv;
#pragma omp parallel
    {
        BwdWork w = {.P = alloc_floats((size_t)ATT_BLK * ATT_BLK), .dS = alloc_floats((size_t)ATT_BLK * ATT_BLK),
                     .dK = alloc_floats((size_t)ATT_BLK * s->D), .dV = alloc_floats((size_t)ATT_BLK * s->D),
                     .dummy = alloc_floats((size_t)s->D)};
        bwd_prepare(cx, out);
        if (fused) {
#pragma omp for schedule(dynamic, 1)
            for (int i = 0; i < nkv; i++) bwd_fused_task(cx, &w, i / s->Hkv, i % s->Hkv);
        } else {
#pragma omp for schedule(dynamic, 1) nowait
            for (int idx = 0; idx < nkv * s->nblk; idx++) {
                int bh, kb;  // key blocks ascending = most query blocks first
                task_coords(idx, nkv, &bh, &kb);
                bwd_kv_task(cx, &w, bh / s->Hkv, bh % s->Hkv, kb, 0);
            }
#pragma omp for schedule(dynamic, 1)
            for (int idx = 0; idx < s->B * s->H * s->nblk; idx++) {
                int bh, blk;  // query blocks descending = most key blocks first
                task_coords(idx, s->B * s->H, &bh, &blk);
                bwd_q_task(cx, &w, bh / s->H, bh % s->H, s->nblk - 1 - blk);
            }
        }
        free(w.P), free(w.dS), free(w.dK), free(w.dV), free(w.dummy);
    }
}

// Which schedule: fused when every thread gets at least two (b, kv head) tasks. Either gives
// the same bits (see the file comment), so this only affects speed.
static int bwd_use_fused(int B, int Hkv) {
    const char *env = getenv("FRONTIER_ATTN_BWD");  // "fused" / "split": for tests and benchmarks
    if (env && !strcmp(env, "fused")) return 1;
    if (env && !strcmp(env, "split")) return 0;
    return B * Hkv >= 2 * omp_get_max_threads();
}

void flash_attention_bwd(const AttIsa *isa, float *dq, float *dk, float *dv, const float *dout, const float *out,
                         const float *lse, const float *q, const float *k, const float *v, int B, int T, int H, int Hkv,
                         int D, int window) {
    if (D % isa->vl) { ref_attention_bwd(dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window); return; }
    BwdCtx cx = {.s = att_shape(isa, B, T, H, Hkv, D, window), .q = q, .k = k, .v = v, .dout = dout, .lse = lse,
                 .dq = dq, .dk = dk, .dv = dv};
    size_t npanel = (size_t)B * Hkv * cx.s.nblk * D * ATT_BLK;
    int slot_k, slot_v, slot_di;
    cx.kpack = kept_floats(&kept_k, npanel, &slot_k);
    cx.vpack = kept_floats(&kept_v, npanel, &slot_v);
    cx.di = kept_floats(&kept_di, (size_t)B * H * T, &slot_di);
    bwd_run(&cx, out, bwd_use_fused(B, Hkv));
    kept_release(&kept_k, cx.kpack, slot_k), kept_release(&kept_v, cx.vpack, slot_v);
    kept_release(&kept_di, cx.di, slot_di);
}
