// planner/measure.h — the planner's measured runs: the throughput calibration (and its held-out
// check) and the loss ladder. Every run is a `frontier train` child (research/trial.h) in its own
// folder DIR/NNNN/, so a run whose run/summary.json exists is not run again: an interrupted
// calibration or ladder continues where it stopped when the command is repeated.
#pragma once
#include <stdint.h>

#include "planner/planner.h"
#include "research/trial.h"
#include "train/train.h"

typedef struct {
    int depth, n_embd, head_dim, seq_len;
    int64_t batch_tokens;
    double budget_s;         // ladder points: the training budget; calibration: PLAN_CAL_BUDGET_S
    double weight_decay;     // 0: the trainer's default
    int64_t train_tokens;    // > 0: the training data cut to this many tokens (--train-tokens)
    const char *mix;         // --mix SPEC (NULL: the data alone)
    int64_t seed;            // > 0: --seed (else the trainer's default)
} PlanPoint;

#define PLAN_CAL_BUDGET_S 6.0
#define PLAN_CAL_EXCLUDED 2

// The calibration shapes and the held-out ones (never fitted: the model is judged on them).
extern const PlanPoint PLAN_CAL_POINTS[];
extern const int PLAN_N_CAL;
extern const PlanPoint PLAN_HELDOUT_POINTS[];
extern const int PLAN_N_HELDOUT;

typedef struct {
    TrialRunner runner;
    const char *data, *cache;  // forwarded to the trainer (NULL: its defaults)
    const char *precision;     // "bf16" / "fp32"
    int threads;               // per rank (0: the trainer's default)
    int ranks;
    int device_batch;
    int vocab_size;
    int quiet;
} PlanEnv;

// The model shape of a point (the recipe's defaults, heads = width / head dim).
ModelConfig plan_point_model(const PlanPoint *p, int vocab_size);

// Train point p in dir/NNNN (id) unless its summary is there already; eval_tokens 0 = the whole
// pinned validation set. -1 + err only for problems of the planner itself; a failed run is res->ok 0.
int plan_measure(const PlanEnv *env, const char *dir, int id, const PlanPoint *p, int excluded_steps,
                 int64_t eval_tokens, TrialResult *res);

// The work terms and measured step time of every finished run among `points` in dir (ids from
// first_id), for fitting or judging the throughput model; returns how many (<= n), -1 + err.
// With measure 1 the missing ones are trained first.
int plan_step_times(const PlanEnv *env, const char *dir, const PlanPoint *points, int n, int first_id, int measure,
                    double (*work)[TP_NTERMS], double *step_s, int *which);

// Calibrate: measure every calibration shape in dir (resumable), fit, fill m (key set by the
// caller). 0, or -1 + err (a shape that fails to train is an error naming its folder).
int plan_calibrate(const PlanEnv *env, const char *dir, ThroughputModel *m);

// The loss ladder: sizes x budgets, and some sizes on a cut training set (--train-tokens) so that
// points past 2 epochs identify the repetition term; the batch by plan_rules at the tokens tp
// predicts. Ordered so that a ladder cut short by max_total_s still spans sizes, horizons and
// repetition. Fills pts (cap) with the finished runs' (N, D, U, L); returns how many, or -1 + err.
int plan_ladder(const PlanEnv *env, const PlanFamily *f, const ThroughputModel *tp, const char *dir, double max_total_s,
                double corpus_tokens, ScalingPoint *pts, int cap);

// Points from other folders that hold finished runs at the family's sequence length and on the
// data alone (not a mixture: the law is fitted on the corpus, planner/worth.h prices the rest): every
// DIR/trials/*/run (a research's trials), DIR/*/run (a ladder's) and DIR/* holding a summary.json
// (a folder of `frontier train --run-dir` runs). Appends to pts from *n.
void plan_reuse_points(const char *dir, int seq_len, ScalingPoint *pts, int *n, int cap);

// Every finished run the folder holds, found as above (or the folder itself, when it is a run
// folder): visit(run folder, its config resolved as `frontier train` resolves it, its result, its
// summary.json, ctx). Runs that cannot be read are passed over.
struct cJSON;
typedef void (*PlanRunVisit)(const char *run, const TrainConfig *c, const TrialResult *r, const struct cJSON *summary,
                             void *ctx);
void plan_each_run(const char *dir, PlanRunVisit visit, void *ctx);
