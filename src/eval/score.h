// eval/score.h — the competition's scores for several training runs (`frontier score`).
//
// Phase 1: val_bpb from RUN_DIR/summary.json (lower is better), ranked ascending.
// Phase 2: composite = 0.5 * bpb_norm + 0.5 * core_norm, each min-max normalised over the runs
// given: bpb_norm = (max_bpb - bpb) / (max_bpb - min_bpb), core_norm = (core - min_core) /
// (max_core - min_core), with CORE from RUN_DIR/core.json. When every run has the same value
// (max == min) that component is 1.0 for all of them (a footnote says so). Runs without core.json
// have no composite ("n/a") and take no part in the CORE min-max; they still count for val_bpb's.
// Ties share a rank (1, 1, 3).
//
// A composite compares runs on the same CORE tasks. A run whose core.json covers less than its
// bundle's full set (a task left out for missing data, other than one the bundle is known not to
// ship, or not selected by --tasks) or than another run's CORE (a task another run scored) is
// refused, naming the run and the tasks it lacks, unless --allow-partial-core: then it is ranked
// and flagged.
#pragma once
#include <cjson/cJSON.h>

typedef struct {
    char *name;           // the RUN_DIR as given, without trailing slashes
    int complete;         // summary.json has val_bpb
    double bpb;
    double tokens_trained, parameters, eval_tokens, eval_T;  // NAN when absent
    cJSON *config;        // owned; NULL when absent
    int has_core;
    double core;
    int tasks_scored, n_tasks;  // n_tasks (of core.yaml's tasks) -1 when core.json does not say
    cJSON *missing;       // owned; the "missing" array or NULL
    cJSON *not_selected;  // owned; the "not_selected" array or NULL
    cJSON *scored;        // owned; the labels of "tasks" (NULL when core.json lists none)
    cJSON *lacks;         // owned; tasks this run's CORE lacks (see above), or NULL
    double bpb_norm, core_norm, composite;
    int rank1, rank2;     // 0 = none
} ScoreRun;

// Read RUN_DIR/summary.json and (when present) core.json into r (r->name is set even on error, so
// score_run_free always applies). 0, or -1 + err (usage errors for bad files).
int score_load_run(ScoreRun *r, const char *dir);
void score_run_free(ScoreRun *r);
// What each run's CORE lacks (r->lacks): tasks of its bundle left out (known-absent ones aside)
// and tasks another run scored. Runs whose core.json names no labels are compared by count.
void score_find_partial_cores(ScoreRun *runs, int n);
// The min-max normalisation: over the complete runs (val_bpb) and those of them with core.json (CORE).
typedef struct {
    int n_core;                   // complete runs with CORE
    double min_bpb, max_bpb;
    double min_core, max_core;    // meaningful when n_core > 0
    int bpb_equal, core_equal;    // max == min: that component is 1.0 for every run
} ScoreRange;

// bpb_norm, core_norm, composite, rank1 and rank2 of every complete run (1 + the number of runs
// strictly better); returns the normalisation used.
ScoreRange score_rank(ScoreRun *runs, int n);
