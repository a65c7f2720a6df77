// tests/kernels/test_same_bits.c — the fast kernels' bitwise invariants: the same bits whatever the
// thread count, M, or AVX2 vs AVX-512; with weights pinned; for symmetric products, bf16 row pairs,
// causal products; and the fused ops (ReLU²'s linear layer, the head) as their table's unfused ops.
// The registry and the lab's checker are in test_kernels_lab.c. No timing assertions.
#include "note_variants.h"
#include "test_util.h"

#include <math.h>
#include <omp.h>

#include "kernels/cpu/cpu.h"
#include "kernels/gemm/amx_matmul.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/gemm/simd_matmul.h"
#include "kernels/head/head.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "kernels/rows/avx2_ops.h"
#include "kernels/rows/avx512_ops.h"
#include "util/rng.h"

// ---------------------------------------------------------------------------------------------
// The fast matmuls: bitwise identical whatever the thread count, M, or AVX2 vs AVX-512
// ---------------------------------------------------------------------------------------------

typedef void (*Matmul)(float *, const float *, const float *, int, int, int, int);

static float *random_floats(size_t n, Rng *r) {
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)(2 * rng_uniform(r) - 1);
    return x;
}

static void run_threads(Matmul f, float *c, const float *a, const float *b, int M, int N, int K, int acc,
                        const float *c0, int threads) {
    int prev = omp_get_max_threads();
    omp_set_num_threads(threads);
    if (acc) memcpy(c, c0, (size_t)M * N * sizeof *c);
    f(c, a, b, M, N, K, acc);
    omp_set_num_threads(prev);
}

static void test_fast_matmuls_thread_invariant(void **state) {
    (void)state;
    static const int shapes[][3] = {{300, 200, 130}, {64, 1000, 96}, {129, 77, 700}, {1, 513, 64}};
    Matmul fns[2][3] = {{avx512_matmul_nt, avx512_matmul_nn, avx512_matmul_tn},
                        {avx2_matmul_nt, avx2_matmul_nn, avx2_matmul_tn}};
    int have[2] = {kernels_variant_available(KV_AVX512, NULL), kernels_variant_available(KV_AVX2, NULL)};
    if (!have[0] && !have[1]) SKIP_HARDWARE("this CPU lacks both AVX-512 and AVX2");
    Rng r;
    rng_seed(&r, 3);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t nc = (size_t)M * N;
        float *a = random_floats((size_t)M * K, &r), *b = random_floats((size_t)N * K, &r), *c0 = random_floats(nc, &r);
        float *first = malloc(nc * sizeof *first), *c = malloc(nc * sizeof *c);
        for (int layout = 0; layout < 3; layout++)
            for (int acc = 0; acc < 2; acc++) {
                int have_first = 0;
                for (int isa = 0; isa < 2; isa++) {
                    if (!have[isa]) continue;
                    for (int t = 1; t <= 4; t++) {
                        run_threads(fns[isa][layout], c, a, b, M, N, K, acc, c0, t);
                        if (!have_first) memcpy(first, c, nc * sizeof *c), have_first = 1;
                        else assert_memory_equal(first, c, nc * sizeof *c);  // any thread count, either ISA
                    }
                }
            }
        free(a), free(b), free(c0), free(first), free(c);
    }
}

static void test_fast_matmul_rows_independent_of_m(void **state) {
    (void)state;
    if (!kernels_variant_available(KV_AVX512, NULL)) SKIP_HARDWARE("this CPU lacks AVX-512 (the avx512 matmuls)");
    int M = 45, N = 70, K = 300;
    Rng r;
    rng_seed(&r, 4);
    float *a = random_floats((size_t)M * K, &r), *b = random_floats((size_t)N * K, &r);
    float *c = malloc((size_t)M * N * sizeof *c), row[70];
    avx512_matmul_nt(c, a, b, M, N, K, 0);
    for (int i = 0; i < M; i += 11) {  // one row alone (the sampler's M = 1) gives the same bits
        avx512_matmul_nt(row, a + (size_t)i * K, b, 1, N, K, 0);
        assert_memory_equal(row, c + (size_t)i * N, sizeof row);
    }
    free(a), free(b), free(c);
}

