// kernels/gemm/gemm_driver.c — blocking, packing order and threading of the SIMD matrix products
// (see gemm_driver.h).
#include "kernels/gemm/gemm_driver.h"
#include "kernels/gemm/gemm_args.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/mem.h"

#define A_BYTES (256u << 10)     // packed A: one micro-panel (<= 48 KiB), or for TN a block of them (L2)
#define SMALL_MACS (1L << 18)    // below this many multiply-adds a product runs on one thread


// ---------------------------------------------------------------------------------------------
// Packing buffers: a pool of per-call slots kept between calls (util/mem.h), one per concurrent
// product.
// ---------------------------------------------------------------------------------------------

#define POOL_SLOTS 64

static KeptBuf pool[POOL_SLOTS];

// Lab checks (gemm_set_poison): every packing buffer is filled with 0xff bytes — NaN as fp32 and
// as bf16 — before use, so a kernel that reads packed data nobody wrote (padding left unzeroed,
// a panel offset off by one) gives NaN instead of passing on a buffer that happened to hold zeros.
static atomic_int poison;

void gemm_set_poison(int on) { atomic_store(&poison, on); }
int gemm_poisoning(void) { return atomic_load(&poison); }

static atomic_uint ablation;  // GEMM_ABLATE_* bits

void gemm_set_ablation(unsigned bits) { atomic_store(&ablation, bits); }
unsigned gemm_ablation(void) { return atomic_load(&ablation); }
static int ablated(unsigned bit) { return (atomic_load_explicit(&ablation, memory_order_relaxed) & bit) != 0; }

static char *buf_acquire(int *slot) {
    char *buf = kept_claim(pool, POOL_SLOTS, A_BYTES + B_BYTES, slot);
    if (atomic_load(&poison)) memset(buf, 0xff, A_BYTES + B_BYTES);
    return buf;
}
static void buf_release(char *buf, int slot) { kept_release(pool, buf, slot); }

// ---------------------------------------------------------------------------------------------
// One thread's block of C: rows [m0, m1), columns [n0, n1)
// ---------------------------------------------------------------------------------------------







// Pack the B panel of columns [jc, jc+nc) and depth [pc, pc+kc) into NR-wide micro-panels.
// Row-major B (nn, tn) is packed 16 rows at a time across all micro-panels, so the source is
// read nearly sequentially (one micro-panel at a time would stride through every row).
#define PACK_ROWS 16

// An impl whose depth step exceeds a k pair (AMX: 32) reads every micro-panel to depth
// round_up(kc, kstep); the pack routines stop at the k pair, so the rest is zeroed here.
static void zero_depth_padding(const GemmImpl *g, char *bp, size_t panel_bytes, int nc, int kc) {
    size_t used = round_up((size_t)kc, 2) * (size_t)g->nr * g->elem;
    if (used >= panel_bytes) return;
    for (int jr = 0; jr < nc; jr += g->nr) memset(bp + (size_t)(jr / g->nr) * panel_bytes + used, 0, panel_bytes - used);
}

// tmp: the thread's scratch for a transformed operand (gemm_block sizes it), or NULL without one.
// relu²(B) (and relu²(A) below) is formed inside the impl's packer where it has one
// (pack_a_relu2, pack_b_relu2: AVX-512 and AVX512_BF16; convert_rows16_relu2: AVX512_BF16;
// pack_b_relu2 only: AVX2), instead of written to scratch and packed from there: the same bits,
// one pass less over L1.
// AVX2's packers are plain C, where a scalar relu² costs more than the pass it saves, so only its
// B packer forms relu² (in ymm). Not AMX, whose packers nothing here can time. What each is worth:
// docs/perf.md, "GEMM driver".
static void pack_b_panel(const GemmArgs *x, char *bp, size_t panel_bytes, int jc, int nc, int pc, int kc,
                         float *tmp) {
    const GemmImpl *g = x->g;
    if (x->layout == GEMM_NT) {
        for (int jr = 0; jr < nc; jr += g->nr)
            g->pack_b(bp + (size_t)(jr / g->nr) * panel_bytes, x->b + (size_t)(jc + jr) * x->ldb + pc, x->ldb,
                      imin(g->nr, nc - jr), kc, 1);
        zero_depth_padding(g, bp, panel_bytes, nc, kc);
        return;
    }
    size_t row_bytes = (size_t)g->nr * g->elem;  // one packed k row of a micro-panel (PACK_ROWS is even)
    for (int k0 = 0; k0 < kc; k0 += PACK_ROWS) {
        int rows = imin(PACK_ROWS, kc - k0);
        const float *src = x->b + (size_t)(pc + k0) * x->ldb + jc;
        for (int jr = 0; jr < nc; jr += g->nr) {
            int w = imin(g->nr, nc - jr);
            char *dst = bp + (size_t)(jr / g->nr) * panel_bytes + (size_t)k0 * row_bytes;
            if (x->b_relu2 && g->pack_b_relu2) {  // relu² formed while packing
                g->pack_b_relu2(dst, src + jr, x->ldb, w, rows);
            } else if (x->b_relu2) {  // this piece as relu², in scratch (PACK_ROWS x NR: stays in L1)
                g->relu2_rows(tmp, src + jr, x->ldb, rows, w);
                g->pack_b(dst, tmp, (size_t)w, w, rows, 0);
            } else {
                g->pack_b(dst, src + jr, x->ldb, w, rows, 0);
            }
        }
    }
    zero_depth_padding(g, bp, panel_bytes, nc, kc);
}

#define RELU2_DEPTH 64  // even, so every piece starts on a k pair

static void pack_a_strip(const GemmArgs *x, char *ap, int i, int h, int pc, int kc, float *tmp) {
    if (x->a_relu2 && x->g->pack_a_relu2) {  // nt: relu² formed while packing
        x->g->pack_a_relu2(ap, x->a + (size_t)i * x->lda + pc, x->lda, h, kc);
        return;
    }
    if (x->a_relu2) {  // nt: the strip's rows as relu², RELU2_DEPTH at a time in scratch (in L1)
        const GemmImpl *g = x->g;
        for (int k0 = 0; k0 < kc; k0 += RELU2_DEPTH) {
            int d = imin(RELU2_DEPTH, kc - k0);
            g->relu2_rows(tmp, x->a + (size_t)i * x->lda + pc + k0, x->lda, h, d);
            g->pack_a(ap + (size_t)k0 * g->mr * g->elem, tmp, (size_t)d, h, d, 1);
        }
        return;
    }
    if (x->a16_pairs) {  // row pairs, for an impl that cannot read them in place (pc is even: kcb is)
        x->g->pack_a_pairs(ap, (const uint32_t *)(x->a16 + (size_t)(pc / 2) * x->a16_pairs) + i, x->a16_pairs / 2, h, kc);
        return;
    }
    if (x->a16) {
        if (x->layout == GEMM_TN) x->g->pack_a16(ap, x->a16 + (size_t)pc * x->lda + i, x->lda, h, kc, 0);
        else x->g->pack_a16(ap, x->a16 + (size_t)i * x->lda + pc, x->lda, h, kc, 1);
        return;
    }
    if (x->layout == GEMM_TN) x->g->pack_a(ap, x->a + (size_t)pc * x->lda + i, x->lda, h, kc, 0);
    else x->g->pack_a(ap, x->a + (size_t)i * x->lda + pc, x->lda, h, kc, 1);
}

