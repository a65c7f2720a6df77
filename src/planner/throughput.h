// planner/throughput.h — predict a training shape's tok/s on this machine: the kernel cost model
// (kernels/cost.h) turned into a handful of per-step work terms, weighed by coefficients fitted to
// a few short measured runs.
//
// A step's time is modelled as  t = Σ_k coef[k] · work[k]  over the terms below (each coefficient
// >= 0: seconds per FLOP, per byte, per call, per step). The terms are what the step really does
// (tp_work mirrors model.c's forward and backward and the optimizer's updates, op by op, with
// cost.c's counts), so the coefficients are machine rates, not per-shape fudge: the GEMMs' FLOPs
// and the bytes their panels move, attention's FLOPs, the element-wise ops' bytes, the Muon
// orthogonalisation's FLOPs, the per-op overhead of every layer of every micro-batch, a fixed
// cost per step, and (ranks > 1) the gradient all-reduce's bytes. Fitting minimises the relative
// error (each run weighs the same whatever its step time) with non-negative least squares.
//
// A model holds for one layout: the CPU, threads per rank, ranks and precision it was calibrated
// at (tp_layout_key), and is cached in <cache>/throughput.json under that key.
#pragma once
#include <stdint.h>

#include "model/config.h"

typedef struct {
    ModelConfig model;
    int64_t batch_tokens;  // tokens per optimizer step, all ranks
    int device_batch;      // rows per micro-batch
    int ranks;             // data-parallel processes (>= 1)
    int ns_steps;          // Muon orthogonalisation iterations (5)
} TpShape;

enum {
    TP_GEMM_FLOPS,    // the blocks' and the head's products, forward and backward
    TP_GEMM_BYTES,    // their operands and results (small products are bound by these)
    TP_GEMM_THIN,     // Σ FLOPs / the weight's smaller side: a product of narrow matrices runs below
                      // the kernel's peak (edges, packing, a K too short to amortise the loads),
                      // the more so the narrower: its time grows as FLOPs · (1 + c / width)
    TP_ATTN_FLOPS,    // causal attention, forward and backward
    TP_ELEM_BYTES,    // norms, RoPE, embeddings, the loss, residual adds, the optimizer's state
    TP_OPT_FLOPS,     // Muon's orthogonalisation products (per matrix, independent of the batch)
    TP_LAYER_CALLS,   // micro-batches x layers: each layer's ops have a fixed overhead
    TP_STEP,          // 1 per step
    TP_ALLREDUCE,     // gradient bytes one rank sends and receives (0 with one rank)
    TP_NTERMS
};
extern const char *const TP_TERM_NAMES[TP_NTERMS];

// The per-rank work of one optimizer step. 0, or -1 + err when the batch does not split
// (batch_tokens must be a multiple of ranks x device_batch x T).
int tp_work(const TpShape *s, double work[TP_NTERMS]);

// Short calibration runs measure the machine at its best; a long run on a shared or warm machine
// sustains less (over 30 minutes on this kit's 2-core VMs, 3% to 28% below the prediction:
// docs/planning.md). The model learns by how much from finished runs of at least
// TP_SUSTAINED_MIN_S on its layout (`frontier plan --reuse DIR`): each run's measured tok/s over
// the one predicted for its shape, and a budget of at least TP_SUSTAINED_MIN_S is planned at the
// predicted rate times their geometric mean. A run folder does not name its machine: the runs
// given are taken to be this one's.
#define TP_SUSTAINED_MIN_S 600.0
#define TP_MAX_SUSTAINED 64
typedef struct {
    unsigned long long id;  // the run folder (a hash of its real path): a run counted again replaces itself
    double ratio;           // measured tok/s / predicted
    double budget_s;
} TpSustainedRun;

typedef struct {
    char key[160];               // tp_layout_key
    double coef[TP_NTERMS];      // seconds per unit of each term
    int n_points;                // the calibration runs fitted
    double rms_rel_err;          // their root-mean-square relative error (step time)
    double max_rel_err;
    int n_sustained;             // finished long runs learned from (see above)
    TpSustainedRun sustained[TP_MAX_SUSTAINED];
} ThroughputModel;

// The factor for a long budget: the geometric mean of the runs' ratios (1 without runs); *log_sd
// (may be NULL): the sd of their logs (NaN with fewer than 2).
double tp_sustained_factor(const ThroughputModel *m, double *log_sd);
// Count a run: its ratio replaces its earlier one; when full, the oldest is dropped.
void tp_add_sustained(ThroughputModel *m, unsigned long long id, double ratio, double budget_s);

// "<cpu brand>|threads=<t>|ranks=<r>|<precision>|<kernels>": where a model holds.
void tp_layout_key(char *buf, int n, int threads, int ranks, const char *precision, const char *kernels);

// Fit coef to n measured (work, step seconds) pairs, minimising Σ ((pred - t) / t)^2 with every
// coefficient >= 0 (Lawson-Hanson NNLS). Terms no point exercises get 0. 0, or -1 + err (n < 1, a
// non-positive time).
int tp_fit(const double (*work)[TP_NTERMS], const double *step_s, int n, ThroughputModel *m);

double tp_predict_step_s(const ThroughputModel *m, const double work[TP_NTERMS]);
// tokens per second of the whole job (all ranks); NaN when the shape does not split
double tp_predict_tok_s(const ThroughputModel *m, const TpShape *s);

// <cache_dir>/throughput.json: every layout's model, keyed by tp_layout_key. Load: 0 (found),
// 1 (no model for this key), -1 + err (unreadable). Save keeps the other keys; atomic.
int tp_load(const char *cache_dir, const char *key, ThroughputModel *m);
int tp_save(const char *cache_dir, const ThroughputModel *m);
