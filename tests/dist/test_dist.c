// tests/dist/test_dist.c — the pieces of data-parallel training that need no second process:
// dist_partition's split, and ZeRO-1 optimizer sharding — W shards, each updating only its own
// tensors from the same gradients, must together produce exactly (bit for bit) what one
// unsharded optimizer produces, with each shard holding only its slice of the state. (The MPI
// runs themselves are tests/dist/test_mpi.sh.)
#include <math.h>
#include <string.h>

#include "test_util.h"

#include "dist/dist.h"
#include "model/params.h"
#include "optim/optim.h"

static void test_partition_covers_in_order(void **state) {
    (void)state;
    double cost[7] = {5, 1, 1, 1, 1, 1, 5};
    for (int world = 1; world <= 9; world++) {
        int first[10];
        dist_partition(cost, 7, world, first);
        assert_int_equal(first[0], 0);
        assert_int_equal(first[world], 7);
        for (int r = 0; r < world; r++) assert_true(first[r] <= first[r + 1]);
    }
    int first[3];
    dist_partition(cost, 7, 2, first);  // 15 in all: the split is in the middle
    assert_int_equal(first[1], 3);  // 7 | 8 of 15 (3 | 4 would be 8 | 7: no better)
}

static void test_partition_balances(void **state) {
    (void)state;
    double cost[100];
    for (int i = 0; i < 100; i++) cost[i] = 1 + (i % 7);
    int first[5];
    dist_partition(cost, 100, 4, first);
    double total = 0;
    for (int i = 0; i < 100; i++) total += cost[i];
    for (int r = 0; r < 4; r++) {
        double c = 0;
        for (int i = first[r]; i < first[r + 1]; i++) c += cost[i];
        assert_true(fabs(c - total / 4) <= 7);  // within one item of the ideal share
    }
}

static ParamTable model_like_table(void) {
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 96, 32, PARAM_WTE);
    for (int l = 0; l < 2; l++) {
        char n[96];
        const char *mats[] = {"attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
        int rows[] = {32, 16, 16, 32, 128, 32}, cols[] = {32, 32, 32, 32, 32, 128};
        for (int m = 0; m < 6; m++) {
            snprintf(n, sizeof n, "transformer.h.%d.%s.weight", l, mats[m]);
            param_table_add(&t, n, rows[m], cols[m], PARAM_MATRIX);
        }
    }
    param_table_add(&t, "lm_head.weight", 96, 32, PARAM_LM_HEAD);
    return t;
}

// The ranks' exit codes merge into one: an error beats a signal beats success, whatever the order.
static void test_exit_code_merge(void **state) {
    (void)state;
    assert_int_equal(dist_exit_code_merge(0, 0), 0);
    assert_int_equal(dist_exit_code_merge(0, 143), 143);
    assert_int_equal(dist_exit_code_merge(143, 0), 143);
    assert_int_equal(dist_exit_code_merge(130, 143), 143);
    assert_int_equal(dist_exit_code_merge(143, 1), 1);
    assert_int_equal(dist_exit_code_merge(1, 143), 1);
    assert_int_equal(dist_exit_code_merge(1, 2), 2);
    assert_int_equal(dist_exit_code_merge(0, 1), 1);
}

static void fill(float *x, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.2f;
    }
}

// W shards stepping the same params/grads == one optimizer, bit for bit, for W = 1..4.
static void test_shards_equal_unsharded(void **state) {
    (void)state;
    ParamTable t = model_like_table();
    OptimConfig cfg = optim_defaults();
    cfg.normuon = 1;  // exercise the second Muon state tensor too
    Optimizer *full = optim_new(&cfg, &t, 32, 4096);
    assert_non_null(full);
    float *p0 = test_malloc(t.total * sizeof(float)), *g = test_malloc(t.total * sizeof(float));
    float *pf = test_malloc(t.total * sizeof(float)), *ps = test_malloc(t.total * sizeof(float));
    fill(p0, t.total, 1);
    memcpy(pf, p0, t.total * sizeof(float));
    for (int step = 0; step < 3; step++) {  // the unsharded result
        fill(g, t.total, 100 + step);
        OptimSchedule s = optim_schedule(&cfg, step, step / 3.0);
        optim_step(full, pf, g, &s);
    }
    for (int world = 1; world <= 4; world++) {
        Optimizer *sh[4];
        size_t held = 0;
        for (int r = 0; r < world; r++) {
            sh[r] = optim_new_shard(&cfg, &t, 32, 4096, r, world);
            assert_non_null(sh[r]);
            held += sh[r]->n_state_own;
            assert_int_equal(sh[r]->n_state, full->n_state);
        }
        assert_int_equal(held, full->n_state);  // the slices tile the state: nothing twice, nothing lost
        if (world == 2) assert_true(sh[0]->n_state_own < full->n_state && sh[1]->n_state_own < full->n_state);
        memcpy(ps, p0, t.total * sizeof(float));
        for (int step = 0; step < 3; step++) {
            fill(g, t.total, 100 + step);
            OptimSchedule s = optim_schedule(&cfg, step, step / 3.0);
            for (int r = 0; r < world; r++) optim_step(sh[r], ps, g, &s);  // disjoint slices of ps
        }
        assert_memory_equal(ps, pf, t.total * sizeof(float));
        for (int r = 0; r < world; r++) optim_free(sh[r]);
    }
    optim_free(full);
    test_free(p0), test_free(g), test_free(pf), test_free(ps);
    param_table_free(&t);
}

static void test_state_ptr_only_for_owned(void **state) {
    (void)state;
    ParamTable t = model_like_table();
    OptimConfig cfg = optim_defaults();
    Optimizer *a = optim_new_shard(&cfg, &t, 32, 4096, 0, 2), *b = optim_new_shard(&cfg, &t, 32, 4096, 1, 2);
    for (int i = 0; i < a->n_st; i++)  // every state tensor is held by exactly one of the two
        assert_true((optim_state_ptr(a, &a->st[i]) != NULL) != (optim_state_ptr(b, &b->st[i]) != NULL));
    assert_int_equal(a->param_bounds[0], 0);
    assert_int_equal(a->param_bounds[2], t.total);
    assert_int_equal(a->param_bounds[1], b->param_bounds[1]);
    assert_null(optim_new_shard(&cfg, &t, 32, 4096, 2, 2));
    optim_free(a), optim_free(b);
    param_table_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_covers_in_order),
        cmocka_unit_test(test_partition_balances),
        cmocka_unit_test(test_exit_code_merge),
        cmocka_unit_test(test_shards_equal_unsharded),
        cmocka_unit_test(test_state_ptr_only_for_owned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