// The strip's rows [i, i+h), depth [pc, pc+kc) as bf16 rows of stride ld16 (use_rows16_a); relu²
// first when A is relu²(a), in scratch.
static void convert_a_strip(const GemmArgs *x, uint16_t *dst, size_t ld16, int i, int h, int pc, int kc, float *tmp) {
    const float *src = x->a + (size_t)i * x->lda + pc;
    size_t lda = x->lda;
    if (x->a_relu2 && x->g->convert_rows16_relu2) {
        x->g->convert_rows16_relu2(dst, ld16, src, lda, h, kc);
        return;
    }
    if (x->a_relu2) {
        x->g->relu2_rows(tmp, src, lda, h, kc);
        src = tmp, lda = (size_t)kc;
    }
    x->g->convert_rows16(dst, ld16, src, lda, h, kc);
}

// Prefetch part `part` of `parts` of the A strip (rows [i, i+h), depth [pc, pc+kc)) that the next
// round will pack. A strip is h short pieces of rows (or kc of columns, for TN) that the hardware
// prefetchers do not pick up, and packing it from memory would otherwise stall on every line;
// spreading the prefetches over the current round's kernel calls overlaps the misses with FMAs.
// Into L2 (locality 1): in L1 they would be evicted by the B micro-panels streaming through first.
static void prefetch_a_part(const GemmArgs *x, int i, int h, int pc, int kc, int part, int parts) {
    size_t elem = x->a16 ? 2 : 4;
    const char *a = x->a16 ? (const char *)x->a16 : (const char *)x->a;
    if (x->layout == GEMM_TN) {  // kc pieces of h elements, one per k
        for (int k = pc + kc * part / parts, k1 = pc + kc * (part + 1) / parts; k < k1; k++) {
            const char *p = a + ((size_t)k * x->lda + i) * elem;
            __builtin_prefetch(p, 0, 1);
            __builtin_prefetch(p + (size_t)(h - 1) * elem, 0, 1);
        }
        return;
    }
    int per_line = (int)(64 / elem), lines = (kc + per_line - 1) / per_line, n = h * lines;  // h rows of kc
    for (int t = n * part / parts, t1 = n * (part + 1) / parts; t < t1; t++)
        __builtin_prefetch(a + ((size_t)(i + t / lines) * x->lda + pc + (size_t)(t % lines) * per_line) * elem, 0, 1);
}

// Prefetching the next strip's in-place row pairs or its ReLU² epilogue rows, other depth blocks
// for head_dw and packing its pairs were tried and not kept: none survived 6 alternated pairs
// (docs/perf.md, "GEMM driver").

// TN products (the weight gradients dW += dyᵀ x) read both operands as K rows, and in training
// both arrive cold (the head's streams evict them): packed one k block at a time, each block
// first waited on memory (`frontier kernels bench --cold` against a warm run). So while one k block's kernels run, this prefetches part `part` of `parts` of
// the next block's rows: A's columns [m0, m1) and B's [n0, n1) of rows [k0, k1), into L2.
static void prefetch_tn_rows(const GemmArgs *x, int k0, int k1, int m0, int m1, int n0, int n1, int part,
                             int parts) {
    int la = (m1 - m0 + 15) / 16, lb = (n1 - n0 + 15) / 16, per_row = la + lb, n = (k1 - k0) * per_row;
    for (int t = (int)((long)n * part / parts), t1 = (int)((long)n * (part + 1) / parts); t < t1; t++) {
        int k = k0 + t / per_row, l = t % per_row;
        const float *p = l < la ? x->a + (size_t)k * x->lda + m0 + 16 * l : x->b + (size_t)k * x->ldb + n0 + 16 * (l - la);
        __builtin_prefetch(p, 0, 1);
    }
}

// TN's A strips are columns of a (K, M) matrix: h floats from each of kc rows M apart. Packed a
// strip at a time, every row piece is a separate short read, and when M is a power of two (the
// vocabulary: dlogits rows 32 KiB apart) all of a strip's lines fall in a few L2 sets, so the
// prefetched lines evict each other. Instead a block of strips (A_BYTES) is packed 16 rows at a
// time, reading each row's whole block width (~1 KiB) contiguously, like row-major B panels.
// (Not for an impl whose A layout is not k rows of MR, i.e. whose depth step exceeds these 16 rows:
// AMX's strips are 32-deep blocks of whole rows, packed a strip at a time.)
static int a_block_strips(const GemmArgs *x, size_t strip_bytes) {
    int strips = (int)(A_BYTES / strip_bytes);
    return x->layout == GEMM_TN && !x->a16_pairs && x->g->kstep <= PACK_ROWS && strips > 1 ? strips : 1;
}

// A read where it lies, not packed: bf16 rows (nn) or row pairs (tn) where the impl reads them.
static int pairs_in_place(const GemmArgs *x) { return x->a16_pairs && x->g->kernel_pairs; }
static int a_in_place(const GemmArgs *x) { return x->a16_direct || pairs_in_place(x); }

static void pack_a_block(const GemmArgs *x, char *ap, size_t strip_bytes, int i0, int i1, int pc, int kc) {
    const GemmImpl *g = x->g;
    size_t row_bytes = (size_t)g->mr * g->elem;  // one packed k row of a strip (PACK_ROWS is even)
    for (int k0 = 0; k0 < kc; k0 += PACK_ROWS)
        for (int i = i0; i < i1; i += g->mr) {
            char *dst = ap + (size_t)((i - i0) / g->mr) * strip_bytes + (size_t)k0 * row_bytes;
            size_t at = (size_t)(pc + k0) * x->lda + i;
            int w = imin(g->mr, i1 - i), rows = imin(PACK_ROWS, kc - k0);
            if (x->a16) g->pack_a16(dst, x->a16 + at, x->lda, w, rows, 0);
            else g->pack_a(dst, x->a + at, x->lda, w, rows, 0);
        }
}

