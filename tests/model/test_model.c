// tests/model/test_model.c — the model's backward against finite differences, op by op and
// end to end, and the forward's independence from the thread count.
#include "test_util.h"

#include <math.h>
#include <omp.h>

#include "kernels/cpu/cpu.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "model/model.h"
#include "util/rng.h"

static void fill(float *x, size_t n, Rng *r, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * (2 * rng_uniform(r) - 1));
}

// Compare an analytic gradient with central differences of a scalar function of x.
typedef double (*ScalarFn)(const float *x, void *ctx);

static void check_grad(const char *what, float *x, size_t n, const float *analytic, ScalarFn f, void *ctx,
                       float eps, double rtol, double atol, int max_checks) {
    int bad = 0;
    size_t stride = n / (size_t)max_checks + 1;
    for (size_t i = 0; i < n; i += stride) {
        float orig = x[i];
        x[i] = orig + eps;
        double fp = f(x, ctx);
        x[i] = orig - eps;
        double fm = f(x, ctx);
        x[i] = orig;
        double fd = (fp - fm) / (2.0 * eps);
        if (fabs(fd - analytic[i]) > atol + rtol * fabs(fd)) {
            if (bad++ < 5) print_error("%s[%zu]: analytic %.6g, finite difference %.6g\n", what, i, analytic[i], fd);
        }
    }
    assert_int_equal(bad, 0);
}

// ---------------------------------------------------------------------------------------------
// Op-level checks: objective = Σ w ⊙ op(x) with fixed random w, so d objective / d out = w.
// ---------------------------------------------------------------------------------------------

typedef struct {
    int N, C;
    const float *w;
    float *out, *rstd;
} NormCtx;

static double norm_obj(const float *x, void *vctx) {
    NormCtx *c = vctx;
    ref_rmsnorm_fwd(c->out, c->rstd, x, c->N, c->C);
    double s = 0;
    for (int i = 0; i < c->N * c->C; i++) s += (double)c->w[i] * c->out[i];
    return s;
}

static void test_rmsnorm_grad(void **state) {
    (void)state;
    Rng r;
    rng_seed(&r, 1);
    int N = 5, C = 24;
    float x[120], w[120], out[120], rstd[5], dx[120];
    fill(x, 120, &r, 1.0f);
    fill(w, 120, &r, 1.0f);
    NormCtx ctx = {N, C, w, out, rstd};
    norm_obj(x, &ctx);
    ref_rmsnorm_bwd(dx, w, x, rstd, N, C, 0);
    check_grad("rmsnorm dx", x, 120, dx, norm_obj, &ctx, 1e-2f, 2e-2, 1e-3, 120);
}

typedef struct {
    int B, T, H, Hkv, D, window, which;  // which: 0 q, 1 k, 2 v
    float *q, *k, *v, *out, *lse;
    const float *w;
} AttnCtx;

static double attn_obj(const float *x, void *vctx) {
    AttnCtx *c = vctx;
    (void)x;  // x aliases one of q, k, v
    ref_attention_fwd(c->out, c->lse, c->q, c->k, c->v, c->B, c->T, c->H, c->Hkv, c->D, c->window);
    double s = 0;
    for (int i = 0; i < c->B * c->T * c->H * c->D; i++) s += (double)c->w[i] * c->out[i];
    return s;
}

static void check_attention(int H, int Hkv, int window) {
    Rng r;
    rng_seed(&r, 2);
    int B = 2, T = 6, D = 8;
    size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *out = malloc(nq * 4), *w = malloc(nq * 4);
    float *lse = malloc((size_t)B * H * T * 4), *dq = malloc(nq * 4), *dk = malloc(nk * 4), *dv = malloc(nk * 4);
    fill(q, nq, &r, 1.0f);
    fill(k, nk, &r, 1.0f);
    fill(v, nk, &r, 1.0f);
    fill(w, nq, &r, 1.0f);
    AttnCtx ctx = {B, T, H, Hkv, D, window, 0, q, k, v, out, lse, w};
    attn_obj(q, &ctx);
    ref_attention_bwd(dq, dk, dv, w, out, lse, q, k, v, B, T, H, Hkv, D, window);
    check_grad("attention dq", q, nq, dq, attn_obj, &ctx, 1e-2f, 2e-2, 1e-3, 200);
    check_grad("attention dk", k, nk, dk, attn_obj, &ctx, 1e-2f, 2e-2, 1e-3, 200);
    check_grad("attention dv", v, nk, dv, attn_obj, &ctx, 1e-2f, 2e-2, 1e-3, 200);
    // causality: changing the last position's k and v leaves earlier outputs untouched
    float *out2 = malloc(nq * 4);
    memcpy(out2, out, nq * 4);
    for (int b = 0; b < B; b++)
        for (size_t i = 0; i < (size_t)Hkv * D; i++) k[((size_t)b * T + T - 1) * Hkv * D + i] += 1.0f;
    attn_obj(q, &ctx);
    for (int b = 0; b < B; b++)
        assert_memory_equal(out + (size_t)b * T * H * D, out2 + (size_t)b * T * H * D, (size_t)(T - 1) * H * D * 4);
    // the window: changing position 0's k and v leaves every output from position window+1 on
    // untouched, and changes the one at position window (which still sees it)
    if (window > 0) {
        memcpy(out2, out, nq * 4);
        for (int b = 0; b < B; b++)
            for (size_t i = 0; i < (size_t)Hkv * D; i++) v[(size_t)b * T * Hkv * D + i] += 1.0f;
        attn_obj(q, &ctx);
        for (int b = 0; b < B; b++) {
            size_t first_blind = ((size_t)b * T + window + 1) * H * D;
            assert_memory_equal(out + first_blind, out2 + first_blind, (size_t)(T - window - 1) * H * D * 4);
            size_t last_seeing = ((size_t)b * T + window) * H * D;
            assert_true(memcmp(out + last_seeing, out2 + last_seeing, (size_t)H * D * 4) != 0);
        }
    }
    free(q), free(k), free(v), free(out), free(out2), free(w), free(lse), free(dq), free(dk), free(dv);
}

