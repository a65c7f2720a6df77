// tests/research/test_research_plan.c — the planner of `frontier research`, with no training: a
// fixture plans each trial, "runs" it with a given val_bpb and records the verdict as research.c
// does. Tested: baseline seeds, the paired sequential keep rule, --threshold, seed and pair rows,
// greedy's choice of the least moved param, successive halving, random search, a failed baseline,
// agent proposals, resume = replay, the trial time limit growing with the model, and the
// promotion of keeps to a larger budget (transfer, no transfer, a failed promotion run).
#include <cjson/cJSON.h>
#include <math.h>

#include "test_util.h"

#include "research/ledger.h"
#include "research/plan.h"
#include "research/research.h"
#include "research/space.h"

#include "research_test_util.h"

typedef struct {
    cJSON *base;
    Space space;
    PlanCtx ctx;
    LedgerRow rows[64];
    int n;
} Fixture;

static void fixture_init(Fixture *f, Strategy strat) {
    memset(f, 0, sizeof *f);
    f->base = base_config();
    load_default_space(&f->space, f->base);
    // 3 baseline seeds, no least improvement, alpha 0.05, at most 4 seeds; halving eta 3, 2 rungs, 3
    f->ctx = (PlanCtx){strat, 120, 3, 0, 0.05, 4, 3, 2, 3, 1, &f->space, f->base, 0, 0, 0};
}

static void fixture_free(Fixture *f) {
    for (int i = 0; i < f->n; i++) free(f->rows[i].change), free(f->rows[i].description);
    space_free(&f->space);
    cJSON_Delete(f->base);
}

// Plan the next trial, "run" it with the given val_bpb (NaN = crash), decide and record it, like
// research.c does. Returns the row.
static LedgerRow *step(Fixture *f, double val) {
    PlanState st;
    assert_int_equal(plan_state_build(&f->ctx, f->rows, f->n, &st), 0);
    TrialPlan p;
    if (plan_next(&f->ctx, &st, &p) != 0) fail_msg("plan_next: %s", err_msg());
    assert_int_equal(p.trial, f->n + 1);
    LedgerRow *r = &f->rows[f->n];
    memset(r, 0, sizeof *r);
    PlanVerdict v;
    plan_decide(&f->ctx, &st, &p, val, isnan(val) ? "crash" : NULL, &v);
    char *verdict = v.text;
    snprintf(r->status, sizeof r->status, "%s", v.status);
    r->seed = plan_config_seed(p.config), r->paired = v.paired, r->z = v.z;
    r->trial = p.trial, r->parent = p.parent, r->budget_s = p.budget_s, r->val_bpb = val, r->wall_s = p.budget_s + 20;
    r->tokens = r->tok_per_s = r->mfu = r->peak_mb = NAN;
    snprintf(r->kind, sizeof r->kind, "%s", p.kind);
    r->change = cJSON_PrintUnformatted(p.diff);
    size_t n = strlen(p.description) + strlen(verdict) + 4;
    r->description = malloc(n);
    snprintf(r->description, n, "%s; %s", p.description, verdict);
    free(verdict);
    plan_free(&p);
    plan_state_free(&st);
    f->n++;
    return r;
}

