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

static int by_score(const void *a, const void *b) {
    double x = ((const PlanCandidate *)a)->score, y = ((const PlanCandidate *)b)->score;
    return (x > y) - (x < y);
}

int plan_rank(const PlanQuery *q, PlanCandidate *out, int cap) {
    const PlanFamily *f = &q->family;
    if (!(q->budget_s > 0) || q->ranks < 1 || !q->tp) return err_usage("plan: needs a budget, ranks >= 1 and a throughput model");
    const ScalingData data = q->data ? *q->data : (ScalingData){1, {1}, {q->train_tokens}};
    int n = 0;
    const int64_t min_batch = (int64_t)f->device_batch * f->seq_len * q->ranks;
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
            c.tok_s = tp_predict_tok_s(q->tp, &s);
            if (!isfinite(c.tok_s)) break;
            c.tokens = c.tok_s * q->budget_s;
            PlanRules r = plan_rules(c.tokens, min_batch);
            if (r.batch_tokens == c.rules.batch_tokens) { c.rules = r; break; }
            c.rules = r;
        }
        if (!isfinite(c.tok_s)) continue;
        c.mfu = q->peak_flops > 0 ? c.tok_s * c.flops_token / q->peak_flops : NAN;
        c.ratio = c.tokens / c.N;
        c.epochs = q->train_tokens > 0 ? c.tokens / q->train_tokens : 0;
        c.epochs_max = 0;
        for (int s = 0; s < data.n; s++)
            if (data.U[s] > 0) c.epochs_max = fmax(c.epochs_max, data.w[s] * c.tokens / data.U[s]);
        c.levers = c.epochs_max >= PLAN_REPEAT_EPOCHS;
        if (q->fit) {
            scaling_predict_mix(q->fit, c.N, c.tokens, &data, &c.L, &c.L_sd);
            c.score = c.L;
        } else {  // the rule counts repeated tokens at the prior's discount
            c.L = c.L_sd = NAN;
            double eff = scaling_effective_mix(c.tokens, &data, SCALING_RSTAR_PRIOR);
            c.score = fabs(log(eff / c.N / PLAN_TOKENS_PER_PARAM));
        }
        out[n++] = c;
    }
    if (n == 0) return err_usage("plan: no depth in [%d, %d] gives a shape the throughput model can price", f->min_depth,
                                 f->max_depth);
    qsort(out, (size_t)n, sizeof *out, by_score);
    return n;
}