static void test_attention_grad_mha(void **state) { (void)state; check_attention(2, 2, 0); }
static void test_attention_grad_gqa(void **state) { (void)state; check_attention(4, 2, 0); }
// a sliding window of 2 keys before the query (T = 6: queries 3-5 lose their first keys)
static void test_attention_grad_window(void **state) { (void)state; check_attention(2, 2, 2); check_attention(4, 2, 1); }

typedef struct {
    int N, V;
    float cap;
    const int32_t *t;
    float *losses;
} CeCtx;

static double ce_obj(const float *z, void *vctx) {
    CeCtx *c = vctx;
    ref_softcap_ce(c->losses, NULL, z, c->t, c->N, c->V, c->cap, 0);
    double s = 0;
    for (int i = 0; i < c->N; i++) s += c->losses[i];
    return s;
}

static void test_softcap_ce_grad(void **state) {
    (void)state;
    Rng r;
    rng_seed(&r, 3);
    int N = 4, V = 30;
    float z[120], dz[120], losses[4];
    int32_t t[4] = {3, 29, -1, 0};
    fill(z, 120, &r, 20.0f);  // beyond the cap, so tanh's slope matters
    for (int cap = 0; cap <= 15; cap += 15) {
        CeCtx ctx = {N, V, (float)cap, t, losses};
        ref_softcap_ce(losses, dz, z, t, N, V, (float)cap, 1.0f);
        assert_true(losses[2] == 0.0f);
        check_grad(cap ? "softcap ce dz" : "ce dz", z, 120, dz, ce_obj, &ctx, 1e-2f, 2e-2, 1e-3, 120);
    }
}

typedef struct {
    int B, T, nh, D;
    const float *cos, *sin, *w;
    float *tmp;
} RopeCtx;

static double rope_obj(const float *x, void *vctx) {
    RopeCtx *c = vctx;
    size_t n = (size_t)c->B * c->T * c->nh * c->D;
    memcpy(c->tmp, x, n * 4);
    ref_rope_fwd(c->tmp, c->cos, c->sin, c->B, c->T, c->nh, c->D);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)c->w[i] * c->tmp[i];
    return s;
}

static void test_rope_and_relu2_grad(void **state) {
    (void)state;
    Rng r;
    rng_seed(&r, 4);
    int B = 2, T = 5, nh = 2, D = 8;
    size_t n = (size_t)B * T * nh * D;
    float cs[20], sn[20], x[320], w[320], tmp[320], dx[320];
    for (int t = 0; t < T; t++)
        for (int j = 0; j < D / 2; j++) {
            cs[t * 4 + j] = cosf(t * powf(10000.0f, -2.0f * j / D));
            sn[t * 4 + j] = sinf(t * powf(10000.0f, -2.0f * j / D));
        }
    fill(x, n, &r, 1.0f);
    fill(w, n, &r, 1.0f);
    memcpy(dx, w, n * 4);
    ref_rope_bwd(dx, cs, sn, B, T, nh, D);
    RopeCtx ctx = {B, T, nh, D, cs, sn, w, tmp};
    check_grad("rope dx", x, n, dx, rope_obj, &ctx, 1e-2f, 1e-2, 1e-3, 320);
    // relu²: dx = 2 relu(x) dout
    float y[320], g[320];
    ref_relu2_fwd(y, x, n);
    ref_relu2_bwd(g, w, x, n);
    for (size_t i = 0; i < n; i++) {
        assert_float_equal(y[i], x[i] > 0 ? x[i] * x[i] : 0, 1e-7);
        assert_float_equal(g[i], x[i] > 0 ? 2 * x[i] * w[i] : 0, 1e-6);
    }
}

// ---------------------------------------------------------------------------------------------
// Whole model: every parameter tensor's gradient against finite differences on a tiny config
// ---------------------------------------------------------------------------------------------

static ModelConfig tiny_config(int Hkv) {
    return (ModelConfig){.depth = 2, .n_embd = 32, .n_head = 2, .n_kv_head = Hkv, .head_dim = 16, .seq_len = 8,
                         .vocab_size = 300, .mlp_ratio = 4, .rope_base = 10000.0f, .softcap = 15.0f, .qk_norm = 1};
}

