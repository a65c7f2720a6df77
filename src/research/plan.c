// research/plan.c — the strategies as pure functions of the ledger (see plan.h).
#include "research/plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/mem.h"
#include "util/rng.h"

enum { MAX_DRAWS = 2000 };  // proposals drawn before giving up on finding an untried feasible one

// ---------------------------------------------------------------------------------------------
// Replaying the ledger
// ---------------------------------------------------------------------------------------------

// parent config + a recorded change (already complete: derived settings included).
static cJSON *merge(const cJSON *parent, const char *change_json, int trial) {
    cJSON *change = cJSON_Parse(change_json), *c = cJSON_Duplicate(parent, 1);
    const cJSON *it;
    cJSON_ArrayForEach(it, change) {
        if (!cJSON_GetObjectItemCaseSensitive(c, it->string)) {
            err_set("trial %d changes \"%s\", which is not a setting of the base config", trial, it->string);
            cJSON_Delete(c), c = NULL;
            break;
        }
        cJSON_ReplaceItemInObjectCaseSensitive(c, it->string, cJSON_Duplicate(it, 1));
    }
    cJSON_Delete(change);
    return c;
}

static double row_seed(const PlanState *st, int i) {
    if (isfinite(st->rows[i].seed)) return st->rows[i].seed;
    return st->configs[i] ? plan_config_seed(st->configs[i]) : NAN;
}

static int is_candidate_head(const char *kind) {
    return !strcmp(kind, "greedy") || !strcmp(kind, "random") || !strcmp(kind, "agent") || !strcmp(kind, "final");
}

double plan_config_seed(const cJSON *c) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "seed");
    return cJSON_IsNumber(s) ? s->valuedouble : 42;
}

double plan_value_at(const PlanState *st, int g, double seed) {
    for (int i = 0; i < st->n; i++)
        if (st->group[i] == g && ledger_status_ok(st->rows[i].status) && strncmp(st->rows[i].kind, "rung", 4) &&
            row_seed(st, i) == seed)
            return st->rows[i].val_bpb;
    return NAN;
}

// The incumbent's val_bpb that a candidate run at row i (i == st->n: the run being decided) on
// seed pairs with: its twin (the row just before it) when it had one, else inc's run on that seed.
static double paired_value(const PlanState *st, int i, double seed, int inc) {
    const LedgerRow *t = i > 0 ? &st->rows[i - 1] : NULL;
    if (t && !strcmp(t->kind, "twin") && st->group[i - 1] == inc && ledger_status_ok(t->status) && row_seed(st, i - 1) == seed)
        return t->val_bpb;
    return plan_value_at(st, inc, seed);
}

// Candidate g's run on seed: its row, -1 when none finished.
static int run_at(const PlanState *st, int g, double seed) {
    for (int i = 0; i < st->n; i++)
        if (st->group[i] == g && ledger_status_ok(st->rows[i].status) && strncmp(st->rows[i].kind, "rung", 4) &&
            strcmp(st->rows[i].kind, "twin") && row_seed(st, i) == seed)
            return i;
    return -1;
}

int plan_paired_diffs(const PlanState *st, int g, int inc, double base_seed, double *d, int cap) {
    int n = 0;
    for (; n < cap; n++) {
        int i = run_at(st, g, base_seed + n);
        double b = i >= 0 ? paired_value(st, i, base_seed + n, inc) : NAN;
        if (i < 0 || !isfinite(b)) break;
        d[n] = st->rows[i].val_bpb - b;
    }
    return n;
}

enum { MAX_SEEDS = PLAN_MAX_SEEDS };  // cmd_research.c checks --max-seeds against it

static void note_baseline(PlanState *st, int i) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    st->n_baseline++;
    for (int k = 0; k <= i; k++)
        if (!strcmp(st->rows[k].kind, "baseline") && ledger_status_ok(st->rows[k].status)) {
            double v = st->rows[k].val_bpb;
            lo = fmin(lo, v), hi = fmax(hi, v), sum += v;
        }
    st->baseline_mean = sum / st->n_baseline;
    st->spread = st->n_baseline >= 2 ? hi - lo : 0;
    if (st->best < 0) st->best = 0;
}

