// tests/kernels/test_kernels_lab.c — the kernel registry (variants, FRONTIER_KERNELS parsing,
// the profiled wrapper, the precision's twins, AMX's and its emulator's), and the lab's checker
// (every available variant passes it; out-of-bounds writes, unwritten outputs and thread-dependent
// results are caught). The fast kernels' same-bits invariants are in test_same_bits.c. No timing
// assertions.
#include "note_variants.h"
#include "test_util.h"

#include <math.h>
#include <omp.h>

#include "kernels/attention/attention_bf16.h"
#include "kernels/cpu/cpu.h"
#include "kernels/gemm/amx_matmul.h"
#include "kernels/gemm/simd_matmul.h"
#include "kernels/head/head.h"
#include "kernels/kernels.h"
#include "kernels/lab/lab.h"
#include "kernels/ref/ref.h"
#include "util/error.h"

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
// AMX: the emulator's TDPBF16PS follows Intel's pseudo-code, and AMX's bf16 ops (the GEMMs, the
// fused head, attention) — run on the emulator here, on the tiles too where the CPU has them —
// pass the bf16 check grid (their GEMMs' same bits when pinned or symmetric: test_same_bits.c);
// all of them are what --precision bf16 picks for FRONTIER_KERNELS=amx.
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

int main(void) {
    note_variants_left_out();  // several cases loop over the variants this CPU runs
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
        cmocka_unit_test(test_amx_emulator_follows_the_pseudo_code),
        cmocka_unit_test(test_amx_gemms_pass_the_bf16_check),
        cmocka_unit_test(test_amx_precision_picks_the_amx_gemms),
        cmocka_unit_test(test_amx_emulation_runs_the_amx_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