// A pinned weight (kernels_pin_weight) gives matmul_nt, and relu2_linear_fwd (whose w is the
// pinned mlp_proj in evaluation), the bits of packing it per call: fp32 AVX-512 and AVX2 and
// bf16, over shapes with several k blocks (K > 384), several column panels
// (N > the B panel), ragged edges and M = 1, for 1 and 2 threads, with and without accumulate;
// and the packed copy is reused (a second product) and dropped by unpinning.
static void test_pinned_weights_give_the_same_bits(void **state) {
    (void)state;
    static const int shapes[][3] = {{1, 33, 17}, {5, 100, 385}, {64, 1000, 640}, {37, 530, 129}, {1, 2000, 900}};
    Matmul fns[6] = {avx512_matmul_nt,         avx2_matmul_nt,         avx512bf16_matmul_nt,
                     avx512_relu2_linear_fwd, avx2_relu2_linear_fwd, avx512bf16_relu2_linear_fwd};
    int have[6] = {kernels_variant_available(KV_AVX512, NULL), kernels_variant_available(KV_AVX2, NULL),
                   kernels_variant_available(KV_AVX512, NULL) && cpu_info()->avx512_bf16};
    for (int f = 3; f < 6; f++) have[f] = have[f - 3];
    Rng r;
    rng_seed(&r, 5);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t nc = (size_t)M * N;
        float *a = random_floats((size_t)M * K, &r), *w = random_floats((size_t)N * K, &r), *c0 = random_floats(nc, &r);
        float *want = malloc(nc * sizeof *want), *c = malloc(nc * sizeof *c);
        for (int f = 0; f < 6; f++) {
            if (!have[f]) continue;
            for (int acc = 0; acc < 2; acc++)
                for (int t = 1; t <= 2; t++) {
                    run_threads(fns[f], want, a, w, M, N, K, acc, c0, t);
                    assert_int_equal(kernels_pin_weight(w, N, K), 0);
                    for (int again = 0; again < 2; again++) {  // packs, then reuses the packed copy
                        run_threads(fns[f], c, a, w, M, N, K, acc, c0, t);
                        assert_memory_equal(want, c, nc * sizeof *c);
                    }
                    kernels_unpin_weights();
                }
        }
        free(a), free(w), free(c0), free(want), free(c);
    }
}

// Training pins the weights for the backward too (kernels_pin_weight_nn) and marks them changed
// at each optimizer step (kernels_weights_changed). matmul_nn and relu2_linear_bwd (whose
// dfc = dc @ w reads w as an nn B) — fp32, bf16 and AMX's (on its emulator here) — give the
// bits of packing w per call, at 1 and 2 threads;
// the copy is what they read (w changed without saying so still gives the old product: the
// contract's other side, and proof that the pin is not bypassed); after kernels_weights_changed
// they give the bits of the changed w (multiplied from an unpinned copy of it).
// kernels_repack_weight (the optimizer's call after updating w) packs the copies at once and
// leaves them fresh, also from inside a parallel region.
typedef void (*Relu2LinBwd)(float *, float *, const float *, const float *, const float *, int, int, int);


static void relu2_linear_bwd_threads(Relu2LinBwd f, float *dw, float *dfc, const float *dc, const float *w,
                                     const float *fc, int M, int N, int K, const float *dw0, int threads) {
    int prev = omp_get_max_threads();
    omp_set_num_threads(threads);
    memcpy(dw, dw0, (size_t)N * K * sizeof *dw);
    f(dw, dfc, dc, w, fc, M, N, K);
    omp_set_num_threads(prev);
}