// The incumbent's mean over the seeds it has run.
static void note_best(PlanState *st) {
    double sum = 0;
    int k = 0;
    for (int i = 0; i < st->n; i++)
        if (st->group[i] == st->best && ledger_status_ok(st->rows[i].status) && strncmp(st->rows[i].kind, "rung", 4))
            sum += st->rows[i].val_bpb, k++;
    st->best_score = k ? sum / k : NAN, st->best_seeds = k;
}

double plan_machine_s(const LedgerRow *rows, int n) {
    double t = 0;
    for (int i = 0; i < n; i++) {
        double w = isfinite(rows[i].wall_s) ? rows[i].wall_s : 0;
        for (; rows[i].batch > 0 && i + 1 < n && rows[i + 1].batch == rows[i].batch; i++)
            if (isfinite(rows[i + 1].wall_s)) w = fmax(w, rows[i + 1].wall_s);
        t += w;
    }
    return t;
}

int plan_state_build(const PlanCtx *ctx, const LedgerRow *rows, int n, PlanState *st) {
    memset(st, 0, sizeof *st);
    st->rows = rows, st->n = n, st->best = -1, st->open = -1, st->best_score = NAN, st->baseline_mean = NAN;
    st->promoting = st->promote_from = st->promote_prev = -1;
    st->configs = xcalloc((size_t)n + 1, sizeof *st->configs);
    st->group = xcalloc((size_t)n + 1, sizeof *st->group);
    stats_seq_init(&st->seq, ctx->alpha, ctx->max_seeds);
    const double s0 = plan_config_seed(ctx->base);
    double d[MAX_SEEDS];
    for (int i = 0; i < n; i++) {
        const LedgerRow *r = &rows[i];
        int follows = !strcmp(r->kind, "seed") || !strcmp(r->kind, "pair") || !strcmp(r->kind, "twin");
        st->group[i] = !strcmp(r->kind, "baseline") ? 0 : follows && r->parent ? st->group[r->parent - 1] : i;
        if (!strcmp(r->status, "rejected")) continue;
        const cJSON *parent = r->parent ? st->configs[r->parent - 1] : ctx->base;
        if (!parent) return err_set("trial %d: its parent %d has no config", r->trial, r->parent);
        if (!(st->configs[i] = merge(parent, r->change, r->trial))) return -1;
        if (!strncmp(r->kind, "promote", 7)) {  // the promotion of the last keep (4. in plan.h)
            if (st->promoting < 0) continue;
            int failed = !ledger_status_ok(r->status), ends = failed || !strcmp(r->status, "transfer") ||
                                                            !strcmp(r->status, "no-transfer");
            if (failed || !strcmp(r->status, "no-transfer")) st->best = st->promote_prev, stats_pool_new_incumbent(&st->pool);
            if (ends) st->promoting = -1;
            continue;
        }
        if (!strcmp(r->kind, "baseline")) {
            if (ledger_status_ok(r->status)) note_baseline(st, i);
            continue;
        }
        int g = st->group[i], cand = is_candidate_head(st->rows[g].kind) && strcmp(r->kind, "pair") && strcmp(r->kind, "twin");
        if (!cand) continue;
        if (!strcmp(r->status, "pending")) {
            st->open = g;
            continue;
        }
        if (st->open == g) st->open = -1;  // decided, crashed or timed out: the candidate is closed
        if (strcmp(r->status, "keep") && strcmp(r->status, "discard")) continue;
        int k = plan_paired_diffs(st, g, st->best, s0, d, MAX_SEEDS);
        stats_pool_add_candidate(&st->pool, d, k);
        if (!strcmp(r->status, "keep")) {
            if (ctx->promote_budget_s > 0) st->promoting = g, st->promote_from = i, st->promote_prev = st->best;
            st->best = g, stats_pool_new_incumbent(&st->pool);
        }
    }
    // the baseline's seeds as single runs: var(a - b) <= 2 var(a), the bound pairing improves on
    double base[MAX_SEEDS];
    int nb = 0;
    for (int i = 0; i < n && nb < MAX_SEEDS; i++)
        if (!strcmp(rows[i].kind, "baseline") && ledger_status_ok(rows[i].status)) base[nb++] = rows[i].val_bpb;
    stats_pool_add(&st->pool, base, nb, 2);
    if (st->best >= 0) note_best(st);
    return 0;
}

