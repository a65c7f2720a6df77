// tests/planner/test_planner.c — the planner's models and ranking on synthetic data with known
// answers: the loss law's fit recovers its exponents and the repetition constant R* (and keeps the
// prior when no run repeated its data), its bootstrap spread is honest, the effective data behaves
// as Muennighoff et al.'s (per source in a mixture); the throughput fit recovers the machine rates it was made from and
// predicts shapes it never saw; the ranking picks the lowest predicted val_bpb, counts epochs, and
// without a loss model follows the tokens:params rule with repeated tokens discounted; the batch
// and weight-decay rules; the fit's JSON round trip; a source's discount solved from a paired
// difference, and the mixture the planner chooses for a horizon.
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "planner/measure.h"
#include "planner/planner.h"
#include "planner/scaling.h"
#include "planner/session.h"
#include "planner/throughput.h"
#include "planner/worth.h"
#include "train/settings.h"
#include "util/error.h"
#include "util/rng.h"

static const ScalingLaw TRUTH = {0.9, 40, 0.35, 500, 0.30, 6.0};

// A ladder like plan_ladder's: 4 sizes x 4 token counts on unlimited data, and 2 cut data sets
// read up to 30 times.
static int synthetic_points(ScalingPoint *p, int repeat, double noise_sd, unsigned seed) {
    int n = 0;
    Rng r;
    rng_seed(&r, seed);
    const double Ns[] = {3e5, 1e6, 3e6, 1e7}, Ds[] = {3e6, 1e7, 3e7, 1e8};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) p[n++] = (ScalingPoint){Ns[i], Ds[j], 0, 0, 0};
    if (repeat) {
        const double Us[] = {2e6, 5e6}, Dr[] = {8e6, 2e7, 6e7};
        for (int u = 0; u < 2; u++)
            for (int j = 0; j < 3; j++) p[n++] = (ScalingPoint){1e6, Dr[j], Us[u], 0, 0};
    }
    for (int i = 0; i < n; i++) p[i].L = scaling_eval(&TRUTH, p[i].N, p[i].D, p[i].U) + noise_sd * rng_normal(&r);
    return n;
}

static void test_effective_data(void **state) {
    (void)state;
    assert_true(scaling_effective_data(5e6, 1e7, 6) == 5e6);   // nothing repeated
    assert_true(scaling_effective_data(5e6, 0, 6) == 5e6);     // unlimited data
    double prev = 1e7;
    for (double D = 1.1e7; D < 1e9; D *= 1.5) {  // more repetitions are worth more, less and less
        double e = scaling_effective_data(D, 1e7, 6);
        assert_true(e > prev && e < D && e < 1e7 * (1 + 6));
        prev = e;
    }
    // the first repetitions are worth nearly new tokens (Muennighoff: ~4 epochs), later ones little
    assert_true(scaling_effective_data(2e7, 1e7, 15.4) > 0.96 * 2e7);
    assert_true(scaling_effective_data(4e8, 1e7, 15.4) < 0.5 * 4e8);
    // a mixture: each source repeated on its own; one source of weight 1 is the law above, and
    // fresh data beside a repeated corpus is worth more than the same tokens of the corpus alone
    ScalingData one = {1, {1}, {1e7}, {0}, {0}}, two = {2, {0.75, 0.25}, {1e7, 1e9}, {0}, {0}};
    for (double D = 1e6; D < 1e9; D *= 3) {
        assert_true(scaling_effective_mix(D, &one, 6) == scaling_effective_data(D, 1e7, 6));
        double want = scaling_effective_data(0.75 * D, 1e7, 6) + scaling_effective_data(0.25 * D, 1e9, 6);
        assert_true(fabs(scaling_effective_mix(D, &two, 6) - want) <= 1e-9 * want);
    }
    assert_true(scaling_effective_mix(3e8, &two, 6) > scaling_effective_mix(3e8, &one, 6));
    assert_true(scaling_eval_mix(&TRUTH, 1e6, 3e8, &two) < scaling_eval_mix(&TRUTH, 1e6, 3e8, &one));
    assert_true(scaling_eval_mix(&TRUTH, 1e6, 3e8, &one) == scaling_eval(&TRUTH, 1e6, 3e8, 1e7));
    // a discounted source: its effective tokens scaled by its worth, the corpus's untouched; a
    // harmful one (discount > 1) takes from D', never below one token
    ScalingData worth = two;
    worth.discount[1] = 0.4;
    double want = scaling_effective_data(0.75 * 3e8, 1e7, 6) + 0.6 * scaling_effective_data(0.25 * 3e8, 1e9, 6);
    assert_true(fabs(scaling_effective_mix(3e8, &worth, 6) - want) <= 1e-9 * want);
    worth.discount[1] = 1.5;
    assert_true(scaling_effective_mix(3e8, &worth, 6) < scaling_effective_data(0.75 * 3e8, 1e7, 6));
    worth.discount[1] = 1e9;
    assert_true(scaling_effective_mix(3e8, &worth, 6) == 1);
}