// The paired sequential rule through the planner: baseline seeds 42-44, then candidates on 42,
// 43, ... each paired with the incumbent's run on the same seed.
static void test_plan_paired_rule(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_GREEDY);
    LedgerRow *r = step(&f, 2.100);
    assert_string_equal(r->kind, "baseline");
    assert_int_equal(r->parent, 0);
    assert_string_equal(r->status, "keep");
    assert_string_equal(r->change, "{}");
    r = step(&f, 2.110);
    assert_string_equal(r->change, "{\"seed\":43}");
    assert_string_equal(r->status, "replicate");
    r = step(&f, 2.090);
    assert_true(r->seed == 44);
    // the pool starts from the baseline as single runs: 2 x ss 0.0002 over 2 df, sd 0.01414
    // A: a little better on every seed, never significantly: runs to the cap of 4 seeds, and
    // the 4th needs the incumbent on seed 45 first ("pair")
    r = step(&f, 2.095);
    assert_string_equal(r->kind, "greedy");
    assert_int_equal(r->parent, 1);
    assert_string_equal(r->status, "pending");  // one seed never keeps
    assert_true(fabs(r->paired - 2.100) < 1e-12 && r->seed == 42);
    int a = r->trial;
    r = step(&f, 2.104);
    assert_string_equal(r->kind, "seed");
    assert_int_equal(r->parent, a);
    assert_true(r->seed == 43 && fabs(r->paired - 2.110) < 1e-12);
    assert_string_equal(r->status, "pending");
    r = step(&f, 2.086);
    assert_string_equal(r->status, "pending");
    r = step(&f, 2.105);
    assert_string_equal(r->kind, "pair");
    assert_int_equal(r->parent, 1);  // the incumbent: the baseline
    assert_true(r->seed == 45);
    assert_string_equal(r->status, "replicate");
    r = step(&f, 2.100);
    assert_string_equal(r->kind, "seed");
    assert_true(fabs(r->paired - 2.105) < 1e-12);
    assert_string_equal(r->status, "discard");  // the cap
    assert_non_null(strstr(r->description, "the seed cap"));
    // B: far worse on its first seed: discarded at once
    r = step(&f, 2.300);
    assert_string_equal(r->kind, "greedy");
    assert_string_equal(r->status, "discard");
    assert_true(r->z < -STATS_CLEARLY_WORSE);
    // C: much better twice: kept after its second seed
    r = step(&f, 2.000);
    assert_string_equal(r->status, "pending");
    int c = r->trial;
    r = step(&f, 2.010);
    assert_int_equal(r->parent, c);
    assert_string_equal(r->status, "keep");
    assert_true(r->z > 5);
    PlanState st;
    assert_int_equal(plan_state_build(&f.ctx, f.rows, f.n, &st), 0);
    assert_int_equal(st.rows[st.best].trial, c);  // the incumbent is C (its first row's config, seed 42)
    assert_true(fabs(st.best_score - 2.005) < 1e-12 && st.best_seeds == 2);
    assert_true(fabs(st.spread - 0.020) < 1e-12);
    // the pool: the baseline (2 df), and A's and C's d1 - d2 (both judged against the baseline: one
    // group, 1 df), closed when C was kept
    assert_true(fabs(stats_pool_df(&st.pool) - 3) < 1e-12);
    assert_int_equal(st.pool.open_n, 0);
    assert_int_equal(st.open, -1);
    plan_state_free(&st);
    // D moves from C and is paired with C's runs; it crashes: closed, the next one starts afresh
    r = step(&f, NAN);
    assert_string_equal(r->status, "crash");
    assert_int_equal(r->parent, c);
    r = step(&f, 2.004);
    assert_string_equal(r->kind, "greedy");
    assert_true(fabs(r->paired - 2.000) < 1e-12);
    assert_string_equal(r->status, "pending");
    // its second seed: C ran 43 as a candidate, so no pair row is needed
    r = step(&f, 2.020);
    assert_string_equal(r->kind, "seed");
    assert_true(fabs(r->paired - 2.010) < 1e-12);
    assert_string_equal(r->status, "discard");  // no better on average
    // E's third seed needs C on seed 44: the pair run crashes, so E cannot go on and stays pending
    r = step(&f, 1.990);
    r = step(&f, 2.005);
    assert_string_equal(r->status, "pending");
    r = step(&f, NAN);
    assert_string_equal(r->kind, "pair");
    assert_int_equal(r->parent, c);
    r = step(&f, 2.2);
    assert_string_equal(r->kind, "greedy");  // moved on
    // every candidate change is one param (plus what derives from it)
    for (int i = 3; i < f.n; i++) {
        cJSON *ch = cJSON_Parse(f.rows[i].change);
        assert_true(cJSON_GetArraySize(ch) >= 1);
        cJSON_Delete(ch);
    }
    fixture_free(&f);
}

