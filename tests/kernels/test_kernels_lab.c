// tests/kernels/test_kernels_lab.c — the kernel registry (variants, FRONTIER_KERNELS parsing,
// the profiled wrapper), the lab's checker (every available variant passes it; out-of-bounds
// writes, unwritten outputs and thread-dependent results are caught), and the fast matmuls'
// bitwise invariance to the thread count. No timing assertions.
#include "test_util.h"

#include <omp.h>

#include "kernels/gemm/amx_matmul.h"
#include "kernels/attention/attention_bf16.h"
#include "kernels/rows/avx2_ops.h"
#include "kernels/rows/avx512_ops.h"
#include "kernels/cpu/cpu.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/head/head.h"
#include "kernels/kernels.h"
#include "kernels/lab/lab.h"
#include "kernels/ref.h"
#include "kernels/gemm/simd_matmul.h"
#include "util/error.h"
#include "util/rng.h"

static const int THREADS[] = {1, 2};
static const LabCheckOpts QUICK = {.quick = 1, .threads = THREADS, .n_threads = 2};

// ---------------------------------------------------------------------------------------------
// The check grid passes for every variant this CPU runs (and the bf16 matmuls at their tolerance)
// ---------------------------------------------------------------------------------------------

static void expect_pass(const Kernels *k, int op, const LabCheckOpts *o) {
    LabOpResult r;
    int failed = lab_check_op(k, op, o, &r);
    if (failed) print_error("%s [%s]: %s\n", KERNEL_OP_NAMES[op], kernels_op_source(k, op), r.first_failure);
    assert_int_equal(failed, 0);
    assert_true(r.cases > 0);
    assert_true(r.max_err <= r.tol);
}

static void test_every_variant_passes(void **state) {
    (void)state;
    int checked = 0;
    for (int v = 0; v < KERNEL_VARIANT_COUNT; v++) {
        const Kernels *k = kernels_variant((KernelVariant)v);
        if (!k) continue;
        for (int op = 0; op < KERNEL_OP_COUNT; op++) {
            // ops a variant takes from below were checked with that variant
            if (v > 0 && !strcmp(kernels_op_source(k, op), kernels_op_source(kernels_variant((KernelVariant)(v - 1)), op)))
                continue;
            expect_pass(k, op, &QUICK);
            checked++;
        }
    }
    assert_true(checked >= KERNEL_OP_COUNT);
}

static void test_bf16_matmuls_within_their_tolerance(void **state) {
    (void)state;
    const Kernels *ref16 = kernels_bf16_matmuls(0);  // the reference bf16 matmuls run anywhere
    assert_ptr_equal(ref16->matmul_nt, ref_bf16_matmul_nt);
    LabCheckOpts o = QUICK;
    o.bf16_operands = 1;  // against an oracle with bf16-rounded operands: fp32 accumulation's tolerance
    for (int op = 0; op < KERNEL_OP_COUNT; op++)
        if (kernel_op_has_precision(op)) expect_pass(ref16, op, &o);
    LabOpResult r;
    assert_int_equal(lab_check_op(&KERNELS_REF, 0, &o, &r), 1);  // an fp32 matmul is not a bf16 one
    if (!cpu_info()->avx512_bf16) SKIP_HARDWARE("this CPU lacks AVX512_BF16: its bf16 matmuls are not checked");
    const Kernels *k = kernels_bf16_matmuls(1);
    assert_ptr_equal(k->matmul_tn, avx512bf16_matmul_tn);
    for (int op = 0; op < KERNEL_OP_COUNT; op++)
        if (kernel_op_has_precision(op)) expect_pass(k, op, &o);
    o.bf16_operands = 0;  // and they really are coarser than fp32
    assert_int_equal(lab_check_op(k, 0, &o, &r), 1);
}