static void test_pinned_backward_weights_follow_updates(void **state) {
    (void)state;
    static const int shapes[][3] = {{1, 33, 17}, {5, 100, 385}, {64, 1000, 640}, {37, 530, 900}};
    int avx512 = kernels_variant_available(KV_AVX512, NULL);
    int bf16 = avx512 && cpu_info()->avx512_bf16;
    const struct {
        Matmul nn;
        Relu2LinBwd rb;
        int have, max_shape;  // the AMX emulator (~1000x slower) takes the two small shapes only
    } impls[] = {{avx512_matmul_nn, avx512_relu2_linear_bwd, avx512, 4},
                 {avx2_matmul_nn, avx2_relu2_linear_bwd, kernels_variant_available(KV_AVX2, NULL), 4},
                 {avx512bf16_matmul_nn, avx512bf16_relu2_linear_bwd, bf16, 4},
                 {amx_emu_matmul_nn, amx_emu_relu2_linear_bwd, bf16, 2},
                 {amx_matmul_nn, amx_relu2_linear_bwd, bf16 && kernels_amx_real(), 4}};
    Rng r;
    rng_seed(&r, 12);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t nc = (size_t)M * N, nw = (size_t)K * N;
        // nn: c (M, N) = a (M, K) @ w (K, N); relu2_linear_bwd: dfc (M, N) = relu2_bwd(dc (M, K) @ w (K, N), fc)
        float *a = random_floats((size_t)M * K, &r), *w = random_floats(nw, &r), *fc = random_floats(nc, &r);
        float *w2 = malloc(nw * sizeof *w2), *dw0 = random_floats(nw, &r);
        float *want = malloc(nc * sizeof *want), *want2 = malloc(nc * sizeof *want2), *c = malloc(nc * sizeof *c);
        float *wdw = malloc(nw * sizeof *wdw), *dw = malloc(nw * sizeof *dw);
        for (size_t f = 0; f < sizeof impls / sizeof *impls; f++) {
            if (!impls[f].have || (int)s >= impls[f].max_shape) continue;
            for (int op = 0; op < 2; op++)
                for (int t = 1; t <= 2; t++) {
                    float *wp = malloc(nw * sizeof *wp);  // the weight: pinned, then changed
                    memcpy(wp, w, nw * sizeof *wp);
                    for (size_t i = 0; i < nw; i++) w2[i] = i % 7 ? w[i] : w[i] + 0.25f;
#define PRODUCT(out, weight, threads)                                                                   \
    (op ? relu2_linear_bwd_threads(impls[f].rb, dw, out, a, weight, fc, M, K, N, dw0, threads)                 \
        : run_threads(impls[f].nn, out, a, weight, M, N, K, 0, NULL, threads))
                    PRODUCT(want, w, t);
                    if (op) memcpy(wdw, dw, nw * sizeof *dw);
                    PRODUCT(want2, w2, t);  // unpinned: the changed weight's bits
                    assert_int_equal(kernels_pin_weight_nn(wp, K, N), 0);
                    for (int again = 0; again < 2; again++) {  // packs, then reuses the packed copy
                        PRODUCT(c, wp, 1 + again);
                        assert_memory_equal(want, c, nc * sizeof *c);
                        if (op) assert_memory_equal(wdw, dw, nw * sizeof *dw);
                    }
                    memcpy(wp, w2, nw * sizeof *wp);
                    PRODUCT(c, wp, t);  // not told: the packed copy, the old weight's product
                    assert_memory_equal(want, c, nc * sizeof *c);
                    kernels_weights_changed();
                    for (int again = 0; again < 2; again++) {
                        PRODUCT(c, wp, 2 - again);
                        assert_memory_equal(want2, c, nc * sizeof *c);
                    }
                    // The optimizer's way: marked changed, w updated (back to the first values)
                    // and repacked at once — at t = 2 from inside a parallel region, as Muon's
                    // side-by-side threads do. Changed again without saying so, the products
                    // still read what kernels_repack_weight packed: it packed, and left the
                    // copies fresh (a lazy repack would now give want2).
                    kernels_weights_changed();
                    memcpy(wp, w, nw * sizeof *wp);
                    if (t == 2) {
#pragma omp parallel num_threads(2)
#pragma omp single
                        kernels_repack_weight(wp);
                    } else {
                        kernels_repack_weight(wp);
                    }
                    memcpy(wp, w2, nw * sizeof *wp);
                    PRODUCT(c, wp, t);
                    assert_memory_equal(want, c, nc * sizeof *c);
                    if (op) assert_memory_equal(wdw, dw, nw * sizeof *dw);
#undef PRODUCT
                    kernels_unpin_weights();
                    free(wp);
                }
        }
        free(a), free(w), free(fc), free(w2), free(dw0), free(want), free(want2), free(c), free(wdw), free(dw);
    }
}

// AMX's GEMMs (on the emulator here, on the tiles too where the CPU has them) give the same bits
// when pinned, and for symmetric products, as the plain product.
static void test_amx_pinned_and_symmetric_products_give_the_same_bits(void **state) {
    (void)state;
    if (!cpu_info()->avx512_bf16) SKIP_HARDWARE("this CPU lacks AVX512_BF16, which the AMX packing (and so its emulator) needs");
    Matmul nt[2] = {amx_emu_matmul_nt, amx_matmul_nt}, tn[2] = {amx_emu_matmul_tn, amx_matmul_tn};
    Rng r;
    rng_seed(&r, 9);
    for (int real = 0; real < 2; real++) {
        if (real && !kernels_amx_real()) continue;
        int M = 45, N = 70, K = 530;  // ragged in every dimension; K: two depth blocks
        float *a = random_floats((size_t)M * K, &r), *w = random_floats((size_t)N * K, &r);
        float *want = malloc((size_t)M * N * sizeof *want), *c = malloc((size_t)M * N * sizeof *c);
        run_threads(nt[real], want, a, w, M, N, K, 0, NULL, 2);
        assert_int_equal(kernels_pin_weight(w, N, K), 0);
        for (int again = 0; again < 2; again++) {
            run_threads(nt[real], c, a, w, M, N, K, 0, NULL, 1 + again);
            assert_memory_equal(want, c, (size_t)M * N * sizeof *c);
        }
        kernels_unpin_weights();
        float *copy = malloc((size_t)M * K * sizeof *copy), *s = malloc(64 * 64 * sizeof *s);
        float *full = malloc(64 * 64 * sizeof *full);
        memcpy(copy, a, (size_t)M * K * sizeof *copy);
        for (int t = 0; t < 2; t++) {
            Matmul f = t ? tn[real] : nt[real];
            int n = t ? 50 : M, k = t ? M * K / 50 : K;  // tn: X (k, n), the same M·K floats
            run_threads(f, full, a, copy, n, n, k, 0, NULL, 2);
            for (int i = 0; i < n * n; i++) s[i] = NAN;
            run_threads(f, s, a, a, n, n, k, 0, NULL, 3);
            assert_memory_equal(full, s, (size_t)n * n * sizeof *s);
        }
        free(a), free(w), free(want), free(c), free(copy), free(s), free(full);
    }
}