// --threshold: significant but smaller than the least improvement asked for is discarded.
static void test_plan_threshold(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_GREEDY);
    f.ctx.threshold = 0.2;
    step(&f, 2.100), step(&f, 2.110), step(&f, 2.090);
    step(&f, 2.000);
    LedgerRow *r = step(&f, 2.010);
    assert_string_equal(r->status, "discard");
    assert_non_null(strstr(r->description, "not beyond --threshold"));
    fixture_free(&f);
}

// Greedy moves every param of the space once before it moves any twice (all changes discarded,
// so every proposal starts from the baseline: the default space's params are covered in turn).
static void test_greedy_moves_the_least_moved_param(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_GREEDY);
    step(&f, 2.100), step(&f, 2.110), step(&f, 2.090);
    int np = f.ctx.space->n_params, *moved = calloc((size_t)np, sizeof *moved);
    for (int t = 0; t < np; t++) {
        LedgerRow *r = step(&f, 2.5);  // worse than the best: discarded
        assert_string_equal(r->status, "discard");
        cJSON *c = cJSON_Parse(r->change), *e;
        int params = 0;
        cJSON_ArrayForEach(e, c)
            for (int k = 0; k < np; k++)
                if (!strcmp(e->string, f.ctx.space->params[k].name)) moved[k]++, params++;
        assert_true(params >= 1);
        cJSON_Delete(c);
    }
    // one param per trial, but a head-dim change also resets n-kv-head (a param derived from it):
    // every param has been moved at least once, and none more than twice
    for (int k = 0; k < np; k++) {
        if (moved[k] == 0) fail_msg("param %s never moved in %d greedy trials", f.ctx.space->params[k].name, np);
        assert_true(moved[k] <= 2);
    }
    free(moved);
    fixture_free(&f);
}

static void test_plan_is_deterministic_and_resumable(void **state) {
    (void)state;
    Fixture a, b;
    fixture_init(&a, STRAT_GREEDY);
    fixture_init(&b, STRAT_GREEDY);
    const double vals[] = {2.1, 2.11, 2.09, 2.2, 2.05, 2.03, 2.3};
    for (int i = 0; i < 7; i++) step(&a, vals[i]), step(&b, vals[i]);
    for (int i = 0; i < 7; i++) {
        assert_string_equal(a.rows[i].change, b.rows[i].change);
        assert_int_equal(a.rows[i].parent, b.rows[i].parent);
    }
    // another seed proposes other changes
    Fixture c;
    fixture_init(&c, STRAT_GREEDY);
    c.ctx.seed = 99;
    int differ = 0;
    for (int i = 0; i < 7; i++) step(&c, vals[i]), differ += strcmp(a.rows[i].change, c.rows[i].change) != 0;
    assert_true(differ > 0);
    // resume = replay: a state built from the first 5 rows plans what the 6th row was
    PlanState st;
    a.n = 5;
    assert_int_equal(plan_state_build(&a.ctx, a.rows, 5, &st), 0);
    TrialPlan p;
    assert_int_equal(plan_next(&a.ctx, &st, &p), 0);
    char *ch = cJSON_PrintUnformatted(p.diff);
    assert_string_equal(ch, a.rows[5].change);
    assert_int_equal(p.parent, a.rows[5].parent);
    free(ch);
    plan_free(&p);
    plan_state_free(&st);
    a.n = 7;
    fixture_free(&a), fixture_free(&b), fixture_free(&c);
}

