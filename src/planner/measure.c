// planner/measure.c — calibration, held-out check and ladder runs through research/trial.h.
#include "planner/measure.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/settings.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_file.h"

// Spread over what the throughput terms separate: width (GEMM FLOPs vs bytes), T (attention),
// depth (per-layer calls), batch (per-step costs), head dim; up to the sizes a long budget picks
// (width 640, T 1024), so that those are not extrapolated.
#define CAL(depth, width, hd, T, batch) {depth, width, hd, T, batch, PLAN_CAL_BUDGET_S, 0, 0, NULL, 0}
const PlanPoint PLAN_CAL_POINTS[] = {
    CAL(2, 128, 128, 256, 16384), CAL(1, 128, 128, 256, 8192),   CAL(4, 256, 128, 256, 16384),
    CAL(2, 256, 128, 512, 16384), CAL(6, 384, 128, 256, 16384),  CAL(4, 256, 64, 512, 16384),
    CAL(8, 512, 128, 256, 16384), CAL(2, 128, 128, 1024, 16384), CAL(4, 256, 128, 1024, 32768),
    CAL(1, 64, 64, 256, 4096),    CAL(3, 256, 128, 256, 4096),  CAL(10, 640, 128, 256, 16384),
    CAL(6, 384, 128, 1024, 16384),
};
const int PLAN_N_CAL = sizeof PLAN_CAL_POINTS / sizeof *PLAN_CAL_POINTS;

const PlanPoint PLAN_HELDOUT_POINTS[] = {
    CAL(3, 192, 64, 512, 8192),  CAL(5, 320, 64, 256, 16384),  CAL(2, 256, 128, 256, 32768),
    CAL(6, 384, 128, 512, 16384), CAL(3, 256, 128, 256, 16384), CAL(10, 640, 128, 1024, 32768),
};
const int PLAN_N_HELDOUT = sizeof PLAN_HELDOUT_POINTS / sizeof *PLAN_HELDOUT_POINTS;
#undef CAL

ModelConfig plan_point_model(const PlanPoint *p, int vocab_size) {
    ModelConfig m = model_config_from_depth(p->depth, vocab_size, p->seq_len);
    m.n_embd = p->n_embd;
    m.head_dim = p->head_dim;
    m.n_head = m.n_kv_head = p->n_embd / p->head_dim;
    return m;
}

// The trial's settings, through the settings table's writer: the shape, the batch and what the
// environment fixes; everything else stays at the trainer's defaults.
static cJSON *point_config(const PlanEnv *env, const PlanPoint *p, int excluded_steps, int64_t eval_tokens) {
    TrainConfig c = train_settings_defaults();
    unsigned char g[TRAIN_MAX_SETTINGS] = {0};
    c.model = plan_point_model(p, env->vocab_size);
    static const char *const shape[] = {"depth", "n-embd", "n-head", "n-kv-head", "head-dim", "seq-len", "vocab-size",
                                        "batch-tokens", "device-batch", "excluded-steps", "eval-tokens", "precision"};
    for (size_t i = 0; i < sizeof shape / sizeof *shape; i++) train_setting_give(g, shape[i]);
    c.batch_tokens = p->batch_tokens;
    c.device_batch = env->device_batch;
    c.excluded_steps = excluded_steps;
    c.eval_tokens = eval_tokens;
    c.precision = !strcmp(env->precision, "bf16") ? KP_BF16 : KP_FP32;
    if (p->weight_decay > 0) c.optim.muon_wd = (float)p->weight_decay, train_setting_give(g, "weight-decay");
    if (p->train_tokens > 0) c.train_tokens = p->train_tokens, train_setting_give(g, "train-tokens");
    if (p->mix) c.mix = p->mix, train_setting_give(g, "mix");
    if (p->seed > 0) c.seed = (uint64_t)p->seed, train_setting_give(g, "seed");
    if (env->threads > 0) c.threads = env->threads, train_setting_give(g, "threads");
    if (env->data) c.data_dir = env->data, train_setting_give(g, "data");
    if (env->cache) c.cache_dir = env->cache, train_setting_give(g, "cache");
    return train_settings_to_json_given(&c, g);
}