// A source's discount from a paired difference: the law's own differences give back the discount
// they were made with, at either run's tokens; differences past what the law can price clamp.
static void test_worth_solve(void **state) {
    (void)state;
    const double N = 1.4e6, U0 = 44e6, Us = 6e7, w = PLAN_WORTH_WEIGHT;
    const double truth[] = {-0.6, 0, 0.25, 0.9, 1.4};
    for (size_t i = 0; i < sizeof truth / sizeof *truth; i++)
        for (double D1 = 2.8e6; D1 < 3.3e6; D1 += 0.2e6) {  // the mixture's run a little slower or faster
            ScalingData d = {2, {1 - w, w}, {U0, Us}, {0, truth[i]}, {0, 0}};
            double dL = scaling_eval_mix(&TRUTH, N, D1, &d) - scaling_eval(&TRUTH, N, 3e6, U0);
            int clamped = -1;
            double got = worth_solve(&TRUTH, N, U0, Us, w, 3e6, D1, dL, &clamped);
            assert_int_equal(clamped, 0);
            assert_true(fabs(got - truth[i]) < 1e-6);
        }
    int clamped = 0;
    assert_true(worth_solve(&TRUTH, N, U0, Us, w, 3e6, 3e6, 1e3, &clamped) == PLAN_WORTH_MAX && clamped);
    assert_true(worth_solve(&TRUTH, N, U0, Us, w, 3e6, 3e6, -5.0, &clamped) == PLAN_WORTH_MIN && clamped);
}

// The planner's mixture: at a short horizon, where the corpus never repeats, a source worth less
// than the corpus only displaces better tokens and gets no share; at a long one, where the
// corpus is read dozens of times, fresh text wins a share and the prediction improves; a harmful
// source never gets one; the shares always add up to 1.
static void test_choose_shares(void **state) {
    (void)state;
    const double N = 1e6;
    ScalingData d = {2, {1, 0}, {1e7, 1e9}, {0, 0.3}, {0, 0}};
    plan_choose_shares(&TRUTH, N, 3e6, &d);
    assert_true(d.w[1] == 0 && d.w[0] == 1);
    ScalingData alone = {1, {1}, {1e7}, {0}, {0}};
    plan_choose_shares(&TRUTH, N, 5e8, &d);
    assert_true(d.w[1] > 0 && fabs(d.w[0] + d.w[1] - 1) < 1e-12 && d.w[1] <= PLAN_MIX_MAX_EXTRA + 1e-12);
    assert_true(scaling_eval_mix(&TRUTH, N, 5e8, &d) < scaling_eval_mix(&TRUTH, N, 5e8, &alone) - PLAN_MIX_MIN_GAIN);
    // worth less: a smaller share (at a horizon where the share is below its cap)
    plan_choose_shares(&TRUTH, N, 5e7, &d);
    double w_worth = d.w[1];
    print_message("a source of discount 0.3 at 5e7 tokens: share %.2f\n", w_worth);
    assert_true(w_worth > 0 && w_worth < PLAN_MIX_MAX_EXTRA);
    d.discount[1] = 0.6;
    plan_choose_shares(&TRUTH, N, 5e7, &d);
    assert_true(d.w[1] < w_worth);
    d.discount[1] = 1.3;
    plan_choose_shares(&TRUTH, N, 5e8, &d);
    assert_true(d.w[1] == 0);
    // three sources: each share on the grid, the extras within their cap, and no step of share
    // from one source to another predicts better (a local optimum of the grid)
    ScalingData three = {3, {1, 0, 0}, {1e7, 1e9, 2e7}, {0, 0.5, -0.2}, {0, 0, 0}};
    plan_choose_shares(&TRUTH, N, 5e8, &three);
    double sum = 0, best = scaling_eval_mix(&TRUTH, N, 5e8, &three);
    print_message("three sources: shares %.2f %.2f %.2f\n", three.w[0], three.w[1], three.w[2]);
    for (int s = 0; s < 3; s++) {
        sum += three.w[s];
        if (s > 0) assert_true(fabs(three.w[s] / PLAN_MIX_STEP - round(three.w[s] / PLAN_MIX_STEP)) < 1e-9);
        for (int t = 0; t < 3; t++) {
            ScalingData m = three;
            if (s == t || m.w[s] < PLAN_MIX_STEP - 1e-12) continue;
            m.w[s] -= PLAN_MIX_STEP, m.w[t] += PLAN_MIX_STEP;
            if (1 - m.w[0] > PLAN_MIX_MAX_EXTRA + 1e-9) continue;
            assert_true(scaling_eval_mix(&TRUTH, N, 5e8, &m) >= best - PLAN_MIX_MIN_GAIN);
        }
    }
    assert_true(fabs(sum - 1) < 1e-12 && three.w[1] > 0 && three.w[2] > 0);
}

