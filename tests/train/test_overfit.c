// tests/train/test_overfit.c — the whole training step (forward, backward, Muon + AdamW) can
// drive a tiny model to memorise one batch: the loss falls from ln(V) to near 0.
#include "test_util.h"

#include <math.h>

#include "model/model.h"
#include "optim/optim.h"
#include "util/rng.h"

static void test_overfits_one_batch(void **state) {
    (void)state;
    enum { B = 4, T = 16, V = 300 };  // the least vocabulary a byte-level tokenizer has is 265
    ModelConfig mc = {.depth = 2, .n_embd = 64, .n_head = 2, .n_kv_head = 2, .head_dim = 32, .seq_len = T,
                      .vocab_size = V, .mlp_ratio = 4, .rope_base = 10000.0f, .softcap = 15.0f, .qk_norm = 1};
    Model m;
    assert_int_equal(model_build(&m, &mc), 0);
    model_init_weights(&m, 3);
    OptimConfig oc = optim_defaults();
    oc.ref_batch_tokens = B * T;  // no batch down-scaling of the learning rates
    oc.warmup_steps = 5;
    Optimizer *o = optim_new(&oc, &m.params, mc.n_embd, B * T);
    assert_non_null(o);
    RunState rs;
    runstate_build(&rs, &mc, B, T);
    int32_t in[B * T], tg[B * T];
    Rng r;
    rng_seed(&r, 9);
    for (int i = 0; i < B * T; i++) in[i] = (int32_t)(rng_next(&r) % V), tg[i] = (int32_t)(rng_next(&r) % V);
    float first = 0, loss = 0;
    for (int step = 0; step < 300; step++) {
        model_zero_grad(&m);
        loss = model_forward(&m, &rs, in, tg, B, T, NULL);
        if (step == 0) first = loss;
        model_backward(&m, &rs, in, tg, 1.0f);
        OptimSchedule s = optim_schedule(&oc, step, step / 300.0);
        optim_step(o, m.param, m.grad, &s);
    }
    print_message("loss %.4f -> %.4f after 300 steps\n", first, loss);
    assert_true(fabsf(first - logf((float)V)) < 0.1f);  // starts at chance
    assert_true(loss < 0.05f);                           // ends memorised
    runstate_free(&rs);
    optim_free(o);
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_overfits_one_batch)};
    return cmocka_run_group_tests_name("train/overfit", tests, NULL, NULL);
}