// Whether dir/trial.json, if any, is the run of config c at budget_s (1; also when there is no
// folder yet). A folder that holds another point's run (the point list changed since) is moved
// aside to dir.superseded[-K], kept as the record it is, and 0 returned; -1 + err if that fails.
// Where the data and cache live is the machine's, not the point's: those are not compared.
static int same_point(const char *dir, const cJSON *c, double budget_s) {
    char *path = path_join(dir, "trial.json");
    int rc = 1;
    if (path_exists(path)) {
        cJSON *old = json_read_object(path, "trial"), *want = cJSON_Duplicate(c, 1);
        err_clear();
        cJSON_DeleteItemFromObjectCaseSensitive(want, "budget");
        cJSON_AddStringToObject(want, "budget", trial_budget_text(budget_s));
        static const char *const machine[] = {"data", "cache"};
        for (size_t i = 0; i < sizeof machine / sizeof *machine; i++) {
            if (old) cJSON_DeleteItemFromObjectCaseSensitive(old, machine[i]);
            cJSON_DeleteItemFromObjectCaseSensitive(want, machine[i]);
        }
        rc = old && cJSON_Compare(old, want, 1);
        cJSON_Delete(old), cJSON_Delete(want);
    }
    free(path);
    if (rc) return 1;
    char aside[4096];
    for (int k = 1; k < 1000; k++) {
        if (k == 1) snprintf(aside, sizeof aside, "%s.superseded", dir);
        else snprintf(aside, sizeof aside, "%s.superseded-%d", dir, k);
        if (!path_exists(aside)) break;
    }
    if (rename(dir, aside) != 0) return err_set("plan: cannot move %s (another point's run) aside to %s: %s", dir, aside, strerror(errno));
    fprintf(stderr, "plan: %s held another point's run (the points changed): kept as %s\n", dir, aside);
    return 0;
}

int plan_measure(const PlanEnv *env, const char *dir, int id, const PlanPoint *p, int excluded_steps,
                 int64_t eval_tokens, TrialResult *res) {
    char name[16];
    snprintf(name, sizeof name, "%04d", id);
    char *trial_dir = path_join(dir, name), *run = path_join(trial_dir, "run");
    memset(res, 0, sizeof *res);
    res->val_bpb = res->tokens = res->tok_per_s = res->mfu = res->peak_mb = res->train_s = res->unique_tokens = NAN;
    cJSON *c = point_config(env, p, excluded_steps, eval_tokens);
    int same = same_point(trial_dir, c, p->budget_s);
    if (same < 0) {
        cJSON_Delete(c);
        free(trial_dir), free(run);
        return -1;
    }
    if (same && trial_read_summary(run, res) == 0) {  // measured by an earlier attempt
        res->ok = 1;
        cJSON_Delete(c);
        free(trial_dir), free(run);
        return 0;
    }
    err_clear();
    if (!env->quiet) {
        fprintf(stderr, "plan: %s: depth %d, width %d, head dim %d, T %d, batch %lld%s, %s ...", trial_dir, p->depth,
                p->n_embd, p->head_dim, p->seq_len, (long long)p->batch_tokens, p->train_tokens > 0 ? ", cut data" : "",
                trial_budget_text(p->budget_s));
        fflush(stderr);
    }
    int rc = trial_run(&env->runner, trial_dir, id, c, p->budget_s, 2 * p->budget_s + 300, res);
    cJSON_Delete(c);
    if (rc == 0 && res->ok) trial_drop_weights(trial_dir);
    if (!env->quiet) {
        if (rc == 0 && res->ok) fprintf(stderr, " %.0f tok/s, val_bpb %.4f\n", res->tok_per_s, res->val_bpb);
        else fprintf(stderr, " failed\n");
    }
    free(trial_dir), free(run);
    return rc;
}

