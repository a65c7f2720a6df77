// research/plan.h — what to run next and what a result means: the strategies as pure functions
// of the ledger.
//
// Everything the loop knows is in the ledger: plan_state_build() replays its rows into the config
// of every trial, the current best and the baseline's seed spread; plan_next() says which trial
// comes next; plan_decide() turns a finished trial into its status. Nothing else is remembered,
// so a research killed at any point resumes exactly where its ledger ends (a trial that was
// running then was never recorded and is planned again: the same trial id, and for the built-in
// strategies the same proposal, since proposals draw from a generator seeded by (seed, trial id)).
//
// The protocol (docs/research.md):
//   1. baseline: the base config with seeds s, s+1, ... (--baseline-seeds, default 2); the best
//      score starts as their mean, the seed spread (max - min) is the noise estimate.
//   2. a candidate (greedy: one setting moved from the best; random: every param drawn afresh
//      from the space, applied to the base; agent: the proposer's change to the best; halving:
//      the finalist of a bracket) is kept only if val_bpb < best - threshold (threshold "auto" =
//      the seed spread). With --confirm it is first "pending" and re-run with seed + 1; the mean
//      of both runs must then beat the same bar ("keep" goes on the confirm row).
//   3. successive halving: a bracket of --bracket greedy-style candidates runs at budget /
//      eta^(rungs-1); the best 1/eta of each rung (by val_bpb) move up, until the last rung
//      ("final") runs at the full budget and is judged as in 2. Lower rungs are "screen" rows.
#pragma once
#include <stdint.h>

#include "research/ledger.h"
#include "research/space.h"

struct cJSON;

typedef enum { STRAT_GREEDY, STRAT_RANDOM, STRAT_HALVING, STRAT_AGENT } Strategy;

typedef struct {
    Strategy strategy;
    double budget_s;             // the full budget of a trial
    int baseline_seeds;          // >= 1
    double threshold;            // >= 0, or < 0 for auto (the baseline's seed spread)
    int confirm;
    int eta, rungs, bracket;     // successive halving
    uint64_t seed;               // for proposals
    const Space *space;
    const struct cJSON *base;    // the full base config
} PlanCtx;

typedef struct {
    const LedgerRow *rows;
    int n;
    struct cJSON **configs;      // the full config of each row (NULL for a rejected one)
    int best;                    // row index whose config is the best so far (-1: none yet)
    double best_score;           // its val_bpb (mean over its seeds for the baseline / a confirmed one)
    double baseline_mean, spread;
    int n_baseline;              // finished baseline runs
    double threshold;            // in effect
} PlanState;

int plan_state_build(const PlanCtx *ctx, const LedgerRow *rows, int n, PlanState *st);
void plan_state_free(PlanState *st);

typedef struct {
    int trial;                   // its id (= rows + 1)
    char kind[16];
    int parent;                  // trial id, 0 = none
    double budget_s;
    int needs_proposal;          // agent: take the change from the proposer (plan_take_proposal)
    int new_bracket;             // halving: the first trial of a new bracket
    struct cJSON *change;        // what was asked
    struct cJSON *config;        // the full config to train
    struct cJSON *diff;          // config vs the parent's (derived settings included)
    char *description;
} TrialPlan;

// The next trial. -1 + err when research cannot go on (the baseline failed; no untried feasible
// change is left near the best).
int plan_next(const PlanCtx *ctx, const PlanState *st, TrialPlan *p);
// An agent's change for p (kind agent): validated against the space and applied to the best;
// -1 + err (the reason it is rejected) otherwise. desc (may be NULL) is the agent's own words.
int plan_take_proposal(const PlanCtx *ctx, const PlanState *st, TrialPlan *p, const struct cJSON *change, const char *desc);
void plan_free(TrialPlan *p);

// The status of finished trial p: val is its val_bpb, or NaN with failed = "crash"/"timeout".
// *verdict (malloc'ed) explains it, e.g. "2.0123 vs best 2.0200 - threshold 0.0040".
void plan_decide(const PlanCtx *ctx, const PlanState *st, const TrialPlan *p, double val, const char *failed,
                 char status[16], char **verdict);

// Budget of halving rung r (0 = the shortest).
double plan_rung_budget(const PlanCtx *ctx, int r);
// Trials in a full halving bracket at rung r (when nothing crashes).
int plan_rung_size(const PlanCtx *ctx, int r);