// Row-major A (nt, nn) feeds the kernel unpacked when the block is narrow: a transposed strip
// then serves only a few kernel calls (N = 128: 4) and packing it took ~20% of the time, while
// for wide blocks the packed, contiguous strip pays off. Not when A's row stride is a multiple of
// 4 KiB: the MR rows' current lines would all fall in one L1 set and evict each other.
#define DIRECT_MAX_COLS 256
static int use_direct_a(const GemmArgs *x, int cols) {
    if (ablated(GEMM_ABLATE_DIRECT_A)) return 0;
    return x->g->kernel_rows && !x->a16 && x->layout != GEMM_TN && cols <= DIRECT_MAX_COLS && x->lda % 1024 != 0;
}

// bf16 impls: fp32 A strips converted to bf16 rows, which kernel_rows16 reads in place, instead
// of packed into k pairs by 16 x 16 transposes. Two cases win:
//   narrow blocks (<= 256 columns): the packed strip feeds only a few kernel calls, and packing
//     it dominates them;
//   deep products (K >= 512): the rows kernel's per-call set-up (14 row offsets) is spread over a
//     long depth.
// Causal nt products too (attention's S = Q Kᵀ and dP = dO Vᵀ; their depth is whole, only the
// columns stop at the diagonal), at any width. Not for shallow wide ones (no gain), nor for
// relu²(A) in a wide block unless the impl forms relu² while converting (convert_rows16_relu2):
// through scratch, the whole strip is written as relu² before its conversion, which costs more
// than packing it. The rows are padded so that their lines do not share L1 sets. Measured:
// docs/perf.md, "GEMM driver" (and FRONTIER_ABLATE=rows16_a / causal_rows16).
// Same rounding, same k-pair chains: the same bits as the packed strips.
#define ROWS16_MAX_COLS 256
#define ROWS16_MIN_DEPTH 512
static int use_rows16_a(const GemmArgs *x, int cols) {
    if (!x->g->convert_rows16 || !x->g->kernel_rows16 || x->a16 || x->layout == GEMM_TN) return 0;
    if (x->causal) return x->layout == GEMM_NT && !ablated(GEMM_ABLATE_CAUSAL_ROWS16);
    if (ablated(GEMM_ABLATE_ROWS16_A)) return 0;
    return cols <= ROWS16_MAX_COLS || (x->K >= ROWS16_MIN_DEPTH && (!x->a_relu2 || x->g->convert_rows16_relu2));
}
static size_t rows16_ld(int kc) { return round_up((size_t)kc + 1, 32) + 32; }

// All of B's micro-panels in the pinned layout (pinned_offset), columns split between threads.
void gemm_pack_b_share(const GemmArgs *x, char *packed, int t, int nt) {
    const GemmImpl *g = x->g;
    int panels = ceil_div(x->N, g->nr), p0 = panels * t / nt, p1 = panels * (t + 1) / nt;
    if (p0 == p1) return;
    int kcb = k_block(g, x->K), jc = p0 * g->nr, nc = imin(x->N, p1 * g->nr) - jc;
    for (int pc = 0; pc < x->K; pc += kcb) {
        int kc = imin(kcb, x->K - pc);
        size_t panel_bytes = panel_size(g, kc, g->nr);
        pack_b_panel(x, packed + pinned_offset(x, pc, jc), panel_bytes, jc, nc, pc, kc, NULL);
    }
}

// ---------------------------------------------------------------------------------------------
// Causal products (gemm_run_op with causal): the depth range [lo, hi) of strip rows [i, i+h) that can
// hold non-zero terms, and the columns [first, end) that are not wholly outside every row's keys.
// With a window, query q sees keys q + diag - window .. q + diag (diag: query row 0's position
// among the keys), so the range has a second bound.
// ---------------------------------------------------------------------------------------------

static int round_down_to(int v, int m) { return v / m * m; }
static int clamp0(int v) { return v > 0 ? v : 0; }

// NN (rows = queries, depth = keys): key k is seen by query i when i + diag - window <= k <= i + diag.
// TN (rows = keys, depth = queries): key i is seen by query k when i - diag <= k <= i - diag + window.
static void causal_depth(const GemmArgs *x, int i, int h, int *lo, int *hi) {
    int step = x->g->kstep, w = x->window;
    *lo = 0, *hi = x->K;
    if (!x->causal) return;
    if (x->layout == GEMM_NN) {
        *hi = imin(x->K, (int)round_up((size_t)clamp0(i + h + x->diag), (size_t)step));
        if (w > 0) *lo = imin(x->K, round_down_to(clamp0(i + x->diag - w), step));
    }
    if (x->layout == GEMM_TN) {
        *lo = imin(x->K, round_down_to(clamp0(i - x->diag), step));
        if (w > 0) *hi = imin(x->K, (int)round_up((size_t)clamp0(i + h - x->diag + w), (size_t)step));
    }
}

// NT (rows = queries, columns = keys): columns from here on are above every row of the strip.
static int causal_cols(const GemmArgs *x, int i, int h) {
    return x->causal && x->layout == GEMM_NT ? i + h + x->diag : x->N;
}

// NT with a window: columns before this one are left of every row's window (0 without one).
static int window_first_col(const GemmArgs *x, int i) {
    return x->causal && x->window > 0 && x->layout == GEMM_NT ? clamp0(i + x->diag - x->window) : 0;
}

// A kernel call that resumes a chain (a k block after the first, or accumulating) first loads its
// C tile, h rows of NR floats, and with C beyond the caches those loads stall the kernel: fp32
// products whose C is far beyond L2 spend most of their time in those loads (under perf), each
// k block reading the whole C again.
// So during each call the next tile's C rows are prefetched, for writing (the call stores them),
// when C is at least C_PREFETCH_MIN_BYTES. Smaller ones (the cpu preset's weight gradients, 64-256
// KiB, which stay in L2) did not gain in training.
// Every impl's tiles go through here (AMX's too, untimed). Same bits: a prefetch moves no value.
// Measured: docs/perf.md, "GEMM driver" (FRONTIER_ABLATE=c_prefetch).
#define C_PREFETCH_MIN_BYTES (1u << 20)
static void prefetch_c_tile(const float *c, size_t ldc, int h, int w) {
    for (int r = 0; r < h; r++)
        for (int j = 0; j < w; j += 16) __builtin_prefetch(c + (size_t)r * ldc + j, 1, 3);
}