static void test_plan_halving(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_HALVING);
    f.ctx.eta = 3, f.ctx.rungs = 2, f.ctx.bracket = 5;
    assert_true(fabs(plan_rung_budget(&f.ctx, 0) - 40) < 1e-9);
    assert_true(fabs(plan_rung_budget(&f.ctx, 1) - 120) < 1e-9);
    assert_int_equal(plan_rung_size(&f.ctx, 1), 2);
    step(&f, 2.100), step(&f, 2.110), step(&f, 2.090);
    const double screen[] = {2.40, 2.30, NAN, 2.35, 2.50};
    for (int i = 0; i < 5; i++) {
        LedgerRow *r = step(&f, screen[i]);
        assert_string_equal(r->kind, "rung0");
        assert_true(fabs(r->budget_s - 40) < 1e-9);
        assert_string_equal(r->status, isnan(screen[i]) ? "crash" : "screen");
    }
    // the two best screens (#5: 2.30, then #7: 2.35) go to the full budget, each judged by the
    // paired rule: the first far worse, the second better on two seeds
    LedgerRow *r = step(&f, 2.350);
    assert_string_equal(r->kind, "final");
    assert_int_equal(r->parent, 5);
    assert_true(fabs(r->budget_s - 120) < 1e-9);
    assert_string_equal(r->change, "{}");
    assert_string_equal(r->status, "discard");
    r = step(&f, 2.000);
    assert_int_equal(r->parent, 7);
    assert_string_equal(r->status, "pending");
    int fin = r->trial;
    r = step(&f, 2.010);
    assert_string_equal(r->kind, "seed");
    assert_int_equal(r->parent, fin);
    assert_true(fabs(r->budget_s - 120) < 1e-9);
    assert_string_equal(r->status, "keep");
    // a new bracket starts from the new best
    r = step(&f, 2.3);
    assert_string_equal(r->kind, "rung0");
    assert_int_equal(r->parent, fin);
    fixture_free(&f);
}

static void test_plan_random_and_failed_baseline(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_RANDOM);
    f.ctx.baseline_seeds = 1;
    step(&f, 2.1);
    LedgerRow *r = step(&f, 2.2);
    assert_string_equal(r->kind, "random");
    assert_int_equal(r->parent, 1);
    cJSON *c = cJSON_Parse(r->change);
    assert_true(cJSON_GetArraySize(c) > 3);  // many settings drawn at once
    cJSON_Delete(c);
    fixture_free(&f);
    fixture_init(&f, STRAT_GREEDY);
    step(&f, NAN);
    PlanState st;
    TrialPlan p;
    assert_int_equal(plan_state_build(&f.ctx, f.rows, f.n, &st), 0);
    assert_int_equal(plan_next(&f.ctx, &st, &p), -1);
    assert_error_contains("the baseline (trial 1) ended with status crash");
    plan_state_free(&st);
    fixture_free(&f);
}

static void test_plan_agent_proposals(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_AGENT);
    f.ctx.baseline_seeds = 1;
    step(&f, 2.1);
    PlanState st;
    TrialPlan p;
    assert_int_equal(plan_state_build(&f.ctx, f.rows, f.n, &st), 0);
    assert_int_equal(plan_next(&f.ctx, &st, &p), 0);
    assert_true(p.needs_proposal);
    assert_string_equal(p.kind, "agent");
    cJSON *bad = cJSON_Parse("{\"n-embd\": 192}");
    assert_int_equal(plan_take_proposal(&f.ctx, &st, &p, bad, NULL), -1);
    assert_error_contains("not a multiple");
    cJSON *same = cJSON_Parse("{\"depth\": 2}");
    assert_int_equal(plan_take_proposal(&f.ctx, &st, &p, same, NULL), -1);
    assert_error_contains("already has");
    cJSON *good = cJSON_Parse("{\"warmdown\": 0.7}");
    assert_int_equal(plan_take_proposal(&f.ctx, &st, &p, good, "longer warm-down"), 0);
    assert_string_equal(p.description, "warmdown 0.5 -> 0.7 (longer warm-down)");
    cJSON_Delete(bad), cJSON_Delete(same), cJSON_Delete(good);
    plan_free(&p);
    plan_state_free(&st);
    fixture_free(&f);
}