static void test_fit_recovers_the_law(void **state) {
    (void)state;
    ScalingPoint p[64];
    int n = synthetic_points(p, 1, 0, 1);
    ScalingFit *f = malloc(sizeof *f);
    assert_int_equal(scaling_fit(p, n, 7, f), 0);
    print_message("fit: E %.4f A %.3g alpha %.4f B %.3g beta %.4f R* %.3f, rms %.2g\n", f->law.E, f->law.A,
                  f->law.alpha, f->law.B, f->law.beta, f->law.rstar, f->rms_resid);
    assert_true(f->rstar_fitted);
    assert_true(fabs(f->law.alpha - TRUTH.alpha) < 0.01 && fabs(f->law.beta - TRUTH.beta) < 0.01);
    assert_true(fabs(f->law.rstar / TRUTH.rstar - 1) < 0.05);
    assert_true(f->rms_resid < 1e-3);
    // a prediction far out (10 epochs of a cut set) is right, with a small spread
    double m, sd, t = scaling_eval(&TRUTH, 1e6, 1e8, 1e7);
    scaling_predict(f, 1e6, 1e8, 1e7, &m, &sd);
    assert_true(fabs(m - t) < 0.01 && sd < 0.01);
    // with noise the bootstrap spread covers the error (within 3 sd)
    n = synthetic_points(p, 1, 0.005, 2);
    assert_int_equal(scaling_fit(p, n, 7, f), 0);
    scaling_predict(f, 2e6, 5e7, 0, &m, &sd);
    t = scaling_eval(&TRUTH, 2e6, 5e7, 0);
    print_message("noisy: predicted %.4f +- %.4f, true %.4f\n", m, sd, t);
    assert_true(sd > 0 && fabs(m - t) < 3 * sd + 0.002);
    // without repetition R* cannot be identified: the prior, said so
    n = synthetic_points(p, 0, 0, 1);
    assert_int_equal(scaling_fit(p, n, 7, f), 0);
    assert_false(f->rstar_fitted);
    assert_true(f->law.rstar == SCALING_RSTAR_PRIOR);
    // too few points, or one size only, are usage errors
    assert_int_equal(scaling_fit(p, 5, 7, f), -1);
    assert_error_contains("at least 6 runs");
    for (int i = 0; i < n; i++) p[i].N = 1e6;
    assert_int_equal(scaling_fit(p, n, 7, f), -1);
    assert_error_contains("1 model sizes");
    free(f);
}

static void test_fit_json_round_trip(void **state) {
    (void)state;
    ScalingPoint p[64];
    int n = synthetic_points(p, 1, 0.002, 3);
    ScalingFit *f = malloc(sizeof *f), *g = malloc(sizeof *g);
    assert_int_equal(scaling_fit(p, n, 7, f), 0);
    cJSON *j = scaling_fit_to_json(f);
    char *text = cJSON_Print(j);
    cJSON *k = cJSON_Parse(text);
    assert_int_equal(scaling_fit_from_json(k, "scaling.json", g), 0);
    assert_int_equal(g->n_boot, f->n_boot);
    assert_int_equal(g->rstar_fitted, f->rstar_fitted);
    double a, sa, b, sb;
    scaling_predict(f, 1e6, 3e7, 5e6, &a, &sa);
    scaling_predict(g, 1e6, 3e7, 5e6, &b, &sb);
    // cJSON prints 15 digits where they read back within an ulp; the spread's sum of squares
    // magnifies that a little
    assert_true(fabs(a - b) < 1e-12 && fabs(sa / sb - 1) < 1e-6);
    cJSON_DeleteItemFromObject(k, "law");
    assert_int_equal(scaling_fit_from_json(k, "scaling.json", g), -1);
    assert_error_contains("scaling.json: a law lacks");
    cJSON_Delete(j), cJSON_Delete(k), free(text), free(f), free(g);
}

