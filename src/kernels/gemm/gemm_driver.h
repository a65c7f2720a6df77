// kernels/gemm/gemm_driver.h — the blocking and threading shared by the SIMD matrix products
// (internal to src/kernels; the public functions are in simd_matmul.h).
//
// An instruction set supplies a GemmImpl: two packing routines and an MR x NR micro-kernel.
// gemm_run() does the rest, in plain C (so OpenMP regions never hold vector values, which
// clang's outlining would compile without the ISA's target features):
//
//   split C into one block per thread (static; the grid pm x pn minimises per-thread work)
//   per thread, with its own packing buffers:
//     for jc in its columns, step NC          B panel kc x NC stays in L2 (896 KiB)
//       for pc in 0..K, step KC               KC = K up to 1.5 KiB of a packed row, else 1 KiB
//                                             (fp32: 384 / 256; bf16: 768 / 512)
//         pack B[pc.., jc..] into NR-wide micro-panels
//         for ir in its rows, step MR
//           pack A[ir.., pc..] into one MR x kc micro-panel (stays in L1); TN packs a block of
//             micro-panels at once (256 KiB, L2), 16 rows of A at a time; a bf16 nt/nn product
//             that is narrow (<= 256 columns) or deep (K >= 512) converts its A strip to bf16
//             rows instead, read by kernel_rows16 (no transposes; see use_rows16_a)
//           for each NR micro-panel: kernel (C tile loaded unless first k block and !accumulate);
//             TN (fp32 operands): meanwhile prefetch a share of the next k block's rows into L2
//
// Every C element is thus one ascending-k FMA chain whatever the blocking (see simd_matmul.h).
// X·Xᵀ (nt or tn with b == a, M == N, no accumulate) skips the tiles wholly below the diagonal
// and copies that triangle from the upper one: each C[j][i] is C[i][j]'s chain, factors swapped.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum { GEMM_NT, GEMM_NN, GEMM_TN } GemmLayout;

// X·Xᵀ (nt) and XᵀX (tn) with one operand and no accumulation: C is symmetric, and gemm_run
// computes only its upper triangle (see above). The profiler costs such products by it too.
static inline int gemm_is_symmetric(GemmLayout layout, const float *a, const float *b, int M, int N, int accumulate) {
    return a == b && M == N && layout != GEMM_NN && !accumulate;
}

// Pack a strip W elements wide (W = the impl's mr for A, nr for B) and kc deep into dst as kc
// rows of W: element (k, r) is src[k*ld + r] (transpose = 0: the strip is contiguous along r) or
// src[r*ld + k] (transpose = 1), for r < w; rows w..W-1 are zero. dst is 64-byte aligned.
// Reads exactly the w x kc elements named, nothing else.
typedef void (*GemmPack)(void *dst, const float *src, size_t ld, int w, int kc, int transpose);
// The same from a source already in bf16 (the bf16 impl only): the same packed bits as GemmPack
// gives for the fp32 values those bf16 were rounded from.
typedef void (*GemmPack16)(void *dst, const uint16_t *src, size_t ld, int w, int kc, int transpose);

// C tile: rows [0, mr) and columns [0, nr) of c (row stride ldc) (+)= ap (kc x MR) · bp (kc x NR),
// starting from C when load_c, else from 0. Touches only those mr x nr elements of C.
typedef void (*GemmKernel)(int kc, const void *ap, const void *bp, float *c, size_t ldc, int mr, int nr,
                           int load_c);

// The same tile reading A unpacked, row-major: element (k, r) at a[r*lda + k].
typedef void (*GemmKernelRows)(int kc, const float *a, size_t lda, const void *bp, float *c, size_t ldc, int mr,
                               int nr, int load_c);

// The bf16 impls' tile reading A unpacked as bf16 rows: the pair (k, k+1) of row r at
// a[r*lda + k] (k even); with kc odd the element after the last is read, and multiplied by B's
// zero padding.
typedef void (*GemmKernelRows16)(int kc, const uint16_t *a, size_t lda, const void *bp, float *c, size_t ldc, int mr,
                                 int nr, int load_c);

