// research/research.h — `frontier research`: the unattended experiment loop.
//
// DIR (--out) holds everything, and the ledger is the state:
//   research.json   the settings that define the search (strategy, budget, seed, space, base,
//                   baseline seeds, halving shape); a rerun with other values is refused
//   base.json       the base config resolved to every setting (a one-step probe run of
//                   `frontier train --config BASE` wrote it; probe/ keeps that run's log)
//   results.tsv     the ledger (research/ledger.h), one fsync'ed row per finished trial; created
//                   (header only) before the first trial runs
//   best.json       the best config so far, budget included: `frontier train --config
//                   DIR/best.json` reproduces it (written atomically after every change of best)
//   trials/NNNN/    one folder per trial (research/trial.h; proposer files in agent mode)
//   summary.md, report.html   written when the loop ends (also by `frontier research report`)
//   .lock           held (dir_lock, with the holder's pid) while a research runs in DIR: a second
//                   one is refused (exit 1) with that pid
//
// Resume: rerunning the same command with the same DIR continues after the last recorded trial.
// A trial that was running when the research process died was never recorded: its folder is
// wiped and it runs again under the same id (the trainer child dies with its parent, see
// research/proc.h). Trial ids come from the ledger alone, so a research refuses to start when
// DIR/trials holds folders the ledger cannot account for (any without a results.tsv, or past
// the one in flight: results.tsv deleted, cut or replaced) instead of overwriting them.
// --trials counts all rows of the ledger; --hours counts the machine time the ledger's rows add
// up to (plan_machine_s: the trials of one batch, trained at the same moment in lanes, count once),
// so a resumed research ends where an uninterrupted one would have.
//
// Lanes (--lanes N): N trials train at once. The first is what the ledger says comes next, with its
// twin (research/plan.h); the other lanes take what follows it if it does not decide: a candidate's
// next seeds, each beside its twin, the next baseline seeds, screens or promotion runs. Results are
// recorded in ledger order and each is checked to be what one lane would run at that point; a run
// past a decision is not recorded (DIR/unused.tsv counts it). So N lanes decide exactly as one lane
// does, sooner.
#pragma once
#include <stdint.h>

#include "research/plan.h"

#define RESEARCH_MAX_LANES 64

typedef struct {
    const char *out_dir;
    const char *space_path;
    const char *base_path;        // NULL: the trainer's defaults
    const char *proposer;         // agent mode: the command; NULL: a built-in strategy
    const char *program_path;     // the protocol text sent to the proposer
    Strategy strategy;
    double budget_s;
    int max_trials;               // 0: no limit
    double hours;                 // 0: no limit
    uint64_t seed;
    double threshold;             // the least mean improvement a keep needs (>= 0; besides significance)
    double alpha;                 // the keep rule's one-sided level (default 0.05)
    int max_seeds;                // seeds per candidate at most (default 6)
    int baseline_seeds, eta, rungs, bracket;
    double eval_margin_s;         // least allowance for start-up + evaluation in the hang limit
    double proposer_timeout_s;
    int keep_weights;             // keep every trial's weights (default: only kept ones)
    const char *exe;              // the frontier binary for trials ("/proc/self/exe")
    const char *trainer;          // --trainer: a shell command trials run instead of `exe train` (NULL: none)
    const char *launcher;         // --launcher: a template with {cmd} each trial runs through (research/trial.h)
    double promote_budget_s;      // --promote-budget: re-judge each keep at this budget (research/plan.h, 4.); 0: off
    int promote_seeds;            // --promote-seeds
    int lanes;                    // --lanes: trials at once, 1 .. RESEARCH_MAX_LANES (above); locally each gets the
                                  // CPUs / lanes, pinned, and its config's threads say so
} ResearchOptions;

// Run (or resume) the research. 0 when it ended normally (trial or time limit reached, or the
// space exhausted), 130 when interrupted by SIGINT/SIGTERM, -1 + err on an error.
int research_run(const ResearchOptions *o);

// The hang limit of a trial: 2 x budget + max(eval_margin, 3 x the largest start-up+evaluation
// time seen so far, scaled by the trial's FLOPs per token relative to that trial's).
double research_trial_limit(const ResearchOptions *o, const PlanState *st, const struct cJSON *config, double budget_s);

extern const char *const STRATEGY_NAMES[];  // indexed by Strategy