// Step times made from known rates: the fit finds them again and prices shapes it never saw.
static void test_throughput_fit(void **state) {
    (void)state;
    ThroughputModel truth = {0};
    double rates[TP_NTERMS] = {0};
    rates[TP_GEMM_FLOPS] = 1.2e-12, rates[TP_GEMM_BYTES] = 4e-11, rates[TP_GEMM_THIN] = 2e-11;
    rates[TP_ATTN_FLOPS] = 3e-12, rates[TP_ELEM_BYTES] = 2e-10, rates[TP_OPT_FLOPS] = 1.5e-12;
    rates[TP_LAYER_CALLS] = 2e-4, rates[TP_STEP] = 3e-3;
    memcpy(truth.coef, rates, sizeof rates);
    double work[32][TP_NTERMS], step[32];
    int n = 0;
    for (int i = 0; i < PLAN_N_CAL; i++) {
        TpShape s = {plan_point_model(&PLAN_CAL_POINTS[i], 8192), PLAN_CAL_POINTS[i].batch_tokens, 16, 1, 5};
        assert_int_equal(tp_work(&s, work[n]), 0);
        step[n] = tp_predict_step_s(&truth, work[n]);
        n++;
    }
    ThroughputModel m = {0};
    assert_int_equal(tp_fit((const double(*)[TP_NTERMS])work, step, n, &m), 0);
    assert_true(m.rms_rel_err < 1e-6);
    for (int i = 0; i < PLAN_N_HELDOUT; i++) {
        TpShape s = {plan_point_model(&PLAN_HELDOUT_POINTS[i], 8192), PLAN_HELDOUT_POINTS[i].batch_tokens, 16, 1, 5};
        double w[TP_NTERMS];
        assert_int_equal(tp_work(&s, w), 0);
        double e = tp_predict_step_s(&m, w) / tp_predict_step_s(&truth, w) - 1;
        assert_true(fabs(e) < 1e-3);
    }
    // a batch that does not split is refused, not priced
    TpShape bad = {plan_point_model(&PLAN_CAL_POINTS[0], 8192), 1000, 16, 1, 5};
    assert_true(isnan(tp_predict_tok_s(&m, &bad)));
}

// A machine where step time is proportional to FLOPs: tok/s = rate / FLOPs per token.
static ThroughputModel flops_machine(double flops_per_s) {
    ThroughputModel m = {0};
    m.coef[TP_GEMM_FLOPS] = m.coef[TP_ATTN_FLOPS] = m.coef[TP_OPT_FLOPS] = 1 / flops_per_s;
    m.coef[TP_STEP] = 1e-3;
    return m;
}

