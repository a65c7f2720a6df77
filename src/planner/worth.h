// planner/worth.h — what a token of another source is worth to the validation loss: the discount
// delta_s of the loss model's mixtures (planner/scaling.h), measured on this machine.
//
// `frontier plan --worth --mix SPEC|auto [--worth-budget T]` trains the reference shape (depth
// PLAN_WORTH_DEPTH of the family, the batch the rules give its horizon) for budget T on paired
// seeds: on the corpus alone, and on the corpus mixed with one source at PLAN_WORTH_WEIGHT of the
// tokens, for each source. On seed k the mixture's run differs from the corpus's by dL_k; the fitted
// law predicts that difference from the tokens each of the two runs trained and the source's
// discount, and delta_k is the discount at which the prediction is dL_k (the prediction grows with
// delta; bisection). The source's discount is the mean of delta_k over the seeds and its uncertainty
// their standard error: the seeds' shared noise cancels in dL_k, as in a research's paired judgement.
//
// Why a discount on the tokens and not a fixed offset in bpb: a source whose tokens are worth 70%
// of the corpus's costs bpb at 5 minutes (it displaces better tokens) and gains bpb at 4 hours
// (the corpus's own tokens are then repeats, worth little), by the one law.
//
// Why at several lengths: the discount is not a constant of the source. Measured at 2 and 5
// minutes (and against the corpus alone at 30), the novels went from better than the corpus's own
// tokens to harmful as training went on (docs/planning.md): what a short run learns from plain
// text, a longer one has learned from the corpus, and the source then only dilutes it. Each budget
// T is one length of the source's entry (the tokens its runs trained), and the planner interpolates
// and extrapolates between them (PlanDiscountCurve, planner/planner.h). One length is a guess past it;
// two give the trend.
//
// Runs: <dir>/train/NNNN (the corpus alone) and <dir>/<source key>/NNNN at the budget
// PLAN_WORTH_BUDGET_S, the same under <dir>/<T in seconds>s/ at any other budget T; NNNN the seed's
// number. A finished run is never trained again (an interrupted measurement continues; a finished
// one re-reads its runs in seconds, and re-solves the discounts with the law fitted now). The table:
// one JSON file, an entry per source name, a length per budget, merged with those measured before.
#pragma once
#include <stdio.h>

#include "data/mix.h"
#include "planner/measure.h"
#include "planner/scaling.h"

#define PLAN_WORTH_DEPTH 2         // the cpu preset's size: cheap, and the size the recipe was tuned at
#define PLAN_WORTH_WEIGHT 0.5      // the source's share in the measuring runs: large, so dL stands out of the noise
#define PLAN_WORTH_BUDGET_S 120.0  // the corpus is read ~0.1 times: no repetition to confound
#define PLAN_WORTH_SEEDS 3
#define PLAN_WORTH_SEED0 1         // seeds 1, 2, ...: both arms of a pair share one
#define PLAN_WORTH_MIN (-1.0)      // a token worth twice the corpus's own
#define PLAN_WORTH_MAX (1.0 / PLAN_WORTH_WEIGHT - 0.01)  // the mixture's D' nearly 0: as harmful as the law can say
// What a plan prices a source's token at: never more than a fresh token of the corpus (discount
// >= 0), whatever the short measurement said; the table keeps the measured number. The corpus is
// drawn from the validation set's own distribution, so for val_bpb a fresh corpus token is the best
// a token can be; a source that measured better at PLAN_WORTH_BUDGET_S (the novels of extra_books,
// 1.42 corpus tokens at 2 minutes) measured worse at 5 minutes, where nothing repeats either
// (docs/planning.md): the early gain does not last. What such a source adds is fresh text once the
// corpus repeats, and at most a fresh corpus token's worth.
#define PLAN_WORTH_PRICE_MIN 0.0

#define WORTH_MAX_LENGTHS PLAN_MAX_LENGTHS
typedef struct {
    double budget_s;    // each run's budget
    double tokens;      // mean tokens the mixture's runs trained: the training length the discount holds at
    double discount;    // delta: mean over the seeds
    double se;          // its standard error (NaN with one seed)
    int seeds;          // pairs measured
    int clamped;        // of them, pairs whose dL lay past the range [PLAN_WORTH_MIN, PLAN_WORTH_MAX]
    double dL;          // mean paired difference in val_bpb (mixture - corpus alone)
} WorthLength;

typedef struct {
    char name[256];     // the source as --mix names it
    int n;              // lengths measured (>= 1)
    WorthLength len[WORTH_MAX_LENGTHS];  // ascending in tokens
} WorthEntry;

#define WORTH_MAX_ENTRIES 64
typedef struct {
    int n;
    WorthEntry e[WORTH_MAX_ENTRIES];
    int stale;          // entries of the file without lengths (an older frontier's table), left out
} WorthTable;

// The entry as the planner prices it: its lengths, clamped to [PLAN_WORTH_PRICE_MIN, PLAN_WORTH_MAX].
PlanDiscountCurve worth_curve(const WorthEntry *e);

// The discount at which law l predicts L(mixture) - L(corpus alone) = dL, for a model of N scaling
// parameters: the corpus (U0 unique tokens) alone trained D0 tokens; the mixture (1 - w) of the
// corpus and w of the source (Us unique) trained D1. Clamped into [PLAN_WORTH_MIN, PLAN_WORTH_MAX]
// (*clamped 1 when it was; may be NULL).
double worth_solve(const ScalingLaw *l, double N, double U0, double Us, double w, double D0, double D1, double dL,
                   int *clamped);

// The table at path (a missing file: an empty table). 0, or -1 + err naming the file.
int worth_load(const char *path, WorthTable *t);
// Write it atomically. 0 or -1 + err.
int worth_save(const char *path, const WorthTable *t);
// The entry of source `name`, or NULL.
const WorthEntry *worth_find(const WorthTable *t, const char *name);

// Measure the sources of m but train (d: their unique tokens, as the planner resolved them) with
// the law of `fit`: the runs in dir (resumable), an entry per source into t, t saved to
// table_path after each source. Progress and a line per source to `log` (NULL: quiet).
// 0, or -1 + err (an interrupted run: run the command again to continue).
int worth_measure(const PlanEnv *env, const PlanFamily *f, const ScalingFit *fit, const Mix *m, const ScalingData *d,
                  const char *dir, const char *table_path, double budget_s, int seeds, WorthTable *t, FILE *log);