// --precision bf16 swaps exactly the ops with products (matmuls, head, attention) for their bf16
// twins, and back.
static void test_precision_switches_the_matmuls(void **state) {
    (void)state;
    assert_int_equal(kernels_select("ref"), 0);
    assert_int_equal(kernels_precision_check(KP_BF16), 0);
    assert_ptr_equal(kernels_for(KP_BF16)->matmul_nt, ref_bf16_matmul_nt);
    assert_ptr_equal(kernels_for(KP_BF16)->matmul_tn, ref_bf16_matmul_tn);
    assert_ptr_equal(kernels_for(KP_BF16)->head_ce, ref_bf16_head_ce);
    assert_ptr_equal(kernels_for(KP_BF16)->head_dw, ref_bf16_head_dw);
    assert_ptr_equal(kernels_for(KP_BF16)->attention_bwd, ref_bf16_attention_bwd);
    assert_ptr_equal(kernels_for(KP_BF16)->rmsnorm_fwd, KERNELS_REF.rmsnorm_fwd);
    assert_string_equal(kernels_for(KP_BF16)->name, "ref+bf16");
    assert_string_equal(kernels_op_source(kernels_for(KP_BF16), 1), "ref_bf16");
    assert_ptr_equal(kernels()->matmul_nt, KERNELS_REF.matmul_nt);  // no global mode: fp32 stays
    if (cpu_info()->avx512_bf16 && kernels_variant_available(KV_AVX512, NULL)) {
        assert_int_equal(kernels_select("avx512,matmul_nn=ref"), 0);  // a new table has its own bf16 twins
        assert_ptr_equal(kernels_for(KP_BF16)->matmul_nt, avx512bf16_matmul_nt);
        assert_ptr_equal(kernels_for(KP_BF16)->matmul_nn, ref_bf16_matmul_nn);
        assert_ptr_equal(kernels_for(KP_BF16)->head_ce, avx512bf16_head_ce);
        assert_ptr_equal(kernels_for(KP_BF16)->head_dw, avx512bf16_head_dw);
        assert_ptr_equal(kernels_for(KP_BF16)->attention_fwd, avx512bf16_attention_fwd);
        assert_string_equal(kernels_for(KP_BF16)->name, "avx512,matmul_nn=ref+bf16");
    } else if (kernels_variant_available(KV_AVX2, NULL)) {  // fast fp32 ops without bf16 twins: refused
        assert_int_equal(kernels_select("avx2"), 0);
        assert_int_equal(kernels_precision_check(KP_BF16), -1);
        assert_non_null(strstr(err_msg(), "needs AVX512_BF16"));
        err_clear();
        assert_int_equal(kernels_precision_check(KP_FP32), 0);
        assert_int_equal(kernels_select("ref"), 0);
    }
    assert_string_equal(kernels()->name, kernels_variant_available(KV_AVX512, NULL) && cpu_info()->avx512_bf16
                                             ? "avx512,matmul_nn=ref" : "ref");
    assert_ptr_equal(kernels()->matmul_nn, ref_matmul_nn);
    assert_ptr_equal(kernels()->head_ce, kernels_variant_available(KV_AVX512, NULL) && cpu_info()->avx512_bf16
                                             ? avx512_head_ce : ref_head_ce);
    KernelPrecision p;
    assert_int_equal(kernels_precision_parse("bf16", &p), 0);
    assert_int_equal(p, KP_BF16);
    assert_int_equal(kernels_precision_parse("fp16", &p), -1);
    assert_non_null(strstr(err_msg(), "fp32 or bf16"));
    assert_int_equal(kernels_select(NULL), 0);
}

// ---------------------------------------------------------------------------------------------
// Broken kernels are caught
// ---------------------------------------------------------------------------------------------

static void nt_writes_past_end(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    ref_matmul_nt(c, a, b, M, N, K, acc);
    c[(size_t)M * N] = 0.0f;  // one element too many
}

static void nt_writes_before_start(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    ref_matmul_nt(c, a, b, M, N, K, acc);
    c[-1] = 1.0f;
}

static void nt_skips_last(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    float keep = c[(size_t)M * N - 1];  // the NaN the lab put there
    ref_matmul_nt(c, a, b, M, N, K, acc);
    if (!acc) c[(size_t)M * N - 1] = keep;
}

static void nt_thread_dependent(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    ref_matmul_nt(c, a, b, M, N, K, acc);
    c[0] += 1e-7f * (float)omp_get_max_threads();  // within tolerance, but not the same bits
}

static void relu2_off_by_one(float *out, const float *x, size_t n) {
    ref_relu2_fwd(out, x, n);
    out[n] = 0.0f;
}

static void expect_failure(Kernels *k, int op, const char *needle) {
    LabOpResult r;
    assert_int_equal(lab_check_op(k, op, &QUICK, &r), 1);
    assert_true(r.failures > 0);
    if (!strstr(r.first_failure, needle)) {
        print_error("failure \"%s\" lacks \"%s\"\n", r.first_failure, needle);
        fail();
    }
}