static void test_ranking(void **state) {
    (void)state;
    ThroughputModel tp = flops_machine(3e11);
    PlanCandidate c[32];
    PlanQuery q = {plan_family_default(), 1800, 1, 1e12, 44e6, &tp, NULL, NULL, 0, NULL};
    int n = plan_rank(&q, c, 32);
    assert_true(n >= 8);
    // without a loss model: D'/N nearest 12, repeated tokens discounted; epochs counted
    for (int i = 0; i < n; i++) {
        assert_true(c[i].epochs > 0 && fabs(c[i].epochs - c[i].tokens / 44e6) < 1e-9);
        assert_true(c[i].epochs_max == c[i].epochs && c[i].average == (c[i].epochs >= PLAN_REPEAT_EPOCHS));
        assert_int_equal(c[i].regularise, c[i].average && c[i].memorises);
        assert_true(c[i].rules.batch_tokens % (16 * 256) == 0);
        if (i > 0) assert_true(c[i].score >= c[i - 1].score);
    }
    double eff = scaling_effective_data(c[0].tokens, 44e6, SCALING_RSTAR_PRIOR);
    for (int i = 1; i < n; i++) {
        double e = scaling_effective_data(c[i].tokens, 44e6, SCALING_RSTAR_PRIOR);
        assert_true(fabs(log(eff / c[0].N / 12)) <= fabs(log(e / c[i].N / 12)));
    }
    assert_true(isnan(c[0].L));
    // with a loss model: the lowest predicted val_bpb first; and a smaller corpus, read more
    // often, buys no larger D' for a smaller model's extra tokens, so the pick is no smaller (the
    // planner that counted repeated tokens as new would shrink the model instead)
    ScalingPoint p[64];
    int np = synthetic_points(p, 1, 0, 1);
    ScalingFit *f = malloc(sizeof *f);
    assert_int_equal(scaling_fit(p, np, 7, f), 0);
    q.fit = f;
    n = plan_rank(&q, c, 32);
    for (int i = 1; i < n; i++) assert_true(c[i].L >= c[0].L);
    int depth_big = c[0].depth;
    // a corpus so small that every model reading it twice memorises it (fewer unique tokens than
    // parameters): those are flagged and ranked after every model that reads it at most once,
    // whatever the law predicts for them
    q.train_tokens = 2e6;
    n = plan_rank(&q, c, 32);
    int flagged = 0, regularised = 0;  // and those that memorise add dropout and the decay's growth
    for (int i = 0; i < n; i++) {
        int repeats = c[i].tokens > 1.05 * 2e6;
        assert_int_equal(c[i].memorises, repeats && 2e6 < SCALING_MIN_UNIQUE_PER_PARAM * c[i].params);
        if (i > 0) assert_true(c[i].memorises >= c[i - 1].memorises);
        assert_int_equal(c[i].regularise, c[i].average && c[i].memorises);
        flagged += c[i].memorises, regularised += c[i].regularise;
    }
    assert_true(flagged > 0 && !c[0].memorises && regularised > 0 && !c[0].regularise);
    q.train_tokens = 1.5e7;
    n = plan_rank(&q, c, 32);
    assert_true(c[0].depth >= depth_big);
    assert_true(c[0].epochs > 1 && !c[0].memorises);
    int some = 0;  // the average follows the epochs: on for the small models that read 15M often
    for (int i = 0; i < n; i++) {
        assert_int_equal(c[i].average, c[i].epochs_max >= PLAN_REPEAT_EPOCHS);
        assert_int_equal(c[i].regularise, c[i].average && c[i].memorises);
        some += c[i].average;
    }
    assert_true(some > 0);
    // choosing the mixture: each candidate its own shares, adding up to 1; the corpus alone
    // without a loss model to price a mixture by
    ScalingData src = {2, {0.5, 0.5}, {2e6, 1e9}, {0, 0.3}, {0, 0.05}};
    q.data = &src, q.choose_mix = 1;
    n = plan_rank(&q, c, 32);
    PlanCandidate exact[32];
    src.discount_se[1] = 0;
    assert_int_equal(plan_rank(&q, exact, 32), n);
    src.discount_se[1] = 0.05;
    int mixed = 0;
    for (int i = 0; i < n; i++) {
        assert_true(fabs(c[i].data.w[0] + c[i].data.w[1] - 1) < 1e-12);
        mixed += c[i].data.w[1] > 0;
        assert_true(exact[i].depth == c[i].depth || exact[i].L != c[i].L);
        // the discount's uncertainty widens the spread of a candidate that reads the source
        if (c[i].data.w[1] > 0 && exact[i].depth == c[i].depth) assert_true(c[i].L_sd > exact[i].L_sd + 1e-6);
    }
    assert_true(mixed > 0);
    q.fit = NULL;
    n = plan_rank(&q, c, 32);
    for (int i = 0; i < n; i++) assert_true(c[i].data.w[0] == 1 && c[i].data.w[1] == 0);
    q.data = NULL, q.choose_mix = 0;
    free(f);
    // no throughput model, no budget: refused
    q.tp = NULL;
    assert_int_equal(plan_rank(&q, c, 32), -1);
}

// What a plan gives the trainer for the repetition levers: nothing below PLAN_REPEAT_EPOCHS; the
// weight average at or above it; dropout and the decay's growth too only where the pick memorises.
static int given_setting(const unsigned char *given, const char *name) {
    return given[train_setting_find(name) - TRAIN_SETTINGS];
}

static void test_plan_settings(void **state) {
    (void)state;
    PlanResult *res = calloc(1, sizeof *res);
    PlanRequest rq = {.budget_s = 1800, .ranks = 1, .precision = KP_FP32};
    PlanFamily fam = plan_family_default();
    PlanCandidate c = {.depth = 4, .model = plan_shape(&fam, 4), .device_batch = fam.device_batch};
    c.rules = plan_rules(PLAN_RULE_D_REF, 4096);
    TrainConfig raw;
    unsigned char given[TRAIN_MAX_SETTINGS];
    const TrainConfig d = train_settings_defaults();
    for (int k = 0; k < 3; k++) {  // none, the average, the average and the regularisers
        c.average = k >= 1, c.regularise = k == 2;
        plan_candidate_settings(res, &rq, &c, &raw, given);
        assert_int_equal(given_setting(given, "ema-steps"), k >= 1);
        assert_int_equal(given_setting(given, "ema-blend"), k >= 1);
        assert_int_equal(given_setting(given, "dropout"), k == 2);
        assert_int_equal(given_setting(given, "wd-per-epoch"), k == 2);
        assert_true(raw.optim.ema_steps == (k >= 1 ? PLAN_REPEAT_EMA_STEPS : d.optim.ema_steps));
        assert_true(raw.optim.ema_blend == (k >= 1 ? PLAN_REPEAT_EMA_BLEND : d.optim.ema_blend));
        assert_true(raw.dropout == (k == 2 ? PLAN_REPEAT_DROPOUT : d.dropout));
        assert_true(raw.wd_per_epoch == (k == 2 ? PLAN_REPEAT_WD_PER_EPOCH : d.wd_per_epoch));
        assert_true(given_setting(given, "depth") && raw.budget_s == 1800);
    }
    free(res);
}