void plan_state_free(PlanState *st) {
    for (int i = 0; i < st->n; i++) cJSON_Delete(st->configs[i]);
    free(st->configs);
    free(st->group);
    memset(st, 0, sizeof *st);
}

// ---------------------------------------------------------------------------------------------
// Proposals
// ---------------------------------------------------------------------------------------------

static int tried_before(const PlanState *st, const cJSON *config) {
    for (int i = 0; i < st->n; i++)
        if (st->configs[i] && cJSON_Compare(st->configs[i], config, 1)) return st->rows[i].trial;
    return 0;
}

// How many trials of the ledger have moved each param of the space (rejected proposals excluded).
static void count_moves(const PlanCtx *ctx, const PlanState *st, int *moves) {
    for (int k = 0; k < ctx->space->n_params; k++) moves[k] = 0;
    for (int i = 0; i < st->n; i++) {
        if (!strcmp(st->rows[i].status, "rejected") || !st->rows[i].change) continue;
        cJSON *c = cJSON_Parse(st->rows[i].change), *e;
        cJSON_ArrayForEach(e, c)
            for (int k = 0; k < ctx->space->n_params; k++)
                if (!strcmp(e->string, ctx->space->params[k].name)) moves[k]++;
        cJSON_Delete(c);
    }
}

// The param a one-setting change moves: uniformly among the least-moved params that have not
// failed too often in this round (every param is tried once before any is tried twice, so an
// hour of screens covers the space instead of redrawing a few knobs); -1 when every param has
// failed (then any param, at random).
#define PARAM_FAILS 40
static int least_moved(const PlanCtx *ctx, const int *moves, const int *fails, Rng *rng) {
    int n = ctx->space->n_params, min = -1, count = 0;
    for (int k = 0; k < n; k++)
        if (fails[k] < PARAM_FAILS && (min < 0 || moves[k] < min)) min = moves[k];
    if (min < 0) return -1;
    for (int k = 0; k < n; k++) count += fails[k] < PARAM_FAILS && moves[k] == min;
    int pick = (int)(rng_uniform(rng) * count);
    for (int k = 0; k < n; k++)
        if (fails[k] < PARAM_FAILS && moves[k] == min && pick-- == 0) return k;
    return -1;
}

// Draw changes until one is feasible, changes something and was not tried before.
// The proposal's number: 1 + the rows so far that were proposals (not a baseline seed, another seed
// of a candidate, an incumbent's pair, twin or promotion run), so that the draws do not depend on
// how many of those a research ran (--lanes 2 runs twins where one lane runs pairs).
static uint64_t proposal_number(const PlanState *st) {
    static const char *const not_proposals[] = {"baseline", "seed", "pair", "twin", "promote", "promote-pair", NULL};
    uint64_t k = 1;
    for (int i = 0; i < st->n; i++) {
        int skip = 0;
        for (int j = 0; not_proposals[j]; j++) skip |= !strcmp(st->rows[i].kind, not_proposals[j]);
        k += !skip;
    }
    return k;
}

static int draw(const PlanCtx *ctx, const PlanState *st, TrialPlan *p, const cJSON *from, int sample) {
    Rng rng;
    rng_seed(&rng, ctx->seed ^ (proposal_number(st) * 0x9E3779B97F4A7C15ULL));
    char last_err[512] = "";
    int np = ctx->space->n_params, *moves = xcalloc((size_t)np, sizeof *moves), *fails = xcalloc((size_t)np, sizeof *fails);
    if (!sample) count_moves(ctx, st, moves);
    for (int k = 0; k < MAX_DRAWS; k++) {
        int param = sample ? -1 : least_moved(ctx, moves, fails, &rng);
        cJSON *change = sample ? space_sample(ctx->space, &rng)
                        : param >= 0 ? space_mutate_param(ctx->space, &rng, from, param)
                                     : space_mutate(ctx->space, &rng, from);
        if (param >= 0) fails[param]++;  // counts only until a draw is taken
        cJSON *config, *diff;
        if (space_apply(ctx->space, from, change, &config, &diff) != 0) {
            snprintf(last_err, sizeof last_err, "%s", err_msg());
            cJSON_Delete(change);
            continue;
        }
        if (diff->child && !tried_before(st, config)) {
            p->change = change, p->config = config, p->diff = diff;
            free(moves), free(fails);
            return 0;
        }
        cJSON_Delete(change), cJSON_Delete(config), cJSON_Delete(diff);
    }
    free(moves), free(fails);
    return err_set("no untried feasible %s found in %d draws (last infeasible one: %s); the space is exhausted "
                   "around the best or its constraints exclude nearly everything",
                   sample ? "sample" : "one-setting change", MAX_DRAWS, last_err[0] ? last_err : "none");
}

