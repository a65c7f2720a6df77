// train/train.h — wall-clock-budgeted training: the loop, the budget clock, the
// run folder, checkpoints and resume.
//
// Budget rule: the clock starts after start-up (loading, packing, allocation) and after the
// first `excluded_steps` steps (warm-up); both are reported, never hidden. Before each step the
// loop stops if elapsed + max(last 20 step times) >= budget, so no step overruns. Progress for
// the schedule is timed_seconds / budget (or step / steps with --steps). Evaluation runs after
// the budget, untimed.
//
// Run folder: config.json (every setting), metrics.jsonl (one line per step), checkpoints
// (train/checkpoint.h: model + optimizer + loader + counters as one unit, exact resume),
// summary.json. One process at a time writes a run folder (a lock on RUN_DIR/.lock); a folder that
// holds a run is trained into only with --resume (continue it) or overwrite (replace it).
//
// Checkpoints: every save_every_s seconds of wall clock or save_every_steps steps, and at the end.
// The time they take is reported (checkpoint_s) and is not on the budget clock, so a run's
// trajectory does not depend on how often it saves. SIGINT/SIGTERM: the loop stops at the next
// micro-batch (one process: the step is abandoned and redone on resume) or after the step (MPI:
// every rank at the same step), saves a checkpoint, writes summary.json marked interrupted and
// returns with res->signal set; a second signal exits at once (128 + signal), removing temp files.
#pragma once
#include <stdint.h>

#include "kernels/kernels.h"
#include "model/config.h"
#include "optim/optim.h"

// Every field that is a setting of `frontier train` has its row in train/settings.h's table.
typedef struct {
    int preset;             // the --preset the shape and batch defaults came from (MODEL_PRESETS index)
    ModelConfig model;
    OptimConfig optim;
    int64_t batch_tokens;   // total tokens per optimizer step (all micro-batches)
    int device_batch;       // rows per micro-batch; batch_tokens must be a multiple of rows*T
    double budget_s;        // wall-clock budget for timed training (used when steps == 0)
    int64_t steps;          // > 0: run exactly this many steps instead of a budget
    int64_t stop_after;     // > 0: stop (and save) after this many steps, as if interrupted
    int excluded_steps;     // steps before the budget clock starts (2)
    uint64_t seed;          // init and data order
    int64_t train_tokens;   // > 0: train on a fixed subset of the training data's documents that add up
                            // to at most this many tokens, read again each epoch
    int train_subset;       // TRAIN_SUBSET_*: that subset is a fixed random sample, or the first documents
    int data_order;         // DATA_ORDER_*: documents shuffled then packed, or fixed windows shuffled
    int epoch_order;        // EPOCH_ORDER_*: a new order each epoch, or epoch 1's every time
    int crop_rest;          // CROP_REST_*: a cropped document's rest continues a later row, or is dropped
    const char *mix;        // --mix SPEC (data/mix.h): the sources of the training data and their shares
                            // of its tokens; NULL or "": the data folder's training shards alone
    float dropout;          // p of dropout on every block's attention and MLP output in training (0 = off)
    float wd_per_epoch;     // > 0: Muon's weight decay times 1 + this x (epochs read - 1) once the data repeats
    int64_t eval_tokens;    // 0 = the whole validation set
    int eval_batch;         // rows per forward when evaluating (0 = device_batch)
    double peak_flops;      // for MFU (0 = this machine's measured fp32 peak, see below)
    int threads;            // OpenMP threads (0 = all)
    int quiet;              // no progress line
    const char *run_dir;    // where the run folder goes
    const char *data_dir;   // prepared shards (cache/shards/...); NULL = prepare the default corpus
    const char *cache_dir;  // for prepare (default "cache")
    const char *resume;     // resume from this run folder
    const char *config_json;// every setting as JSON (written to config.json and the checkpoint)
    KernelPrecision precision;  // of the training steps' matmuls (KP_FP32 | KP_BF16; KP_AUTO until resolved);
                            // evaluation is always fp32, so val_bpb compares across precisions.
                            // train_defaults: fp32; the CLI's default is kernels_precision_auto()
    int profile_steps;      // > 0: record this many steps after the excluded ones with the profiler,
                            // write trace.json / profile.csv / roofline.json, skip evaluation
    double save_every_s;    // > 0: a checkpoint after the first step that ends this many seconds of
                            // wall clock after the last one
    int64_t save_every_steps;  // > 0: a checkpoint every this many steps (both 0: only at the end)
    const char *save_every; // the --save-every setting ("auto", "0", "5m", "500steps"): gives the two above
    int keep_checkpoints;   // the newest checkpoints kept (>= 1)
    int overwrite;          // replace the run already in run_dir (without it: refused)
    const char *config_path;// --config: the settings file this process read (not a setting of the run)
} TrainConfig;