static void test_rules(void **state) {
    (void)state;
    PlanRules r = plan_rules(PLAN_RULE_D_REF, 4096);
    assert_int_equal(r.batch_tokens, 16384);  // the anchor: the cpu preset's batch and weight decay
    assert_true(fabs(r.weight_decay - PLAN_RULE_WD_REF) < 1e-12);
    PlanRules big = plan_rules(100 * PLAN_RULE_D_REF, 4096);
    assert_true(big.batch_tokens > r.batch_tokens && big.weight_decay < r.weight_decay);
    PlanRules odd = plan_rules(1e3, 3 * 4096);  // at least one micro-batch per rank, a multiple of it
    assert_true(odd.batch_tokens >= 3 * 4096 && odd.batch_tokens % (3 * 4096) == 0);
}

// The law's domain: fresh data always; repeated data only with enough unique tokens per parameter.
// Splitting keeps the order within each part.
static void test_domain(void **state) {
    (void)state;
    const double P = 8e6, k = SCALING_MIN_UNIQUE_PER_PARAM;
    assert_true(scaling_in_domain(P, 1e9, 0));            // unlimited data
    assert_true(scaling_in_domain(P, 1e5, 1e5));          // read once, however few tokens
    assert_true(scaling_in_domain(P, 8 * k * P, k * P));  // 8 epochs at the bound
    assert_false(scaling_in_domain(P, 8 * k * P, 0.99 * k * P));
    // the count is of all parameters (P) where a point has it, of N where it does not
    ScalingPoint p[6] = {{1e6, 8e7, 4e6, 3.0, P}, {1e6, 1e7, 0, 1.9, P}, {2e6, 1e8, 1e7, 3.5, 2 * P}, {1e6, 2e7, 1e7, 1.8, P},
                         {1e6, 4e6, 4e6, 2.1, P}, {1e6, 1e7, 2e6, 2.0, 0}};
    assert_int_equal(scaling_split_domain(p, 6), 2);
    const double want[6] = {1.9, 1.8, 2.1, 2.0, 3.0, 3.5};
    for (int i = 0; i < 6; i++) assert_true(p[i].L == want[i]);
}

