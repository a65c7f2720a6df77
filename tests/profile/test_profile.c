// tests/profile/test_profile.c — the profiler: analytic op costs against hand counts, spans
// nesting and self times, op calls grouped by shape, the profiler's own page faults accounted
// for, and op spans covering a whole training step (>= 95%).
#include "test_util.h"

#include <math.h>
#include <sys/resource.h>

#include "kernels/cost.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "optim/optim.h"
#include "profile/profile.h"
#include "util/rng.h"

static void test_costs_match_hand_counts(void **state) {
    (void)state;
    // matmul 2x3 @ (4x3)^T: 2*4 outputs x 3 multiply-adds = 48 FLOPs; bytes 4*(6 + 12 + 8)
    OpCost c = cost_matmul(2, 4, 3, 0);
    assert_float_equal(c.flops, 48, 0);
    assert_float_equal(c.bytes, 4 * (6 + 12 + 8), 0);
    assert_float_equal(cost_matmul(2, 4, 3, 1).bytes, 4 * (6 + 12 + 16), 0);  // c read and written
    // X·Xᵀ with X 3x5: the upper triangle and diagonal, 6 outputs x 5 multiply-adds = 60 FLOPs; X
    // read once (15 floats), C (9) written
    c = cost_matmul_symmetric(3, 5);
    assert_float_equal(c.flops, 60, 0);
    assert_float_equal(c.bytes, 4 * (15 + 9), 0);
    // causal attention, B=1, T=3, H=1, D=2: pairs (t,s<=t) = 1+2+3 = 6; each q.k (2D=4) + p.v (4) + exp
    c = cost_attention_fwd(1, 3, 1, 1, 2, 0);
    assert_float_equal(c.flops, 6 * (4 * 2 + 1), 0);
    assert_float_equal(c.bytes, 4 * (3 * 2 * (2 + 2) + 3), 0);  // q,k,v,out of 3x2 + lse of 3
    c = cost_attention_bwd(1, 3, 1, 1, 2, 0);
    assert_float_equal(c.flops, 6 * (10 * 2 + 4), 0);
    // window 1, T=5: query t sees min(t, 1) + 1 keys = 1+2+2+2+2 = 9 pairs (a window >= T-1 is none)
    assert_float_equal(cost_attention_fwd(1, 5, 1, 1, 2, 1).flops, 9 * (4 * 2 + 1), 0);
    assert_float_equal(cost_attention_fwd(1, 5, 1, 1, 2, 4).flops, 15 * (4 * 2 + 1), 0);
    // RoPE on B=1, T=2, nh=1, D=4: 4 pairs x 6 FLOPs; read + write 8 floats
    c = cost_rope(1, 2, 1, 4);
    assert_float_equal(c.flops, 24, 0);
    assert_float_equal(c.bytes, 4 * 16, 0);
    // RMSNorm 2 rows of 5: 3 FLOPs/elem + 1 per row; read x, write out, write rstd
    c = cost_rmsnorm_fwd(2, 5);
    assert_float_equal(c.flops, 3 * 10 + 2, 0);
    assert_float_equal(c.bytes, 4 * (20 + 2), 0);
    assert_float_equal(cost_relu2_fwd(10).flops, 20, 0);
    assert_float_equal(cost_softcap_ce(2, 10, 0).flops, 2 * 10 * 6, 0);
    assert_float_equal(cost_softcap_ce(2, 10, 1).bytes, 4 * (2 * 10 * 2 + 4), 0);
    assert_float_equal(cost_embedding_fwd(3, 4).bytes, 4 * (3 + 24), 0);
}

static void test_spans_nest_and_self_times(void **state) {
    (void)state;
    prof_reset();
    prof_enable(1);
    prof_begin("step", "step", 0);
    prof_begin("outer", "phase", -1);
    prof_begin("inner", "op", -1);
    for (volatile int i = 0; i < 2000000; i++) {}
    prof_end(100, 10);
    for (volatile int i = 0; i < 2000000; i++) {}
    prof_end(0, 0);
    prof_end(0, 0);
    prof_enable(0);
    ProfSummary s;
    prof_summarize(&s);
    const ProfOpStat *inner = NULL, *outer = NULL;
    for (int i = 0; i < s.n_ops; i++) {
        if (!strcmp(s.ops[i].name, "inner")) inner = &s.ops[i];
        if (!strcmp(s.ops[i].name, "outer (other)")) outer = &s.ops[i];
    }
    assert_non_null(inner);
    assert_non_null(outer);
    assert_int_equal(inner->calls, 1);
    assert_float_equal(inner->flops, 100, 0);
    assert_true(inner->total_s > 0 && outer->total_s > 0);
    // the parent's self time excludes the child: the pieces add up to the step
    double sum = 0;
    for (int i = 0; i < s.n_ops; i++) sum += s.ops[i].total_s;
    assert_true(fabs(sum - s.step_s) <= 1e-6 + 1e-3 * s.step_s);
    prof_summary_free(&s);
}