typedef struct {
    Model *m;
    RunState *s;
    const int32_t *in, *tg;
} ModelCtx;

static double model_obj(const float *x, void *vctx) {
    (void)x;
    ModelCtx *c = vctx;
    return model_forward(c->m, c->s, c->in, c->tg, 2, 8, NULL);
}

// nanochat's residual-stream recipe on: resid/x0 lambdas, backout (depth 3, so the residual it
// subtracts is a middle block's, not the last's, which the final norm would make invisible), the
// q/k scale, value embeddings (layers 0 and 2), smear, and a bigram table small enough (37 rows)
// that pairs share rows.
static ModelConfig recipe_config(int Hkv) {
    ModelConfig c = tiny_config(Hkv);
    c.depth = 3;
    c.lambdas = 1;
    c.backout = 1;
    c.qk_scale = 1.2f;
    c.value_embeds = 1;
    c.smear = 1;
    c.bigram = 37;
    return c;
}

static void check_model_grads_of(ModelConfig cfg) {
    Model m;
    assert_int_equal(model_build(&m, &cfg), 0);
    Rng r;
    rng_seed(&r, 5);
    fill(m.param, m.params.total, &r, 0.3f);  // all weights nonzero, so every path carries gradient
    RunState s;
    runstate_build(&s, &cfg, 2, 8);
    int32_t in[16], tg[16];
    for (int i = 0; i < 16; i++) in[i] = (int32_t)(rng_next(&r) % 50), tg[i] = (int32_t)(rng_next(&r) % 50);
    tg[5] = -1;
    model_zero_grad(&m);
    model_forward(&m, &s, in, tg, 2, 8, NULL);
    model_backward(&m, &s, in, tg, 1.0f);
    ModelCtx ctx = {&m, &s, in, tg};
    for (int i = 0; i < m.params.n; i++) {
        const ParamTensor *p = &m.params.t[i];
        // the scalars multiply whole residual streams: the loss curves faster in them (a 1e-2 step's
        // central difference is off by ~4%), so they take a smaller one
        check_grad(p->name, m.param + p->offset, p->numel, m.grad + p->offset, model_obj, &ctx,
                   p->vector ? 1e-3f : 1e-2f, 3e-2, 3e-4, 40);
    }
    runstate_free(&s);
    model_free(&m);
}

static double model_train_obj(const float *x, void *vctx) {
    (void)x;
    ModelCtx *c = vctx;
    return model_forward_train(c->m, c->s, c->in, c->tg, 2, 8, 1.0f);
}

// Dropout (p 0.3 on every block's attention and MLP output, the recipe's paths on): under a fixed
// mask the training forward is a smooth function of the weights, so its backward must match
// finite differences of model_forward_train's loss. The mask is fixed by its key (the same key,
// the same loss; another key, another loss), and evaluation (model_forward) never drops.
static void test_model_grad_dropout(void **state) {
    (void)state;
    ModelConfig cfg = recipe_config(1);
    Model m;
    assert_int_equal(model_build(&m, &cfg), 0);
    Rng r;
    rng_seed(&r, 9);
    fill(m.param, m.params.total, &r, 0.3f);
    RunState s;
    runstate_build(&s, &cfg, 2, 8);
    int32_t in[16], tg[16];
    for (int i = 0; i < 16; i++) in[i] = (int32_t)(rng_next(&r) % 50), tg[i] = (int32_t)(rng_next(&r) % 50);
    float eval0 = model_forward(&m, &s, in, tg, 2, 8, NULL);
    float train0 = model_forward_train(&m, &s, in, tg, 2, 8, 1.0f);
    assert_true(train0 == eval0);  // p 0: training's forward is evaluation's
    m.dropout = 0.3f;
    model_dropout_batch(&m, 11, 3, 2, 8);
    assert_int_equal(m.dropout_i0, 2 * 8 * 32);
    assert_true(model_forward(&m, &s, in, tg, 2, 8, NULL) == eval0);  // evaluation never drops
    float a = model_forward_train(&m, &s, in, tg, 2, 8, 1.0f), b = model_forward_train(&m, &s, in, tg, 2, 8, 1.0f);
    assert_true(a == b && a != eval0);
    model_dropout_batch(&m, 11, 4, 2, 8);
    assert_true(model_forward_train(&m, &s, in, tg, 2, 8, 1.0f) != a);
    model_dropout_batch(&m, 11, 3, 2, 8);
    model_zero_grad(&m);
    model_forward_train(&m, &s, in, tg, 2, 8, 1.0f);
    model_backward(&m, &s, in, tg, 1.0f);
    float *g = malloc(m.params.total * sizeof *g);  // the objective's forwards add to m.grad's head
    memcpy(g, m.grad, m.params.total * sizeof *g);
    ModelCtx ctx = {&m, &s, in, tg};
    for (int i = 0; i < m.params.n; i++) {
        const ParamTensor *p = &m.params.t[i];
        check_grad(p->name, m.param + p->offset, p->numel, g + p->offset, model_train_obj, &ctx,
                   p->vector ? 1e-3f : 1e-2f, 3e-2, 3e-4, 40);
    }
    free(g);
    runstate_free(&s);
    model_free(&m);
}