static void test_trial_limit_scales_with_the_model(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_GREEDY);
    f.ctx.baseline_seeds = 1;
    step(&f, 2.1);  // wall = budget + 20 s
    PlanState st;
    assert_int_equal(plan_state_build(&f.ctx, f.rows, f.n, &st), 0);
    ResearchOptions o;
    memset(&o, 0, sizeof o);
    o.eval_margin_s = 10;
    assert_true(fabs(research_trial_limit(&o, &st, f.base, 120) - (240 + 60)) < 1e-9);  // 3 x the 20 s seen
    cJSON *big = cJSON_Duplicate(f.base, 1);
    cJSON_ReplaceItemInObject(big, "depth", cJSON_CreateNumber(4));
    assert_true(research_trial_limit(&o, &st, big, 120) > 240 + 60);  // more FLOPs per token, more time
    o.eval_margin_s = 600;
    assert_true(fabs(research_trial_limit(&o, &st, f.base, 120) - (240 + 600)) < 1e-9);
    cJSON_Delete(big);
    plan_state_free(&st);
    fixture_free(&f);
}


// Side by side (--lanes 2), as research.c runs it: a candidate's run gets a twin (the incumbent on
// its seed, trained at the same moment), recorded first; the candidate is decided after it.
static LedgerRow *step_twin(Fixture *f, double twin_val, double val) {
    PlanState st;
    assert_int_equal(plan_state_build(&f->ctx, f->rows, f->n, &st), 0);
    TrialPlan p, tw;
    if (plan_next(&f->ctx, &st, &p) != 0) fail_msg("plan_next: %s", err_msg());
    int wants = plan_wants_twin(&p);
    plan_free(&p);
    plan_state_free(&st);
    if (!wants) return step(f, val);
    // record the twin as research.c does, then the candidate
    assert_int_equal(plan_state_build(&f->ctx, f->rows, f->n, &st), 0);
    assert_int_equal(plan_next(&f->ctx, &st, &p), 0);
    plan_twin(&st, &p, &tw);
    assert_int_equal(tw.trial, f->n + 1);
    assert_int_equal(p.trial, f->n + 2);
    assert_string_equal(tw.kind, "twin");
    assert_true(plan_config_seed(tw.config) == plan_config_seed(p.config));
    LedgerRow *r = &f->rows[f->n];
    memset(r, 0, sizeof *r);
    PlanVerdict v;
    plan_decide(&f->ctx, &st, &tw, twin_val, NULL, &v);
    snprintf(r->status, sizeof r->status, "%s", v.status);
    snprintf(r->kind, sizeof r->kind, "twin");
    r->trial = tw.trial, r->parent = tw.parent, r->budget_s = tw.budget_s, r->val_bpb = twin_val, r->wall_s = 140;
    r->batch = tw.trial;
    r->seed = plan_config_seed(tw.config), r->paired = r->z = r->tokens = r->tok_per_s = r->mfu = r->peak_mb = NAN;
    r->change = cJSON_PrintUnformatted(tw.diff);
    r->description = v.text;
    f->n++;
    plan_state_free(&st);
    assert_int_equal(plan_state_build(&f->ctx, f->rows, f->n, &st), 0);
    r = &f->rows[f->n];
    memset(r, 0, sizeof *r);
    plan_decide(&f->ctx, &st, &p, val, NULL, &v);
    snprintf(r->status, sizeof r->status, "%s", v.status);
    r->seed = plan_config_seed(p.config), r->paired = v.paired, r->z = v.z;
    r->trial = p.trial, r->parent = p.parent, r->budget_s = p.budget_s, r->val_bpb = val, r->wall_s = 140;
    r->batch = tw.trial;
    r->tokens = r->tok_per_s = r->mfu = r->peak_mb = NAN;
    snprintf(r->kind, sizeof r->kind, "%s", p.kind);
    r->change = cJSON_PrintUnformatted(p.diff);
    size_t n = strlen(p.description) + strlen(v.text) + 4;
    r->description = malloc(n);
    snprintf(r->description, n, "%s; %s", p.description, v.text);
    free(v.text);
    plan_free(&p), plan_free(&tw);
    plan_state_free(&st);
    f->n++;
    return r;
}

