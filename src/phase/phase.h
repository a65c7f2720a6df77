// phase/phase.h — the competition's two phases as one command each (`frontier run --phase 1|2`).
//
// A phase is a chain of steps, each leaving a file in the phase folder (RUN_DIR, default
// runs/phase1 or runs/phase2) and skipped when its file is there, so a phase run again after an
// interruption continues where it stopped:
//   plan     RUN_DIR/plan.json and plan.md: `frontier plan`'s choice for this machine and budget
//            (planner/session.h; the throughput model measured first if none is cached)
//   train    RUN_DIR/train/: `frontier train --config plan.json` (and the train options given,
//            which win over the plan); a folder with a checkpoint but no finished summary is
//            resumed (`--resume`, with the given options that may change on a resume). Phase 2
//            runs it over MPI: `mpirun -np RANKS [--hostfile F]` of this binary.
//   core     (phase 2) RUN_DIR/train/core.json: `frontier eval --core` over the same ranks
//   score    RUN_DIR/result.json: val_bpb (phase 1's score); phase 2's composite exactly as
//            `frontier score` computes it (eval/score.h) over this run and any --compare runs
//   report   RUN_DIR/report.html (report/report.h)
// and ends with one result line on stdout. Every child runs with this process's output; SIGINT or
// SIGTERM to it is passed on to the step running (a training saves its checkpoint), and the phase
// exits with the child's code and the command that continues it.
#pragma once

#include "kernels/kernels.h"

typedef struct {
    int phase;                    // 1 or 2
    double budget_s;              // the training budget (phase 1: 30 min, phase 2: 4 h)
    int ranks;                    // MPI ranks (phase 2; 1 for phase 1)
    const char *hostfile;         // mpirun --hostfile (phase 2), or NULL
    int threads;                  // per rank (0: all cores / ranks)
    KernelPrecision precision;    // resolved
    const char *run_dir, *data, *cache;
    const char *mix;              // --mix SPEC: planned for and trained on (NULL: the data alone)
    const char *core_dir;         // the CORE bundle (NULL: the default)
    int core_max_per_task;        // 0: every row of every task (the full CORE)
    const char *core_tasks;       // NULL: every task
    const char *const *train_args;  // options for `frontier train`, as given (flag, value, ...)
    int n_train_args;
    const char *const *compare;   // phase 2: other runs' folders the composite is computed with
    int n_compare;
} PhaseOptions;

// Run (or continue) the phase. Returns the process exit code: 0, 1 (an error, said), 2 (bad
// input), or 128 + N when a signal interrupted it (run it again to continue).
int phase_run(const PhaseOptions *o);