static void gemm_block(const GemmArgs *x, int m0, int m1, int n0, int n1) {
    const GemmImpl *g = x->g;
    int slot;
    char *buf = buf_acquire(&slot), *ap = buf, *bp = buf + A_BYTES;
    int kcb = args_kcb(x), ncb = n_block(g, kcb);
    if (g->begin) g->begin();
    int direct = !x->causal && use_direct_a(x, n1 - n0), rows16 = !direct && use_rows16_a(x, n1 - n0);
    // a transformed operand's piece before packing: MR x RELU2_DEPTH or, read unpacked by the
    // kernel (direct), MR x kc (A); PACK_ROWS x NR (B)
    float *tmp = NULL;
    if (x->a_relu2 || x->b_relu2)
        tmp = xmalloc((size_t)(g->mr * kcb > PACK_ROWS * g->nr ? g->mr * kcb : PACK_ROWS * g->nr) * sizeof *tmp);
    size_t ld16 = rows16 ? rows16_ld(kcb) : 0;  // (mr rows of it fit in A_BYTES: kcb <= 768)
    int big_c = (size_t)x->M * x->N * sizeof(float) >= C_PREFETCH_MIN_BYTES && !ablated(GEMM_ABLATE_C_PREFETCH);
    for (int jc = n0; jc < n1; jc += ncb) {
        int nc = imin(ncb, n1 - jc);
        for (int pc = 0; pc < x->K; pc += kcb) {
            int kc = imin(kcb, x->K - pc);
            size_t panel_bytes = x->packed_b ? pinned_panel_bytes(x, pc) : panel_size(g, kc, g->nr);
            const char *bblock = bp;
            if (x->packed_b) bblock = x->packed_b + pinned_offset(x, pc, jc);
            else pack_b_panel(x, bp, panel_bytes, jc, nc, pc, kc, tmp);
            size_t strip_bytes = panel_size(g, kc, g->mr);
            int strips = direct || rows16 ? 1 : a_block_strips(x, strip_bytes);
            // TN with fp32 operands: the next k block's rows are prefetched over this block's calls
            int pf_k0 = pc + kc, pf_k1 = imin(x->K, pf_k0 + kcb);
            int pf = x->layout == GEMM_TN && !x->a16 && !x->causal && pf_k0 < x->K;
            // (counted over every tile: where a symmetric or causal product skips tiles, the last
            // parts go unprefetched)
            int pf_calls = ceil_div(m1 - m0, g->mr) * ceil_div(nc, g->nr), pf_call = 0;
            for (int i = m0; i < m1; i += g->mr) {
                int h = imin(g->mr, m1 - i), s = (i - m0) / g->mr % strips;
                if (strips > 1 && s == 0) pack_a_block(x, ap, strip_bytes, i, imin(m1, i + strips * g->mr), pc, kc);
                else if (rows16) convert_a_strip(x, (uint16_t *)ap, ld16, i, h, pc, kc, tmp);
                else if (strips == 1 && !direct && !a_in_place(x)) pack_a_strip(x, ap, i, h, pc, kc, tmp);
                // The depth this strip runs in this k block: all of it, or a causal product's
                // part that can be non-zero (whole pairs; a skipped term would only add 0).
                int lo, hi;
                causal_depth(x, i, h, &lo, &hi);
                int k0 = lo > pc ? lo : pc, k1 = imin(hi, pc + kc);
                if (k0 >= k1) {
                    // no depth at all (keys the window hides from every query of a TN product):
                    // the strip's C is an empty sum, 0 unless accumulating
                    if (lo >= hi && pc == 0 && !x->accumulate)
                        for (int r = 0; r < h; r++) memset(x->c + (size_t)(i + r) * x->ldc + jc, 0, (size_t)nc * sizeof(float));
                    continue;
                }
                // later k blocks resume the chain from C; so does a causal strip's first block
                // when an earlier one already started it
                int load_c = x->accumulate || pc > round_down_to(lo, kcb);
                const char *astrip = ap + (size_t)s * strip_bytes + (size_t)(k0 - pc) * g->mr * g->elem;
                int j_first = x->upper && i > jc ? (i - jc) / g->nr * g->nr : 0;  // first panel not wholly below
                int j_window = window_first_col(x, i) - jc;  // first panel not wholly left of the window
                if (j_window > j_first) j_first = round_down_to(j_window, g->nr);
                int j_end = imin(nc, causal_cols(x, i, h) - jc);                   // first panel wholly above
                const float *arow = direct ? x->a + (size_t)i * x->lda + pc : NULL;
                size_t lda = x->lda;
                if (direct && x->a_relu2) {  // the kernel reads the strip's relu² rows from scratch
                    g->relu2_rows(tmp, arow, lda, h, kc);
                    arow = tmp, lda = (size_t)kc;
                }
                float *crow = x->c + (size_t)i * x->ldc + jc;
                int next = i + g->mr, parts = (nc + g->nr - 1) / g->nr, pf_c = load_c && big_c;
                for (int jr = j_first; jr < j_end; jr += g->nr) {
                    if (strips == 1 && next < m1 && !x->a16_direct && !x->a16_pairs)  // a or a16 rows packed next
                        prefetch_a_part(x, next, imin(g->mr, m1 - next), pc, kc, jr / g->nr, parts);
                    if (pf) prefetch_tn_rows(x, pf_k0, pf_k1, m0, m1, jc, jc + nc, pf_call++, pf_calls);
                    const char *bpanel = bblock + (size_t)(jr / g->nr) * panel_bytes + (size_t)(k0 - pc) * g->nr * g->elem;
                    int w = imin(g->nr, nc - jr);
                    if (pf_c) {  // the next tile's C, which its kernel call reads first
                        if (jr + g->nr < j_end)
                            prefetch_c_tile(crow + jr + g->nr, x->ldc, h, imin(g->nr, nc - jr - g->nr));
                        else if (next < m1)
                            prefetch_c_tile(x->c + (size_t)next * x->ldc + jc + j_first, x->ldc, imin(g->mr, m1 - next),
                                            nc - j_first);
                    }
                    if (x->a16_direct)  // bf16 rows read in place (gemm_rows_nt's next): nothing packed
                        g->kernel_rows16(k1 - k0, x->a16 + (size_t)i * x->lda + k0, x->lda, bpanel, crow + jr, x->ldc,
                                         h, w, load_c);
                    else if (rows16)  // the strip converted to bf16 rows
                        g->kernel_rows16(kc, (const uint16_t *)ap, ld16, bpanel, crow + jr, x->ldc, h, w, load_c);
                    else if (pairs_in_place(x))  // row pairs: each k pair of rows i.. is 32-bit words side by side
                        g->kernel_pairs(k1 - k0, (const uint32_t *)(x->a16 + (size_t)(k0 / 2) * x->a16_pairs) + i,
                                        x->a16_pairs / 2, bpanel, crow + jr, x->ldc, h, w, load_c);
                    else if (direct) g->kernel_rows(kc, arow, lda, bpanel, crow + jr, x->ldc, h, w, load_c);
                    else g->kernel(k1 - k0, astrip, bpanel, crow + jr, x->ldc, h, w, load_c);
                }
                if (x->relu2_grad && k1 == x->K)  // the strip's C is final: ReLU²'s backward while in cache
                    g->relu2_grad_rows(crow + j_first, x->relu2_grad + (size_t)i * x->N + jc + j_first, x->ldc, h,
                                       imin(nc, j_end) - j_first);
            }
        }
    }
    free(tmp);
    buf_release(buf, slot);
    if (g->end) g->end();
}