int plan_step_times(const PlanEnv *env, const char *dir, const PlanPoint *points, int n, int first_id, int measure,
                    double (*work)[TP_NTERMS], double *step_s, int *which) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        const PlanPoint *p = &points[i];
        if (p->batch_tokens % ((int64_t)env->device_batch * p->seq_len * env->ranks) != 0) continue;
        TrialResult r;
        if (measure) {
            if (plan_measure(env, dir, first_id + i, p, PLAN_CAL_EXCLUDED, 8192, &r) != 0) return -1;
            if (r.interrupted) return err_set("plan: interrupted while measuring (run it again to continue)");
            if (!r.ok || !(r.tok_per_s > 0))
                return err_set("plan: the run %s/%04d failed: %s (its train.log says more)", dir, first_id + i, r.error);
        } else {
            char name[16];
            snprintf(name, sizeof name, "%04d/run", first_id + i);
            char *run = path_join(dir, name);
            int got = trial_read_summary(run, &r) == 0 && r.tok_per_s > 0;
            free(run);
            err_clear();
            if (!got) continue;
        }
        TpShape s = {plan_point_model(p, env->vocab_size), p->batch_tokens, env->device_batch, env->ranks, 5};
        if (tp_work(&s, work[k]) != 0) return -1;
        step_s[k] = (double)p->batch_tokens / r.tok_per_s;
        if (which) which[k] = i;
        k++;
    }
    return k;
}

int plan_calibrate(const PlanEnv *env, const char *dir, ThroughputModel *m) {
    double(*work)[TP_NTERMS] = calloc((size_t)PLAN_N_CAL, sizeof *work), *step_s = calloc((size_t)PLAN_N_CAL, sizeof(double));
    int n = plan_step_times(env, dir, PLAN_CAL_POINTS, PLAN_N_CAL, 1, 1, work, step_s, NULL);
    int rc = n < 0 ? -1 : tp_fit((const double(*)[TP_NTERMS])work, step_s, n, m);
    free(work);
    free(step_s);
    return rc;
}

// The ladder, in the order it runs: the first ones alone span sizes, horizons and repetition.
// epochs 0: the whole training set; else the set is cut so that the run reads it about this often.
typedef struct {
    int depth;
    double budget_s, epochs;
} Rung;
// The repeated rungs keep at least SCALING_MIN_UNIQUE_PER_PARAM unique tokens per parameter (below
// it runs memorise and the law does not apply), so they are the smallest models, trained longer,
// read 2 to 4 times; the budgets add up to just under an hour (the default --fit-minutes).
static const Rung LADDER[] = {
    {2, 90, 0}, {4, 90, 0},  {1, 90, 0},  {1, 360, 2}, {6, 90, 0},  {3, 90, 0},  {2, 45, 0},  {4, 45, 0},
    {2, 420, 2}, {1, 45, 0}, {2, 180, 0}, {4, 180, 0}, {1, 520, 3}, {6, 180, 0}, {3, 45, 0},  {1, 180, 0},
    {6, 45, 0}, {1, 720, 4}, {3, 180, 0},
};

int plan_ladder(const PlanEnv *env, const PlanFamily *f, const ThroughputModel *tp, const char *dir, double max_total_s,
                double corpus_tokens, ScalingPoint *pts, int cap) {
    int n = 0;
    double spent = 0;
    for (int id = 1; id <= (int)(sizeof LADDER / sizeof *LADDER) && n < cap; id++) {
        const Rung *g = &LADDER[id - 1];
        if (spent + g->budget_s > max_total_s + 1e-9) break;
        ModelConfig m = plan_shape(f, g->depth);
        // the batch the plan would use at this horizon, from the tokens the throughput model
        // predicts (the run measures the real D)
        const int64_t min_batch = (int64_t)f->device_batch * f->seq_len * env->ranks;
        TpShape s = {m, plan_rules(PLAN_RULE_D_REF, min_batch).batch_tokens, f->device_batch, env->ranks, 5};
        double D = tp_predict_tok_s(tp, &s) * g->budget_s;
        PlanRules r = plan_rules(D, min_batch);
        int64_t cut = g->epochs > 0 && isfinite(D) ? (int64_t)(D / g->epochs) : 0;
        if (cut > 0 && corpus_tokens > 0 && cut >= corpus_tokens) cut = 0;  // the corpus itself repeats enough
        double N = (double)model_config_scaling_params(&m), P = (double)model_config_num_params(&m);
        if (cut > 0 && !scaling_in_domain(P, D, (double)cut)) {  // a slower machine than the rung was sized for
            fprintf(stderr, "plan: ladder rung %d skipped: %.3gM unique tokens for %.3gM parameters would memorise "
                            "(the law needs %g per parameter when data repeats)\n", id, cut / 1e6, P / 1e6,
                    SCALING_MIN_UNIQUE_PER_PARAM);
            continue;
        }
        spent += g->budget_s;
        PlanPoint p = {g->depth, m.n_embd, m.head_dim, f->seq_len, r.batch_tokens, g->budget_s, r.weight_decay, cut, NULL, 0};
        TrialResult res;
        if (plan_measure(env, dir, id, &p, 2, 0, &res) != 0) return -1;
        if (res.interrupted) return err_set("plan: interrupted during the ladder (run it again to continue)");
        if (!res.ok) {
            fprintf(stderr, "plan: ladder run %s/%04d failed (%s); fitting without it\n", dir, id, res.error);
            continue;
        }
        double U = isfinite(res.unique_tokens) ? res.unique_tokens : corpus_tokens;
        pts[n++] = (ScalingPoint){N, res.tokens, U, res.val_bpb, P};
    }
    return n;
}

