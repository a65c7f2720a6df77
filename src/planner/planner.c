// planner/planner.c — candidates, the rules, the ranking, and the plan as trainer flags.
#include "planner/planner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

PlanFamily plan_family_default(void) {
    return (PlanFamily){.head_dim = 128, .seq_len = 256, .vocab_size = 8192, .device_batch = 16, .min_depth = 1,
                        .max_depth = 12};
}

ModelConfig plan_shape(const PlanFamily *f, int depth) {
    ModelConfig m = model_config_from_depth(depth, f->vocab_size, f->seq_len);
    int c = (64 * depth + f->head_dim - 1) / f->head_dim * f->head_dim;
    m.n_embd = c;
    m.head_dim = f->head_dim;
    m.n_head = m.n_kv_head = c / f->head_dim;
    return m;
}

PlanRules plan_rules(double tokens, int64_t min_batch) {
    double b = PLAN_RULE_B_REF * pow(fmax(tokens, 1) / PLAN_RULE_D_REF, PLAN_RULE_B_EXP);
    int64_t B = (int64_t)1 << (int)fmax(0, fmin(40, round(log2(b))));
    if (B < min_batch) B = min_batch;
    // a power of two above min_batch need not be a multiple of it: round up to one
    B = (B + min_batch - 1) / min_batch * min_batch;
    double wd = PLAN_RULE_WD_REF * sqrt((double)B / PLAN_RULE_B_REF) * (PLAN_RULE_D_REF / fmax(tokens, 1));
    return (PlanRules){B, fmin(wd, 10.0)};
}

void plan_discount_at(const PlanDiscountCurve *c, double D, double *delta, double *se, int *where) {
    int w = 0, a = 0;
    double t = 0;
    if (c->n >= 2) {
        const double x = log(fmax(D, 1));
        while (a < c->n - 2 && x > log(c->D[a + 1])) a++;  // the segment [a, a+1] holding x, or the nearest end's
        t = (x - log(c->D[a])) / (log(c->D[a + 1]) - log(c->D[a]));
        w = t < 0 ? -1 : t > 1 ? 1 : 0;
    }
    const double sb = c->n >= 2 ? c->se[a + 1] : 0;
    *delta = (1 - t) * c->delta[a] + (c->n >= 2 ? t * c->delta[a + 1] : 0);
    *se = sqrt((1 - t) * (1 - t) * c->se[a] * c->se[a] + t * t * sb * sb);
    *delta = fmin(fmax(*delta, c->lo), c->hi);
    if (where) *where = w;
}

// A move of the descent: source s's share set to each point of the grid in turn, the amount taken
// from (or given to) source `from`, within the shares' bounds; the best if it gains. 1 if it moved.
static int line_search(const ScalingLaw *l, double N, double D, ScalingData *d, int s, int from, double *best) {
    double pool = d->w[s] + d->w[from], w_best = d->w[s];
    double cap = from == 0 ? fmin(pool, PLAN_MIX_MAX_EXTRA - (1 - d->w[0] - d->w[s])) : pool;
    int moved = 0;
    for (int g = 0; g * PLAN_MIX_STEP <= cap + 1e-9; g++) {
        d->w[s] = g * PLAN_MIX_STEP, d->w[from] = pool - d->w[s];
        double L = scaling_eval_mix(l, N, D, d);
        if (L < *best - PLAN_MIX_MIN_GAIN) *best = L, w_best = d->w[s], moved = 1;
    }
    d->w[s] = w_best, d->w[from] = pool - w_best;
    return moved;
}

void plan_choose_shares(const ScalingLaw *l, double N, double D, ScalingData *d) {
    for (int s = 1; s < d->n; s++) d->w[s] = 0;
    d->w[0] = 1;
    double best = scaling_eval_mix(l, N, D, d);
    // Descent over pairs: each extra source's share against the corpus's, then against each other
    // extra's (when the cap binds, shares can only move between extras), until nothing gains.
    for (int round = 0; round < 200; round++) {
        int moved = 0;
        for (int s = 1; s < d->n; s++) moved |= line_search(l, N, D, d, s, 0, &best);
        for (int s = 1; s < d->n; s++)
            for (int t = 1; t < d->n; t++)
                if (t != s) moved |= line_search(l, N, D, d, s, t, &best);
        if (!moved) break;
    }
}

static int by_score(const void *a, const void *b) {
    double x = ((const PlanCandidate *)a)->score, y = ((const PlanCandidate *)b)->score;
    return (x > y) - (x < y);
}