static void test_model_grad_mha(void **state) { (void)state; check_model_grads_of(tiny_config(2)); }
static void test_model_grad_gqa(void **state) { (void)state; check_model_grads_of(tiny_config(1)); }
static void test_model_grad_recipe(void **state) {
    (void)state;
    ModelConfig c = recipe_config(1);
    check_model_grads_of(c);
    Model m;  // the recipe's tensors exist under nanochat's names, 1-D, and nowhere without it
    assert_int_equal(model_build(&m, &c), 0);
    const ParamTensor *r = param_table_find(&m.params, "resid_lambdas"), *b = param_table_find(&m.params, "backout_lambda");
    assert_non_null(r);
    assert_non_null(param_table_find(&m.params, "x0_lambdas"));
    assert_non_null(b);
    assert_int_equal(r->numel, 3);
    assert_true(r->vector && b->vector);
    model_init_weights(&m, 1);  // nanochat's init: 1.15 -> 1.05 and 0.20 -> 0.05 over depth, backout 0.2
    assert_float_equal(m.resid_lambdas[0], 1.15f, 1e-6);
    assert_float_equal(m.resid_lambdas[2], 1.05f, 1e-6);
    assert_float_equal(m.x0_lambdas[0], 0.20f, 1e-6);
    assert_float_equal(m.x0_lambdas[2], 0.05f, 1e-6);
    assert_float_equal(m.backout_lambda[0], 0.2f, 1e-7);
    // value embeddings on layers 0 and 2 (alternating, ending with the last), with their gates
    assert_non_null(m.w[0].ve);
    assert_null(m.w[1].ve);
    assert_null(m.w[1].ve_gate);
    const ParamTensor *ve = param_table_find(&m.params, "value_embeds.2.weight");
    const ParamTensor *g = param_table_find(&m.params, "transformer.h.2.attn.ve_gate.weight");
    assert_non_null(ve);
    assert_non_null(g);
    assert_int_equal(ve->rows, 300);
    assert_int_equal(ve->cols, 16);  // Hkv·D
    assert_int_equal(g->rows, 1);
    assert_int_equal(g->cols, MODEL_VE_GATE_CHANNELS);
    assert_int_equal(g->kind, PARAM_MATRIX);  // Muon, as nanochat's transformer.h parameters
    const ParamTensor *sg = param_table_find(&m.params, "smear_gate.weight");
    const ParamTensor *sl = param_table_find(&m.params, "smear_lambda");
    const ParamTensor *bg = param_table_find(&m.params, "bigram_embed.weight");
    assert_true(sg && sl && bg);
    assert_true(!sg->vector && sl->vector);
    assert_int_equal(bg->rows, 37);
    assert_int_equal(m.smear_lambda[0], 0.0f);  // smear starts off, the bigram table at zero
    for (size_t i = 0; i < bg->numel; i++) assert_true(m.bigram[i] == 0.0f);
    for (int j = 0; j < MODEL_SMEAR_CHANNELS; j++) assert_true(m.smear_gate[j] >= 0.0f && m.smear_gate[j] < 0.02f);
    for (int j = 0; j < MODEL_VE_GATE_CHANNELS; j++) assert_true(m.w[2].ve_gate[j] >= 0.0f && m.w[2].ve_gate[j] < 0.02f);
    ModelConfig plain = c;
    plain.lambdas = plain.backout = plain.value_embeds = plain.smear = plain.bigram = 0;
    assert_int_equal(model_config_num_params(&c) - model_config_num_params(&plain),
                     2 * 3 + 1 + 2 * (300 * 16 + 12) + 24 + 1 + 37 * 32);
    size_t numel = 0;  // the count agrees with the tensors built
    for (int i = 0; i < m.params.n; i++) numel += m.params.t[i].numel;
    assert_int_equal(model_config_num_params(&c), numel);
    model_free(&m);
    ModelConfig off = tiny_config(1);
    assert_int_equal(model_build(&m, &off), 0);
    assert_null(param_table_find(&m.params, "resid_lambdas"));
    assert_null(m.backout_lambda);
    model_free(&m);
}

// A model with every weight random and nonzero (initialised with init_seed, then refilled from
// fill_seed), its run state for (B, T), and B*T random inputs and targets from the same stream.
static void random_model(Model *m, RunState *s, const ModelConfig *cfg, uint64_t init_seed, uint64_t fill_seed,
                         int B, int T, int32_t *in, int32_t *tg) {
    model_build(m, cfg);
    model_init_weights(m, init_seed);
    Rng r;
    rng_seed(&r, fill_seed);
    fill(m->param, m->params.total, &r, 0.3f);
    runstate_build(s, cfg, B, T);
    for (int i = 0; i < B * T; i++) in[i] = (int32_t)(rng_next(&r) % 50), tg[i] = (int32_t)(rng_next(&r) % 50);
}