static void set_kind(TrialPlan *p, const char *kind, int parent, double budget) {
    snprintf(p->kind, sizeof p->kind, "%s", kind);
    p->parent = parent, p->budget_s = budget;
}

static int seed_change(TrialPlan *p, const cJSON *from, double seed) {
    p->change = cJSON_CreateObject();
    cJSON_AddNumberToObject(p->change, "seed", seed);
    p->config = cJSON_Duplicate(from, 1);
    cJSON_ReplaceItemInObjectCaseSensitive(p->config, "seed", cJSON_CreateNumber(seed));
    p->diff = cJSON_Duplicate(p->change, 1);
    return 0;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s ? s : xstrdup("");
}

// ---------------------------------------------------------------------------------------------
// Successive halving
// ---------------------------------------------------------------------------------------------

double plan_rung_budget(const PlanCtx *ctx, int r) {
    double b = ctx->budget_s / pow(ctx->eta, ctx->rungs - 1 - r);
    return round(b * 10) / 10;
}

int plan_rung_size(const PlanCtx *ctx, int r) {
    int n = ctx->bracket;
    for (int k = 0; k < r; k++) n = (n + ctx->eta - 1) / ctx->eta;
    return n;
}

static int rung_of(const PlanCtx *ctx, const char *kind) {
    if (!strcmp(kind, "final")) return ctx->rungs - 1;
    if (!strncmp(kind, "rung", 4)) return atoi(kind + 4);
    return -1;
}

typedef struct {
    int *idx[16];   // row indices per rung
    int count[16];
    int any;
} Bracket;

static int ok_at(const PlanState *st, const Bracket *b, int r) {
    int k = 0;
    for (int i = 0; i < b->count[r]; i++) k += ledger_status_ok(st->rows[b->idx[r][i]].status);
    return k;
}

// Rows planned at rung r of bracket b (known once rung r-1 is complete).
static int planned(const PlanCtx *ctx, const PlanState *st, const Bracket *b, int r) {
    if (r == 0) return ctx->bracket;
    int prev = planned(ctx, st, b, r - 1), ok = ok_at(st, b, r - 1), up = (prev + ctx->eta - 1) / ctx->eta;
    return up < ok ? up : ok;
}

// The first rung with rows still to run, or -1 when the bracket is complete.
static int open_rung(const PlanCtx *ctx, const PlanState *st, const Bracket *b) {
    for (int r = 0; r < ctx->rungs; r++)
        if (b->count[r] < planned(ctx, st, b, r)) return r;
    return -1;
}

static void bracket_reset(Bracket *b) {
    for (int r = 0; r < 16; r++) b->count[r] = 0;
    b->any = 0;
}

// The current bracket: rows of rung kinds, a new bracket starting at a rung-0 row after a
// complete one.
static void current_bracket(const PlanCtx *ctx, const PlanState *st, Bracket *b) {
    for (int r = 0; r < 16; r++) b->idx[r] = xcalloc((size_t)st->n + 1, sizeof(int)), b->count[r] = 0;
    b->any = 0;
    for (int i = 0; i < st->n; i++) {
        int r = rung_of(ctx, st->rows[i].kind);
        if (r < 0 || r >= ctx->rungs) continue;
        if (r == 0 && b->any && open_rung(ctx, st, b) < 0) bracket_reset(b);
        b->idx[r][b->count[r]++] = i;
        b->any = 1;
    }
}

static int by_val(const PlanState *st, int a, int b) {
    double va = st->rows[a].val_bpb, vb = st->rows[b].val_bpb;
    return va < vb ? -1 : va > vb ? 1 : st->rows[a].trial - st->rows[b].trial;
}

