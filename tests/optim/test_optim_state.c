// tests/optim/test_optim_state.c — what the optimizer keeps and how it behaves around the update
// rules (those are in test_optim.c): its state tensors (names, shapes, alignment, order), the
// same bits for any number of OpenMP threads (every kind of tensor, and matrices orthogonalised
// side by side, taken costliest first), a resume from the saved state that matches an
// uninterrupted run bit for bit, the weight average (EMA) against a double-precision one, and the
// configurations it refuses with a message.
#include <omp.h>

#include "test_util.h"

#include "model/params.h"
#include "optim/optim.h"

#include "optim_test_util.h"

static ParamTable mixed_table(void) {
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 37, 24, PARAM_WTE);
    param_table_add(&t, "transformer.h.0.attn.c_q.weight", 24, 24, PARAM_MATRIX);
    param_table_add(&t, "transformer.h.0.mlp.c_fc.weight", 96, 24, PARAM_MATRIX);
    param_table_add(&t, "transformer.h.0.mlp.c_proj.weight", 24, 96, PARAM_MATRIX);
    param_table_add(&t, "lm_head.weight", 37, 24, PARAM_LM_HEAD);
    return t;
}

static void test_state_tensors(void **state) {
    (void)state;
    ParamTable t = mixed_table();
    OptimConfig cfg = optim_defaults();
    cfg.normuon = 1;
    Optimizer *o = optim_new(&cfg, &t, 24, 1LL << 16);
    assert_non_null(o);
    const char *names[] = {
        "transformer.wte.weight.exp_avg",
        "transformer.wte.weight.exp_avg_sq",
        "transformer.h.0.attn.c_q.weight.momentum_buffer",
        "transformer.h.0.attn.c_q.weight.normuon_v",
        "transformer.h.0.mlp.c_fc.weight.momentum_buffer",
        "transformer.h.0.mlp.c_fc.weight.normuon_v",
        "transformer.h.0.mlp.c_proj.weight.momentum_buffer",
        "transformer.h.0.mlp.c_proj.weight.normuon_v",
        "lm_head.weight.exp_avg",
        "lm_head.weight.exp_avg_sq",
    };
    const int shapes[][2] = {{37, 24}, {37, 24}, {24, 24}, {24, 1}, {96, 24},
                             {96, 1},  {24, 96}, {1, 96},  {37, 24}, {37, 24}};
    assert_int_equal(o->n_st, 10);
    size_t end = 0;
    for (int i = 0; i < o->n_st; i++) {
        assert_string_equal(o->st[i].name, names[i]);
        assert_int_equal(o->st[i].rows, shapes[i][0]);
        assert_int_equal(o->st[i].cols, shapes[i][1]);
        assert_int_equal(o->st[i].numel, (size_t)shapes[i][0] * shapes[i][1]);
        assert_int_equal(o->st[i].offset % 16, 0);
        assert_true(o->st[i].offset >= end);  // in order, no overlap
        end = o->st[i].offset + o->st[i].numel;
        assert_ptr_equal(optim_state_find(o, names[i]), &o->st[i]);
    }
    assert_int_equal(o->n_state, end);
    for (size_t i = 0; i < o->n_state; i++) assert_true(o->state[i] == 0.0f);
    assert_null(optim_state_find(o, "lm_head.weight.momentum_buffer"));
    optim_free(o);
    cfg.normuon = 0;
    o = optim_new(&cfg, &t, 24, 1LL << 16);
    assert_int_equal(o->n_st, 7);
    optim_free(o);
    param_table_free(&t);
}

static OptimConfig mixed_config(void) {
    OptimConfig cfg = optim_defaults();
    cfg.normuon = cfg.muon_eq = cfg.cautious_wd = cfg.muon_plus = 1;
    return cfg;
}