// ---------------------------------------------------------------------------------------------
// TN products with a narrow A (the cpu preset's weight gradients dW += dyᵀ x): A converted once,
// its rows shared out among the threads, into bf16 row pairs that kernel_pairs reads in place,
// instead of packed k block by k block by every thread whose block needs it (with the column
// split the grid picks for 128x128, both threads packed all of A, from memory in training).
// The conversion streams through A's rows in order, one pass. Same rounding, same k-pair
// chains: the same bits.
// Not where it lost: a pair buffer beyond the caches (PAIRS_MAX_BYTES), wide B blocks that re-read
// the in-place strip for many column panels (PAIRS_MAX_N), short products (PAIRS_MIN_K), symmetric
// ones. Pair rows are an odd number of cache lines apart, so that a strip's pieces spread over the
// L1 sets (with an even number, every second row fell in the same sets and thrashed them).
// Splitting the depth or the rows instead, and a 1024-deep k block, were tried and not kept.
// Measured: docs/perf.md, "GEMM driver" (FRONTIER_ABLATE=tn_pairs).
// ---------------------------------------------------------------------------------------------

#define PAIRS_MAX_BYTES (8u << 20)
#define PAIRS_MAX_N 1024
#define PAIRS_MIN_K 1024
#define PAIRS_SLOTS 8

static KeptBuf pairs_pool[PAIRS_SLOTS];

static size_t pairs_stride(int M) {
    size_t lines = ((size_t)M * 4 + 63) / 64;
    return (lines | 1) * 32;  // uint16 per pair row
}

static size_t pairs_bytes(int M, int K) { return (size_t)ceil_div(K, 2) * pairs_stride(M) * sizeof(uint16_t); }

static int use_pairs_a(const GemmArgs *x) {
    if (ablated(GEMM_ABLATE_TN_PAIRS)) return 0;
    return x->layout == GEMM_TN && x->a && !x->a16 && !x->causal && !x->upper && x->g->kernel_pairs &&
           x->g->convert_pairs && x->N <= PAIRS_MAX_N && x->K >= PAIRS_MIN_K && pairs_bytes(x->M, x->K) <= PAIRS_MAX_BYTES;
}

// Part `part` of `parts` of the pair rows of a (K, M) into pairs (stride x->a16_pairs).
static void convert_pairs_part(const GemmArgs *x, uint16_t *pairs, const float *a, int part, int parts) {
    int P = ceil_div(x->K, 2), p0 = (int)((long)P * part / parts), p1 = (int)((long)P * (part + 1) / parts);
    if (p0 < p1)
        x->g->convert_pairs(pairs + (size_t)p0 * x->a16_pairs, x->a16_pairs, a + (size_t)2 * p0 * x->lda, x->lda, x->M,
                            imin(x->K, 2 * p1) - 2 * p0);
}

// ---------------------------------------------------------------------------------------------
// Thread grid: pm x pn blocks of whole micro-tiles, chosen to minimise the slowest thread's
// estimated time (multiply-adds plus packing traffic). Any grid gives the same bits.
// ---------------------------------------------------------------------------------------------

static double grid_cost(const GemmArgs *x, int pm, int pn) {
    const GemmImpl *g = x->g;
    double mb = imin(ceil_div(ceil_div(x->M, g->mr), pm) * g->mr, x->M);  // the largest block's extent
    double nb = imin(ceil_div(ceil_div(x->N, g->nr), pn) * g->nr, x->N);
    double a_packs = mb * x->K * ceil_div((int)nb, n_block(g, args_kcb(x))), b_packs = x->packed_b ? 0 : nb * x->K;
    return mb * nb * x->K / 16.0 + 0.5 * (a_packs + b_packs);  // ~cycles: 16 MACs/cycle, 2 cycles/packed elem
}

static void choose_grid(const GemmArgs *x, int nt, int *pm, int *pn) {
    int tm = ceil_div(x->M, x->g->mr), tn = ceil_div(x->N, x->g->nr);
    for (; nt > 1; nt--) {
        double best = 0;
        *pm = 0;
        for (int p = 1; p <= nt; p++) {
            int q = nt / p;
            if (nt % p || p > tm || q > tn) continue;
            double cost = grid_cost(x, p, q);
            if (!*pm || cost < best) best = cost, *pm = p, *pn = q;
        }
        if (*pm) return;
    }
    *pm = *pn = 1;
}

static void run_block(const GemmArgs *x, int pm, int pn, int t) {
    const GemmImpl *g = x->g;
    int tm = ceil_div(x->M, g->mr), tn = ceil_div(x->N, g->nr);
    int bi = t / pn, bj = t % pn;
    int m0 = (int)((long)tm * bi / pm) * g->mr, m1 = imin(x->M, (int)((long)tm * (bi + 1) / pm) * g->mr);
    int n0 = (int)((long)tn * bj / pn) * g->nr, n1 = imin(x->N, (int)((long)tn * (bj + 1) / pn) * g->nr);
    if (m0 < m1 && n0 < n1) gemm_block(x, m0, m1, n0, n1);
}