// The bf16 impls' tile reading A's k pairs where they lie: pair p of row r is the 32-bit word
// a[p*stride + r] (the packed layout is stride = MR).
typedef void (*GemmKernelPairs)(int kc, const uint32_t *a, size_t stride, const void *bp, float *c, size_t ldc,
                                int mr, int nr, int load_c);

// Pack a strip of A from row pairs (the layout kernel_pairs reads): pair p of row r is the 32-bit
// word a[p*stride + r], for r < w and k < kc (an odd kc's last pair completed with zero), as
// pack_a would pack those values. For an impl that cannot read the pairs in place.
typedef void (*GemmPackPairs)(void *dst, const uint32_t *a, size_t stride, int w, int kc);

typedef struct {
    int mr, nr;     // micro-tile
    int kstep;      // packed depth is kc rounded up to this (2 for bf16 pairs, 32 for AMX tiles);
                    // pack_a zero-fills its own padding, the driver B's beyond the k pairs
    size_t elem;    // bytes per packed element (4 fp32, 2 bf16)
    GemmPack pack_a, pack_b;
    GemmKernel kernel;
    GemmKernelRows kernel_rows;  // optional (NULL: A is always packed)
    GemmPack16 pack_a16;         // bf16 impls: A from bf16 storage (gemm_run_a16); else NULL
    GemmKernelRows16 kernel_rows16;  // bf16 impls: A as bf16 rows, unpacked (gemm_rows_nt's next); else NULL
    GemmKernelPairs kernel_pairs;    // bf16 impls: A in row pairs (gemm_run_a16_pairs); else NULL
    GemmPackPairs pack_a_pairs;      // instead of kernel_pairs: the row pairs packed per strip (AMX)
    // bf16 impls: rows [0, h) x depth [0, kc) of fp32 src (row stride lda) as bf16 rows at dst
    // (row stride ld16, even), rounded as pack_a rounds; an odd kc's next element is written 0 (so
    // kernel_rows16, which reads whole k pairs, multiplies a zero). For narrow products, whose
    // packed strips feed few kernel calls (gemm_block).
    void (*convert_rows16)(uint16_t *dst, size_t ld16, const float *src, size_t lda, int h, int kc);
    // bf16 impls with kernel_pairs: k rows [0, kc) of fp32 src (row stride lda, w values each) as
    // bf16 row pairs, the layout kernel_pairs reads (pair p interleaves rows 2p and 2p+1: its word
    // r holds their values r; pairs pair_stride uint16 apart; an odd kc's last pair has zeros for
    // its missing row), rounded as pack_a rounds. For TN products with a narrow A (use_pairs_a).
    void (*convert_pairs)(uint16_t *dst, size_t pair_stride, const float *src, size_t lda, int w, int kc);
    // ReLU² around a product (gemm_relu2_linear_*), in the ISA's vectors with relu2_fwd/bwd's
    // arithmetic: dst (rows, cols) = max(src, 0)² (src row stride ld); and c (rows, cols, row
    // stride ld, as x) = 2x·c where x > 0, else +0.
    void (*relu2_rows)(float *dst, const float *src, size_t ld, int rows, int cols);
    void (*relu2_grad_rows)(float *c, const float *x, size_t ld, int rows, int cols);
    // Optional (NULL: relu2_rows into scratch, then pack_a / pack_b / convert_rows16 from there):
    // the same bits with relu² formed while packing, in the registers — pack_a's transposed
    // layout (nt) of max(src, 0)², pack_b's copy layout (nn, tn) of it, and convert_rows16 of it.
    void (*pack_a_relu2)(void *dst, const float *src, size_t ld, int w, int kc);
    void (*pack_b_relu2)(void *dst, const float *src, size_t ld, int w, int kc);
    void (*convert_rows16_relu2)(uint16_t *dst, size_t ld16, const float *src, size_t lda, int h, int kc);
    // Optional: rows [i0, i1) of a symmetric product's lower triangle (j < i) of c (M, M) copied
    // from the upper one, in the ISA's vectors (i0, i1 multiples of 16, or M); NULL: element by
    // element. Threads mirroring disjoint row ranges of a finished upper triangle do not race.
    void (*mirror_upper)(float *c, int M, int i0, int i1);
    // Optional: called by each thread before its first kernel call of a product and after its
    // last (AMX loads its tile configuration in begin — another library may have changed it since
    // — and releases the tiles in end, so that the thread's idle tile state costs nothing on
    // context switches).
    void (*begin)(void);
    void (*end)(void);
} GemmImpl;