int plan_rank(const PlanQuery *q, PlanCandidate *out, int cap) {
    const PlanFamily *f = &q->family;
    if (!(q->budget_s > 0) || q->ranks < 1 || !q->tp) return err_usage("plan: needs a budget, ranks >= 1 and a throughput model");
    const ScalingData data = q->data ? *q->data : (ScalingData){1, {1}, {q->train_tokens}, {0}, {0}};
    int n = 0;
    const int64_t min_batch = (int64_t)f->device_batch * f->seq_len * q->ranks;
    const double sustained = q->budget_s >= TP_SUSTAINED_MIN_S ? tp_sustained_factor(q->tp, NULL) : 1.0;
    for (int d = f->min_depth; d <= f->max_depth && n < cap; d++) {
        PlanCandidate c = {.depth = d, .model = plan_shape(f, d), .device_batch = f->device_batch};
        if (model_config_validate(&c.model) != 0) { err_clear(); continue; }
        c.N = (double)model_config_scaling_params(&c.model);
        c.params = (double)model_config_num_params(&c.model);
        c.flops_token = model_config_flops_per_token(&c.model);
        // The batch depends on D and D (a little) on the batch: settle it in a few rounds.
        c.rules = plan_rules(PLAN_RULE_D_REF, min_batch);
        for (int it = 0; it < 4; it++) {
            TpShape s = {c.model, c.rules.batch_tokens, f->device_batch, q->ranks, 5};
            c.tok_s = tp_predict_tok_s(q->tp, &s) * sustained;
            if (!isfinite(c.tok_s)) break;
            c.tokens = c.tok_s * q->budget_s;
            PlanRules r = plan_rules(c.tokens, min_batch);
            if (r.batch_tokens == c.rules.batch_tokens) { c.rules = r; break; }
            c.rules = r;
        }
        if (!isfinite(c.tok_s)) continue;
        c.mfu = q->peak_flops > 0 ? c.tok_s * c.flops_token / q->peak_flops : NAN;
        c.ratio = c.tokens / c.N;
        c.data = data;
        for (int s = 0; q->curves && s < data.n; s++)
            if (q->curves[s].n > 0) plan_discount_at(&q->curves[s], c.tokens, &c.data.discount[s], &c.data.discount_se[s], NULL);
        if (q->choose_mix && q->fit && data.n > 1) plan_choose_shares(&q->fit->law, c.N, c.tokens, &c.data);
        else if (q->choose_mix)  // nothing to price a mixture by: the corpus alone
            for (int s = 0; s < data.n; s++) c.data.w[s] = s == 0;
        double U_read = 0;  // the unique tokens of the sources it reads
        for (int s = 0; s < c.data.n; s++)
            if (c.data.w[s] > 0 && c.data.U[s] > 0) U_read += c.data.U[s];
        c.epochs = U_read > 0 ? c.tokens / U_read : 0;
        c.epochs_max = 0;
        for (int s = 0; s < c.data.n; s++)
            if (c.data.U[s] > 0) c.epochs_max = fmax(c.epochs_max, c.data.w[s] * c.tokens / c.data.U[s]);
        c.average = c.epochs_max >= PLAN_REPEAT_EPOCHS;
        if (q->fit) {
            scaling_predict_mix(q->fit, c.N, c.tokens, &c.data, &c.L, &c.L_sd);
            double var = 0;  // the sources' measured worth is uncertain too: its share of the spread
            for (int s = 0; s < c.data.n; s++) {
                if (!(c.data.w[s] > 0 && c.data.discount_se[s] > 0)) continue;
                ScalingData up = c.data;
                up.discount[s] += c.data.discount_se[s];
                double dl = scaling_eval_mix(&q->fit->law, c.N, c.tokens, &up) - scaling_eval_mix(&q->fit->law, c.N, c.tokens, &c.data);
                var += dl * dl;
            }
            if (var > 0) c.L_sd = sqrt((isfinite(c.L_sd) ? c.L_sd * c.L_sd : 0) + var);
            c.score = c.L;
        } else {  // the rule counts repeated tokens at the prior's discount
            c.L = c.L_sd = NAN;
            double eff = scaling_effective_mix(c.tokens, &c.data, SCALING_RSTAR_PRIOR);
            c.score = fabs(log(eff / c.N / PLAN_TOKENS_PER_PARAM));
        }
        // The law promises a loss that falls with every repeat; a model this large for its data
        // memorises instead, so its prediction is no ground to pick it.
        c.memorises = !scaling_in_domain(c.params, c.tokens, U_read);
        if (c.memorises) c.score += 1e6;
        c.regularise = c.average && c.memorises;
        out[n++] = c;
    }
    if (n == 0) return err_usage("plan: no depth in [%d, %d] gives a shape the throughput model can price", f->min_depth,
                                 f->max_depth);
    qsort(out, (size_t)n, sizeof *out, by_score);
    return n;
}