// --lanes 2: each candidate run is paired with its twin, not with the incumbent's earlier run on
// that seed; a seed the incumbent never ran needs no "pair" row; a keep's twins then pair with it.
static void test_plan_side_by_side(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_GREEDY);
    f.ctx.side_by_side = 1;
    step_twin(&f, 0, 2.100), step_twin(&f, 0, 2.110), step_twin(&f, 0, 2.090);  // the baseline: no twins
    assert_int_equal(f.n, 3);
    LedgerRow *r = step_twin(&f, 2.200, 2.195);  // a slow moment: both arms slow
    assert_string_equal(f.rows[f.n - 2].kind, "twin");
    assert_int_equal(f.rows[f.n - 2].parent, 1);
    assert_string_equal(f.rows[f.n - 2].status, "replicate");
    assert_string_equal(r->kind, "greedy");
    assert_true(fabs(r->paired - 2.200) < 1e-12);  // the twin, not the baseline's 2.100
    int a = r->trial;
    r = step_twin(&f, 2.111, 2.106);
    assert_string_equal(r->kind, "seed");
    assert_int_equal(r->parent, a);
    assert_true(fabs(r->paired - 2.111) < 1e-12 && r->seed == 43);
    r = step_twin(&f, 2.092, 2.087);
    r = step_twin(&f, 2.105, 2.100);  // seed 45: the baseline never ran it; no pair row, a twin instead
    assert_string_equal(r->kind, "seed");
    assert_true(r->seed == 45 && fabs(r->paired - 2.105) < 1e-12);
    assert_string_equal(f.rows[f.n - 2].kind, "twin");
    for (int i = 0; i < f.n; i++) assert_string_not_equal(f.rows[i].kind, "pair");
    // every paired difference was -0.005: with the pooled noise it is kept or runs to the cap
    assert_true(!strcmp(r->status, "keep") || !strcmp(r->status, "discard"));
    // --hours counts machine time: a twin and its candidate ran at the same moment, once (the
    // longer); the baseline's runs one after another
    int twins = 0;
    for (int i = 0; i < f.n; i++) twins += !strcmp(f.rows[i].kind, "twin");
    assert_true(twins >= 3);
    assert_true(fabs(plan_machine_s(f.rows, f.n) - 140.0 * (f.n - twins)) < 1e-9);
    f.rows[4].wall_s = 200;  // the first pair (rows 3, 4) took its candidate's 200 s, not its twin's 140
    assert_string_equal(f.rows[3].kind, "twin");
    assert_true(fabs(plan_machine_s(f.rows, f.n) - (140.0 * (f.n - twins) + 60)) < 1e-9);
    // in more lanes a batch holds several pairs: the rows 3..6 trained at once count as their longest
    for (int i = 3; i < 7; i++) f.rows[i].batch = 4;
    f.rows[5].wall_s = 230;
    assert_true(fabs(plan_machine_s(f.rows, f.n) - (140.0 * (f.n - twins - 1) + 90)) < 1e-9);
    fixture_free(&f);
}

// The incumbent's trial id after the ledger so far.
static int incumbent(Fixture *f) {
    PlanState st;
    assert_int_equal(plan_state_build(&f->ctx, f->rows, f->n, &st), 0);
    int t = st.best >= 0 ? f->rows[st.best].trial : 0;
    plan_state_free(&st);
    return t;
}