// The lower triangle of a symmetric product, from the upper one, in 16 x 16 blocks: copied row by
// row, each row's source is a column of the upper triangle, one cache line per element, and for
// M = 640 (Muon's Polar Express on kit-d10) those lines did not stay in L1 between rows, and the
// copy cost a large part of the product. A block reads and writes 16 lines each.
#define MIRROR_BLOCK 16
static void mirror_upper(float *c, int M, int i_begin, int i_end) {
    for (int i0 = i_begin; i0 < i_end && i0 < M; i0 += MIRROR_BLOCK)
        for (int j0 = 0; j0 <= i0; j0 += MIRROR_BLOCK)
            for (int i = i0; i < imin(M, i0 + MIRROR_BLOCK); i++)
                for (int j = j0; j < imin(i, j0 + MIRROR_BLOCK); j++) c[(size_t)i * M + j] = c[(size_t)j * M + i];
}

// ---------------------------------------------------------------------------------------------
// Symmetric products (X·Xᵀ, XᵀX) on several threads. Muon runs its matrices side by side, one
// thread each (optim.c), so these split one product only when there are fewer than two matrices
// per thread: a machine with many cores, or a small model (docs/perf.md, "GEMM driver").
// `frontier kernels bench --preset kit-d10 --variant avx512_bf16 --op matmul_tn` times these
// products as Muon runs them.
// ---------------------------------------------------------------------------------------------

// A symmetric product's rows split so that each thread has an equal share of the upper
// triangle: rows [0, r) hold about r·M - r²/2 of its M²/2 elements, so thread t starts at
// M·(1 - sqrt(1 - t/nt)), rounded to whole micro-tiles. An even row split (what choose_grid's
// cost model picks, blind to the skipped tiles) gave the first thread three quarters of the work
// at 2 threads. Columns left of a block's first row are below the diagonal for all of its rows,
// so the block neither packs nor visits them.
static int upper_row_start(const GemmArgs *x, int t, int nt) {
    if (t <= 0) return 0;
    if (t >= nt) return x->M;
    int r = (int)(x->M * (1.0 - sqrt(1.0 - (double)t / nt)) + 0.5);
    return imin(x->M, (r + x->g->mr / 2) / x->g->mr * x->g->mr);
}

static void run_upper_block(const GemmArgs *x, int nt, int t) {
    int m0 = upper_row_start(x, t, nt), m1 = upper_row_start(x, t + 1, nt);
    if (m0 < m1) gemm_block(x, m0, m1, m0 / x->g->nr * x->g->nr, x->N);
}

// Rows [i0, i1) of the lower triangle from the finished upper one. Split between threads, row i
// copies i elements, so rows [0, r) hold r²/2 of M²/2: thread t starts at M·sqrt(t/nt), in
// whole 16-row blocks (the mirror's unit).
static void mirror_rows(const GemmArgs *x, int i0, int i1) {
    if (x->g->mirror_upper) x->g->mirror_upper(x->c, x->M, i0, i1);
    else mirror_upper(x->c, x->M, i0, i1);
}

static int mirror_row_start(int M, int t, int nt) {
    if (t >= nt) return M;
    return imin(M, (int)(M * sqrt((double)t / nt) + 0.5) / MIRROR_BLOCK * MIRROR_BLOCK);
}

// The whole symmetric product on nt threads: each its share of the upper triangle, then, once
// every thread's part is written, its share of the mirror.
static void run_upper(const GemmArgs *x, int nt) {
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        run_upper_block(x, n, t);
#pragma omp barrier
        mirror_rows(x, mirror_row_start(x->M, t, n), mirror_row_start(x->M, t + 1, n));
    }
}

// ---------------------------------------------------------------------------------------------
// Row blocks handed out as the threads go. A static split into one block per thread leaves the
// others waiting whenever one is slowed (shared cores; docs/perf.md, "GEMM driver"). When the
// grid splits rows only, B is packed once
// for all threads (or is pinned), and strips are claimed in chunks through an atomic counter.
// Strip boundaries stay multiples of MR from row 0 and each tile runs the same kernel calls, so
// the bits do not depend on who computes what.
// ---------------------------------------------------------------------------------------------

#define DYN_CHUNKS_PER_THREAD 4
#define SHARED_B_MAX_BYTES (1u << 20)  // L2: packed per block instead, each panel is used while in L2
#define SHARED_B_SLOTS 8

static KeptBuf shared_b_pool[SHARED_B_SLOTS];

static int use_dynamic_rows(const GemmArgs *x, int nt, int pm, int pn) {
    return nt > 1 && pm > 1 && pn == 1 && !x->upper && !x->b_relu2 && !x->causal &&
           ceil_div(x->M, x->g->mr) >= DYN_CHUNKS_PER_THREAD * nt &&
           (x->packed_b || packed_bytes(x->g, x->N, x->K) <= SHARED_B_MAX_BYTES);
}

static void run_dynamic_rows(GemmArgs *x, int nt, uint16_t *pairs, const float *a) {
    int slot = -1;
    char *shared = NULL;
    if (!x->packed_b) {
        size_t bytes = packed_bytes(x->g, x->N, x->K);
        shared = kept_claim(shared_b_pool, SHARED_B_SLOTS, bytes, &slot);
        if (atomic_load(&poison)) memset(shared, 0xff, bytes);
    }
    GemmArgs xs = *x;
    if (shared) xs.packed_b = shared;
    int strips = ceil_div(x->M, x->g->mr);
    atomic_int next = 0;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        if (pairs) convert_pairs_part(x, pairs, a, t, n);
        if (shared) gemm_pack_b_share(x, shared, t, n);
#pragma omp barrier
        int chunk = ceil_div(strips, DYN_CHUNKS_PER_THREAD * n);
        for (int c; (c = atomic_fetch_add(&next, 1)) * chunk < strips;)
            gemm_block(&xs, c * chunk * x->g->mr, imin(x->M, (c + 1) * chunk * x->g->mr), 0, x->N);
    }
    if (shared) kept_release(shared_b_pool, shared, slot);
}

