// train/checkpoint.h — saving and restoring a run: checkpoints published as one unit.
//
// A checkpoint is a folder of two files:
//   model.safetensors        every parameter as F32 (rows, cols) under nanochat's names;
//                            __metadata__: "format" = "frontier", "model_config" (JSON),
//                            "tokenizer_id", "step", "config" (every training setting, JSON).
//                            PyTorch loads it with a 20-line reader (tests/model).
//   train_state.safetensors  the optimizer state tensors (optim.h names), the loader state (U8
//                            blob "loader.state"), "step_times" and the counters below as
//                            metadata, with the same "step": a pair from different saves is refused.
//
// In a run folder:
//   model_avg.safetensors    with a weight average (--ema-steps/--ema-seconds): its readout at the
//                            end of the run, what the run's val_bpb and `frontier eval` score
//   checkpoints/step-<N>/    one folder per kept checkpoint (N = optimizer steps done, 8 digits)
//   latest -> checkpoints/step-<N>          the newest complete checkpoint (a symlink)
//   model.safetensors -> latest/model.safetensors, train_state.safetensors likewise, so a reader
//                            of RUN_DIR/model.safetensors (frontier eval, PyTorch) gets the newest.
//
// Publishing (ckpt_save): both files are written into checkpoints/.tmp-step-<N>-<pid>/ (each
// fsync'ed), the folder is fsync'ed and renamed to checkpoints/step-<N>, then a fresh symlink is
// renamed over `latest` and the run folder fsync'ed. That last rename is the commit point: a kill
// at any instant leaves `latest` naming either the previous checkpoint or the new one, each whole.
// Only then are checkpoints beyond the newest `keep` removed. `latest` is the truth: a complete
// step folder it does not name (a save killed between the two renames) is an orphan, removed by
// ckpt_sweep like every *.tmp-* left by a killed process.
//
// A run folder written before checkpoints had folders (model.safetensors and
// train_state.safetensors as plain files, no `latest`) still loads: its checkpoint is the run
// folder itself; the next save there moves it to the layout above.
#pragma once
#include <stddef.h>
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
    double checkpoint_s;               // seconds spent saving periodic checkpoints (off the budget clock)
    int64_t checkpoints;               // periodic checkpoints saved
    int64_t metrics_bytes;             // length of metrics.jsonl when the checkpoint was taken
    double step_times[STEP_TIME_WINDOW];  // last step durations (ring)
    int n_step_times;                  // timed steps so far (the ring's write position, mod the window)
} TrainCounters;

// Save the run's state at step c->step as checkpoint step-<c->step> and publish it (above);
// loader_state (loader_len bytes) is the data loader's state at that step (loader_save_state).
// Keeps the newest `keep` (>= 1) checkpoints. A checkpoint of that step already published is
// left as it is. On failure nothing is published, the temp folder is removed, and the previous
// checkpoint stays the newest.
int ckpt_save(const char *run_dir, const Model *m, const Optimizer *o, const void *loader_state, size_t loader_len,
              const TrainCounters *c, const char *tokenizer_id, const char *config_json, int keep);
// Bytes ckpt_save will write for this model and optimizer (for the free-space check).
int64_t ckpt_bytes(const Model *m, const Optimizer *o, size_t loader_len);
// Free bytes on the file system of `dir` for an unprivileged writer; -1 + err if unknown.
int64_t ckpt_free_bytes(const char *dir);

// The folder of RUN_DIR's newest complete checkpoint (malloc'ed): RUN_DIR/checkpoints/step-<N>
// through `latest`, or RUN_DIR itself for a run folder of the older layout. *step (if given) is its
// step. NULL + err when RUN_DIR holds no checkpoint (or `latest` is broken).
char *ckpt_latest(const char *run_dir, int64_t *step);
// Whether RUN_DIR holds a run of any layout (config, metrics, a checkpoint): 1 / 0.
int ckpt_run_exists(const char *run_dir);
// Remove what killed processes left in RUN_DIR: *.tmp-* files and folders, and step folders that
// `latest` does not name and that are newer than it. The caller holds the folder's lock.
int ckpt_sweep(const char *run_dir);
// Remove a run's own files and folders from RUN_DIR (for --overwrite); other files stay.
int ckpt_remove_run(const char *run_dir);

// The model config, tokenizer id and step stored in a checkpoint (a RUN_DIR, a checkpoint folder
// or a .safetensors path).
int ckpt_read_meta(const char *path, ModelConfig *cfg, char tokenizer_id[65], int64_t *step);
// Every training setting (JSON text, malloc'ed) stored in a checkpoint's model file; NULL + err if
// it has none.
char *ckpt_read_config(const char *path);
// Load weights into m, which must be built with the checkpoint's config. Checks every name and
// shape, and that every weight is finite; says which tensor (and element) is wrong.
int ckpt_load_model(const char *path, Model *m);
// Restore optimizer, loader and counters from CKPT_DIR/train_state.safetensors (a folder from
// ckpt_latest); the state must come from the same save as the model (expect_step) and for a run
// of batch_tokens tokens a step. Every field is checked (ranges, finite values, lengths) before
// anything is used.
int ckpt_load_state(const char *ckpt_dir, Optimizer *o, DataLoader *dl, TrainCounters *c, int64_t expect_step,
                    int64_t batch_tokens);
// RUN_DIR or a checkpoint folder -> its model.safetensors (through `latest` when there is one); a
// path ending in .safetensors is returned as is. Malloc'ed.
char *ckpt_model_path(const char *run_or_file);
// The weights to evaluate: a .safetensors file itself; for a run folder, weights "raw" is
// ckpt_model_path's, "avg" RUN_DIR/model_avg.safetensors (the weight average a run with
// --ema-steps/--ema-seconds writes at its end), "auto" the average when there is one. Caller frees.
char *ckpt_model_path_weights(const char *run_or_file, const char *weights);
// RUN_DIR/model_avg.safetensors: the weight average's readout at the end of a run (written like
// model.safetensors, atomically). 0 or -1 + err.
int ckpt_save_average(const char *run_dir, const Model *m, int64_t step, const char *tokenizer_id,
                      const char *config_json);