// A bf16 TN product whose A is narrow converts A into row pairs read in place (gemm_driver.c,
// use_pairs_a): the same bits as the same product from A rounded to bf16 beforehand, which is
// packed strip by strip (matmul_tn_a16), at 1 to 3 threads, accumulating or not, with ragged
// M, N and an odd K (the last pair completed with a zero).
static void tn_a16(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    size_t n = (size_t)K * M;
    uint16_t *a16 = malloc(n * sizeof *a16);
    for (size_t i = 0; i < n; i++) a16[i] = head_bf16_bits(a[i]);
    avx512bf16_matmul_tn_a16(c, a16, b, M, N, K, acc);
    free(a16);
}

static void test_narrow_tn_products_in_row_pairs_give_the_same_bits(void **state) {
    (void)state;
    if (!cpu_info()->avx512_bf16) SKIP_HARDWARE("this CPU lacks AVX512_BF16");
    static const int shapes[][3] = {{45, 70, 1031}, {128, 128, 4096}, {300, 33, 1024}};
    Rng r;
    rng_seed(&r, 11);
    for (int s = 0; s < 3; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *a = random_floats((size_t)K * M, &r), *b = random_floats((size_t)K * N, &r);
        float *c0 = random_floats((size_t)M * N, &r), *want = malloc((size_t)M * N * sizeof *want);
        float *c = malloc((size_t)M * N * sizeof *c);
        for (int acc = 0; acc < 2; acc++) {
            run_threads(tn_a16, want, a, b, M, N, K, acc, c0, 2);
            for (int threads = 1; threads <= 3; threads++) {
                for (int i = 0; i < M * N; i++) c[i] = NAN;
                run_threads(avx512bf16_matmul_tn, c, a, b, M, N, K, acc, c0, threads);
                assert_memory_equal(want, c, (size_t)M * N * sizeof *c);
            }
        }
        free(a), free(b), free(c0), free(want), free(c);
    }
}

// X·Xᵀ (nt) and XᵀX (tn) with the same pointer for both operands compute only the upper
// triangle and mirror it: the same bits as the full product of X with a copy of X, every
// element written (C starts as NaN), for fp32 AVX-512, AVX2 and bf16, 1 to 3 threads, over sizes
// with ragged tiles, several row panels and several k blocks; accumulating products still run
// in full (mirroring would be wrong for a non-symmetric C). On several threads each computes its
// share of the triangle and mirrors its share of rows; 900 x 300 also spans several column
// panels of fp32 B, whose first panel starts at a thread's first row.
static void test_symmetric_products_give_the_same_bits(void **state) {
    (void)state;
    static const int shapes[][2] = {{1, 7}, {13, 40}, {128, 128}, {130, 512}, {300, 777}, {45, 1100}, {900, 300}};
    Matmul fns[3][2] = {{avx512_matmul_nt, avx512_matmul_tn}, {avx2_matmul_nt, avx2_matmul_tn},
                        {avx512bf16_matmul_nt, avx512bf16_matmul_tn}};
    int have[3] = {kernels_variant_available(KV_AVX512, NULL), kernels_variant_available(KV_AVX2, NULL),
                   kernels_variant_available(KV_AVX512, NULL) && cpu_info()->avx512_bf16};
    Rng r;
    rng_seed(&r, 6);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int n = shapes[s][0], k = shapes[s][1];  // nt: X (n, k), C = X Xᵀ; tn: X (k, n), C = Xᵀ X
        size_t nc = (size_t)n * n;
        float *x = random_floats((size_t)n * k, &r), *copy = malloc((size_t)n * k * sizeof *copy);
        memcpy(copy, x, (size_t)n * k * sizeof *copy);
        float *want = malloc(nc * sizeof *want), *c = malloc(nc * sizeof *c), *c0 = random_floats(nc, &r);
        for (int f = 0; f < 3; f++) {
            if (!have[f]) continue;
            for (int tn = 0; tn < 2; tn++)
                for (int t = 1; t <= 3; t++) {
                    run_threads(fns[f][tn], want, x, copy, n, n, k, 0, NULL, t);
                    for (size_t i = 0; i < nc; i++) c[i] = NAN;
                    run_threads(fns[f][tn], c, x, x, n, n, k, 0, NULL, t);
                    assert_memory_equal(want, c, nc * sizeof *c);
                    run_threads(fns[f][tn], want, x, copy, n, n, k, 1, c0, t);
                    run_threads(fns[f][tn], c, x, x, n, n, k, 1, c0, t);
                    assert_memory_equal(want, c, nc * sizeof *c);
                }
        }
        free(x), free(copy), free(want), free(c), free(c0);
    }
}