static void check_threads_invariant(ModelConfig cfg) {
    cfg.seq_len = 16;
    Model m;
    RunState s;
    int32_t in[48], tg[48];
    random_model(&m, &s, &cfg, 7, 8, 3, 16, in, tg);
    float loss[2];
    float *g[2];
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k + 1);
        model_zero_grad(&m);
        loss[k] = model_forward(&m, &s, in, tg, 3, 16, NULL);
        model_backward(&m, &s, in, tg, 1.0f);
        g[k] = malloc(m.params.total * 4);
        memcpy(g[k], m.grad, m.params.total * 4);
    }
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);        // bit-exact
    assert_memory_equal(g[0], g[1], m.params.total * sizeof(float));
    free(g[0]);
    free(g[1]);
    runstate_free(&s);
    model_free(&m);
}

static void test_model_threads_invariant(void **state) {
    (void)state;
    check_threads_invariant(tiny_config(2));
    check_threads_invariant(recipe_config(1));
}

// The training forward (loss and dlogits in one pass) gives the loss and the gradients of
// model_forward + model_backward: gradients bit for bit, for every kernel table and both scales;
// the loss to the rounding of a different pass (1e-6).
static void test_forward_train_equals_forward_then_backward(void **state) {
    (void)state;
    ModelConfig cfg = tiny_config(1);
    Model m;
    RunState s;
    int32_t in[16], tg[16];
    random_model(&m, &s, &cfg, 3, 4, 2, 8, in, tg);
    tg[3] = tg[12] = -1;
    float *g = malloc(m.params.total * sizeof *g);
    const char *tables[] = {"ref", NULL};
    for (int t = 0; t < 2; t++) {
        assert_int_equal(kernels_select(tables[t]), 0);
        for (int k = 0; k < 2; k++) {
            float scale = k ? 0.25f : 1.0f;
            model_zero_grad(&m);
            float a = model_forward(&m, &s, in, tg, 2, 8, NULL);
            model_backward(&m, &s, in, tg, scale);
            memcpy(g, m.grad, m.params.total * sizeof *g);
            model_zero_grad(&m);
            float b = model_forward_train(&m, &s, in, tg, 2, 8, scale);
            assert_int_equal(s.n_counted, 14);
            model_backward(&m, &s, in, tg, scale);
            assert_true(fabsf(a - b) <= 1e-6f * fabsf(a));
            assert_memory_equal(g, m.grad, m.params.total * sizeof *g);
        }
    }
    for (int i = 0; i < 16; i++) tg[i] = -1;  // nothing counted: no loss, no gradient
    model_zero_grad(&m);
    assert_true(model_forward_train(&m, &s, in, tg, 2, 8, 1.0f) == 0.0f);
    model_backward(&m, &s, in, tg, 1.0f);
    for (size_t i = 0; i < m.params.total; i++) assert_true(m.grad[i] == 0.0f);
    free(g);
    runstate_free(&s);
    model_free(&m);
}

// FRONTIER_ABLATE's switches each turn a GEMM-driver strategy off for the path it replaces, and
// promise the same bits. One training step's loss and gradients (weights pinned for the forward
// and the backward, as training does) with each switch alone and all of them, against none: in
// bf16 (tn_pairs, rows16_a, causal_rows16, pinned_weights, c_prefetch; with AVX512_BF16) and fp32
// (direct_a, pinned_weights, c_prefetch). The shape reaches each path: 1024 positions (tn products' depth >= 1024, the
// row pairs' gate), products 32 to 256 wide (narrow blocks), T = 256 causal attention.
static void ablated_step(Model *m, RunState *s, const int32_t *in, const int32_t *tg, unsigned bits, float *loss,
                         float *g) {
    gemm_set_ablation(bits);
    model_pin_weights(m, 1);
    model_zero_grad(m);
    *loss = model_forward_train(m, s, in, tg, 4, 256, 0.5f);
    model_backward(m, s, in, tg, 0.5f);
    memcpy(g, m->grad, m->params.total * sizeof *g);
    model_unpin_weights();
    gemm_set_ablation(0);
}