// For the lab's checks: fill every packing buffer with NaN before use (see gemm_driver.c).
void gemm_set_poison(int on);
int gemm_poisoning(void);  // 1 while it is on: other workspaces the products read (attention's) do the same

// Ablation (FRONTIER_ABLATE, kernels.h): switch off one or more of the driver's strategies, each
// of which gives the same bits as the path it replaces, to measure what it is worth on this
// machine. Set between products, never during one.
enum {
    GEMM_ABLATE_DIRECT_A = 1,       // fp32 A read unpacked by narrow nt/nn blocks (use_direct_a)
    GEMM_ABLATE_ROWS16_A = 2,       // bf16: A strips converted to rows for narrow or deep nt/nn blocks (use_rows16_a)
    GEMM_ABLATE_CAUSAL_ROWS16 = 4,  // bf16: the same for causal nt products (attention's S and dP)
    GEMM_ABLATE_TN_PAIRS = 8,       // bf16: narrow-A tn products convert A once into row pairs (use_pairs_a)
    GEMM_ABLATE_PINS = 16,          // pinned weights ignored: every product packs its weights (kernels_pin_weight)
    GEMM_ABLATE_C_PREFETCH = 32,    // no prefetch of the next C tile before a kernel call that resumes its chain
    GEMM_ABLATE_ALL = 63,
};
void gemm_set_ablation(unsigned bits);
unsigned gemm_ablation(void);

void gemm_run(const GemmImpl *impl, GemmLayout layout, float *c, const float *a, const float *b, int M, int N,
              int K, int accumulate);

// tn with A (K, M) in bf16 row pairs (the fused head's dlogits, head.h): element (k, m) at
// a[(k/2)*pair_stride + 2m + k%2], an odd K's last pair completed with zeros. Each k pair of an
// element is one 32-bit word, so the kernel reads A where it lies: nothing is packed. The same
// bits as gemm_run(TN) on the fp32 values the bf16 were rounded from.
void gemm_run_a16_pairs(const GemmImpl *impl, float *c, const uint16_t *a, size_t pair_stride, const float *b, int M,
                        int N, int K, int accumulate);

