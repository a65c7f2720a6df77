// kernels/gemm/gemm_args.h — what the GEMM driver (gemm_driver.c) and its pinned operands
// (gemm_pins.c) share (internal header): one product's arguments and the packed layout's sizes.
//
// The helpers are static, not inline, as they were inside gemm_driver.c, so the driver compiles
// to the same code as before; each file uses only some of them.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm/gemm_driver.h"

#define KC_MAX 384               // K up to this is one block: A micro-panel 14 x 384 fp32 = 21 KiB (L1)
#define KC_BLOCK 256             // larger K goes in blocks of this
#define B_BYTES (896u << 10)     // packed B panel: most of a 1 MiB L2 (see n_block)

#define GEMM_SHARED static __attribute__((unused))

GEMM_SHARED int imin(int a, int b) { return a < b ? a : b; }
GEMM_SHARED int ceil_div(int a, int b) { return (a + b - 1) / b; }

// One thread's block of C: rows [m0, m1), columns [n0, n1) of the product these describe.
typedef struct {
    const GemmImpl *g;
    GemmLayout layout;
    float *c;
    const float *a, *b;
    int M, N, K, accumulate;
    const char *packed_b;  // B's micro-panels packed beforehand (a pinned operand), or NULL
    int upper;             // symmetric result: only tiles reaching the diagonal or above are computed
    const uint16_t *a16;   // A stored as bf16 (a is then NULL; nn and tn only), row stride lda
    int a16_direct;        // nn: the kernel reads a16's rows unpacked (kernel_rows16)
    size_t a16_pairs;      // tn: a16 is in row pairs of this stride (head.h's dlogits, or A converted by
                           // use_pairs_a), read as packed (kernel_pairs)
    int causal, diag;      // a causal attention product (gemm_run_op), diagonal offset
    int window;            // and its sliding window (keys before the query; 0 = none)
    int a_relu2, b_relu2;  // A (nt) / B (nn, tn) is relu²(a / b), formed while packing (gemm_relu2_linear_*)
    const float *relu2_grad;  // (M, N) like C, dense: C is finished as relu2_bwd(C, relu2_grad)
    size_t lda, ldb, ldc;     // row strides (elements) of a or a16, b and c; 0 = dense (fill_strides)
    int packed_N, packed_K;   // packed_b holds B's panels for this width and depth (>= N, K); 0 = N, K
} GemmArgs;

// Dense defaults for what the caller left 0: a (M, K) or, tn, (K, M); b (N, K) for nt, else
// (K, N); c (M, N); a packed B laid out for this product's own N and K.
GEMM_SHARED void fill_strides(GemmArgs *x) {
    if (!x->lda) x->lda = (size_t)(x->layout == GEMM_TN ? x->M : x->K);
    if (!x->ldb) x->ldb = (size_t)(x->layout == GEMM_NT ? x->K : x->N);
    if (!x->ldc) x->ldc = (size_t)x->N;
    if (!x->packed_N) x->packed_N = x->N;
    if (!x->packed_K) x->packed_K = x->K;
}

GEMM_SHARED size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

// The depth blocks are sized in bytes, not elements: bf16 panels (2 bytes) go twice as deep as
// fp32 ones in the same L1/L2 footprint, so C tiles are reloaded half as often.
GEMM_SHARED int k_block(const GemmImpl *g, int K) {
    int scale = (int)(sizeof(float) / g->elem);
    return K <= KC_MAX * scale ? K : KC_BLOCK * scale;
}

// Bytes of a packed micro-panel `width` elements wide (MR for A, NR for B) and kc deep.
GEMM_SHARED size_t panel_size(const GemmImpl *g, int kc, int width) {
    return round_up((size_t)kc, (size_t)g->kstep) * (size_t)width * g->elem;
}

// Columns per B panel. A's strips are packed again for every panel, so a wider panel packs A less
// often; B_BYTES is the widest panel that still stays in a 1 MiB L2 (docs/perf.md, "GEMM driver").
GEMM_SHARED int n_block(const GemmImpl *g, int kcb) {
    size_t per_col = round_up((size_t)kcb, (size_t)g->kstep) * g->elem;
    int nc = (int)(B_BYTES / per_col) / g->nr * g->nr;
    return nc > g->nr ? nc : g->nr;
}

GEMM_SHARED size_t full_block_bytes(const GemmImpl *g, int N, int K) {
    return panel_size(g, k_block(g, K), g->nr) * (size_t)ceil_div(N, g->nr);
}

// Depth block of a product: the packed B's when it reads one (the panels are cut that way).
GEMM_SHARED int args_kcb(const GemmArgs *x) { return k_block(x->g, x->packed_K); }

// Bytes per micro-panel in the packed layout's depth block pc.
GEMM_SHARED size_t pinned_panel_bytes(const GemmArgs *x, int pc) {
    return panel_size(x->g, imin(args_kcb(x), x->packed_K - pc), x->g->nr);
}

// Offset of the micro-panels of depth block pc, columns from jc (a multiple of NR), in a B packed
// for packed_N columns and depth packed_K. A product narrower or shallower than that reads the
// leading panels, and the leading rows of each (k is the row order inside a micro-panel).
GEMM_SHARED size_t pinned_offset(const GemmArgs *x, int pc, int jc) {
    const GemmImpl *g = x->g;
    return (size_t)(pc / args_kcb(x)) * full_block_bytes(g, x->packed_N, x->packed_K) +
           (size_t)(jc / g->nr) * pinned_panel_bytes(x, pc);
}

// Bytes of all of B's micro-panels in the pinned layout (every depth block).
GEMM_SHARED size_t packed_bytes(const GemmImpl *g, int N, int K) {
    return full_block_bytes(g, N, K) * (size_t)ceil_div(K, k_block(g, K));
}

// All of B's micro-panels in the pinned layout (pinned_offset), columns split between threads:
// share t of nt (gemm_driver.c).
void gemm_pack_b_share(const GemmArgs *x, char *packed, int t, int nt);

// The packed panels of b for impl g if b is pinned for this layout and shape (packing them now if
// this is the first product of g to read them since they were pinned or went stale), else NULL;
// NULL too for an empty (M, N, K) product (gemm_pins.c).
const char *gemm_pinned_panels(const GemmImpl *g, const float *b, GemmLayout layout, int M, int N, int K);