static int plan_halving(const PlanCtx *ctx, const PlanState *st, TrialPlan *p) {
    Bracket b;
    current_bracket(ctx, st, &b);
    int r = b.any ? open_rung(ctx, st, &b) : -1, rc = 0;
    if (r <= 0) {
        if (r < 0) p->new_bracket = 1;
        char kind[16];
        snprintf(kind, sizeof kind, ctx->rungs > 1 ? "rung0" : "final");
        set_kind(p, kind, st->rows[st->best].trial, plan_rung_budget(ctx, 0));
        rc = draw(ctx, st, p, st->configs[st->best], 0);
        if (rc == 0) {
            char *d = space_describe_diff(st->configs[st->best], p->diff);
            p->description = xprintf("%s", d);
            free(d);
        }
    } else {  // promote the next best of rung r-1
        int n = 0, *ok = xmalloc(((size_t)b.count[r - 1] + 1) * sizeof *ok);
        for (int i = 0; i < b.count[r - 1]; i++)
            if (ledger_status_ok(st->rows[b.idx[r - 1][i]].status)) ok[n++] = b.idx[r - 1][i];
        for (int i = 1; i < n; i++)  // insertion sort by val_bpb, then trial id
            for (int k = i; k > 0 && by_val(st, ok[k - 1], ok[k]) > 0; k--) {
                int t = ok[k];
                ok[k] = ok[k - 1], ok[k - 1] = t;
            }
        int pick = ok[b.count[r]];
        char kind[16];
        if (r == ctx->rungs - 1) snprintf(kind, sizeof kind, "final");
        else snprintf(kind, sizeof kind, "rung%d", r);
        set_kind(p, kind, st->rows[pick].trial, plan_rung_budget(ctx, r));
        p->change = cJSON_CreateObject();
        p->config = cJSON_Duplicate(st->configs[pick], 1);
        p->diff = cJSON_CreateObject();
        const LedgerRow *pr = &st->rows[pick];
        // Describe the candidate by its change from the best it came from (the rung-0 row).
        const LedgerRow *root = pr;
        while (rung_of(ctx, root->kind) > 0 && root->parent) root = &st->rows[root->parent - 1];
        char *orig = xstrdup(root->description);
        char *cut = strstr(orig, "; ");
        if (cut) *cut = 0;
        p->description = xprintf("%s (promoted #%d: %.4f, %d of %d at %g s)", orig, pr->trial, pr->val_bpb,
                                 b.count[r] + 1, n, pr->budget_s);
        free(orig);
        free(ok);
    }
    for (int k = 0; k < 16; k++) free(b.idx[k]);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// The next trial
// ---------------------------------------------------------------------------------------------

static int count_kind(const PlanState *st, const char *kind) {
    int k = 0;
    for (int i = 0; i < st->n; i++) k += !strcmp(st->rows[i].kind, kind);
    return k;
}

static int plan_baseline(const PlanCtx *ctx, const PlanState *st, TrialPlan *p, int nb) {
    if (nb == 0) {
        set_kind(p, "baseline", 0, ctx->budget_s);
        p->change = cJSON_CreateObject();
        p->config = cJSON_Duplicate(ctx->base, 1);
        p->diff = cJSON_CreateObject();
        p->description = xprintf("baseline (seed %.0f)", plan_config_seed(ctx->base));
        return 0;
    }
    double seed = plan_config_seed(ctx->base) + nb;
    set_kind(p, "baseline", 1, ctx->budget_s);
    seed_change(p, st->configs[0], seed);
    p->description = xprintf("baseline, seed %.0f (measures the seed spread)", seed);
    return 0;
}

// Whether group g has a crashed or timed-out run on seed.
// The val_bpb of the promotion's run of `kind` ("promote" or "promote-pair") on seed, NaN when it has
// none that finished.
static double promote_value(const PlanState *st, const char *kind, double seed) {
    for (int i = st->promote_from + 1; st->promoting >= 0 && i < st->n; i++)
        if (!strcmp(st->rows[i].kind, kind) && ledger_status_ok(st->rows[i].status) && row_seed(st, i) == seed)
            return st->rows[i].val_bpb;
    return NAN;
}

int plan_promotion_diffs(const PlanState *st, double base_seed, double *d, int cap) {
    int n = 0;
    for (; st->promoting >= 0 && n < cap; n++) {
        double seed = base_seed + PLAN_PROMOTE_SEED0 + n;
        double c = promote_value(st, "promote", seed), b = promote_value(st, "promote-pair", seed);
        if (!isfinite(c) || !isfinite(b)) break;
        d[n] = c - b;
    }
    return n;
}

// The promotion's next run: the incumbent it beat on the next fresh seed, then the kept candidate.
static int plan_promotion(const PlanCtx *ctx, const PlanState *st, TrialPlan *p) {
    const double s0 = plan_config_seed(ctx->base);
    double d[MAX_SEEDS];
    int n = plan_promotion_diffs(st, s0, d, MAX_SEEDS);
    double seed = s0 + PLAN_PROMOTE_SEED0 + n;
    int cand = st->rows[st->promoting].trial, prev = st->rows[st->promote_prev].trial;
    if (!isfinite(promote_value(st, "promote-pair", seed))) {
        set_kind(p, "promote-pair", prev, ctx->promote_budget_s);
        seed_change(p, st->configs[st->promote_prev], seed);
        p->description = xprintf("promotion of #%d: the incumbent it beat (#%d) on seed %.0f at %g s", cand, prev, seed,
                                 ctx->promote_budget_s);
        return 0;
    }
    set_kind(p, "promote", cand, ctx->promote_budget_s);
    seed_change(p, st->configs[st->promoting], seed);
    p->description = xprintf("promotion of #%d on seed %.0f at %g s (pair %d of %d)", cand, seed, ctx->promote_budget_s,
                             n + 1, ctx->promote_seeds);
    return 0;
}

static int failed_at(const PlanState *st, int g, double seed) {
    for (int i = 0; i < st->n; i++)
        if (st->group[i] == g && (!strcmp(st->rows[i].status, "crash") || !strcmp(st->rows[i].status, "timeout")) &&
            row_seed(st, i) == seed)
            return 1;
    return 0;
}

// The open candidate's next run: the incumbent on the next seed first if it has not run it
// ("pair"), else the candidate on it ("seed"). 1 when the candidate cannot go on (the
// incumbent's run on that seed failed): it stays pending in the ledger and research moves on.
static int plan_next_seed(const PlanCtx *ctx, const PlanState *st, TrialPlan *p) {
    const double s0 = plan_config_seed(ctx->base);
    double d[MAX_SEEDS];
    int g = st->open, n = plan_paired_diffs(st, g, st->best, s0, d, MAX_SEEDS);
    double seed = s0 + n;
    const LedgerRow *head = &st->rows[g];
    if (!ctx->side_by_side && !isfinite(plan_value_at(st, st->best, seed))) {
        if (failed_at(st, st->best, seed)) return 1;
        set_kind(p, "pair", st->rows[st->best].trial, head->budget_s);
        seed_change(p, st->configs[st->best], seed);
        p->description = xprintf("incumbent #%d on seed %.0f, to pair with #%d", st->rows[st->best].trial, seed,
                                 head->trial);
        return 0;
    }
    set_kind(p, "seed", head->trial, head->budget_s);
    seed_change(p, st->configs[g], seed);
    p->description = xprintf("#%d on seed %.0f (seed %d of at most %d)", head->trial, seed, n + 1, ctx->max_seeds);
    return 0;
}

int plan_next(const PlanCtx *ctx, const PlanState *st, TrialPlan *p) {
    memset(p, 0, sizeof *p);
    p->trial = st->n + 1;
    int nb = count_kind(st, "baseline");
    if (nb > 0 && !ledger_status_ok(st->rows[0].status))
        return err_set("the baseline (trial 1) ended with status %s: the base config does not train; fix it (see "
                       "trials/0001/train.log) and start again with another --out",
                       st->rows[0].status);
    if (nb < ctx->baseline_seeds) return plan_baseline(ctx, st, p, nb);
    if (st->promoting >= 0) return plan_promotion(ctx, st, p);
    if (st->open >= 0 && plan_next_seed(ctx, st, p) == 0) return 0;
    const cJSON *best = st->configs[st->best];
    int best_id = st->rows[st->best].trial, rc = 0;
    switch (ctx->strategy) {
    case STRAT_HALVING: return plan_halving(ctx, st, p);
    case STRAT_AGENT:
        set_kind(p, "agent", best_id, ctx->budget_s);
        p->needs_proposal = 1;
        return 0;
    case STRAT_RANDOM:
        set_kind(p, "random", 1, ctx->budget_s);
        rc = draw(ctx, st, p, st->configs[0], 1);
        if (rc == 0) p->description = xprintf("random sample: %d settings differ from the base", cJSON_GetArraySize(p->diff));
        return rc;
    case STRAT_GREEDY:
        set_kind(p, "greedy", best_id, ctx->budget_s);
        rc = draw(ctx, st, p, best, 0);
        if (rc == 0) p->description = space_describe_diff(best, p->diff);
        return rc;
    }
    return err_set("unknown strategy");
}

int plan_take_proposal(const PlanCtx *ctx, const PlanState *st, TrialPlan *p, const cJSON *change, const char *desc) {
    const cJSON *best = st->configs[st->best];
    if (space_validate_change(ctx->space, change) != 0) return -1;
    cJSON *config, *diff;
    if (space_apply(ctx->space, best, change, &config, &diff) != 0) return -1;
    int dup = diff->child ? tried_before(st, config) : 0;
    if (!diff->child || dup) {
        cJSON_Delete(config), cJSON_Delete(diff);
        if (dup) return err_set("this config was already tried as trial %d (see the ledger)", dup);
        return err_set("the change sets every setting to the value the best config already has");
    }
    p->change = cJSON_Duplicate(change, 1), p->config = config, p->diff = diff;
    char *d = space_describe_diff(best, diff);
    p->description = desc && *desc ? xprintf("%s (%s)", d, desc) : xstrdup(d);
    free(d);
    return 0;
}

int plan_wants_twin(const TrialPlan *p) { return is_candidate_head(p->kind) || !strcmp(p->kind, "seed"); }

void plan_twin(const PlanState *st, TrialPlan *p, TrialPlan *twin) {
    memset(twin, 0, sizeof *twin);
    twin->trial = p->trial++;
    set_kind(twin, "twin", st->rows[st->best].trial, p->budget_s);
    double seed = plan_config_seed(p->config);
    seed_change(twin, st->configs[st->best], seed);
    twin->description = xprintf("the incumbent #%d on seed %.0f, beside #%d", st->rows[st->best].trial, seed, p->trial);
}

void plan_free(TrialPlan *p) {
    cJSON_Delete(p->change);
    cJSON_Delete(p->config);
    cJSON_Delete(p->diff);
    free(p->description);
    memset(p, 0, sizeof *p);
}

// ---------------------------------------------------------------------------------------------
// Decisions
// ---------------------------------------------------------------------------------------------

// A promotion's candidate run: pending until its last pair, then transfer when the mean paired
// difference at the promotion budget is below 0 (with its 95% t interval and t statistic in the text).
static void decide_promotion(const PlanCtx *ctx, const PlanState *st, const TrialPlan *p, double val, PlanVerdict *v) {
    const double s0 = plan_config_seed(ctx->base), seed = plan_config_seed(p->config);
    double d[MAX_SEEDS];
    int n = plan_promotion_diffs(st, s0, d, MAX_SEEDS - 1);
    v->paired = promote_value(st, "promote-pair", seed);
    if (!isfinite(v->paired) || seed != s0 + PLAN_PROMOTE_SEED0 + n) {  // planned so that this cannot happen
        snprintf(v->status, sizeof v->status, "no-transfer");
        v->text = xprintf("%.4f: no run of the incumbent it beat on seed %.0f to pair with", val, seed);
        return;
    }
    d[n++] = val - v->paired;
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++) mean += d[i] / n;
    for (int i = 0; i < n; i++) ss += (d[i] - mean) * (d[i] - mean);
    double sd = n >= 2 ? sqrt(ss / (n - 1)) : NAN, se = sd / sqrt(n);
    double half = n >= 2 ? stats_t_quantile(0.975, n - 1) * se : NAN;
    v->z = n >= 2 && se > 0 ? -mean / se : NAN;
    int last = n >= ctx->promote_seeds;
    snprintf(v->status, sizeof v->status, "%s", !last ? "pending" : mean < 0 ? "transfer" : "no-transfer");
    v->text = xprintf("%.4f vs %.4f (the incumbent it beat) at %g s: d %+.4f +- %.4f (95%% CI) over %d of %d pairs%s", val,
                      v->paired, p->budget_s, mean, half, n, ctx->promote_seeds,
                      !last ? "" : mean < 0 ? ": transferred" : ": did not transfer; the incumbent it beat is back");
}