static void test_out_of_bounds_writes_are_caught(void **state) {
    (void)state;
    Kernels k = KERNELS_REF;
    k.matmul_nt = nt_writes_past_end;
    expect_failure(&k, kernel_op_index("matmul_nt"), "wrote outside c");
    k.matmul_nt = nt_writes_before_start;
    expect_failure(&k, kernel_op_index("matmul_nt"), "first before it");
    k.relu2_fwd = relu2_off_by_one;
    expect_failure(&k, kernel_op_index("relu2_fwd"), "wrote outside out");
}

static void test_unwritten_output_is_caught(void **state) {
    (void)state;
    Kernels k = KERNELS_REF;
    k.matmul_nt = nt_skips_last;
    expect_failure(&k, kernel_op_index("matmul_nt"), "= nan");
}

static void test_thread_dependence_is_caught(void **state) {
    (void)state;
    Kernels k = KERNELS_REF;
    k.matmul_nt = nt_thread_dependent;
    expect_failure(&k, kernel_op_index("matmul_nt"), "differs between 1 and 2 threads");
}

// ---------------------------------------------------------------------------------------------
// FRONTIER_KERNELS parsing and the registry
// ---------------------------------------------------------------------------------------------

static void test_parse_overrides(void **state) {
    (void)state;
    KernelSelection s;
    assert_int_equal(kernels_parse("ref", &s), 0);
    assert_string_equal(s.name, "ref");
    assert_ptr_equal(s.table.matmul_nt, ref_matmul_nt);

    if (kernels_variant_available(KV_AVX512, NULL)) {
        assert_int_equal(kernels_parse("avx512,matmul_nt=ref, softcap_ce = ref", &s), 0);
        assert_string_equal(s.name, "avx512,matmul_nt=ref,softcap_ce=ref");
        assert_string_equal(s.table.name, s.name);
        assert_ptr_equal(s.table.matmul_nt, ref_matmul_nt);
        assert_ptr_equal(s.table.matmul_nn, avx512_matmul_nn);
        assert_ptr_equal(s.table.softcap_ce, ref_softcap_ce);
        assert_string_equal(kernels_op_source(&s.table, kernel_op_index("matmul_nt")), "ref");
        assert_string_equal(kernels_op_source(&s.table, kernel_op_index("matmul_tn")), "avx512");
        assert_string_equal(s.note, "");
    }
    if (kernels_variant_available(KV_AVX2, NULL)) {  // avx2 has no embedding_fwd: it comes from ref
        assert_int_equal(kernels_parse("avx2", &s), 0);
        assert_ptr_equal(s.table.matmul_tn, avx2_matmul_tn);
        assert_string_equal(kernels_op_source(&s.table, kernel_op_index("embedding_fwd")), "ref");
        assert_string_equal(kernels_op_source(&s.table, kernel_op_index("rmsnorm_fwd")), "avx2");
        assert_string_equal(kernels_op_source(&s.table, kernel_op_index("attention_fwd")), "avx2");
    }
    // no base: the best available, with the override
    assert_int_equal(kernels_parse("matmul_nn=ref", &s), 0);
    assert_ptr_equal(s.table.matmul_nn, ref_matmul_nn);
    assert_int_equal(kernel_variant_index(strtok(s.name, ",")), (int)kernels_best_variant());
    // empty and "auto": the best available
    assert_int_equal(kernels_parse("", &s), 0);
    assert_string_equal(s.name, KERNEL_VARIANT_NAMES[kernels_best_variant()]);
    assert_int_equal(kernels_parse("auto", &s), 0);
    assert_string_equal(s.name, KERNEL_VARIANT_NAMES[kernels_best_variant()]);
}

static void test_parse_errors(void **state) {
    (void)state;
    KernelSelection s;
    assert_int_equal(kernels_parse("avx9000", &s), -1);
    assert_error_contains("unknown kernel variant 'avx9000'");
    assert_error_contains("have: auto, ref, avx2, avx512, amx");
    assert_int_equal(kernels_parse("ref,matmul_xx=ref", &s), -1);
    assert_error_contains("unknown op 'matmul_xx'");
    assert_error_contains("softcap_ce");
    assert_int_equal(kernels_parse("ref,matmul_nt=fast", &s), -1);
    assert_error_contains("unknown kernel variant 'fast'");
    assert_int_equal(kernels_parse("ref,,matmul_nt=ref", &s), -1);
    assert_error_contains("empty item");
    assert_int_equal(kernels_parse("ref,", &s), -1);
    assert_error_contains("empty item");
    assert_int_equal(kernels_parse("ref,avx2", &s), -1);
    assert_error_contains("should be op=variant");
    assert_int_equal(kernels_parse("matmul_nt=ref,matmul_nt=avx2", &s), -1);
    assert_error_contains("given twice");
}