// Causal attention's bf16 products (gemm_run_op with causal) give the same bits as the plain
// products on the masked operands: NT on every visible score (query i, key j <= i + diag), NN and
// TN (whose a is zero above the diagonal) on every element, with and without accumulation, at 1
// to 3 threads; query blocks off the diagonal (diag > 0), ragged tiles, odd depths, and depths
// over one k block (NN: 1100 keys; TN: 900 queries), with and without a sliding window (the
// products then also skip what lies left of it; TN's key strips that no query sees are zeros
// without accumulation). Each product also runs as attention_bf16.c
// runs it: operands and result inside wider matrices (row strides), B read from gemm_pack_b's
// panels of a larger B (more keys: NT's columns, NN's depth), and A given in bf16 (NN read in
// place with an even stride, packed with an odd one; TN packed).
// ...and with a sliding window (0 = none), zero left of it too.
static int window_start(int i, int diag, int window) { return window > 0 && i + diag - window > 0 ? i + diag - window : 0; }

static void causal_mask(float *a, int rows, int keys, int diag, int window) {
    for (int i = 0; i < rows; i++) {
        for (int j = i + diag + 1; j < keys; j++) a[(size_t)i * keys + j] = 0.0f;
        for (int j = 0; j < window_start(i, diag, window) && j < keys; j++) a[(size_t)i * keys + j] = 0.0f;
    }
}

static uint16_t bf16_rne(float f) {  // vcvtneps2bf16 on finite values
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// m (rows x cols, dense) copied into a fresh matrix of row stride ld (> cols), the rest NaN
static float *widen(const float *m, int rows, int cols, size_t ld) {
    float *w = malloc((size_t)rows * ld * sizeof *w);
    for (size_t i = 0; i < (size_t)rows * ld; i++) w[i] = NAN;
    for (int i = 0; i < rows; i++) memcpy(w + (size_t)i * ld, m + (size_t)i * cols, (size_t)cols * sizeof *w);
    return w;
}

// How a causal product is handed over (see above)
enum { PLAIN, STRIDED_PACKED, A16_EVEN, A16_ODD, FORMS };

// c (M x N, dense) (+)= the causal product in form `form`; b has extra rows beyond those the
// product uses (NT: keys, NN: depth), finite, for the packed forms to pack
static void run_causal(GemmLayout l, int form, float *c, const float *a, const float *b, int b_rows, int M, int N,
                       int K, int acc, const float *c0, int diag, int window, int threads) {
    const GemmImpl *g = avx512bf16_gemm_impl();
    int prev = omp_get_max_threads();
    omp_set_num_threads(threads);
    if (acc) memcpy(c, c0, (size_t)M * N * sizeof *c);
    GemmOp op = {.layout = l, .M = M, .N = N, .K = K, .accumulate = acc, .c = c, .a = a, .b = b, .causal = 1, .diag = diag,
                 .window = window};
    int a_rows = l == GEMM_TN ? K : M, a_cols = l == GEMM_TN ? M : K, b_cols = l == GEMM_NT ? K : N;
    float *aw = NULL, *bw = NULL, *cw = NULL;
    uint16_t *a16 = NULL;
    void *packed = NULL;
    if (form == STRIDED_PACKED) {
        op.lda = (size_t)a_cols + 5, op.ldc = (size_t)N + 3;
        op.a = aw = widen(a, a_rows, a_cols, op.lda);
        op.c = cw = widen(c, M, N, op.ldc);
        bw = widen(b, b_rows, b_cols, (size_t)b_cols + 7);
        if (l == GEMM_TN) {
            op.b = bw, op.ldb = (size_t)b_cols + 7;
        } else {  // packed from the wider B with all its rows: NT more keys (columns), NN more depth
            int pn = l == GEMM_NT ? b_rows : N, pk = l == GEMM_NT ? K : b_rows;
            packed = aligned_alloc(64, (gemm_packed_bytes(g, pn, pk) + 63) / 64 * 64);
            gemm_pack_b(g, l, packed, bw, (size_t)b_cols + 7, pn, pk);
            op.b = NULL, op.packed_b = packed, op.packed_N = pn, op.packed_K = pk;
        }
    } else if (form != PLAIN) {
        op.lda = (size_t)a_cols + (a_cols % 2 ? 1 : 2) + (form == A16_ODD);
        a16 = malloc((size_t)a_rows * op.lda * sizeof *a16);
        for (int i = 0; i < a_rows; i++)
            for (size_t j = 0; j < op.lda; j++) a16[(size_t)i * op.lda + j] = j < (size_t)a_cols ? bf16_rne(a[(size_t)i * a_cols + j]) : 0x7fc0;
        op.a = NULL, op.a16 = a16;
    }
    gemm_run_op(g, &op);
    if (cw)
        for (int i = 0; i < M; i++) memcpy(c + (size_t)i * N, cw + (size_t)i * op.ldc, (size_t)N * sizeof *c);
    free(aw), free(bw), free(cw), free(a16), free(packed);
    omp_set_num_threads(prev);
}

static void test_causal_products_give_the_same_bits(void **state) {
    (void)state;
    if (!kernels_variant_available(KV_AVX512, NULL) || !cpu_info()->avx512_bf16)
        SKIP_HARDWARE("this CPU lacks AVX-512 with AVX512_BF16");
    static const int shapes[][5] = {  // query rows, keys (= rows + diag), D, diag, window (0: none)
        {1, 1, 16, 0, 0},      {14, 14, 32, 0, 0},       {64, 256, 128, 192, 0}, {70, 70, 33, 0, 0},
        {45, 101, 17, 56, 0},  {256, 256, 128, 0, 0},    {64, 1100, 64, 1036, 0}, {900, 900, 40, 0, 0},
        {64, 256, 128, 192, 100}, {256, 256, 128, 0, 64}, {45, 101, 17, 56, 7},  {64, 1100, 64, 1036, 300},
        {900, 900, 40, 0, 130}};
    const int extra = 37;  // keys beyond the product's in the packed B
    Rng r;
    rng_seed(&r, 11);
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int rows = shapes[s][0], keys = shapes[s][1], D = shapes[s][2], diag = shapes[s][3], W = shapes[s][4];
        size_t ns = (size_t)rows * keys, nk = (size_t)keys * D, nq = (size_t)rows * D;
        float *q = random_floats(nq, &r), *k = random_floats(nk + (size_t)extra * D, &r), *p = random_floats(ns, &r);
        float *want = malloc((ns > nk ? ns : nk) * sizeof *want), *c = malloc((ns > nk ? ns : nk) * sizeof *c);
        float *c0 = random_floats(nk > nq ? nk : nq, &r);
        causal_mask(p, rows, keys, diag, W);
        for (int t = 1; t <= 3; t++) {
            run_threads(avx512bf16_matmul_nt, want, q, k, rows, keys, D, 0, NULL, t);  // scores
            for (int form = PLAIN; form <= STRIDED_PACKED; form++) {  // (NT has no bf16 A)
                for (size_t i = 0; i < ns; i++) c[i] = NAN;
                run_causal(GEMM_NT, form, c, q, k, keys + extra, rows, keys, D, 0, NULL, diag, W, t);
                for (int i = 0; i < rows; i++) {  // the keys row i sees: [window start, i + diag]
                    int j0 = window_start(i, diag, W), j1 = i + diag + 1 < keys ? i + diag + 1 : keys;
                    assert_memory_equal(want + (size_t)i * keys + j0, c + (size_t)i * keys + j0, (size_t)(j1 - j0) * sizeof *c);
                }
            }
            for (int acc = 0; acc < 2; acc++) {
                run_threads(avx512bf16_matmul_nn, want, p, k, rows, D, keys, acc, c0, t);  // P V
                for (int form = 0; form < FORMS; form++) {
                    run_causal(GEMM_NN, form, c, p, k, keys + extra, rows, D, keys, acc, c0, diag, W, t);
                    assert_memory_equal(want, c, nq * sizeof *c);
                }
                run_threads(avx512bf16_matmul_tn, want, p, q, keys, D, rows, acc, c0, t);  // Pᵀ dO
                for (int form = 0; form < FORMS; form++) {
                    run_causal(GEMM_TN, form, c, p, q, rows, keys, D, rows, acc, c0, diag, W, t);
                    assert_memory_equal(want, c, nk * sizeof *c);
                }
            }
        }
        free(q), free(k), free(p), free(want), free(c), free(c0);
    }
}