static void run_args(GemmArgs *x) {
    int M = x->M, N = x->N, K = x->K;
    if (M <= 0 || N <= 0) return;
    fill_strides(x);
    if (K <= 0) {  // empty sum: c = 0 (or unchanged)
        if (!x->accumulate)
            for (int i = 0; i < M; i++) memset(x->c + (size_t)i * x->ldc, 0, (size_t)N * sizeof *x->c);
        return;
    }
    int nt = omp_in_parallel() || (long)M * N * K < SMALL_MACS ? 1 : omp_get_max_threads();
    if (x->upper && nt > 1) {  // symmetric: a split of its own (never pairs: use_pairs_a excludes it)
        run_upper(x, nt);
        return;
    }
    int slot = -1;
    uint16_t *pairs = NULL;
    const float *a = x->a;
    if (use_pairs_a(x)) {  // from here on A is the pairs (filled below, before any block runs)
        x->a16_pairs = pairs_stride(M);
        pairs = kept_claim(pairs_pool, PAIRS_SLOTS, pairs_bytes(M, K), &slot);
        if (atomic_load(&poison)) memset(pairs, 0xff, pairs_bytes(M, K));
        x->a16 = pairs, x->a = NULL;
    }
    int pm = 1, pn = 1;
    if (nt > 1) choose_grid(x, nt, &pm, &pn);
    int blocks = pm * pn;
    if (use_dynamic_rows(x, nt, pm, pn)) {
        run_dynamic_rows(x, nt, pairs, a);
    } else if (blocks == 1 && !(pairs && nt > 1)) {
        if (pairs) convert_pairs_part(x, pairs, a, 0, 1);
        gemm_block(x, 0, M, 0, N);
    } else {
#pragma omp parallel num_threads(pairs ? nt : blocks)
        {
            if (pairs) {
                convert_pairs_part(x, pairs, a, omp_get_thread_num(), omp_get_num_threads());
#pragma omp barrier
            }
            for (int t = omp_get_thread_num(); t < blocks; t += omp_get_num_threads()) run_block(x, pm, pn, t);
        }
    }
    if (pairs) kept_release(pairs_pool, pairs, slot);
    if (x->upper) mirror_rows(x, 0, M);  // on one thread (run_upper mirrors on all of them)
}

void gemm_run(const GemmImpl *g, GemmLayout layout, float *c, const float *a, const float *b, int M, int N, int K,
              int accumulate) {
    // X·Xᵀ (nt) and XᵀX (tn) with one operand (Muon's Polar Express): C is symmetric, and C[j][i]
    // is the same FMA chain as C[i][j] with each product's factors swapped, so the same bits.
    // Tiles wholly below the diagonal are skipped and that triangle copied from the upper one.
    int upper = gemm_is_symmetric(layout, a, b, M, N, accumulate);
    const char *pinned = layout != GEMM_TN ? gemm_pinned_panels(g, b, layout, M, N, K) : NULL;
    GemmArgs x = {.g = g, .layout = layout, .c = c, .a = a, .b = b, .M = M, .N = N, .K = K, .accumulate = accumulate,
                  .packed_b = pinned, .upper = upper};
    run_args(&x);
}

size_t gemm_packed_bytes(const GemmImpl *g, int N, int K) {
    return N > 0 && K > 0 ? packed_bytes(g, N, K) : 0;
}

void gemm_pack_b(const GemmImpl *g, GemmLayout layout, void *dst, const float *b, size_t ldb, int N, int K) {
    if (N <= 0 || K <= 0) return;
    GemmArgs x = {.g = g, .layout = layout, .b = b, .N = N, .K = K, .ldb = ldb};
    fill_strides(&x);
    gemm_pack_b_share(&x, dst, 0, 1);
}

void gemm_run_op(const GemmImpl *g, const GemmOp *op) {
    // bf16 rows of an nn A are read in place when every k pair is a whole aligned 32-bit word;
    // otherwise (odd K or stride) they are packed, which completes the last pair with a zero
    int direct16 = op->a16 && op->layout == GEMM_NN && op->K % 2 == 0 && op->lda % 2 == 0 && !((uintptr_t)op->a16 & 3);
    if ((op->a16 && (!g->pack_a16 || op->layout == GEMM_NT)) || (op->packed_b && (op->packed_N < op->N || op->packed_K < op->K)))
        abort();  // internal misuse: bf16 A only for the bf16 nn/tn; a packed B too small for the product
    GemmArgs x = {.g = g, .layout = op->layout, .c = op->c, .a = op->a, .b = op->b, .M = op->M, .N = op->N, .K = op->K,
                  .accumulate = op->accumulate, .packed_b = op->packed_b, .a16 = op->a16, .a16_direct = direct16 && g->kernel_rows16,
                  .causal = op->causal, .diag = op->diag, .window = op->causal ? op->window : 0, .lda = op->lda, .ldb = op->ldb, .ldc = op->ldc,
                  .packed_N = op->packed_b ? op->packed_N : 0, .packed_K = op->packed_b ? op->packed_K : 0};
    run_args(&x);
}

void gemm_relu2_linear_fwd(const GemmImpl *g, float *c, const float *fc, const float *w, int M, int N, int K,
                           int accumulate) {
    // w is mlp_proj, pinned during evaluation like linear()'s weights (and 4x their size)
    GemmArgs x = {.g = g, .layout = GEMM_NT, .c = c, .a = fc, .b = w, .M = M, .N = N, .K = K,
                  .accumulate = accumulate, .a_relu2 = 1,
                  .packed_b = gemm_pinned_panels(g, w, GEMM_NT, M, N, K)};
    run_args(&x);
}

// The two products run whole: running them a token chunk at a time, so that the tn would find
// the chunk's fc rows still in cache, was slower (docs/perf.md, "GEMM driver").
void gemm_relu2_linear_bwd(const GemmImpl *g, float *dw, float *dfc, const float *dc, const float *w, const float *fc,
                           int M, int N, int K) {
    // dw (N, K) += dcᵀ (N, M) @ relu²(fc) (M, K): tn, depth M
    GemmArgs t = {.g = g, .layout = GEMM_TN, .c = dw, .a = dc, .b = fc, .M = N, .N = K, .K = M, .accumulate = 1,
                  .b_relu2 = 1};
    run_args(&t);
    // dfc (M, K) = relu2_bwd(dc (M, N) @ w (N, K), fc): nn, depth N
    GemmArgs n = {.g = g, .layout = GEMM_NN, .c = dfc, .a = dc, .b = w, .M = M, .N = K, .K = N, .relu2_grad = fc,
                  .packed_b = gemm_pinned_panels(g, w, GEMM_NN, M, K, N)};
    run_args(&n);
}

void gemm_run_a16_pairs(const GemmImpl *g, float *c, const uint16_t *a, size_t pair_stride, const float *b, int M,
                        int N, int K, int accumulate) {
    if ((!g->kernel_pairs && !g->pack_a_pairs) || pair_stride % 2) abort();  // internal misuse: only the bf16 impls, whole words
    GemmArgs x = {.g = g, .layout = GEMM_TN, .c = c, .b = b, .M = M, .N = N, .K = K, .accumulate = accumulate,
                  .a16 = a, .a16_pairs = pair_stride};
    run_args(&x);
}

