// train/summary.h — what a run leaves at its end. summary.json, the record of a finished or
// interrupted run: val_bpb (unless stopped early), tokens, steps, throughput and MFU, the clock's
// parts, memory, checkpoints, how it stopped (with the resume command after a signal), the config,
// the hardware and the commit, written atomically by rank 0 (util/json_file.h); and a profiling
// run's outputs.
#pragma once
#include "train/train.h"

// The commit this binary was built from (`git rev-parse --short=12 HEAD` at build time, "+dirty"
// when src/ or the Makefile differed from it; "unknown" when built outside a git checkout),
// malloc'ed.
char *train_git_commit(void);

// 0, or -1 + err naming the file.
int train_write_summary(const TrainConfig *cfg, const TrainResult *res, const char *tokenizer_id);

// After a profiling run (rank 0): trace.json, profile.csv, profile_shapes.csv, roofline.json in the
// run folder, and the tables (the per-op one, then the costliest (op, shape) rows). 0 or -1 + err.
int train_write_profile(const TrainConfig *cfg, double faults_per_step);