static void test_ablations_give_the_same_bits(void **state) {
    (void)state;
    assert_int_equal(kernels_select(NULL), 0);  // the best table this CPU runs (its fp32 GEMMs: AVX-512 or AVX2)
    ModelConfig cfg = {.depth = 2, .n_embd = 64, .n_head = 2, .n_kv_head = 1, .head_dim = 32, .seq_len = 256,
                       .vocab_size = 300, .mlp_ratio = 4, .rope_base = 10000.0f, .softcap = 15.0f, .qk_norm = 1};
    Model m;
    RunState s;
    int32_t *in = malloc(1024 * sizeof *in), *tg = malloc(1024 * sizeof *tg);
    random_model(&m, &s, &cfg, 5, 6, 4, 256, in, tg);
    for (size_t i = 0; i < m.params.total; i++) m.param[i] *= 0.3f;  // logits inside the cap's useful range
    float *want = malloc(m.params.total * sizeof *want), *got = malloc(m.params.total * sizeof *got);
    static const unsigned bf16_bits[] = {GEMM_ABLATE_TN_PAIRS, GEMM_ABLATE_ROWS16_A, GEMM_ABLATE_CAUSAL_ROWS16,
                                         GEMM_ABLATE_PINS, GEMM_ABLATE_C_PREFETCH, GEMM_ABLATE_ALL};
    static const unsigned fp32_bits[] = {GEMM_ABLATE_DIRECT_A, GEMM_ABLATE_PINS, GEMM_ABLATE_C_PREFETCH,
                                         GEMM_ABLATE_ALL};
    for (int bf16 = 0; bf16 < 2; bf16++) {
        if (bf16 && !cpu_info()->avx512_bf16) {
            NOTE_SKIPPED_HARDWARE("this CPU lacks AVX512_BF16: the bf16 ablations are not compared");
            continue;
        }
        assert_int_equal(kernels_precision_check(bf16 ? KP_BF16 : KP_FP32), 0);
        m.precision = bf16 ? KP_BF16 : KP_FP32;
        float want_loss, loss;
        ablated_step(&m, &s, in, tg, 0, &want_loss, want);
        const unsigned *bits = bf16 ? bf16_bits : fp32_bits;
        int n = bf16 ? (int)(sizeof bf16_bits / sizeof *bf16_bits) : (int)(sizeof fp32_bits / sizeof *fp32_bits);
        for (int i = 0; i < n; i++) {
            ablated_step(&m, &s, in, tg, bits[i], &loss, got);
            assert_memory_equal(&want_loss, &loss, sizeof loss);
            assert_memory_equal(want, got, m.params.total * sizeof *got);
        }
    }
    free(want), free(got), free(in), free(tg);
    runstate_free(&s);
    model_free(&m);
}

// The head runs in chunks of s->head_rows positions. Ragged chunks (5, 5, 5, 1 of 16 positions)
// give the one-chunk loss and gradients: the positions are independent, so only lm_head's
// gradient (summed over positions chunk by chunk) may differ, by rounding. Both the training
// path (model_forward_train) and model_forward + model_backward (logits recomputed) chunk.
static void test_head_chunks_equal_one_chunk(void **state) {
    (void)state;
    ModelConfig cfg = tiny_config(1);
    Model m;
    RunState s;
    int32_t in[16], tg[16];
    random_model(&m, &s, &cfg, 9, 10, 2, 8, in, tg);
    tg[6] = -1;
    assert_int_equal(s.head_rows, 16);
    size_t P = m.params.total, head = (size_t)(m.lm_head - m.param);
    float *g1 = malloc(P * sizeof *g1);
    model_zero_grad(&m);
    float one = model_forward_train(&m, &s, in, tg, 2, 8, 1.0f);
    model_backward(&m, &s, in, tg, 1.0f);
    memcpy(g1, m.grad, P * sizeof *g1);
    s.head_rows = 5;
    for (int path = 0; path < 2; path++) {
        model_zero_grad(&m);
        float chunked = path ? model_forward(&m, &s, in, tg, 2, 8, NULL) : model_forward_train(&m, &s, in, tg, 2, 8, 1.0f);
        model_backward(&m, &s, in, tg, 1.0f);
        assert_true(fabsf(chunked - one) <= 1e-6f * fabsf(one));
        for (size_t i = 0; i < P; i++) {
            double tol = i >= head && i < head + (size_t)cfg.vocab_size * cfg.n_embd ? 1e-5 : 1e-6;
            if (fabs(m.grad[i] - g1[i]) > tol * (fabs(g1[i]) + 1e-3)) {
                print_error("path %d: grad[%zu] %g vs one chunk %g\n", path, i, m.grad[i], g1[i]);
                fail();
            }
        }
    }
    free(g1);
    runstate_free(&s);
    model_free(&m);
}

