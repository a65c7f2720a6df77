// planner/session.h — one planning session: the data (its unique tokens), the throughput model of
// this machine (cached per layout in <cache>/throughput.json, measured when missing), the loss
// model (cached in <cache>/plan/, fitted by `frontier plan --fit`), the ranked candidates, and
// the chosen one as settings that `frontier train --config` runs. `frontier plan` and the phase
// commands (`frontier run --phase`) both plan through it.
//
// Folders under <cache>/plan/: calibrate-<layout hash>/NNNN (the calibration runs),
// heldout-<layout hash>/NNNN (the throughput check), ladder-<data>-T<seq>/NNNN (the loss ladder),
// scaling-<data>-T<seq>.json (its fit), scaling-<data>-T<seq>.html (the fit and its points),
// worth-<data>-T<seq>/ (the sources' worth runs) and worth-<data>-T<seq>.json (their discounts).
#pragma once
#include <stdio.h>

#include "data/mix.h"
#include "planner/measure.h"
#include "planner/planner.h"
#include "planner/worth.h"
#include "train/train.h"

#define PLAN_MAX_CANDIDATES 32

typedef struct {
    double budget_s;
    int ranks, threads;          // ranks x threads per rank (0: all cores / ranks)
    KernelPrecision precision;   // resolved (not KP_AUTO)
    const char *data;            // a prepared data folder; NULL: the default corpus (prepared, cached)
    const char *cache;           // "cache"
    const char *launcher;        // trial launcher template for ranks > 1 (NULL: mpirun -np R)
    int calibrate;               // 1: measure the throughput model even if one is cached
    int quiet;
    const char *mix;             // --mix SPEC (data/mix.h): the sources training mixes; NULL: the data alone;
                                 // "auto" (MIX_AUTO): the planner chooses among the sources whose worth is measured
    int worth;                   // 1: for measuring the sources' worth (plan_worth): "auto" is every folder of text/
} PlanRequest;

typedef struct {
    char data_dir[1024];
    double train_tokens;         // U: the training shards' tokens (every source's, with a mixture)
    Mix mix;                     // the sources (train alone without --mix)
    ScalingData sources;         // their shares of the tokens trained, unique tokens and discounts
    PlanDiscountCurve curves[MIX_MAX_SOURCES];  // a measured source's discount by training length (n 0: not
                                                // measured, 0 assumed)
    int choose_mix;              // --mix auto: each candidate's shares chosen by the planner
    WorthTable worth;            // <cache>/plan/worth-<data key>.json (empty when never measured)
    char data_key[80];           // names the loss model's files: the tokens' content (tokenizer, shards) and T
    ThroughputModel tp;
    int have_fit;
    ScalingFit fit;
    char fit_path[1024];         // the file it came from: <cache>/plan/scaling-<data key>.json, else the reference
    int fit_reference;           // 1: the reference fit shipped for these tokens (plan_reference_dir), not this machine's
    PlanFamily family;
    double peak_flops;           // all ranks
    PlanCandidate cand[PLAN_MAX_CANDIDATES];
    int n;                       // candidates, best first
} PlanResult;

// The environment the planner's runs use (trainer = this binary, through mpirun with ranks > 1).
PlanEnv plan_env(const PlanRequest *rq, const char *data_dir);

// Resolve the data, load or measure the throughput model, load the loss model if fitted, rank.
// 0, or -1 + err.
int plan_session(const PlanRequest *rq, PlanResult *res);

// The folder of reference loss models shipped with frontier (plan/scaling-<data key>.json, fitted by
// the ladder on a machine of the kind frontier is developed on): $FRONTIER_PLAN_REFERENCE when set
// ("none" or empty: no reference), else plan/ in the current folder or next to the binary. A plan
// uses the reference fit for its tokens when the cache has no fit of this machine's: val_bpb as a
// function of parameters and tokens does not depend on the machine's speed, only the throughput
// model does, so a new machine plans with measured evidence after a calibration of minutes instead
// of a ladder of an hour. NULL when there is none (caller frees).
char *plan_reference_dir(void);

// <cache>/plan/NAME (caller frees).
char *plan_path(const PlanRequest *rq, const char *name);
// The throughput layout key of the request (tp_layout_key with its threads, ranks, precision, kernels).
void plan_layout_key(const PlanRequest *rq, char *buf, int n);

// The table of candidates, the loss model's provenance and, without a fit, a loud warning.
void plan_print(const PlanResult *res, const PlanRequest *rq, FILE *f);

// Candidate c as a raw training config and the settings it gives (the shape, batch, weight decay,
// budget, precision; data and threads when the request names them): what plan.json holds and
// what a phase trains.
void plan_candidate_settings(const PlanResult *res, const PlanRequest *rq, const PlanCandidate *c, TrainConfig *raw,
                             unsigned char *given);
// plan.json: candidate c's settings (the `frontier train --config` format) plus nothing else. 0 or -1 + err.
int plan_write_json(const PlanResult *res, const PlanRequest *rq, const PlanCandidate *c, const char *path);

// `frontier plan --fit`: the ladder (at most max_minutes of training budgets; resumable), the points
// of any research folders in reuse[] at the same T, the fit with its bootstrap; saves scaling
// JSON and the HTML page. 0 or -1 + err.
int plan_fit(const PlanRequest *rq, const PlanResult *res, double max_minutes, const char *const *reuse, int n_reuse);

// `frontier plan --reuse DIR...`: every finished run of at least TP_SUSTAINED_MIN_S in the folders
// (plan_each_run) on the request's layout (ranks, threads, precision) adds its measured over
// predicted tok/s to tp's sustained runs (planner/throughput.h; tp: the layout's model), saved to
// the cache. Runs of other layouts, shorter or stopped before their budget are passed over and
// counted. 0 or -1 + err.
int plan_learn_sustained(const PlanRequest *rq, ThroughputModel *tp, const char *const *dirs, int n_dirs);

// `frontier plan --worth`: the discount of each source of res->mix but train (planner/worth.h),
// measured with the fitted loss model (res->have_fit) in <cache>/plan/worth-<data key>/ (resumable)
// and merged into worth-<data key>.json. 0 or -1 + err.
int plan_worth(const PlanRequest *rq, const PlanResult *res, double budget_s, int seeds);

// `frontier plan --check`: the held-out shapes measured (resumable) against the throughput model;
// prints predicted vs measured tok/s. 0 or -1 + err.
int plan_check(const PlanRequest *rq, const PlanResult *res, FILE *f);