// A finished run: its config.json resolved as `frontier train` resolves it, its summary's result
// and the summary itself; visit() is called with each.
static void visit_run(const char *run, PlanRunVisit visit, void *ctx) {
    TrialResult r;
    char *cfg_path = path_join(run, "config.json"), *sum_path = path_join(run, "summary.json");
    cJSON *cfg = trial_read_summary(run, &r) == 0 ? json_read_object(cfg_path, "run") : NULL;
    cJSON *sum = cfg ? json_read_object(sum_path, "summary") : NULL;
    free(cfg_path), free(sum_path);
    TrainConfig raw = train_settings_defaults(), c;
    unsigned char g[TRAIN_MAX_SETTINGS] = {0};
    if (sum && train_settings_from_json(cfg, run, &raw, g, 1) == 0 && train_config_resolve(&raw, g, 1, &c) == 0)
        visit(run, &c, &r, sum, ctx);
    err_clear();
    cJSON_Delete(cfg), cJSON_Delete(sum);
}

static void scan(const char *dir, PlanRunVisit visit, void *ctx) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char *sub = path_join(dir, e->d_name), *run = path_join(sub, "run"), *summary = path_join(sub, "summary.json");
        if (is_dir(run)) visit_run(run, visit, ctx);
        else if (path_exists(summary)) visit_run(sub, visit, ctx);  // a folder of run folders (bench/plan_validate.sh's)
        free(sub), free(run), free(summary);
    }
    closedir(d);
}

void plan_each_run(const char *dir, PlanRunVisit visit, void *ctx) {
    char *trials = path_join(dir, "trials"), *summary = path_join(dir, "summary.json");
    if (path_exists(summary)) visit_run(dir, visit, ctx);  // a run folder itself
    else scan(is_dir(trials) ? trials : dir, visit, ctx);
    free(trials), free(summary);
}

typedef struct {
    int seq_len;
    ScalingPoint *pts;
    int *n, cap;
} PointsCtx;

// A finished run's point: N from its config, D and U from its summary.
static void add_point(const char *run, const TrainConfig *c, const TrialResult *r, const cJSON *summary, void *ctx) {
    (void)run, (void)summary;
    PointsCtx *p = ctx;
    if (*p->n < p->cap && c->model.seq_len == p->seq_len && r->tokens > 0 && !(c->mix && c->mix[0]))  // the law is the corpus's alone
        p->pts[(*p->n)++] = (ScalingPoint){(double)model_config_scaling_params(&c->model), r->tokens,
                                           isfinite(r->unique_tokens) ? r->unique_tokens : 0, r->val_bpb,
                                           (double)model_config_num_params(&c->model)};
}

void plan_reuse_points(const char *dir, int seq_len, ScalingPoint *pts, int *n, int cap) {
    PointsCtx p = {seq_len, pts, n, cap};
    plan_each_run(dir, add_point, &p);
}