// Steps [from, to) of a fixed run over the mixed table with every option on: the parameters start
// from seed 70, the gradients of step s are the s-th draw after them, the schedule is
// optim_schedule(s, s/10). Updates p (mixed_table().total floats) in place.
static void run_mixed(Optimizer *o, float *p, int from, int to) {
    const OptimConfig *cfg = &o->cfg;
    size_t n = o->params[o->n_params - 1].offset + o->params[o->n_params - 1].numel;
    float *g = malloc(n * sizeof *g);
    rng_state = 70;
    fill_normal(g, n, 0.3);  // the draw the initial parameters came from
    for (int s = 0; s < to; s++) {
        fill_normal(g, n, 0.01);
        if (s < from) continue;
        OptimSchedule sc = optim_schedule(cfg, s, s / 10.0);
        optim_step(o, p, g, &sc);
    }
    free(g);
}

static float *mixed_start(const ParamTable *t) {
    float *p = malloc(t->total * sizeof *p);
    rng_state = 70;
    fill_normal(p, t->total, 0.3);
    return p;
}

// Runs 3 steps of the mixed run over table t (width C) with 1, 2, ... max_threads OpenMP threads
// and asserts that every thread count gives the first one's parameters and state, bit for bit.
static void assert_same_bits_for_thread_counts(const ParamTable *t, int C, int max_threads) {
    enum { MAX = 4 };
    int saved = omp_get_max_threads();
    OptimConfig cfg = mixed_config();
    float *p[MAX];
    Optimizer *o[MAX];
    for (int k = 0; k < max_threads; k++) {
        omp_set_num_threads(k + 1);
        o[k] = optim_new(&cfg, t, C, 1LL << 16);
        p[k] = mixed_start(t);
        run_mixed(o[k], p[k], 0, 3);
    }
    omp_set_num_threads(saved);
    for (int k = 1; k < max_threads; k++) {
        assert_memory_equal(p[0], p[k], t->total * sizeof(float));
        assert_int_equal(o[0]->n_state, o[k]->n_state);
        assert_memory_equal(o[0]->state, o[k]->state, o[0]->n_state * sizeof(float));
    }
    for (int k = 0; k < max_threads; k++) {
        free(p[k]);
        optim_free(o[k]);
    }
}

// Same bits with 1 and 2 OpenMP threads (all options on, every kind of tensor).
static void test_threads_bit_identical(void **state) {
    (void)state;
    ParamTable t = mixed_table();
    assert_same_bits_for_thread_counts(&t, 24, 2);
    param_table_free(&t);
}

// Enough matrices for optim_step to orthogonalise them side by side (>= 2 per thread), tall,
// wide and square, some large enough that their products would otherwise be split across
// threads: 1, 2 and 3 threads give the same bits.
static void test_matrices_side_by_side_bit_identical(void **state) {
    (void)state;
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 53, 64, PARAM_WTE);
    static const int shapes[][2] = {{64, 64}, {256, 64}, {64, 256}, {96, 64}, {64, 96}, {128, 128}, {64, 64}};
    char name[64];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof name, "transformer.h.%d.attn.c_q.weight", i);
        param_table_add(&t, name, shapes[i][0], shapes[i][1], PARAM_MATRIX);
    }
    param_table_add(&t, "lm_head.weight", 53, 64, PARAM_LM_HEAD);
    assert_same_bits_for_thread_counts(&t, 64, 3);
    param_table_free(&t);
}

