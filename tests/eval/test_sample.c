// tests/eval/test_sample.c — KV-cache decoding against the full forward, and sampling.
//
// On a tiny random model (depth 2, C 32, H 4, Hkv 2, D 8, T 16, V 300, every weight nonzero,
// attention and MLP output projections included): the decode step's logits at every position
// equal model_forward's (softcapped) logits for the same sequence to within 1e-4 absolute;
// greedy is deterministic and agrees with argmax over model_forward; the same seed gives the same
// sample; top-k 1 equals greedy; a full cache and a stop token are reported.
#include "test_util.h"

#include <math.h>

#include "eval/sample.h"
#include "model/model.h"
#include "util/rng.h"

#define LOGIT_TOL 1e-4

static ModelConfig tiny_config(int Hkv, int qk_norm, float softcap) {
    return (ModelConfig){.depth = 2, .n_embd = 32, .n_head = 4, .n_kv_head = Hkv, .head_dim = 8, .seq_len = 16,
                         .vocab_size = 300, .mlp_ratio = 4, .rope_base = 10000.0f, .softcap = softcap,
                         .qk_norm = qk_norm};
}

// Every weight uniform: wte and lm_head wide enough that the softcap matters, the matrices
// (output projections included) at about the init's scale.
static void build_random(Model *m, const ModelConfig *cfg, uint64_t seed) {
    assert_int_equal(model_build(m, cfg), 0);
    Rng r;
    rng_seed(&r, seed);
    double s = sqrt(3.0 / cfg->n_embd);
    for (int i = 0; i < m->params.n; i++) {
        const ParamTensor *p = &m->params.t[i];
        double a = p->kind == PARAM_WTE ? 1.0 : p->kind == PARAM_LM_HEAD ? 2.0 : s;
        for (size_t k = 0; k < p->numel; k++) m->param[p->offset + k] = (float)(a * (2 * rng_uniform(&r) - 1));
    }
}

static float softcap(float z, float cap) { return cap > 0 ? cap * tanhf(z / cap) : z; }

static void check_against_forward(const ModelConfig *cfg) {
    Model m;
    build_random(&m, cfg, 11);
    int T = cfg->seq_len, V = cfg->vocab_size;
    int32_t seq[16];
    Rng r;
    rng_seed(&r, 5);
    for (int t = 0; t < T; t++) seq[t] = (int32_t)(rng_next(&r) % (uint64_t)V);
    RunState rs;
    runstate_build(&rs, cfg, 1, T);
    model_forward(&m, &rs, seq, NULL, 1, T, NULL);
    Sampler *s = sampler_new(&m, 0);
    assert_non_null(s);
    assert_int_equal(sampler_capacity(s), T);
    for (int pass = 0; pass < 2; pass++) {  // the second pass checks sampler_reset
        sampler_reset(s);
        double worst = 0;
        for (int t = 0; t < T; t++) {
            assert_int_equal(sampler_len(s), t);
            const float *lg = sampler_step(s, seq[t]);
            assert_non_null(lg);
            for (int v = 0; v < V; v++) {
                double d = fabs((double)lg[v] - softcap(rs.logits[(size_t)t * V + v], cfg->softcap));
                if (d > worst) worst = d;
            }
        }
        if (worst > LOGIT_TOL) {
            print_error("decode vs forward: max |diff| %.3g > %.0e (Hkv %d, qk_norm %d, softcap %g)\n", worst,
                        LOGIT_TOL, cfg->n_kv_head, cfg->qk_norm, cfg->softcap);
            fail();
        }
        assert_true(sampler_full(s));
    }
    sampler_free(s);
    runstate_free(&rs);
    model_free(&m);
}

static void test_decode_matches_forward_gqa(void **state) {
    (void)state;
    ModelConfig c = tiny_config(2, 1, 15.0f);
    check_against_forward(&c);
}

static void test_decode_matches_forward_recipe(void **state) {
    (void)state;
    ModelConfig c = tiny_config(2, 1, 15.0f);  // nanochat's recipe, backout mid-depth, every feature on:
    c.depth = 3, c.lambdas = 1, c.backout = 1, c.qk_scale = 1.2f;  // smear and the bigram rows read the
    c.value_embeds = 1, c.smear = 1, c.bigram = 37;                // previous position from the cache
    check_against_forward(&c);
}

static void test_decode_matches_forward_mha_plain(void **state) {
    (void)state;
    ModelConfig c = tiny_config(4, 0, 0.0f);  // no QK-norm, no softcap
    check_against_forward(&c);
}

static const int32_t PROMPT[] = {0, 7, 3, 42};
#define N_PROMPT 4

static int gen(Sampler *s, double temp, int top_k, uint64_t seed, int n, int32_t stop, int32_t *out,
               SampleStop *why) {
    SampleConfig c = {.temperature = temp, .top_k = top_k, .seed = seed, .stop_id = stop};
    return sampler_generate(s, PROMPT, N_PROMPT, n, &c, out, NULL, NULL, why);
}

