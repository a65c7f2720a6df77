// planner/planner.h — `frontier plan`: which model to train on this machine in this much time.
//
// The candidates are one family, nanochat's: depth d, width 64·d rounded up to the head dim,
// heads = width / head dim, at the family's context length and vocabulary, with the recipe's
// defaults. For each depth the planner predicts tok/s (planner/throughput.h, calibrated on this
// machine), hence the tokens D the budget trains and the epochs D / U over the U unique training
// tokens, applies the batch and weight-decay rules to D, and ranks the candidates by the loss
// model's val_bpb at (N, D, U) (planner/scaling.h: repeated tokens count as the effective data
// D' < D). Without a fitted loss model it ranks them by how close D'/N is to the tokens:params
// rule (PLAN_TOKENS_PER_PARAM, with the prior's repetition discount), and says so.
//
// The rules, nanochat's scaled to the point measured here (the `cpu` preset's 5 minutes: 16,384
// tokens per step over 19.5M tokens at weight decay 0.2, found best by `frontier research`):
//   batch   B = 2^round(log2(16384 · (D / 19.5M)^0.383))     (nanochat: B ∝ D^0.383)
//   LR      unchanged settings: the trainer scales them by sqrt(B / --lr-batch-ref 4096)
//   wd      0.2 · sqrt(B / 16384) · (19.5M / D)              (nanochat: constant T_epoch)
// B is at least one micro-batch per rank (device_batch x T x ranks) and a multiple of it.
#pragma once
#include <stdint.h>

#include "model/config.h"
#include "planner/scaling.h"
#include "planner/throughput.h"

#define PLAN_TOKENS_PER_PARAM 12.0  // nanochat's target-param-data-ratio family default
#define PLAN_RULE_B_REF 16384.0
#define PLAN_RULE_D_REF 19.5e6
#define PLAN_RULE_WD_REF 0.2
#define PLAN_RULE_B_EXP 0.383

// The repetition levers, as bench/repeat_proxy.sh and bench/paired_arms.sh measured them
// (docs/training.md, "What repetition costs"). A candidate that reads its most repeated source at
// least PLAN_REPEAT_EPOCHS times reads out an EMA of its weights (time constant
// PLAN_REPEAT_EMA_STEPS steps, read as PLAN_REPEAT_EMA_BLEND x weights + the rest x average): the
// average beat its own raw weights in every run that read both. Dropout PLAN_REPEAT_DROPOUT and
// Muon's weight decay grown by PLAN_REPEAT_WD_PER_EPOCH per epoch are added only where the
// candidate also memorises (fewer unique tokens than parameters, scaling_in_domain): there the
// combination was the one lever whose paired interval excluded 0, while with as many unique tokens
// as parameters, or on the whole corpus, it cost ~0.02 bpb. Below the threshold, repeated tokens
// are worth nearly new ones (Muennighoff et al.: up to ~4 epochs) and the recipe stays as tuned at
// 5 minutes.
#define PLAN_REPEAT_EPOCHS 4.0
#define PLAN_REPEAT_EMA_STEPS 150.0
#define PLAN_REPEAT_EMA_BLEND 0.4
#define PLAN_REPEAT_DROPOUT 0.1f
#define PLAN_REPEAT_WD_PER_EPOCH 1.0f

typedef struct {
    int head_dim;     // 128 (nanochat's)
    int seq_len;      // 256 (the cpu preset's)
    int vocab_size;   // 8192
    int device_batch; // rows per micro-batch (16)
    int min_depth, max_depth;
} PlanFamily;

PlanFamily plan_family_default(void);
// The family's model at `depth`, the recipe's defaults on.
ModelConfig plan_shape(const PlanFamily *f, int depth);

typedef struct {
    int64_t batch_tokens;
    double weight_decay;
} PlanRules;
// The rules at a horizon of `tokens` (see above); min_batch: one micro-batch per rank.
PlanRules plan_rules(double tokens, int64_t min_batch);