// One product described in full (causal attention's per-head products, attention_bf16.c):
// operands with row strides, A optionally in bf16, B optionally packed beforehand, the causal mask.
//   lda, ldb, ldc  row strides in elements; 0 = dense (a (M, K) or tn (K, M); b (N, K) or nn/tn
//                  (K, N); c (M, N))
//   a16            instead of a (bf16 impls, nn or tn): A as bf16 (rounded as vcvtneps2bf16
//                  rounds), the same bits as a holding the fp32 values it came from. nn reads its
//                  rows in place when K and lda are even, else packs them.
//   packed_b       instead of b: gemm_pack_b's panels of a B of packed_N columns and depth
//                  packed_K (>= N, K): the product reads the leading N columns and K rows, so one
//                  packing serves every query block's prefix of the keys.
//   causal, diag   causal attention's masking: queries i and keys j with j <= i + diag visible
//                  (diag: the position of query row 0 among the keys):
//     NT  C (queries, keys) = a bᵀ: C tiles wholly above the diagonal (every j > i + diag) are not
//         computed, and hold whatever they held; the caller reads only j <= i + diag.
//     NN  C (queries, D) = a (queries, keys) · b (keys, D): depth k > i + diag is skipped, so a's
//         entries above the diagonal must be zero (those in the diagonal's k pair are read).
//     TN  C (keys, D) = aᵀ (a: queries, keys) · b (queries, D): depth k < i - diag is skipped,
//         likewise zero in a.
//     Whole k pairs are kept, so at most one skipped term per chain, and a term left out only ever
//     added a product with a zero factor: the same bits as gemm_run on the masked operands (finite
//     entries in the unread part of b).
// Strides, bf16 A and packing change no bits: every element is the same chain as gemm_run's.
typedef struct {
    GemmLayout layout;
    int M, N, K, accumulate;
    float *c;
    size_t ldc;
    const float *a;
    const uint16_t *a16;
    size_t lda;
    const float *b;
    size_t ldb;
    const void *packed_b;
    int packed_N, packed_K;
    int causal, diag;
    int window;  // with causal: a sliding window — query q also does not see keys before
                 // q + diag - window (0 = none); the products skip those tiles and depth likewise,
                 // so a's entries there must be zero (nn, tn) and nt's C there is left unwritten
} GemmOp;
void gemm_run_op(const GemmImpl *impl, const GemmOp *op);

// B's micro-panels for products of this impl and layout: b (N, K) rows of stride ldb for nt, else
// (K, N) rows; gemm_packed_bytes(impl, N, K) bytes at dst (64-byte aligned).
size_t gemm_packed_bytes(const GemmImpl *impl, int N, int K);
void gemm_pack_b(const GemmImpl *impl, GemmLayout layout, void *dst, const float *b, size_t ldb, int N, int K);

// ReLU² fused into the product that reads it (the MLP's c_proj; Kernels.relu2_linear_fwd/bwd):
// act = relu²(fc) = max(fc, 0)² is formed while packing, never stored.
//   fwd: c (M, N) (+)= relu²(fc (M, K)) @ w (N, K)ᵀ
//   bwd: dw (N, K) += dc (M, N)ᵀ @ relu²(fc), then dfc (M, K) = relu2_bwd(dc @ w, fc) — each C
//        tile finished while in L1.
// The same packed values and kernel calls as relu2_fwd/relu2_bwd around gemm_run, so the same bits.
void gemm_relu2_linear_fwd(const GemmImpl *impl, float *c, const float *fc, const float *w, int M, int N, int K,
                           int accumulate);
void gemm_relu2_linear_bwd(const GemmImpl *impl, float *dw, float *dfc, const float *dc, const float *w,
                           const float *fc, int M, int N, int K);

// The same with A (an NN or TN operand) stored as bf16 — the fused head's dlogits: half the
// bytes to read, and the same bits as gemm_run on the fp32 values they were rounded from.
void gemm_run_a16(const GemmImpl *impl, GemmLayout layout, float *c, const uint16_t *a, const float *b, int M, int N,
                  int K, int accumulate);

// Whole rows of an NT product, each handed to an epilogue while it is in cache: C = a (M,K) @
// b (N,K)ᵀ is computed MR rows at a time, all N columns and all K, into a per-thread buffer of
// MR rows of N floats (row stride ldc = gemm_rows_ld(N)), and fn(ctx, c, ldc, row0, rows, scratch)
// is called on it before the next strip — the (M, N) product is never written out. fn may overwrite the buffer (it is the
// next strip's output); scratch is the thread's own scratch_floats floats (64-byte aligned).
// The threads take strips one at a time as they finish the last (any thread may take any
// strip), fn runs on the thread that computed them; B is packed once for all of them (or read
// pinned). Each element is the same FMA chain as
// gemm_run's, so the same bits.
// With next (NULL: none), each strip then also goes through a second product while in cache:
// rows [row0, row0+rows) of next->c (M, n2) = the strip as fn left it (rows, N) @ next->b (N, n2)
// — the same bits as gemm_run(NN) on the whole (M, N) result. The fused head computes dx from
// each strip's dlogits this way.
typedef void (*GemmRowsFn)(void *ctx, float *c, size_t ldc, int row0, int rows, float *scratch);
// With a16_ld (impls with kernel_rows16 only), fn leaves the strip's rows in bf16 instead, row r
// at (uint16_t *)c + r*a16_ld (a16_ld >= N, and a16_ld <= 2·ldc unless rows == 1), and the product
// reads them unpacked: no packing of the strip, the same bits as packing their fp32 originals.
typedef struct {
    const float *b;  // (N, n2) row-major
    float *c;        // (M, n2), overwritten
    int n2;
    size_t a16_ld;   // 0: the strip stays fp32
} GemmRowsNext;