static void test_greedy(void **state) {
    (void)state;
    ModelConfig cfg = tiny_config(2, 1, 15.0f);
    Model m;
    build_random(&m, &cfg, 3);
    Sampler *s = sampler_new(&m, 0);
    int32_t a[8], b[8];
    SampleStop why;
    assert_int_equal(gen(s, 0, 0, 1, 8, -1, a, &why), 8);
    assert_int_equal(why, SAMPLE_STOP_N);
    assert_int_equal(gen(s, 0, 0, 2, 8, -1, b, &why), 8);  // the seed plays no part
    assert_memory_equal(a, b, sizeof a);
    // the same tokens as argmax over a full forward of the growing sequence
    int32_t seq[16];
    memcpy(seq, PROMPT, sizeof PROMPT);
    RunState rs;
    runstate_build(&rs, &cfg, 1, cfg.seq_len);
    for (int i = 0; i < 8; i++) {
        int T = N_PROMPT + i;
        model_forward(&m, &rs, seq, NULL, 1, T, NULL);
        const float *lg = rs.logits + (size_t)(T - 1) * cfg.vocab_size;
        int best = 0;
        for (int v = 1; v < cfg.vocab_size; v++)
            if (lg[v] > lg[best]) best = v;
        assert_int_equal(a[i], best);
        seq[T] = best;
    }
    runstate_free(&rs);
    sampler_free(s);
    model_free(&m);
}

static void test_seeded_sampling(void **state) {
    (void)state;
    ModelConfig cfg = tiny_config(2, 1, 15.0f);
    Model m;
    build_random(&m, &cfg, 4);
    Sampler *s = sampler_new(&m, 0);
    int32_t a[10], b[10], c[10], g[10], k1[10];
    SampleStop why;
    assert_int_equal(gen(s, 1.0, 0, 7, 10, -1, a, &why), 10);
    assert_int_equal(gen(s, 1.0, 0, 7, 10, -1, b, &why), 10);
    assert_memory_equal(a, b, sizeof a);  // same seed, same sample
    assert_int_equal(gen(s, 1.0, 0, 8, 10, -1, c, &why), 10);
    assert_true(memcmp(a, c, sizeof a) != 0);  // another seed, another sample (fixed seeds: not flaky)
    assert_int_equal(gen(s, 0, 0, 7, 10, -1, g, &why), 10);
    assert_int_equal(gen(s, 1.5, 1, 9, 10, -1, k1, &why), 10);
    assert_memory_equal(g, k1, sizeof g);  // top-k 1 = greedy
    // top-k 3: only the three highest logits are ever drawn
    float lg[50];
    for (int v = 0; v < 50; v++) lg[v] = (float)(v % 17);  // 16 at ids 16, 33; 15 at ids 15, 32, 49
    Rng r;
    rng_seed(&r, 1);
    int seen[50] = {0};
    for (int i = 0; i < 2000; i++) seen[sample_pick(lg, 50, 5.0, 3, &r)]++;
    int drawn = 0;
    for (int v = 0; v < 50; v++) drawn += seen[v] > 0;
    assert_int_equal(drawn, 3);
    assert_true(seen[16] > 0 && seen[33] > 0 && seen[15] > 0);  // of the ties at 15, the lowest id
    sampler_free(s);
    model_free(&m);
}

static void test_cache_full_and_stop(void **state) {
    (void)state;
    ModelConfig cfg = tiny_config(2, 1, 15.0f);
    Model m;
    build_random(&m, &cfg, 3);
    assert_null(sampler_new(&m, 17));
    assert_error_contains("seq_len");
    Sampler *s = sampler_new(&m, 0);
    int32_t out[100];
    SampleStop why;
    // 4 prompt positions + 12 fed-back tokens fill the 16; the 13th token is drawn from the last
    // position's logits, then generation stops and says why
    assert_int_equal(gen(s, 0, 0, 1, 100, -1, out, &why), 16 - N_PROMPT + 1);
    assert_int_equal(why, SAMPLE_STOP_FULL);
    assert_true(sampler_full(s));
    assert_null(sampler_step(s, 1));
    assert_error_contains("context is full");
    // asking for exactly what fits is no stop for lack of room
    assert_int_equal(gen(s, 0, 0, 1, 13, -1, out, &why), 13);
    assert_int_equal(why, SAMPLE_STOP_N);
    // a prompt longer than the context is refused; so is an empty one and a bad token
    int32_t long_prompt[17] = {0};
    SampleConfig c = {.stop_id = -1};
    assert_int_equal(sampler_generate(s, long_prompt, 17, 5, &c, out, NULL, NULL, &why), -1);
    assert_error_contains("context holds 16");
    assert_int_equal(sampler_generate(s, long_prompt, 0, 5, &c, out, NULL, NULL, &why), -1);
    sampler_reset(s);
    assert_null(sampler_step(s, 300));
    assert_error_contains("outside the vocabulary");
    // a stop token ends generation before it is emitted
    int32_t g[6];
    assert_int_equal(gen(s, 0, 0, 1, 6, -1, g, &why), 6);
    int first = 0;
    while (first < 6 && g[first] != g[2]) first++;  // the first occurrence of g[2]'s token
    assert_int_equal(gen(s, 0, 0, 1, 6, g[2], out, &why), first);
    assert_int_equal(why, SAMPLE_STOP_TOKEN);
    // n = 0 draws nothing
    assert_int_equal(gen(s, 0.8, 5, 1, 0, -1, out, &why), 0);
    assert_int_equal(why, SAMPLE_STOP_N);
    sampler_free(s);
    model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_matches_forward_gqa),
        cmocka_unit_test(test_decode_matches_forward_mha_plain),
        cmocka_unit_test(test_decode_matches_forward_recipe),
        cmocka_unit_test(test_greedy),
        cmocka_unit_test(test_seeded_sampling),
        cmocka_unit_test(test_cache_full_and_stop),
    };
    return cmocka_run_group_tests_name("sample", tests, NULL, NULL);
}