// The order in which threads take matrices side by side: every owned matrix exactly once
// (nothing else), costliest first (Polar Express grows with min² · max), ties in parameter order.
static void test_muon_order_is_costliest_first(void **state) {
    (void)state;
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 53, 64, PARAM_WTE);
    static const int shapes[][2] = {{64, 64}, {256, 64}, {64, 64}, {64, 256}, {128, 128}, {32, 64}};
    char name[64];
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "transformer.h.%d.mlp.c_fc.weight", i);
        param_table_add(&t, name, shapes[i][0], shapes[i][1], PARAM_MATRIX);
    }
    param_table_add(&t, "lm_head.weight", 53, 64, PARAM_LM_HEAD);
    OptimConfig cfg = mixed_config();
    Optimizer *o = optim_new(&cfg, &t, 64, 1LL << 16);
    assert_non_null(o);
    // 128²: 128³; 256x64 and 64x256: 64²·256 (parameter order); 64²: 64³ twice; 32x64: 32²·64
    static const int want[] = {5, 2, 4, 1, 3, 6};
    assert_int_equal(o->n_muon_order, 6);
    for (int j = 0; j < 6; j++) assert_int_equal(o->muon_order[j], want[j]);
    optim_free(o);
    param_table_free(&t);
}

// Resume: 2 steps, then a fresh optimizer given the saved state buffer and step count runs 2 more:
// the same bits as 4 steps straight.
static void test_resume_bit_exact(void **state) {
    (void)state;
    ParamTable t = mixed_table();
    OptimConfig cfg = mixed_config();
    Optimizer *straight = optim_new(&cfg, &t, 24, 1LL << 16), *first = optim_new(&cfg, &t, 24, 1LL << 16);
    float *p4 = mixed_start(&t), *p = mixed_start(&t);
    run_mixed(straight, p4, 0, 4);
    run_mixed(first, p, 0, 2);
    Optimizer *resumed = optim_new(&cfg, &t, 24, 1LL << 16);
    assert_int_equal(resumed->n_state, first->n_state);
    memcpy(resumed->state, first->state, first->n_state * sizeof(float));
    resumed->step = first->step;
    optim_free(first);
    run_mixed(resumed, p, 2, 4);
    assert_memory_equal(p, p4, t.total * sizeof(float));
    assert_memory_equal(resumed->state, straight->state, straight->n_state * sizeof(float));
    assert_int_equal(resumed->step, 4);
    free(p);
    free(p4);
    optim_free(resumed);
    optim_free(straight);
    param_table_free(&t);
}