static void test_unavailable_variant_falls_back(void **state) {
    (void)state;
    KernelSelection s;
    const char *why;
    if (kernels_variant_available(KV_AMX, &why))
        SKIP_HARDWARE("this CPU has AMX: how a request for amx falls back without it cannot be seen here");
    assert_non_null(why);
    assert_null(kernels_variant(KV_AMX));
    assert_int_equal(kernels_parse("amx,rope_fwd=amx", &s), 0);
    assert_non_null(strstr(s.note, "amx needs"));
    assert_non_null(strstr(s.note, "using"));
    assert_non_null(strstr(s.name, ",rope_fwd="));
    assert_int_equal(kernel_variant_index(strtok(s.name, ",")), (int)kernels_best_variant());  // amx -> avx512 here
}

static void test_every_table_is_complete(void **state) {
    (void)state;
    for (int v = 0; v < KERNEL_VARIANT_COUNT; v++) {
        const Kernels *k = kernels_variant((KernelVariant)v);
        if (!k) continue;
        assert_string_equal(k->name, KERNEL_VARIANT_NAMES[v]);
        for (int op = 0; op < KERNEL_OP_COUNT; op++) {
            const char *src = kernels_op_source(k, op);
            int sv = kernel_variant_index(src);
            assert_true(sv >= 0 && sv <= v);  // from this variant or a lower one, never missing
        }
    }
}

static void test_select_and_profiled_wrapper(void **state) {
    (void)state;
    assert_int_equal(kernels_select("ref,matmul_nt=ref"), 0);
    assert_string_equal(kernels()->name, "ref,matmul_nt=ref");
    assert_int_equal(kernels_select("matmul_tn=ref"), 0);
    const Kernels *base = kernels();
    kernels_set_profiling(1);
    const Kernels *p = kernels();
    assert_string_equal(p->name, "profiled");
    assert_string_equal(kernels_op_source(p, 0), "profiled");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c1[4], c2[4];
    p->matmul_nt(c1, a, b, 2, 2, 3, 0);  // through the wrapper: the same result as the base
    base->matmul_nt(c2, a, b, 2, 2, 3, 0);
    assert_memory_equal(c1, c2, sizeof c1);
    assert_true(c1[0] == 1 && c1[1] == 6 && c1[2] == 4 && c1[3] == 15);
    kernels_set_profiling(0);
    assert_ptr_equal(kernels(), base);
    assert_int_equal(kernels_select("nope"), -1);  // a bad spec leaves the active table alone
    assert_ptr_equal(kernels(), base);
    assert_int_equal(kernels_select(NULL), 0);
}

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

// ---------------------------------------------------------------------------------------------
// AMX: the emulator's TDPBF16PS follows Intel's pseudo-code, and AMX's bf16 ops (the GEMMs, the
// fused head, attention) — run on the emulator here, on the tiles too where the CPU has them —
// pass the bf16 check grid; the GEMMs give the same bits when pinned or symmetric; all of them
// are what --precision bf16 picks for FRONTIER_KERNELS=amx.
// ---------------------------------------------------------------------------------------------

static uint16_t bf16_of(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (uint16_t)(u >> 16);  // exact for the powers of two used here
}

static void test_amx_emulator_follows_the_pseudo_code(void **state) {
    (void)state;
    float tiny = ldexpf(1.0f, -12);  // tiny² = 2^-24: half an ulp of 1
    uint16_t t = bf16_of(tiny), one = bf16_of(1.0f), zero = 0;
    // element 2k, then 2k+1, each added with its own rounding: 1 + 2^-24 rounds back to 1 twice
    // (the pair summed first would give 1 + 2^-23)
    assert_true(amx_emu_dot_pair(1.0f, t, t, t, t) == 1.0f);
    assert_true(amx_emu_dot_pair(0.0f, one, t, one, t) == 1.0f);  // 1, then 1 + 2^-24: a tie, to even
    assert_true(amx_emu_dot_pair(0.0f, t, t, t, t) == ldexpf(1.0f, -23));  // exact products, exact sum
    assert_true(amx_emu_dot_pair(2.0f, bf16_of(3.0f), bf16_of(-1.0f), bf16_of(5.0f), bf16_of(4.0f)) == 13.0f);
    // DAZ: a denormal bf16 input counts as zero, however large its partner
    assert_true(amx_emu_dot_pair(1.0f, 0x0001, zero, bf16_of(ldexpf(1.0f, 100)), zero) == 1.0f);
    // FTZ: a denormal result is flushed (2^-65 · 2^-65 = 2^-130)
    uint16_t small = bf16_of(ldexpf(1.0f, -65));
    assert_true(amx_emu_dot_pair(0.0f, small, zero, small, zero) == 0.0f);
}