// The row stride (uint16 elements) for bf16 rows of n values written over their own fp32 rows
// of n (in place, row by row: row r's bf16 ends before fp32 row r+1 begins, and within a row the
// bf16 write never passes the fp32 read): n, padded by 32 when 2n bytes is a multiple of 4 KiB,
// so that the rows read side by side do not all fall in one L1 set.
size_t gemm_rows16_ld(int n);
// The row stride (floats) of gemm_rows_nt's strips of n: n, padded by 16 (one line) when 4n bytes
// is a multiple of 4 KiB. At the vocabulary's 8192, the 14 rows that a micro-tile stores side by
// side, and that the fp32 dx product reads side by side, all fell in one L1 set, and the dx
// product packed its A instead of reading the rows in place (use_direct_a); docs/perf.md,
// "Moved from code comments".
size_t gemm_rows_ld(int n);
void gemm_rows_nt(const GemmImpl *impl, const float *a, const float *b, int M, int N, int K, GemmRowsFn fn,
                  void *ctx, size_t scratch_floats, const GemmRowsNext *next);

// The op table's entry points for one GemmImpl: the table holds plain function pointers, so each
// impl gets its own PREFIX_matmul_{nt,nn,tn} and PREFIX_relu2_linear_{fwd,bwd}, defined once here
// (PREFIX may itself be a macro: it is expanded before the names are pasted).
#define GEMM_DEFINE_ENTRY_POINTS(PREFIX, IMPL) GEMM_DEFINE_ENTRY_POINTS_(PREFIX, IMPL)
#define GEMM_DEFINE_ENTRY_POINTS_(PREFIX, IMPL)                                                               \
    void PREFIX##_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {   \
        gemm_run(&(IMPL), GEMM_NT, c, a, b, M, N, K, accumulate);                                               \
    }                                                                                                         \
    void PREFIX##_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {   \
        gemm_run(&(IMPL), GEMM_NN, c, a, b, M, N, K, accumulate);                                               \
    }                                                                                                         \
    void PREFIX##_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {   \
        gemm_run(&(IMPL), GEMM_TN, c, a, b, M, N, K, accumulate);                                               \
    }                                                                                                         \
    void PREFIX##_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K,             \
                                   int accumulate) {                                                          \
        gemm_relu2_linear_fwd(&(IMPL), c, fc, w, M, N, K, accumulate);                                          \
    }                                                                                                         \
    void PREFIX##_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc,   \
                                   int M, int N, int K) {                                                     \
        gemm_relu2_linear_bwd(&(IMPL), dw, dfc, dc, w, fc, M, N, K);                                            \
    }

// Pinned operands (kernels.h, kernels_pin_weight): an NT or NN product whose b is pinned for that
// layout with the same (N, K) reads b's micro-panels packed once (per GemmImpl) instead of
// packing them on every call. Same bits. gemm_pin: 0, or -1 when the table of pins is full (the
// product then packs as usual); layout GEMM_NT or GEMM_NN.
int gemm_pin(const float *b, GemmLayout layout, int N, int K);
void gemm_pins_stale(void);  // every pinned b changed: each copy is packed again before its next use
void gemm_repack_pins(const float *b);  // pack b's stale copies now (this thread, or all outside a parallel region)
void gemm_unpin_all(void);   // forget every pin, free the packed copies