// The weight average: its decay (steps, seconds, from ema_start, none at the first step), one
// "<param>.ema" state tensor per parameter, the update and the readout against a double-precision
// EMA of the mixed run, and two ZeRO shards that together hold what one optimizer does.
static void test_weight_average(void **state) {
    (void)state;
    OptimConfig cfg = optim_defaults();
    assert_true(optim_ema_decay(&cfg, 5, 1.0, 0.5) < 0);  // off
    cfg.ema_steps = 4;
    assert_true(optim_ema_decay(&cfg, 1, 1.0, 0.0) < 0);
    assert_true(fabs(optim_ema_decay(&cfg, 2, 1.0, 0.1) - exp(-0.25)) < 1e-15);
    cfg.ema_start = 0.5;
    assert_true(optim_ema_decay(&cfg, 7, 1.0, 0.4) < 0);
    assert_true(optim_ema_decay(&cfg, 7, 1.0, 0.5) > 0);
    cfg.ema_steps = 0, cfg.ema_seconds = 2;
    assert_true(fabs(optim_ema_decay(&cfg, 7, 0.5, 0.6) - exp(-0.25)) < 1e-15);
    cfg.ema_steps = 3;
    assert_int_equal(optim_config_check(&cfg), -1);
    assert_error_contains("give one");

    ParamTable t = mixed_table();
    cfg = mixed_config();
    cfg.ema_steps = 3, cfg.ema_start = 0.15, cfg.ema_blend = 0.3;
    Optimizer *o = optim_new(&cfg, &t, 24, 1LL << 16);
    Optimizer *sh[2] = {optim_new_shard(&cfg, &t, 24, 1LL << 16, 0, 2), optim_new_shard(&cfg, &t, 24, 1LL << 16, 1, 2)};
    assert_non_null(o);
    for (int i = 0; i < t.n; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s.ema", t.t[i].name);
        const OptimStateTensor *e = optim_state_find(o, name);
        assert_non_null(e);
        assert_int_equal(e->numel, t.t[i].numel);
    }
    float *p = mixed_start(&t);
    double *ref = malloc(t.total * sizeof *ref);
    const int steps = 6;
    size_t n = t.total;
    float *g = malloc(n * sizeof *g);
    rng_state = 70;
    fill_normal(g, n, 0.3);
    for (int s = 0; s < steps; s++) {
        fill_normal(g, n, 0.01);
        OptimSchedule sc = optim_schedule(&cfg, s, s / 10.0);
        optim_step(o, p, g, &sc);
        double d = optim_ema_decay(&cfg, o->step, 0.1, s / 10.0);
        optim_ema_update(o, p, d);
        for (int k = 0; k < 2; k++) optim_ema_update(sh[k], p, d);
        for (size_t i = 0; i < n; i++) ref[i] = d < 0 ? p[i] : d * ref[i] + (1 - d) * p[i];
    }
    double worst = 0;
    for (int i = 0; i < t.n; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s.ema", t.t[i].name);
        const float *e = optim_state_ptr(o, optim_state_find(o, name));
        const Optimizer *owner = i >= sh[0]->own_lo && i < sh[0]->own_hi ? sh[0] : sh[1];
        const float *es = optim_state_ptr(owner, optim_state_find(owner, name));
        assert_non_null(es);
        assert_memory_equal(e, es, t.t[i].numel * sizeof *e);
        for (size_t k = 0; k < t.t[i].numel; k++) worst = fmax(worst, fabs(e[k] - ref[t.t[i].offset + k]));
    }
    assert_true(worst < 1e-6);
    float *avg = malloc(n * sizeof *avg);
    memcpy(avg, p, n * sizeof *avg);
    optim_ema_readout(o, avg);
    worst = 0;
    int moved = 0;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(avg[i] - (0.3 * p[i] + 0.7 * ref[i])));
        moved += avg[i] != p[i];
    }
    assert_true(worst < 1e-6);
    assert_true(moved > (int)(n / 2));  // the average is not the weights
    free(avg);
    free(g);
    free(ref);
    free(p);
    optim_free(o);
    optim_free(sh[0]);
    optim_free(sh[1]);
    param_table_free(&t);
}

static void test_bad_configs(void **state) {
    (void)state;
    ParamTable t = mixed_table();
    OptimConfig cfg = optim_defaults();
    assert_int_equal(optim_config_check(&cfg), 0);
    cfg.ns_steps = 6;
    assert_null(optim_new(&cfg, &t, 24, 1 << 16));
    assert_error_contains("ns_steps = 6");
    cfg.ortho = ORTHO_NEWTON_SCHULZ;  // NS takes any number of steps
    Optimizer *o = optim_new(&cfg, &t, 24, 1 << 16);
    assert_non_null(o);
    optim_free(o);
    cfg = optim_defaults();
    cfg.warmdown_frac = 1.5;
    assert_null(optim_new(&cfg, &t, 24, 1 << 16));
    assert_error_contains("warmdown_frac");
    cfg = optim_defaults();
    cfg.wte_beta2 = 1.0f;
    assert_null(optim_new(&cfg, &t, 24, 1 << 16));
    assert_error_contains("wte_beta2");
    cfg = optim_defaults();
    assert_null(optim_new(&cfg, &t, 0, 1 << 16));
    assert_error_contains("width");
    assert_null(optim_new(&cfg, &t, 24, 0));
    assert_error_contains("batch");
    param_table_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_tensors),
        cmocka_unit_test(test_threads_bit_identical),
        cmocka_unit_test(test_matrices_side_by_side_bit_identical),
        cmocka_unit_test(test_muon_order_is_costliest_first),
        cmocka_unit_test(test_resume_bit_exact),
        cmocka_unit_test(test_weight_average),
        cmocka_unit_test(test_bad_configs),
    };
    return cmocka_run_group_tests_name("optim_state", tests, NULL, NULL);
}