static void test_amx_gemms_pass_the_bf16_check(void **state) {
    (void)state;
    if (!cpu_info()->avx512_bf16) SKIP_HARDWARE("this CPU lacks AVX512_BF16, which the AMX packing (and so its emulator) needs");
    for (int real = 0; real < 2; real++) {
        if (real && !kernels_amx_real()) continue;
        const Kernels *k = kernels_bf16_amx(!real);
        assert_ptr_equal(k->matmul_nn, real ? amx_matmul_nn : amx_emu_matmul_nn);
        assert_string_equal(kernels_op_source(k, 0), real ? "amx_bf16" : "amx_emu");
        assert_ptr_equal(k->head_dw, real ? amx_head_dw : amx_emu_head_dw);
        assert_string_equal(kernels_op_source(k, kernel_op_index("attention_bwd")), real ? "amx_bf16" : "amx_emu");
        LabCheckOpts o = QUICK;
        o.bf16_operands = 1;
        int ops = 0;
        for (int op = 0; op < KERNEL_OP_COUNT; op++)
            if (kernel_op_has_precision(op)) expect_pass(k, op, &o), ops++;
        assert_int_equal(ops, 9);
        LabOpResult r;
        o.bf16_operands = 0;  // bf16 operands: coarser than fp32
        assert_int_equal(lab_check_op(k, kernel_op_index("matmul_tn"), &o, &r), 1);
    }
}

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

// FRONTIER_KERNELS=amx with --precision bf16: AMX's twins where the CPU has AMX; elsewhere the
// table falls back to avx512 and so do its twins. An op overridden to amx takes AMX's twin alone.
static void test_amx_precision_picks_the_amx_gemms(void **state) {
    (void)state;
    if (!(cpu_info()->avx512_bf16 && kernels_variant_available(KV_AVX512, NULL)))
        SKIP_HARDWARE("this CPU lacks AVX-512 with AVX512_BF16");
    if (kernels_amx_emulated()) SKIP_CASE("FRONTIER_AMX_EMULATE is set: the emulated path is the next case's subject");
    int amx = kernels_amx_real();
    assert_int_equal(kernels_select("amx"), 0);
    assert_int_equal(kernels_precision_check(KP_BF16), 0);
    assert_ptr_equal(kernels_for(KP_BF16)->matmul_tn, amx ? amx_matmul_tn : avx512bf16_matmul_tn);
    assert_ptr_equal(kernels_for(KP_BF16)->relu2_linear_bwd, amx ? amx_relu2_linear_bwd : avx512bf16_relu2_linear_bwd);
    assert_ptr_equal(kernels_for(KP_BF16)->head_ce, amx ? amx_head_ce : avx512bf16_head_ce);
    assert_ptr_equal(kernels_for(KP_BF16)->attention_bwd, amx ? amx_attention_bwd : avx512bf16_attention_bwd);
    assert_string_equal(kernels_op_source(kernels_for(KP_BF16), 0), amx ? "amx_bf16" : "avx512_bf16");
    assert_int_equal(kernels_select("avx512,matmul_nn=amx"), 0);
    assert_ptr_equal(kernels_for(KP_BF16)->matmul_nn, amx ? amx_matmul_nn : avx512bf16_matmul_nn);
    assert_ptr_equal(kernels_for(KP_BF16)->matmul_nt, avx512bf16_matmul_nt);
    assert_int_equal(kernels_select("avx512,head_dw=amx"), 0);
    assert_ptr_equal(kernels_for(KP_BF16)->head_dw, amx ? amx_head_dw : avx512bf16_head_dw);
    assert_ptr_equal(kernels_for(KP_BF16)->head_ce, avx512bf16_head_ce);
    assert_ptr_equal(kernels()->matmul_nn, avx512_matmul_nn);  // no fp32 AMX: avx512's
    assert_int_equal(kernels_select(NULL), 0);
}