void plan_decide(const PlanCtx *ctx, const PlanState *st, const TrialPlan *p, double val, const char *failed,
                 PlanVerdict *v) {
    v->paired = v->z = NAN;
    v->text = NULL;
    if (failed) {
        snprintf(v->status, sizeof v->status, "%s", failed);
        v->text = xprintf("%s", failed);
        return;
    }
    if (!strcmp(p->kind, "baseline")) {
        snprintf(v->status, sizeof v->status, "%s", p->parent ? "replicate" : "keep");
        v->text = p->parent ? xprintf("%.4f (first seed %.4f: spread %.4f)", val, st->rows[0].val_bpb,
                                      fabs(val - st->rows[0].val_bpb))
                            : xprintf("%.4f", val);
        return;
    }
    if (rung_of(ctx, p->kind) >= 0 && strcmp(p->kind, "final")) {
        snprintf(v->status, sizeof v->status, "screen");
        v->text = xprintf("%.4f at %g s", val, p->budget_s);
        return;
    }
    if (!strcmp(p->kind, "pair") || !strcmp(p->kind, "promote-pair") || !strcmp(p->kind, "twin")) {
        snprintf(v->status, sizeof v->status, "replicate");
        v->text = xprintf("%.4f", val);
        return;
    }
    if (!strcmp(p->kind, "promote")) {
        decide_promotion(ctx, st, p, val, v);
        return;
    }
    // a candidate's run: its paired differences so far, this one last
    const double s0 = plan_config_seed(ctx->base), seed = plan_config_seed(p->config);
    double d[MAX_SEEDS];
    int g = !strcmp(p->kind, "seed") ? st->group[p->parent - 1] : -1;
    int n = g >= 0 ? plan_paired_diffs(st, g, st->best, s0, d, MAX_SEEDS - 1) : 0;
    v->paired = paired_value(st, st->n, seed, st->best);
    if (!isfinite(v->paired) || seed != s0 + n) {  // planned so that this cannot happen (but a crashed twin)
        snprintf(v->status, sizeof v->status, "discard");
        v->text = xprintf("%.4f: no incumbent run on seed %.0f to pair with", val, seed);
        return;
    }
    d[n++] = val - v->paired;
    double sd = stats_pool_sd(&st->pool), df = stats_pool_df(&st->pool), z, pv, half, mean = 0;
    for (int i = 0; i < n; i++) mean += d[i];
    mean /= n;
    SeqDecision dec = isfinite(sd) && sd > 0 ? stats_seq_decide(&st->seq, d, n, sd, df, &z, &pv, &half) : SEQ_CONTINUE;
    if (!(isfinite(sd) && sd > 0)) z = pv = half = NAN, dec = n >= st->seq.max_seeds ? SEQ_DISCARD : SEQ_CONTINUE;
    const char *why = "";
    if (dec == SEQ_KEEP && !(mean < -ctx->threshold)) dec = SEQ_DISCARD, why = " (significant, but not beyond --threshold)";
    else if (dec == SEQ_DISCARD && n >= st->seq.max_seeds && mean < 0) why = " (the seed cap)";
    else if (dec == SEQ_DISCARD && z < -STATS_CLEARLY_WORSE) why = " (clearly worse)";
    else if (dec == SEQ_DISCARD) why = " (no better on average)";
    v->z = z;
    snprintf(v->status, sizeof v->status, "%s", dec == SEQ_KEEP ? "keep" : dec == SEQ_DISCARD ? "discard" : "pending");
    char bar[48] = "a keep needs a second seed";
    if (n >= 2) snprintf(bar, sizeof bar, "keep above %.2f", stats_t_quantile(stats_norm_cdf(st->seq.boundary), df));
    v->text = xprintf("%.4f vs incumbent %.4f on seed %.0f: d %+.4f +- %.4f over %d seed%s (z %.2f, %s, p %.4f; "
                      "pooled sd %.4f, %.0f df)%s",
                      val, v->paired, seed, mean, half, n, n == 1 ? "" : "s", z, bar, pv, sd, df, why);
}
