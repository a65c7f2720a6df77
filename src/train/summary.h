// train/summary.h — summary.json, the record of a finished or interrupted run: val_bpb (unless
// stopped early), tokens, steps, throughput and MFU, the clock's parts, memory, checkpoints, how
// it stopped (with the resume command after a signal), the config, the hardware and the commit.
// Written atomically by rank 0 (util/json_file.h).
#pragma once
#include "train/train.h"

// The checkout's commit (`git rev-parse --short=12 HEAD` in the working directory), "unknown"
// outside a git checkout (malloc'ed).
char *train_git_commit(void);

// 0, or -1 + err naming the file.
int train_write_summary(const TrainConfig *cfg, const TrainResult *res, const char *tokenizer_id);