void gemm_run_a16(const GemmImpl *g, GemmLayout layout, float *c, const uint16_t *a, const float *b, int M, int N,
                  int K, int accumulate) {
    if (!g->pack_a16 || layout == GEMM_NT) abort();  // internal misuse: only the bf16 nn/tn have it
    GemmArgs x = {.g = g, .layout = layout, .c = c, .b = b, .M = M, .N = N, .K = K, .accumulate = accumulate, .a16 = a};
    run_args(&x);
}

// ---------------------------------------------------------------------------------------------
// Whole rows with an epilogue (gemm_rows_nt): the lm_head's logits go straight into the loss
// ---------------------------------------------------------------------------------------------

// One strip of rows [i, i+h): every k block, every column panel, into cbuf (row stride ldc).
static void rows_strip(const GemmArgs *x, const char *packed, char *abuf, float *cbuf, size_t ldc, int i, int h) {
    const GemmImpl *g = x->g;
    int kcb = args_kcb(x);
    if (x->K <= 0)
        for (int r = 0; r < h; r++) memset(cbuf + (size_t)r * ldc, 0, (size_t)x->N * sizeof *cbuf);
    for (int pc = 0; pc < x->K; pc += kcb) {
        int kc = imin(kcb, x->K - pc);
        size_t panel_bytes = pinned_panel_bytes(x, pc);
        pack_a_strip(x, abuf, i, h, pc, kc, NULL);
        const char *bblock = packed + pinned_offset(x, pc, 0);
        for (int jr = 0; jr < x->N; jr += g->nr)
            g->kernel(kc, abuf, bblock + (size_t)(jr / g->nr) * panel_bytes, cbuf + jr, ldc, h,
                      imin(g->nr, x->N - jr), pc > 0);
    }
}

// The packed B and the threads' strip buffers are megabytes; allocated per call, their page
// faults and zeroing took ~5% of the fused head. One workspace is kept between calls instead (a
// concurrent second call gets a private one).
static KeptBuf rows_ws;

// n elements of elem bytes, one 64-byte line more when that is a multiple of 4 KiB
static size_t ld_off_4k(int n, size_t elem) { return (size_t)n + (elem * (size_t)n % 4096 == 0 ? 64 / elem : 0); }
size_t gemm_rows16_ld(int n) { return ld_off_4k(n, 2); }
size_t gemm_rows_ld(int n) { return ld_off_4k(n, 4); }

void gemm_rows_nt(const GemmImpl *g, const float *a, const float *b, int M, int N, int K, GemmRowsFn fn,
                  void *ctx, size_t scratch_floats, const GemmRowsNext *next) {
    if (M <= 0 || N <= 0) return;
    if (next && next->a16_ld && !g->kernel_rows16) abort();  // internal misuse: only the bf16 impls read bf16 rows
    GemmArgs x = {.g = g, .layout = GEMM_NT, .a = a, .b = b, .M = M, .N = N, .K = K,
                  .packed_b = gemm_pinned_panels(g, b, GEMM_NT, M, N, K)};
    // the follow-up product: strip (rows, N) @ next->b (N, n2), its B packed once like ours
    GemmArgs x2 = {.g = g, .layout = GEMM_NN, .b = next ? next->b : NULL, .N = next ? next->n2 : 0, .K = N,
                   .packed_b = next ? gemm_pinned_panels(g, next->b, GEMM_NN, M, next->n2, N) : NULL};
    fill_strides(&x), fill_strides(&x2);
    int kcb = K > 0 ? k_block(g, K) : 1, pack = K > 0 && !x.packed_b;
    int pack2 = next && !x2.packed_b;
    int nt = omp_in_parallel() || (long)M * N * (K > 0 ? K : 1) < SMALL_MACS ? 1 : omp_get_max_threads();
    // workspace: [packed B][packed next B] then per thread [A strip | C strip (MR x N) | scratch]
    size_t b_bytes = pack ? round_up(packed_bytes(g, N, K), 64) : 0;
    size_t b2_bytes = pack2 ? round_up(packed_bytes(g, next->n2, N), 64) : 0;
    size_t a_bytes = round_up(panel_size(g, kcb, g->mr), 64);
    size_t ldc = gemm_rows_ld(N);
    size_t c_floats = round_up((size_t)g->mr * ldc, 16), t_bytes = a_bytes + (c_floats + scratch_floats) * sizeof(float);
    int slot;
    char *ws = kept_claim(&rows_ws, 1, b_bytes + b2_bytes + (size_t)nt * round_up(t_bytes, 64), &slot);
    const char *packed = pack ? ws : x.packed_b;
    if (pack2) x2.packed_b = ws + b_bytes;
    int strips = ceil_div(M, g->mr);
    // Strips are handed out one at a time, not split in halves up front: on shared cores one
    // thread is often slower for a while, and a static split left the other waiting at the end
    // (libgomp's spin was 6% of head_ce's samples). Strips are independent, so no bits change.
    atomic_int next_strip = 0;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        if (pack) gemm_pack_b_share(&x, ws, t, n);
        if (pack2) gemm_pack_b_share(&x2, ws + b_bytes, t, n);
#pragma omp barrier
        char *abuf = ws + b_bytes + b2_bytes + (size_t)t * round_up(t_bytes, 64);
        float *cbuf = (float *)(abuf + a_bytes);
        for (int s; (s = atomic_fetch_add(&next_strip, 1)) < strips;) {
            int i = s * g->mr, h = imin(g->mr, M - i);
            if (g->begin) g->begin();  // per strip: the next product's gemm_block ends with g->end
            rows_strip(&x, packed, abuf, cbuf, ldc, i, h);
            fn(ctx, cbuf, ldc, i, h, cbuf + c_floats);
            if (next) {  // the strip as A (row stride ldc, or bf16 rows, in cache), its rows of next->c
                GemmArgs xs = x2;
                xs.c = next->c + (size_t)i * next->n2, xs.M = h;
                if (next->a16_ld) {  // bf16 rows: read in place, or packed when N is odd (see kernel_rows16)
                    xs.a16 = (const uint16_t *)cbuf, xs.lda = next->a16_ld, xs.a16_direct = N % 2 == 0;
                } else {
                    xs.a = cbuf, xs.lda = ldc;
                }
                gemm_block(&xs, 0, h, 0, next->n2);
            }
        }
        if (g->end) g->end();
    }
    kept_release(&rows_ws, ws, slot);
}