// The worth table round-trips; an entry with a missing or impossible count is refused, naming the
// source (not read as whatever a NaN cast to int gives).
static void test_worth_table(void **state) {
    (void)state;
    // --mix auto never gives the extra sources more than the share their worth was measured at
    assert_true(PLAN_MIX_MAX_EXTRA == PLAN_WORTH_WEIGHT);
    char *dir = test_tmpdir("worth"), path[512];
    snprintf(path, sizeof path, "%s/worth.json", dir);
    static WorthTable t, back;  // kilobytes each: off the stack
    t.n = 1;
    t.e[0] = (WorthEntry){.n = 2};
    t.e[0].len[0] = (WorthLength){.budget_s = 300, .tokens = 1.4e7, .discount = 0.5, .se = NAN, .dL = 0.05, .seeds = 1};
    t.e[0].len[1] = (WorthLength){.budget_s = 120, .tokens = 6e6, .discount = 0.25, .se = 0.05, .dL = 0.01, .seeds = 3,
                                  .clamped = 1};
    snprintf(t.e[0].name, sizeof t.e[0].name, "extra_wiki");
    assert_int_equal(worth_save(path, &t), 0);
    assert_int_equal(worth_load(path, &back), 0);
    assert_int_equal(back.n, 1);
    assert_string_equal(back.e[0].name, "extra_wiki");
    const WorthEntry *e = worth_find(&back, "extra_wiki");
    assert_non_null(e);
    assert_int_equal(e->n, 2);  // sorted by tokens on load
    assert_true(e->len[0].budget_s == 120 && e->len[0].tokens == 6e6 && e->len[0].discount == 0.25 &&
                e->len[0].se == 0.05 && e->len[0].seeds == 3 && e->len[0].clamped == 1);
    assert_true(e->len[1].budget_s == 300 && e->len[1].discount == 0.5 && isnan(e->len[1].se));
    PlanDiscountCurve c = worth_curve(e);
    assert_true(c.n == 2 && c.D[0] == 6e6 && c.delta[1] == 0.5 && c.se[1] == 0 && c.lo == PLAN_WORTH_PRICE_MIN &&
                c.hi == PLAN_WORTH_MAX);
    // an older table's entry (no lengths) is left out and counted, not an error
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"sources\": {\"extra_wiki\": {\"discount\": 0.2, \"se\": 0.1, \"seeds\": 3, \"clamped\": 0}}}", f);
    fclose(f);
    assert_int_equal(worth_load(path, &back), 0);
    assert_true(back.n == 0 && back.stale == 1);
    static const char *const bad[] = {
        "{\"sources\": {\"extra_wiki\": {\"lengths\": [{\"budget_s\": 120, \"tokens\": 6e6, \"discount\": 0.2, \"clamped\": 0}]}}}",
        "{\"sources\": {\"extra_wiki\": {\"lengths\": [{\"budget_s\": 120, \"tokens\": 6e6, \"discount\": 0.2, \"seeds\": 2, \"clamped\": 3}]}}}",
        "{\"sources\": {\"extra_wiki\": {\"lengths\": [{\"budget_s\": 120, \"tokens\": 6e6, \"discount\": 0.2, \"seeds\": 1e300, \"clamped\": 0}]}}}",
        "{\"sources\": {\"extra_wiki\": {\"lengths\": [{\"budget_s\": 120, \"discount\": 0.2, \"seeds\": 2, \"clamped\": 0}]}}}",
        "{\"sources\": {\"extra_wiki\": {\"lengths\": []}}}",
        ("{\"sources\": {\"extra_wiki\": {\"lengths\": [{\"budget_s\": 120, \"tokens\": 6e6, \"discount\": 0.2, \"seeds\": 2, "
         "\"clamped\": 0}, {\"budget_s\": 300, \"tokens\": 6e6, \"discount\": 0.4, \"seeds\": 2, \"clamped\": 0}]}}}"),
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(bad[i], f);
        fclose(f);
        WorthTable w = {0};
        assert_int_equal(worth_load(path, &w), -1);
        assert_non_null(strstr(err_msg(), "extra_wiki"));
    }
    remove(path);
    rmdir(dir);
    free(dir);
}

// A source's discount by training length: one length holds at every D; two or more interpolate
// in ln D, extrapolate along the end segments, propagate the lengths' errors, clamp to [lo, hi].
static void test_discount_curve(void **state) {
    (void)state;
    double d, se;
    int where;
    PlanDiscountCurve one = {1, {1e6}, {0.3}, {0.05}, -1, 2};
    plan_discount_at(&one, 1e9, &d, &se, &where);
    assert_true(d == 0.3 && se == 0.05 && where == 0);
    PlanDiscountCurve two = {2, {1e6, 1e7}, {0.0, 1.0}, {0.1, 0.1}, 0, 1.5};
    plan_discount_at(&two, sqrt(1e13), &d, &se, &where);  // halfway in ln D
    assert_true(fabs(d - 0.5) < 1e-12 && fabs(se - sqrt(0.005)) < 1e-12 && where == 0);
    plan_discount_at(&two, 1e7, &d, &se, &where);
    assert_true(fabs(d - 1.0) < 1e-12 && fabs(se - 0.1) < 1e-12 && where == 0);
    plan_discount_at(&two, sqrt(1e15), &d, &se, &where);  // half a segment past the longest: the trend, wider
    assert_true(fabs(d - 1.5) < 1e-12 && fabs(se - sqrt(0.25 * 0.01 + 2.25 * 0.01)) < 1e-12 && where == 1);
    plan_discount_at(&two, 1e9, &d, &se, &where);  // far past: clamped to hi
    assert_true(d == 1.5 && where == 1);
    plan_discount_at(&two, 1e5, &d, &se, &where);  // before the shortest: -1, clamped to lo
    assert_true(d == 0 && where == -1);
    PlanDiscountCurve three = {3, {1e6, 1e7, 1e8}, {0.0, 1.0, 0.0}, {0.1, 0.1, 0.1}, -10, 10};
    plan_discount_at(&three, sqrt(1e15), &d, &se, &where);  // the second segment's
    assert_true(fabs(d - 0.5) < 1e-12 && where == 0);
    plan_discount_at(&three, 1e10, &d, &se, &where);  // past the last: the last segment's slope
    assert_true(fabs(d + 2.0) < 1e-12 && where == 1);
    // the ranking prices each candidate at its own length: a source whose worth falls with training
    // is mixed in at its short-run worth, not once the curve says its worth has gone
    ThroughputModel tp = flops_machine(3e11);
    PlanCandidate c[32];
    ScalingFit *fit = calloc(1, sizeof *fit);
    fit->law = TRUTH;
    ScalingData src = {2, {1, 0}, {2e6, 1e9}, {0, 0.3}, {0, 0}};
    PlanQuery q = {plan_family_default(), 1800, 1, 1e12, 2e6, &tp, fit, &src, 1, NULL};
    int n = plan_rank(&q, c, 32), mixed = 0;
    for (int i = 0; i < n; i++) mixed += c[i].data.w[1] > 0;
    assert_true(mixed > 0);
    PlanDiscountCurve curves[2] = {{0}, {2, {1e5, 2e5}, {0.3, 1.5}, {0, 0}, 0, 1.99}};
    q.curves = curves;
    n = plan_rank(&q, c, 32);
    for (int i = 0; i < n; i++) {
        plan_discount_at(&curves[1], c[i].tokens, &d, &se, NULL);
        assert_true(c[i].data.discount[1] == d && c[i].data.w[1] == 0);
    }
    free(fit);
}