// FRONTIER_AMX_EMULATE=1 where AMX is absent: FRONTIER_KERNELS=amx is available and its bf16
// twins are the emulator's (so the trainer can run the AMX path end to end: tests/train); the
// default table stays the best real one, and fp32 products are avx512's as with real AMX.
static void test_amx_emulation_runs_the_amx_path(void **state) {
    (void)state;
    if (kernels_amx_real()) SKIP_HARDWARE("this CPU has AMX: the emulator is never selected here");
    if (!(cpu_info()->avx512_bf16 && kernels_variant_available(KV_AVX512, NULL)))
        SKIP_HARDWARE("this CPU lacks AVX-512 with AVX512_BF16, which the AMX emulator needs");
    KernelVariant best = kernels_best_variant();
    setenv("FRONTIER_AMX_EMULATE", "1", 1);
    assert_true(kernels_amx_emulated());
    assert_true(kernels_variant_available(KV_AMX, NULL));
    assert_int_equal(kernels_best_variant(), best);  // never the default
    KernelSelection sel;
    assert_int_equal(kernels_parse("amx", &sel), 0);
    assert_non_null(strstr(sel.note, "emulator"));  // and never silently
    assert_int_equal(kernels_parse("avx512", &sel), 0);
    assert_null(strstr(sel.note, "emulator"));
    assert_int_equal(kernels_select("amx"), 0);
    assert_int_equal(kernels_precision_check(KP_BF16), 0);
    assert_ptr_equal(kernels_for(KP_BF16)->matmul_nt, amx_emu_matmul_nt);
    assert_ptr_equal(kernels_for(KP_BF16)->head_ce, amx_emu_head_ce);
    assert_ptr_equal(kernels_for(KP_BF16)->attention_fwd, amx_emu_attention_fwd);
    assert_string_equal(kernels_op_source(kernels_for(KP_BF16), kernel_op_index("head_dw")), "amx_emu");
    assert_ptr_equal(kernels()->matmul_nn, avx512_matmul_nn);
    setenv("FRONTIER_AMX_EMULATE", "0", 1);
    assert_false(kernels_amx_emulated());
    unsetenv("FRONTIER_AMX_EMULATE");
    assert_int_equal(kernels_select(NULL), 0);
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
    // Several cases loop over the variants and check those this CPU runs: say which they leave out.
    if (!kernels_variant_available(KV_AVX512, NULL))
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX-512: the cases over variants leave out avx512 and avx512_bf16");
    else if (!cpu_info()->avx512_bf16)
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX512_BF16: the cases over variants leave out avx512_bf16");
    if (!kernels_variant_available(KV_AVX2, NULL))
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX2: the cases over variants leave out avx2");
    if (!kernels_amx_real())
        NOTE_SKIPPED_HARDWARE("this CPU has no AMX: the AMX kernels run on their emulator only%s",
                              cpu_info()->avx512_bf16 ? "" : ", and not at all here (the emulator needs AVX512_BF16)");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_variant_passes),
        cmocka_unit_test(test_bf16_matmuls_within_their_tolerance),
        cmocka_unit_test(test_precision_switches_the_matmuls),
        cmocka_unit_test(test_out_of_bounds_writes_are_caught),
        cmocka_unit_test(test_unwritten_output_is_caught),
        cmocka_unit_test(test_thread_dependence_is_caught),
        cmocka_unit_test(test_parse_overrides),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_unavailable_variant_falls_back),
        cmocka_unit_test(test_every_table_is_complete),
        cmocka_unit_test(test_select_and_profiled_wrapper),
        cmocka_unit_test(test_fast_matmuls_thread_invariant),
        cmocka_unit_test(test_fast_matmul_rows_independent_of_m),
        cmocka_unit_test(test_pinned_weights_give_the_same_bits),
        cmocka_unit_test(test_pinned_backward_weights_follow_updates),
        cmocka_unit_test(test_symmetric_products_give_the_same_bits),
        cmocka_unit_test(test_narrow_tn_products_in_row_pairs_give_the_same_bits),
        cmocka_unit_test(test_amx_emulator_follows_the_pseudo_code),
        cmocka_unit_test(test_amx_gemms_pass_the_bf16_check),
        cmocka_unit_test(test_amx_pinned_and_symmetric_products_give_the_same_bits),
        cmocka_unit_test(test_amx_precision_picks_the_amx_gemms),
        cmocka_unit_test(test_amx_emulation_runs_the_amx_path),
        cmocka_unit_test(test_causal_products_give_the_same_bits),
        cmocka_unit_test(test_relu2_linear_gives_the_same_bits),
        cmocka_unit_test(test_fused_head_gives_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