TrainConfig train_defaults(void);

// The data order of training (data/loader.h says what each does); the first of each is the default.
enum { TRAIN_SUBSET_SAMPLE, TRAIN_SUBSET_FIRST };
enum { DATA_ORDER_DOCS, DATA_ORDER_ROWS };
enum { EPOCH_ORDER_FRESH, EPOCH_ORDER_SAME };
enum { CROP_REST_KEEP, CROP_REST_DROP };

enum { STOP_BUDGET, STOP_STEPS, STOP_AFTER, STOP_SIGNAL };

// One source of the training data, at the end of a run (summary.json's "sources").
#define TRAIN_MAX_SOURCES 16  // = MIX_MAX_SOURCES
typedef struct {
    char name[256];          // "train", a text/ folder's name, or a path (as --mix gave it)
    double weight;           // its share of the tokens pulled (the --mix weight, or its natural share)
    int64_t unique_tokens;   // its tokens
    int64_t tokens_pulled;   // tokens drawn from its document stream (the schedule balances these)
    int64_t tokens_trained;  // its part of the run's tokens_trained: split by the tokens each source
                             // placed into the rows trained on
    int64_t stream_epoch;    // the epoch its document stream is in (ahead of epochs by the buffer)
} TrainSourceResult;

typedef struct {
    double val_bpb;                 // of the weight average's readout when the run keeps one
    double val_bpb_raw;             // with a weight average: of the weights themselves, else NaN
    int64_t eval_tokens, eval_positions;
    int eval_T;
    int64_t steps, tokens;          // optimizer steps taken, tokens trained on
    int64_t unique_tokens;          // the training data's tokens (after --train-tokens): tokens / it = epochs
                                    // (of every source of a mixture)
    int n_sources;                  // the sources of the training data (1 without --mix)
    TrainSourceResult sources[TRAIN_MAX_SOURCES];  // (n_sources) in the loader's order
    double timed_s, startup_s, excluded_s, total_s;
    double tok_per_s, mfu;
    double final_loss;
    size_t params;
    double flops_per_token;
    int64_t peak_rss_bytes;         // the largest of the ranks'
    double faults_per_step;         // page faults (minor + major) per timed step (a resumed run: from
                                    // its second step), the largest rank's:
                                    // steady-state training allocates nothing, so ~0 (a first touch
                                    // costs ~10 us on a VM; see docs/profiling.md)
    int stopped_by;                 // STOP_BUDGET, STOP_STEPS, STOP_AFTER, STOP_SIGNAL
    int signal;                     // the signal that interrupted the run (STOP_SIGNAL), else 0
    int64_t checkpoints;            // periodic checkpoints saved (the final one not counted)
    double checkpoint_s;            // seconds they took (not on the budget clock)
    int64_t memory_estimate_bytes;  // the peak memory predicted before training (this rank)
    double peak_flops;              // the MFU denominator: every core of every rank
    int ranks;                      // data-parallel processes (1 without mpirun)
    int64_t optim_state_bytes;      // optimizer state of the whole model
    int64_t optim_state_bytes_per_rank;  // held by the busiest rank (ZeRO-1 sharding)
    char kernels[256];              // the kernel table of the training steps, e.g. "avx512+bf16" (kernels_description)
} TrainResult;

// Train, save, evaluate; writes the run folder. 0, or -1 + err (a NaN loss, bad data, ...).
int train_run(const TrainConfig *cfg, TrainResult *res);

// MFU's denominator for a precision: this machine's measured fp32 peak (below), or for bf16 its
// measured AVX512_BF16 peak (the fp32 one if the CPU has none).
double machine_peak_flops_for(KernelPrecision precision);

// This machine's fp32 peak FLOP/s for this process's threads, measured once and cached in
// cache/peak.json (kernels/cpu/peak.h; `frontier info --peak` prints it): the MFU denominator.
double machine_peak_flops(void);
// The roofline's memory slope: this machine's measured all-thread triad bandwidth in bytes/s
// (cache/peak.json, measured once if absent); 29e9 if it cannot be measured.
double machine_peak_bandwidth(void);
