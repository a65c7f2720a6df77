// research/plan.h — what to run next and what a result means: the strategies as pure functions
// of the ledger.
//
// Everything the loop knows is in the ledger: plan_state_build() replays its rows into the config
// of every trial, the current best and the baseline's seed spread; plan_next() says which trial
// comes next; plan_decide() turns a finished trial into its status. Nothing else is remembered,
// so a research killed at any point resumes exactly where its ledger ends (a trial that was
// running then was never recorded and is planned again: the same trial id, and for the built-in
// strategies the same proposal, since proposals draw from a generator seeded by (seed, the number of
// proposals in the ledger)).
//
// The protocol (docs/research.md), paired seeds judged by research/stats.h's sequential rule:
//   1. baseline: the base config on seeds s, s+1, ... (--baseline-seeds, default 3): the first
//      incumbent, and (as single runs) the noise estimate the pool starts from.
//   2. a candidate (greedy: one setting moved from the incumbent; random: every param drawn
//      afresh, applied to the base; agent: the proposer's change to the incumbent; halving: the
//      finalist of a bracket) trains on seed s, then on s+1, s+2, ... ("seed" rows) while the
//      rule says continue; each of its runs is paired with the incumbent's run on the same seed,
//      and where the incumbent has none yet a "pair" row trains it first. The candidate's last
//      row says keep (significant at --alpha, and better by more than --threshold) or discard;
//      its earlier rows say pending. A kept candidate is the new incumbent, its runs its seeds.
//   3. successive halving: a bracket of --bracket greedy-style candidates runs at budget /
//      eta^(rungs-1); the best 1/eta of each rung (by val_bpb) move up, until the last rung
//      ("final") runs at the full budget and is judged as in 2. Lower rungs are "screen" rows.
//   With side_by_side (--lanes 2 or more), a candidate's run is paired with a run of the incumbent on the
//   same seed trained at the same moment in the other lane (a "twin" row just before it, kind twin,
//   status replicate), not with the incumbent's earlier run: slow periods of a shared machine hit
//   both alike. No "pair" rows are needed then.
//   4. promotion (--promote-budget B2, off by default): right after a keep, before any candidate
//      builds on it, the kept candidate and the incumbent it beat train at B2 on --promote-seeds
//      fresh seeds (s + PLAN_PROMOTE_SEED0, s + PLAN_PROMOTE_SEED0 + 1, ...: seeds the research at
//      its own budget never uses), in pairs: the incumbent first ("promote-pair", replicate),
//      then the candidate ("promote": pending, and at the last seed "transfer" when its mean
//      paired difference is below 0, else "no-transfer"). A change that does not transfer stops
//      being the incumbent: the one it beat is again, and later candidates build on that. A
//      promotion run that crashes or times out ends it as not transferred (it could not be shown).
#pragma once
#include <stdint.h>

#include "research/ledger.h"
#include "research/space.h"
#include "research/stats.h"

struct cJSON;

typedef enum { STRAT_GREEDY, STRAT_RANDOM, STRAT_HALVING, STRAT_AGENT } Strategy;

#define PLAN_PROMOTE_SEED0 1000  // promotion seeds start here above the base seed
#define PLAN_MAX_SEEDS 64        // the --max-seeds bound: a candidate's paired differences fit in this many

typedef struct {
    Strategy strategy;
    double budget_s;             // the full budget of a trial
    int baseline_seeds;          // >= 1
    double threshold;            // >= 0: the least mean improvement a keep needs (besides significance)
    double alpha;                // the keep rule's one-sided level, (0, 0.5)
    int max_seeds;               // the cap on seeds per candidate, >= 2
    int eta, rungs, bracket;     // successive halving
    uint64_t seed;               // for proposals
    const Space *space;
    const struct cJSON *base;    // the full base config
    double promote_budget_s;     // > 0: re-judge each keep at this budget (4. above); 0: off
    int promote_seeds;           // pairs a promotion runs (>= 1 when promote_budget_s > 0)
    int side_by_side;            // 1: candidate runs are paired with twins (--lanes > 1)
} PlanCtx;

typedef struct {
    const LedgerRow *rows;
    int n;
    struct cJSON **configs;      // the full config of each row (NULL for a rejected one)
    int *group;                  // (n) each row's candidate: the row index of its first run (baseline
                                 // rows: 0; seed rows: their candidate's; pair rows: their incumbent's)
    int best;                    // the incumbent: its first row's index (-1: none yet)
    double best_score;           // its mean val_bpb over its seeds
    int best_seeds;              // how many
    int open;                    // the candidate still running seeds (its first row's index), -1: none
    double baseline_mean, spread;
    int n_baseline;              // finished baseline runs
    StatsPool pool;              // the paired differences' spread (research/stats.h)
    SeqTest seq;
    int promoting;               // the kept candidate being promoted (its first row), -1: none
    int promote_from;            // the row of its keep: the promotion's runs come after it
    int promote_prev;            // the incumbent it replaced (first row), restored if it does not transfer
} PlanState;

// The paired differences (candidate − incumbent) of the promotion in progress, in seed order from
// base_seed + PLAN_PROMOTE_SEED0, stopping at the first seed either lacks. Returns the count.
int plan_promotion_diffs(const PlanState *st, double base_seed, double *d, int cap);

// The val_bpb of candidate g (a first row's index) on seed, NaN when it has no finished run there.
double plan_value_at(const PlanState *st, int g, double seed);
// Candidate g's paired differences against incumbent inc, in seed order from the base seed:
// d[k] = g's run on seed s+k minus inc's (stops at the first seed either lacks). Returns the count.
int plan_paired_diffs(const PlanState *st, int g, int inc, double base_seed, double *d, int cap);
// The seed a config trains with (its "seed", default 42).
double plan_config_seed(const struct cJSON *config);

// The machine time the ledger's trials took, what --hours counts: the sum of their wall times,
// except that the rows of one batch (ledger.h: trained at the same moment, one per lane) count
// once, as the longest of them.
double plan_machine_s(const LedgerRow *rows, int n);

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

// Side by side: 1 when p is a candidate's run (it gets a twin), 0 otherwise.
int plan_wants_twin(const TrialPlan *p);
// The twin of candidate run p: the incumbent on p's seed and budget, kind "twin", taking p's trial
// id; p moves to the next id. The twin is recorded first, then p, paired with it.
void plan_twin(const PlanState *st, TrialPlan *p, TrialPlan *twin);

// What a finished trial means for the ledger.
typedef struct {
    char status[16];
    char *text;      // malloc'ed, e.g. "d -0.0123 +- 0.0051 over 2 seeds (z 3.41 > 2.17, p 0.0003)"
    double paired;   // the incumbent's val_bpb on the trial's seed (candidate rows), else NaN
    double z;        // the candidate's test statistic after this run, else NaN
} PlanVerdict;

// The verdict on finished trial p: val is its val_bpb, or NaN with failed = "crash"/"timeout".
void plan_decide(const PlanCtx *ctx, const PlanState *st, const TrialPlan *p, double val, const char *failed,
                 PlanVerdict *v);

// Budget of halving rung r (0 = the shortest).
double plan_rung_budget(const PlanCtx *ctx, int r);
// Trials in a full halving bracket at rung r (when nothing crashes).
int plan_rung_size(const PlanCtx *ctx, int r);