// A promotion: promote-pair (the incumbent beaten) then promote (the keep) on fresh seeds at the
// promotion budget; vals[2k], vals[2k+1] are pair k's.
static void promotion(Fixture *f, int kept, int beaten, const double *vals, int pairs, const char *verdict) {
    for (int k = 0; k < pairs; k++) {
        LedgerRow *r = step(f, vals[2 * k]);
        assert_string_equal(r->kind, "promote-pair");
        assert_int_equal(r->parent, beaten);
        assert_true(r->seed == 42 + PLAN_PROMOTE_SEED0 + k && r->budget_s == 300);
        assert_string_equal(r->status, "replicate");
        r = step(f, vals[2 * k + 1]);
        assert_string_equal(r->kind, "promote");
        assert_int_equal(r->parent, kept);
        assert_true(r->seed == 42 + PLAN_PROMOTE_SEED0 + k && r->budget_s == 300);
        assert_true(fabs(r->paired - vals[2 * k]) < 1e-12);
        assert_string_equal(r->status, k + 1 < pairs ? "pending" : verdict);
        if (k + 1 == pairs) assert_non_null(strstr(r->description, "over 2 of 2 pairs"));
    }
}

// --promote-budget 300 with 2 seeds: a keep is re-judged right away, before anything builds on it.
// One that holds stays the incumbent; one that does not (or whose promotion run crashes) gives the
// incumbent back to the change it beat, and the next candidate builds on that one.
static void test_plan_promotion(void **state) {
    (void)state;
    Fixture f;
    fixture_init(&f, STRAT_GREEDY);
    f.ctx.promote_budget_s = 300, f.ctx.promote_seeds = 2;
    step(&f, 2.100), step(&f, 2.110), step(&f, 2.090);  // the baseline
    LedgerRow *r = step(&f, 2.000);                     // C: much better twice, kept
    int c = r->trial;
    assert_string_equal(step(&f, 2.010)->status, "keep");
    assert_int_equal(incumbent(&f), c);
    promotion(&f, c, 1, (const double[]){1.900, 1.880, 1.905, 1.890}, 2, "transfer");
    assert_non_null(strstr(f.rows[f.n - 1].description, "transferred"));
    assert_int_equal(incumbent(&f), c);
    r = step(&f, 1.900);  // D on C's seeds: much better twice, kept
    assert_string_equal(r->kind, "greedy");
    assert_int_equal(r->parent, c);
    int d = r->trial;
    assert_string_equal(step(&f, 1.910)->status, "keep");
    assert_int_equal(incumbent(&f), d);
    promotion(&f, d, c, (const double[]){1.880, 1.950, 1.890, 1.960}, 2, "no-transfer");
    assert_non_null(strstr(f.rows[f.n - 1].description, "did not transfer"));
    assert_int_equal(incumbent(&f), c);  // D did not hold at 300 s: C is back
    r = step(&f, 1.995);
    assert_string_equal(r->kind, "greedy");
    assert_int_equal(r->parent, c);
    assert_true(fabs(r->paired - 2.000) < 1e-12);  // paired with C's run at the research budget
    int e = r->trial;
    // E goes on until kept; then its promotion's first run crashes: not shown to hold, C is back
    while (strcmp(f.rows[f.n - 1].status, "keep")) {
        assert_true(f.n < 60);
        r = step(&f, 1.850);
        assert_true(!strcmp(r->status, "keep") || !strcmp(r->status, "pending") || !strcmp(r->kind, "pair"));
    }
    assert_int_equal(incumbent(&f), e);
    r = step(&f, NAN);
    assert_string_equal(r->kind, "promote-pair");
    assert_string_equal(r->status, "crash");
    assert_int_equal(incumbent(&f), c);
    assert_string_equal(step(&f, 2.0)->kind, "greedy");  // the promotion is over
    fixture_free(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_paired_rule), cmocka_unit_test(test_plan_threshold),
        cmocka_unit_test(test_greedy_moves_the_least_moved_param),
        cmocka_unit_test(test_plan_is_deterministic_and_resumable),
        cmocka_unit_test(test_plan_halving),
        cmocka_unit_test(test_plan_random_and_failed_baseline),
        cmocka_unit_test(test_plan_agent_proposals),
        cmocka_unit_test(test_trial_limit_scales_with_the_model),
        cmocka_unit_test(test_plan_promotion),
        cmocka_unit_test(test_plan_side_by_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