// ReLU²'s linear layer (relu2_linear_fwd/bwd) gives the same bits as its table's unfused ops:
// relu2_fwd then matmul_nt; matmul_tn on relu2_fwd's output, matmul_nn then relu2_bwd — for the
// fp32 tables and the bf16 products, 1 to 3 threads, over ragged tiles, depths over one block
// (K = 800 in fp32, 1100 in bf16: the A operand's relu² is formed in pieces), narrow products
// (the fp32 kernel reading A unpacked) and wide ones.
typedef void (*Relu2)(float *, const float *, size_t);
typedef void (*Relu2Bwd)(float *, const float *, const float *, size_t);
typedef void (*Relu2LinFwd)(float *, const float *, const float *, int, int, int, int);

static void test_relu2_linear_gives_the_same_bits(void **state) {
    (void)state;
    static const int shapes[][3] = {{1, 1, 1}, {15, 33, 31}, {29, 70, 129}, {300, 128, 512}, {64, 300, 800},
                                    {100, 40, 1100}};
    struct {
        int have;
        Relu2LinFwd fwd;
        Relu2LinBwd bwd;
        Matmul nt, tn, nn;
    } t[3] = {{kernels_variant_available(KV_AVX512, NULL), avx512_relu2_linear_fwd, avx512_relu2_linear_bwd,
               avx512_matmul_nt, avx512_matmul_tn, avx512_matmul_nn},
              {kernels_variant_available(KV_AVX2, NULL), avx2_relu2_linear_fwd, avx2_relu2_linear_bwd,
               avx2_matmul_nt, avx2_matmul_tn, avx2_matmul_nn},
              {kernels_variant_available(KV_AVX512, NULL) && cpu_info()->avx512_bf16, avx512bf16_relu2_linear_fwd,
               avx512bf16_relu2_linear_bwd, avx512bf16_matmul_nt, avx512bf16_matmul_tn, avx512bf16_matmul_nn}};
    Rng r;
    rng_seed(&r, 13);
    int prev = omp_get_max_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t nf = (size_t)M * K, nw = (size_t)N * K, nc = (size_t)M * N;
        float *fc = random_floats(nf, &r), *w = random_floats(nw, &r), *dc = random_floats(nc, &r);
        float *c0 = random_floats(nc, &r), *dw0 = random_floats(nw, &r), *act = malloc(nf * sizeof *act);
        float *want = malloc((nf > nc ? nf : nc) * sizeof *want), *got = malloc((nf > nc ? nf : nc) * sizeof *got);
        float *want_dw = malloc(nw * sizeof *want_dw), *got_dw = malloc(nw * sizeof *got_dw);
        ref_relu2_fwd(act, fc, nf);  // the same bits as avx512_relu2_fwd (lab: max err 0)
        for (int f = 0; f < 3; f++) {
            if (!t[f].have) continue;
            for (int th = 1; th <= 3; th++) {
                omp_set_num_threads(th);
                for (int acc = 0; acc < 2; acc++) {
                    if (acc) memcpy(want, c0, nc * sizeof *want), memcpy(got, c0, nc * sizeof *got);
                    else for (size_t i = 0; i < nc; i++) got[i] = NAN;
                    t[f].nt(want, act, w, M, N, K, acc);
                    t[f].fwd(got, fc, w, M, N, K, acc);
                    assert_memory_equal(want, got, nc * sizeof *got);
                }
                memcpy(want_dw, dw0, nw * sizeof *want_dw), memcpy(got_dw, dw0, nw * sizeof *got_dw);
                t[f].tn(want_dw, dc, act, N, K, M, 1);
                t[f].nn(want, dc, w, M, K, N, 0);
                ref_relu2_bwd(want, want, fc, nf);
                for (size_t i = 0; i < nf; i++) got[i] = NAN;
                t[f].bwd(got_dw, got, dc, w, fc, M, N, K);
                assert_memory_equal(want_dw, got_dw, nw * sizeof *got_dw);
                assert_memory_equal(want, got, nf * sizeof *got);
            }
        }
        omp_set_num_threads(prev);
        free(fc), free(w), free(dc), free(c0), free(dw0), free(act), free(want), free(got), free(want_dw), free(got_dw);
    }
}