// Op spans with a shape are also summed per (op, shape): two calls of one shape make one row,
// another shape its own; an op without a shape has no shape row. The trace's args carry the
// shape, and profile_shapes.csv has one row per (op, shape).
static void test_shapes_group_op_calls(void **state) {
    (void)state;
    prof_reset();
    prof_enable(1);
    prof_begin("step", "step", 0);
    static const int shapes[][3] = {{64, 32, 16}, {64, 32, 16}, {8, 32, 16}};
    for (int i = 0; i < 3; i++) {
        prof_begin("matmul_nt", "op", -1);
        prof_shape(shapes[i][0], shapes[i][1], shapes[i][2]);
        prof_end(2.0 * shapes[i][0] * shapes[i][1] * shapes[i][2], 0);
    }
    prof_begin("rmsnorm_fwd", "op", -1);
    prof_end(10, 10);
    prof_end(0, 0);
    prof_enable(0);
    ProfSummary s;
    prof_summarize(&s);
    assert_int_equal(s.n_shapes, 2);
    const ProfOpStat *big = NULL, *small = NULL;
    for (int i = 0; i < s.n_shapes; i++) {
        assert_string_equal(s.shapes[i].name, "matmul_nt");
        if (!strcmp(s.shapes[i].shape, "64x32x16")) big = &s.shapes[i];
        if (!strcmp(s.shapes[i].shape, "8x32x16")) small = &s.shapes[i];
    }
    assert_non_null(big);
    assert_non_null(small);
    assert_int_equal(big->calls, 2);
    assert_float_equal(big->flops, 2 * 2.0 * 64 * 32 * 16, 0);
    assert_int_equal(small->calls, 1);
    char *dir = test_tmpdir("prof_shapes"), *trace = path_join(dir, "trace.json"), *csv = path_join(dir, "shapes.csv");
    assert_int_equal(prof_write_trace(trace), 0);
    assert_int_equal(prof_write_shapes_csv(&s, csv, 1e12, 1e11), 0);
    size_t n;
    char *t = read_file(trace, &n), *c = read_file(csv, &n);
    assert_non_null(strstr(t, "\"shape\":\"64x32x16\""));
    assert_non_null(strstr(c, "op,shape,calls,total_ms"));
    assert_non_null(strstr(c, "\nmatmul_nt,8x32x16,1,"));
    assert_null(strstr(c, "rmsnorm_fwd"));
    free(t), free(c);
    remove_tree(dir);
    free(dir), free(trace), free(csv);
    prof_summary_free(&s);
}

static long process_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

// Recording allocates as it goes: a long profile's span buffers grow by megabytes. Those first
// touches are the profiler's, not the step's, so prof_own_faults() must account for them, or
// train.c's page_faults_per_step blames the model (kit-d10 profiles read ~54 a step, over the
// "something allocates every step" flag, until the profiler counted its own).
static void test_recording_faults_are_the_profilers_own(void **state) {
    (void)state;
    prof_reset();
    prof_enable(1);
    long own0 = prof_own_faults(), all0 = process_faults();
    for (int i = 0; i < 300000; i++) {  // ~25 MB of spans
        prof_begin("matmul_nt", "op", -1);
        prof_end(1, 1);
    }
    long own = prof_own_faults() - own0, all = process_faults() - all0;
    prof_enable(0);
    prof_reset();
    print_message("recording 300000 spans: %ld page faults, %ld of them the profiler's own growth\n", all, own);
    assert_true(own > 0);
    assert_true(all - own < 32);
}

static void test_ops_cover_a_training_step(void **state) {
    (void)state;
    ModelConfig mc = {.depth = 2, .n_embd = 64, .n_head = 2, .n_kv_head = 1, .head_dim = 32, .seq_len = 32,
                      .vocab_size = 512, .mlp_ratio = 4, .rope_base = 10000.0f, .softcap = 15.0f, .qk_norm = 1};
    Model m;
    assert_int_equal(model_build(&m, &mc), 0);
    model_init_weights(&m, 1);
    OptimConfig oc = optim_defaults();
    Optimizer *o = optim_new(&oc, &m.params, mc.n_embd, 4 * 32);
    RunState rs;
    runstate_build(&rs, &mc, 4, 32);
    int32_t in[128], tg[128];
    Rng r;
    rng_seed(&r, 2);
    for (int i = 0; i < 128; i++) in[i] = (int32_t)(rng_next(&r) % 512), tg[i] = (int32_t)(rng_next(&r) % 512);
    prof_reset();
    prof_enable(1);
    kernels_set_profiling(1);
    for (int step = 0; step < 3; step++) {
        prof_begin("step", "step", step);
        model_zero_grad(&m);
        model_forward(&m, &rs, in, tg, 4, 32, NULL);
        model_backward(&m, &rs, in, tg, 1.0f);
        OptimSchedule sc = optim_schedule(&oc, step, 0.1);
        prof_begin("optimizer", "phase", -1);
        optim_step(o, m.param, m.grad, &sc);
        prof_end(0, 0);
        prof_end(0, 0);
    }
    kernels_set_profiling(0);
    prof_enable(0);
    ProfSummary s;
    prof_summarize(&s);
    print_message("ops cover %.2f%% of %d steps\n", 100 * s.covered_s / s.step_s, s.steps);
    assert_int_equal(s.steps, 3);
    // Coverage is measured on the training thread's timeline, so it is exact whatever the load:
    // never more than the step, and less only by the time between phases (bookkeeping).
    assert_true(s.covered_s >= 0.95 * s.step_s && s.covered_s <= s.step_s * (1 + 1e-9));
    int has_attention = 0, layers = s.n_layers;
    for (int i = 0; i < s.n_ops; i++) has_attention |= !strcmp(s.ops[i].name, "attention_bwd") && s.ops[i].calls == 6;
    assert_true(has_attention);  // 2 layers x 3 steps
    assert_int_equal(layers, 2);
    char *dir = test_tmpdir("prof"), *path = path_join(dir, "trace.json");
    assert_int_equal(prof_write_trace(path), 0);
    assert_true(path_exists(path));
    remove_tree(dir);
    free(dir);
    free(path);
    prof_summary_free(&s);
    runstate_free(&rs);
    optim_free(o);
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_costs_match_hand_counts),
        cmocka_unit_test(test_spans_nest_and_self_times),
        cmocka_unit_test(test_shapes_group_op_calls),
        cmocka_unit_test(test_recording_faults_are_the_profilers_own),
        cmocka_unit_test(test_ops_cover_a_training_step),
    };
    return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