// The scoring path (model.h "Scoring"): B sequences sharing a P-token prefix, run as the prefix
// once (model_prefill) and each sequence's own tokens against its keys and values, give the
// logits of running the whole sequences (to fp32 rounding: 1e-4), for MHA and GQA and every
// kernel table; with no prefix the trunk and model_logits_rows are model_forward's bit for bit.
static void check_prefix_scoring(int Hkv, const char *table, int window, int recipe) {
    enum { B = 3, T = 21, P = 13, S = T - P };
    assert_int_equal(kernels_select(table), 0);
    ModelConfig cfg = recipe ? recipe_config(Hkv) : tiny_config(Hkv);
    cfg.seq_len = 32;
    if (window) {  // layer 0 sliding (S), layer 1 full (the last layer always is)
        snprintf(cfg.window_pattern, sizeof cfg.window_pattern, "S");
        cfg.window = window;
    }
    Model m;
    RunState s;
    int32_t in[B * T], tg[B * T], suffix[B * S];
    random_model(&m, &s, &cfg, 5, 6, B, T, in, tg);
    for (int b = 1; b < B; b++) memcpy(in + b * T, in, P * sizeof *in);  // the shared prefix
    for (int b = 0; b < B; b++) memcpy(suffix + b * S, in + b * T + P, S * sizeof *in);
    int V = cfg.vocab_size, C = cfg.n_embd;
    model_forward(&m, &s, in, NULL, B, T, NULL);
    float *full = malloc((size_t)B * T * V * sizeof *full), *got = malloc((size_t)B * T * V * sizeof *got);
    float *xbuf = malloc((size_t)B * T * C * sizeof *xbuf);
    memcpy(full, s.logits, (size_t)B * T * V * sizeof *full);
    int rows[B * T];
    for (int i = 0; i < B * T; i++) rows[i] = i;
    model_forward_hidden(&m, &s, NULL, in, B, T);  // no prefix: exactly model_forward
    model_logits_rows(&m, &s, rows, B * T, xbuf, got);
    assert_memory_equal(full, got, (size_t)B * T * V * sizeof *got);
    KVPrefix kv = {0};
    model_prefill(&m, &s, &kv, in, P);
    assert_int_equal(kv.P, P);
    model_forward_hidden(&m, &s, &kv, suffix, B, S);
    int rows2[B * S];
    for (int i = 0; i < B * S; i++) rows2[i] = (B * S - 1) - i;  // any order
    model_logits_rows(&m, &s, rows2, B * S, xbuf, got);
    double worst = 0;
    for (int i = 0; i < B * S; i++) {
        int b = rows2[i] / S, t = rows2[i] % S;
        const float *want = full + ((size_t)b * T + P + t) * V;
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs(got[(size_t)i * V + v] - want[v]) / (1 + fabs(want[v])));
    }
    if (worst > 1e-4) print_error("%s Hkv %d: prefix-scored logits differ by %g\n", table ? table : "default", Hkv, worst);
    assert_true(worst <= 1e-4);
    // A forward-only state (every layer in the same buffers) gives the same bits throughout:
    // logits, the prefix's cached keys and values, prefix-scored logits, the loss.
    RunState f;
    runstate_build_forward(&f, &cfg, B, T);
    float *got_f = malloc((size_t)B * T * V * sizeof *got_f);
    model_forward_hidden(&m, &f, NULL, in, B, T);
    model_logits_rows(&m, &f, rows, B * T, xbuf, got_f);
    assert_memory_equal(full, got_f, (size_t)B * T * V * sizeof *got_f);
    KVPrefix kv_f = {0};
    model_prefill(&m, &f, &kv_f, in, P);
    size_t kv_floats = (size_t)cfg.depth * kv.cap * cfg.n_kv_head * cfg.head_dim;
    assert_int_equal(kv_f.cap, kv.cap);
    assert_memory_equal(kv.k, kv_f.k, kv_floats * sizeof *kv.k);
    assert_memory_equal(kv.v, kv_f.v, kv_floats * sizeof *kv.v);
    model_forward_hidden(&m, &f, &kv_f, suffix, B, S);
    model_logits_rows(&m, &f, rows2, B * S, xbuf, got_f);
    assert_memory_equal(got, got_f, (size_t)B * S * V * sizeof *got_f);
    float loss = model_forward(&m, &s, in, tg, B, T, NULL), loss_f = model_forward(&m, &f, in, tg, B, T, NULL);
    assert_memory_equal(&loss, &loss_f, sizeof loss);
    assert_memory_equal(s.losses, f.losses, (size_t)B * T * sizeof *f.losses);
    kvprefix_free(&kv_f);
    free(got_f);
    runstate_free(&f);
    kvprefix_free(&kv);
    free(full);
    free(got);
    free(xbuf);
    runstate_free(&s);
    model_free(&m);
}

static void test_prefix_scoring_equals_full_forward(void **state) {
    (void)state;
    const char *tables[] = {"ref", NULL};
    for (int t = 0; t < 2; t++) {
        check_prefix_scoring(2, tables[t], 0, 0);
        check_prefix_scoring(1, tables[t], 0, 0);
        check_prefix_scoring(2, tables[t], 5, 0);  // queries in the suffix lose part of the cached prefix
        check_prefix_scoring(1, tables[t], 5, 1);  // with the residual-stream recipe
    }
    assert_int_equal(kernels_select(NULL), 0);
}

static void test_init_statistics(void **state) {
    (void)state;
    ModelConfig cfg = model_config_from_depth(2, 1000, 16);
    // backout only where the block it subtracts is not the last one
    assert_int_equal(cfg.backout, 0);
    assert_int_equal(model_config_from_depth(3, 1000, 16).backout, 1);
    Model m;
    model_build(&m, &cfg);
    model_init_weights(&m, 42);
    double s = 0, s2 = 0;
    size_t n = (size_t)1000 * cfg.n_embd;
    for (size_t i = 0; i < n; i++) s += m.wte[i], s2 += (double)m.wte[i] * m.wte[i];
    assert_true(fabs(s / n) < 0.01 && fabs(sqrt(s2 / n) - 0.8) < 0.01);  // N(0, 0.8)
    float bound = sqrtf(3.0f / cfg.n_embd), mx = 0;
    for (size_t i = 0; i < (size_t)cfg.n_embd * cfg.n_embd; i++) mx = fmaxf(mx, fabsf(m.w[0].c_q[i]));
    assert_true(mx <= bound && mx > 0.95f * bound);  // U(±sqrt(3/C))
    for (size_t i = 0; i < (size_t)cfg.n_embd * cfg.n_embd; i++) assert_true(m.w[1].attn_proj[i] == 0.0f);
    size_t numel = 0;
    for (int i = 0; i < m.params.n; i++) numel += m.params.t[i].numel;
    assert_int_equal(numel, model_config_num_params(&cfg));
    model_free(&m);
    ModelConfig d10 = model_config_from_depth(10, 8192, 1024);
    // The recipe's tensors: 2L lambdas, backout, 5 value-embedding tables (V, C) with their (Hkv, 12)
    // gates, smear's 24 + 1, the bigram table (5V, C).
    assert_int_equal(model_config_num_params(&d10),
                     59637760 + 20 + 1 + 5 * (8192 * 640 + 5 * 12) + 25 + 5 * 8192 * 640);
    d10.lambdas = d10.backout = d10.value_embeds = d10.smear = d10.bigram = 0, d10.qk_scale = 1.0f;
    assert_int_equal(model_config_num_params(&d10), 59637760);  // the kit baseline: the plain block
}