// The fused head gives the same bits as its table's unfused ops: head_ce as matmul_nt, then
// softcap_ce (the bf16 variants: those dlogits rounded to bf16), then matmul_nn on the fp32
// dlogits for dx; head_dw as matmul_tn on them — losses, dlogits and dx, with and without a
// gradient, at 1 to 3 threads, over shapes with ragged strips and panels and several depth
// blocks (C = 800), and with the weight pinned.
typedef void (*HeadCe)(float *, void *, float *, const float *, const float *, const int32_t *, int, int, int, float,
                       float);
typedef void (*HeadDw)(float *, const void *, const float *, int, int, int);
typedef void (*SoftcapCe)(float *, float *, const float *, const int32_t *, int, int, float, float);

static void test_fused_head_gives_the_same_bits(void **state) {
    (void)state;
    static const int shapes[][3] = {{1, 2, 1}, {15, 100, 33}, {29, 1000, 64}, {40, 300, 800}, {100, 4099, 130},
                                    {64, 8192, 128}};
    int avx512 = kernels_variant_available(KV_AVX512, NULL), bf16 = avx512 && cpu_info()->avx512_bf16;
    const struct {
        HeadCe head;
        HeadDw bwd;
        Matmul nt, nn, tn;
        SoftcapCe ce;
        int half, have;
    } impls[] = {
        {ref_head_ce, ref_head_dw, ref_matmul_nt, ref_matmul_nn, ref_matmul_tn, ref_softcap_ce, 0, 1},
        {ref_bf16_head_ce, ref_bf16_head_dw, ref_bf16_matmul_nt, ref_bf16_matmul_nn, ref_bf16_matmul_tn,
         ref_softcap_ce, 1, 1},
        {avx2_head_ce, avx2_head_dw, avx2_matmul_nt, avx2_matmul_nn, avx2_matmul_tn, avx2_softcap_ce, 0,
         kernels_variant_available(KV_AVX2, NULL)},
        {avx512_head_ce, avx512_head_dw, avx512_matmul_nt, avx512_matmul_nn, avx512_matmul_tn, avx512_softcap_ce, 0,
         avx512},
        {avx512bf16_head_ce, avx512bf16_head_dw, avx512bf16_matmul_nt, avx512bf16_matmul_nn, avx512bf16_matmul_tn,
         avx512_softcap_ce, 1, bf16}};
    Rng r;
    rng_seed(&r, 8);
    int prev = omp_get_max_threads();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int N = shapes[s][0], V = shapes[s][1], C = shapes[s][2];
        size_t nl = (size_t)N * V, nx = (size_t)N * C, nw = (size_t)V * C;
        float *x = random_floats(nx, &r), *w = random_floats(nw, &r), *dw0 = random_floats(nw, &r);
        int32_t *tg = malloc((size_t)N * sizeof *tg);
        for (int i = 0; i < N; i++) tg[i] = i % 4 == 3 ? -1 : (int32_t)(rng_next(&r) % (uint64_t)V);
        float *logits = malloc(nl * sizeof *logits), *want_d = malloc(nl * sizeof *want_d);
        float *d = malloc(nl * sizeof *d), *want_l = malloc((size_t)N * sizeof *want_l);
        float *l = malloc((size_t)N * sizeof *l);
        size_t n16 = head_dl16_elems(N, V);  // the bf16 tables' dlogits: row pairs (head.h)
        uint16_t *want16 = calloc(n16, sizeof *want16);
        float *want_dx = malloc(nx * sizeof(float)), *want_dw = malloc(nw * sizeof(float));
        float *dx = malloc(nx * sizeof(float)), *dw = malloc(nw * sizeof(float));
        for (size_t f = 0; f < sizeof impls / sizeof *impls; f++) {
            if (!impls[f].have) continue;
            impls[f].nt(logits, x, w, N, V, C, 0);
            impls[f].ce(want_l, want_d, logits, tg, N, V, 15.0f, 0.125f);
            for (int n = 0; n < N; n++)
                for (int v = 0; v < V; v++) want16[head_dl16_at(n, v, V)] = head_bf16_bits(want_d[(size_t)n * V + v]);
            impls[f].nn(want_dx, want_d, w, N, C, V, 0);
            memcpy(want_dw, dw0, nw * sizeof *dw);
            impls[f].tn(want_dw, want_d, x, V, C, N, 1);
            size_t d_bytes = impls[f].half ? n16 * sizeof(uint16_t) : nl * sizeof(float);
            for (int t = 1; t <= 3; t++)
                for (int pinned = 0; pinned < 2; pinned++) {
                    omp_set_num_threads(t);
                    if (pinned) {  // as training pins lm_head: the logits (nt) and the dx product (nn)
                        assert_int_equal(kernels_pin_weight(w, V, C), 0);
                        assert_int_equal(kernels_pin_weight_nn(w, V, C), 0);
                    }
                    for (size_t i = 0; i < nl; i++) d[i] = NAN;
                    for (size_t i = 0; i < nx; i++) dx[i] = NAN;
                    impls[f].head(l, d, dx, x, w, tg, N, V, C, 15.0f, 0.125f);
                    assert_memory_equal(want_l, l, (size_t)N * sizeof *l);
                    assert_memory_equal(impls[f].half ? (void *)want16 : (void *)want_d, d, d_bytes);
                    assert_memory_equal(want_dx, dx, nx * sizeof *dx);
                    for (size_t i = 0; i < nl; i++) d[i] = NAN;
                    impls[f].head(l, d, NULL, x, w, tg, N, V, C, 15.0f, 0.125f);  // without dx
                    assert_memory_equal(impls[f].half ? (void *)want16 : (void *)want_d, d, d_bytes);
                    for (int i = 0; i < N; i++) l[i] = NAN;
                    impls[f].head(l, NULL, NULL, x, w, tg, N, V, C, 15.0f, 0.125f);  // losses only
                    assert_memory_equal(want_l, l, (size_t)N * sizeof *l);
                    kernels_unpin_weights();
                    memcpy(dw, dw0, nw * sizeof *dw);
                    impls[f].bwd(dw, d, x, N, V, C);
                    assert_memory_equal(want_dw, dw, nw * sizeof *dw);
                }
            omp_set_num_threads(prev);
        }
        free(x), free(w), free(dw0), free(tg), free(logits), free(want_d), free(d), free(want_l), free(l);
        free(want16), free(want_dx), free(want_dw), free(dx), free(dw);
    }
}

int main(void) {
    note_variants_left_out();  // several cases loop over the variants this CPU runs
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_matmuls_thread_invariant),
        cmocka_unit_test(test_fast_matmul_rows_independent_of_m),
        cmocka_unit_test(test_pinned_weights_give_the_same_bits),
        cmocka_unit_test(test_pinned_backward_weights_follow_updates),
        cmocka_unit_test(test_symmetric_products_give_the_same_bits),
        cmocka_unit_test(test_narrow_tn_products_in_row_pairs_give_the_same_bits),
        cmocka_unit_test(test_amx_pinned_and_symmetric_products_give_the_same_bits),
        cmocka_unit_test(test_causal_products_give_the_same_bits),
        cmocka_unit_test(test_relu2_linear_gives_the_same_bits),
        cmocka_unit_test(test_fused_head_gives_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