// The sustained rate: the geometric mean of the runs' ratios, a run counted again replaces
// itself, the oldest dropped when full; kept through throughput.json; applied to long budgets only.
static void test_sustained(void **state) {
    (void)state;
    ThroughputModel *m = calloc(1, sizeof *m), *back = calloc(1, sizeof *back);
    *m = flops_machine(3e11);
    snprintf(m->key, sizeof m->key, "test-layout");
    double sd;
    assert_true(tp_sustained_factor(m, &sd) == 1.0 && isnan(sd));
    tp_add_sustained(m, 1, 0.8, 1800);
    tp_add_sustained(m, 2, 0.9, 1800);
    tp_add_sustained(m, 1, 0.5, 1800);  // run 1 again: replaced
    assert_int_equal(m->n_sustained, 2);
    assert_true(fabs(tp_sustained_factor(m, &sd) - sqrt(0.5 * 0.9)) < 1e-12 && fabs(sd - fabs(log(0.9 / 0.5)) / sqrt(2)) < 1e-12);
    for (int i = 0; i < TP_MAX_SUSTAINED; i++) tp_add_sustained(m, 100 + i, 0.7, 900);
    assert_true(m->n_sustained == TP_MAX_SUSTAINED && m->sustained[0].id == 100 && fabs(tp_sustained_factor(m, NULL) - 0.7) < 1e-12);
    char *dir = test_tmpdir("sustained");
    assert_int_equal(tp_save(dir, m), 0);
    assert_int_equal(tp_load(dir, "test-layout", back), 0);
    assert_true(back->n_sustained == TP_MAX_SUSTAINED && back->sustained[5].id == m->sustained[5].id &&
                back->sustained[5].ratio == 0.7 && back->sustained[5].budget_s == 900);
    PlanCandidate c[32], fast[32];
    PlanQuery q = {plan_family_default(), TP_SUSTAINED_MIN_S, 1, 1e12, 44e6, m, NULL, NULL, 0, NULL};
    int n = plan_rank(&q, c, 32);
    ThroughputModel plain = *m;
    plain.n_sustained = 0;
    q.tp = &plain;
    assert_int_equal(plan_rank(&q, fast, 32), n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (c[i].depth == fast[j].depth && c[i].rules.batch_tokens == fast[j].rules.batch_tokens)
                assert_true(fabs(c[i].tok_s / fast[j].tok_s - 0.7) < 1e-9);
    q.budget_s = TP_SUSTAINED_MIN_S - 1, q.tp = m;  // shorter: the calibrated rate
    n = plan_rank(&q, c, 32);
    q.tp = &plain;
    assert_int_equal(plan_rank(&q, fast, 32), n);
    for (int i = 0; i < n; i++) assert_true(c[i].tok_s == fast[i].tok_s);
    char path[600];
    snprintf(path, sizeof path, "%s/throughput.json", dir);
    remove(path), rmdir(dir);
    free(dir), free(m), free(back);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_effective_data), cmocka_unit_test(test_fit_recovers_the_law),
        cmocka_unit_test(test_fit_json_round_trip), cmocka_unit_test(test_throughput_fit),
        cmocka_unit_test(test_ranking), cmocka_unit_test(test_plan_settings), cmocka_unit_test(test_rules), cmocka_unit_test(test_worth_solve),
        cmocka_unit_test(test_choose_shares), cmocka_unit_test(test_domain),
        cmocka_unit_test(test_worth_table), cmocka_unit_test(test_discount_curve),
        cmocka_unit_test(test_sustained),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