// Sliding windows in the config: nanochat's layer rule, the FLOPs convention, JSON round trip
// (and configs written before the fields existed), validation.
static void test_window_pattern_config(void **state) {
    (void)state;
    ModelConfig c = model_config_from_depth(6, 8192, 2048);
    assert_string_equal(c.window_pattern, "L");
    assert_int_equal(c.window, 512);                          // ceil(2048/4/128)·128
    assert_int_equal(model_config_default_window(256), 128);  // the cpu preset's T
    assert_int_equal(model_config_default_window(1024), 256);
    double full = model_config_flops_per_token(&c);
    snprintf(c.window_pattern, sizeof c.window_pattern, "SSL");
    int want[6] = {512, 512, 0, 512, 512, 0};  // tiled, and the last layer always full
    for (int l = 0; l < 6; l++) assert_int_equal(model_config_layer_window(&c, l), want[l]);
    double attn_saved = 4 * 12.0 * c.n_head * c.head_dim * (2048 - 512);  // 4 layers at T_eff 512
    assert_true(fabs(full - model_config_flops_per_token(&c) - attn_saved) < 1e-6 * full);
    char *js = model_config_to_json(&c);
    ModelConfig back;
    assert_int_equal(model_config_from_json(js, &back), 0);
    assert_null(model_config_diff(&c, &back));
    free(js);
    assert_int_equal(model_config_from_json("{\"depth\":2,\"n_embd\":128,\"n_head\":1,\"n_kv_head\":1,\"head_dim\":128,"
                                            "\"seq_len\":256,\"vocab_size\":8192,\"mlp_ratio\":4,\"rope_base\":100000,"
                                            "\"softcap\":15,\"qk_norm\":1}", &back), 0);  // before windows
    assert_string_equal(back.window_pattern, "L");
    assert_int_equal(model_config_layer_window(&back, 0), 0);
    assert_int_equal(model_config_validate(&c), 0);
    snprintf(c.window_pattern, sizeof c.window_pattern, "SX");
    assert_int_equal(model_config_validate(&c), -1);
    assert_non_null(strstr(err_msg(), "--window-pattern"));
    snprintf(c.window_pattern, sizeof c.window_pattern, "S");
    c.window = 0;
    assert_int_equal(model_config_validate(&c), -1);
    assert_non_null(strstr(err_msg(), "--window"));
    // A config read from a file gets the flags' bounds: a depth of 555,555,555 once passed and made
    // the FLOP count loop for minutes (found by tests/fuzz/fuzz_config).
    c.window = 1;
    c.depth = 555555555;
    assert_int_equal(model_config_validate(&c), -1);
    assert_non_null(strstr(err_msg(), "--depth must be in [1, 256]"));
    c.depth = 6;
    c.seq_len = (1 << 20) + 1;
    assert_int_equal(model_config_validate(&c), -1);
    assert_non_null(strstr(err_msg(), "--seq-len"));
    c.seq_len = 2048;
    c.mlp_ratio = 65;
    assert_int_equal(model_config_validate(&c), -1);
    c.mlp_ratio = 4;
    assert_int_equal(model_config_validate(&c), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_pattern_config),
        cmocka_unit_test(test_rmsnorm_grad),
        cmocka_unit_test(test_attention_grad_mha),
        cmocka_unit_test(test_attention_grad_gqa),
        cmocka_unit_test(test_attention_grad_window),
        cmocka_unit_test(test_softcap_ce_grad),
        cmocka_unit_test(test_rope_and_relu2_grad),
        cmocka_unit_test(test_model_grad_mha),
        cmocka_unit_test(test_model_grad_dropout),
        cmocka_unit_test(test_model_grad_gqa),
        cmocka_unit_test(test_model_grad_recipe),
        cmocka_unit_test(test_model_threads_invariant),
        cmocka_unit_test(test_forward_train_equals_forward_then_backward),
        cmocka_unit_test(test_head_chunks_equal_one_chunk),
        cmocka_unit_test(test_ablations_give_the_same_bits),
        cmocka_unit_test(test_prefix_scoring_equals_full_forward),
        cmocka_unit_test(test_init_statistics),
    };
    return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