typedef struct {
    int depth;
    ModelConfig model;
    PlanRules rules;
    int device_batch;    // rows per micro-batch
    double N;            // scaling parameters (model_config_scaling_params)
    double params;       // all parameters
    double flops_token;  // training FLOPs per token
    double tok_s, mfu;   // predicted (all ranks; sustained, tp_sustained_factor, at long budgets); mfu against peak_flops
    double tokens;       // D: tok_s x budget
    double ratio;        // D / N
    double epochs;       // D / U (0 if U is unknown), U of the sources it reads (share > 0)
    double epochs_max;   // of the most repeated source, w_s D / U_s (= epochs with one source)
    int average;         // 1: epochs_max >= PLAN_REPEAT_EPOCHS: the plan reads out the weight average
    ScalingData data;    // the sources it trains on, with its shares (chosen per candidate with choose_mix)
    char mix[1024];      // their --mix spec ("" for the data alone); filled by the session, which knows the names
    double L, L_sd;      // predicted val_bpb and its bootstrap sd (NaN without a fit)
    int memorises;       // 1: outside the law's domain (scaling_in_domain): ranked after every other
    int regularise;      // 1: average and memorises: the plan adds dropout and the decay's growth
    double score;        // what the ranking sorts by (lower is better)
} PlanCandidate;

// A source's discount (planner/scaling.h) measured at n training lengths, D[0] < D[1] < ...
// tokens (planner/worth.h). The worth of a source is not one number: the novels of extra_books
// measured worth 1.42 corpus tokens in 2-minute runs, 0.5 in 5-minute ones and harmful at 30
// minutes (docs/planning.md). A candidate training D tokens prices the source at the discount
// interpolated linearly in ln D between the lengths around D and, past the measured ones, extrapolated
// along the nearest segment (the trend holds, as far as anyone measured); with one length, that
// discount at every D. The standard error follows the same linear combination of the lengths'
// independent errors, so it grows with the distance of an extrapolation. The result is clamped to
// [lo, hi], the range the planner prices a token in.
#define PLAN_MAX_LENGTHS 8
typedef struct {
    int n;                         // lengths measured (0: the source's discount in ScalingData holds)
    double D[PLAN_MAX_LENGTHS];    // tokens the measuring runs trained, ascending
    double delta[PLAN_MAX_LENGTHS], se[PLAN_MAX_LENGTHS];  // the discount there, its standard error (0: none)
    double lo, hi;
} PlanDiscountCurve;
// The discount at D and its standard error; *where (may be NULL): -1 below the lengths measured, 0
// within (or one length only), +1 beyond the longest.
void plan_discount_at(const PlanDiscountCurve *c, double D, double *delta, double *se, int *where);

typedef struct {
    PlanFamily family;
    double budget_s;
    int ranks;
    double peak_flops;     // for MFU (all ranks)
    double train_tokens;   // U: the training set's tokens (0: unknown, no repetition counted)
    const ThroughputModel *tp;
    const ScalingFit *fit; // NULL: the tokens:params rule
    const ScalingData *data;  // the sources (--mix): shares and unique tokens; NULL: one, of train_tokens
    int choose_mix;        // 1: each candidate's shares of data's sources chosen for it (needs fit; else the first alone)
    const PlanDiscountCurve *curves;  // [data->n]: each source's discount by training length, set per candidate (NULL: data's)
} PlanQuery;

// Choosing a mixture (--mix auto): the shares of the sources besides the first (the corpus) that
// minimise the law's val_bpb for the candidate's N and D, on a grid of PLAN_MIX_STEP, the others
// adding up to at most PLAN_MIX_MAX_EXTRA: the share at which a source's worth is measured
// (PLAN_WORTH_WEIGHT, planner/worth.h). At one training length the discount is one number per
// source, so the law is linear in the shares; beyond the measured share it promises what nobody measured. A mixture of 90%
// novels priced by their worth at 50% was measured far worse than predicted: the validation set's
// textbook half starved (docs/planning.md). A descent that moves share between any two sources until no move gains more than
// PLAN_MIX_MIN_GAIN: the result is a local optimum of the grid, and a mixture that predicts the same
// as the corpus alone is not chosen.
#define PLAN_MIX_STEP 0.05
#define PLAN_MIX_MAX_EXTRA 0.5
#define PLAN_MIX_MIN_GAIN 1e-4
void plan_choose_shares(const ScalingLaw *l, double N, double D, ScalingData *d);

// Candidates for every depth of the family, sorted best first; returns how many (<= cap), -1 + err.
int plan_rank(const PlanQuery *q, PlanCandidate *out, int cap);
