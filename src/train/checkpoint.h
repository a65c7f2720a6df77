// train/checkpoint.h — saving and restoring a run.
//
// model.safetensors: every parameter as F32 (rows, cols) under nanochat's names; __metadata__
// holds "format" = "frontier", "model_config" (JSON), "tokenizer_id", "step" and "config"
// (every training setting, JSON). PyTorch loads it with a 20-line reader (tests/model).
// train_state.safetensors: the optimizer state tensors (optim.h names), the loader state
// (U8 blob "loader.state") and the counters below, with the same "step" in its metadata: a
// pair from different saves is refused. Each file is written atomically (temp, fsync, rename).
#pragma once
#include <stdint.h>

#include "data/loader.h"
#include "model/model.h"
#include "optim/optim.h"

#define STEP_TIME_WINDOW 20

typedef struct {
    int64_t step;                      // optimizer steps completed
    int64_t tokens;                    // tokens trained on
    double timed_s;                    // seconds on the budget clock
    double startup_s, excluded_s;      // start-up and excluded (warm-up) steps, reported apart
    double step_times[STEP_TIME_WINDOW];  // last step durations (ring)
    int n_step_times;
} TrainCounters;

int ckpt_save(const char *run_dir, const Model *m, const Optimizer *o, const DataLoader *dl, const TrainCounters *c,
              const char *tokenizer_id, const char *config_json);
// The model config and tokenizer id stored in RUN_DIR/model.safetensors (or a .safetensors path).
int ckpt_read_meta(const char *path, ModelConfig *cfg, char tokenizer_id[65], int64_t *step);
// Load weights into m, which must be built with the checkpoint's config. Checks every name
// and shape; says which tensor is missing or mis-shaped.
int ckpt_load_model(const char *path, Model *m);
// Restore optimizer, loader and counters; the state file must come from the same save as the
// model (same step).
int ckpt_load_state(const char *run_dir, Optimizer *o, DataLoader *dl, TrainCounters *c, int64_t expect_step);
// RUN_DIR -> RUN_DIR/model.safetensors; a path ending in .safetensors is returned as is.
char *ckpt_model_path(const char *run_or_file);
