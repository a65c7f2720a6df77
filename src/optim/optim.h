// optim/optim.h — the optimizers (as nanochat's): Muon for the 2-D matrices inside the blocks, AdamW
// for the token embedding and the lm_head, over the model's flat fp32 buffers.
//
// Parameters and gradients are two flat buffers laid out by one ParamTable (model/params.h); the
// optimizer state is a third flat buffer (`state`), described by a table of named state tensors
// (`st`) so checkpoints can save and restore it exactly. With the state buffer, `step` and the
// same config, a resumed run continues bit for bit.
//
// Per step, for every tensor (lr = effective base lr × the schedule's lr multiplier):
//
// AdamW (PARAM_WTE, PARAM_LM_HEAD, the value embeddings, the bigram table, the scalars), t = step from 1:
//   p *= 1 - lr·wd                                   decoupled decay, applied first
//   m  = b1·m + (1-b1)·g ;  v = b2·v + (1-b2)·g²
//   p -= (lr / (1 - b1^t)) · m / (sqrt(v / (1 - b2^t)) + eps)
//
// Muon (PARAM_MATRIX, shape (rows, cols) = (out, in)), mom and wd from the schedule:
//   buf = mom·buf + (1-mom)·G ;  X = (1-mom)·G + mom·buf          Nesterov momentum
//   [MuonEq]   X_row *= (||X||_F / sqrt(rows)) / max(||X_row||, 1e-6)
//   X /= (||X||_F·1.01 + 1e-6), then 5 Polar Express iterations (a, b, c):
//     wide/square (rows <= cols): A = X·Xᵀ; B = b·A + c·A·A; X = a·X + B·X
//     tall (rows > cols):         A = Xᵀ·X; B = b·A + c·A·A; X = a·X + X·B
//   [Newton–Schulz] instead: X /= (||X||_F + 1e-7), fixed (3.4445, -4.7750, 2.0315)
//   [Muon+]    X *= sqrt(min(rows, cols)) / max(||X||_F, 1e-6)
//   [NorMuon]  per-row statistics if rows >= cols, else per-column (red = the other dim):
//              vm = mean(X² over red); s2 = β2·s2 + (1-β2)·vm; f = 1/sqrt(max(s2, 1e-10));
//              X *= f · ||X||_F / max(sqrt(Σ vm·|red|·f²), 1e-10)
//   lr_eff = lr · sqrt(max(1, rows/cols))
//   W -= lr_eff·X + lr_eff·wd·W·mask        mask = 1, or [cautious wd] (X·W >= 0)
// The update and the decay are both computed from the pre-update W (nanochat's order), and the
// decay uses lr_eff (shape scale included), as nanochat does.
//
// All arithmetic is fp32 except norms and row/column statistics, which are summed in double.
// Matrix products go through kernels_for(Optimizer.precision); every reduction is split into a fixed order, so results
// do not depend on the OpenMP thread count.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "model/params.h"
#include "optim/schedule.h"

typedef enum {
    ORTHO_POLAR_EXPRESS,  // Polar Express, per-iteration coefficients (arXiv 2505.16932), at most 5 steps
    ORTHO_NEWTON_SCHULZ,  // the classic quintic (3.4445, -4.7750, 2.0315), any number of steps
} OrthoMethod;
// The words of --ortho, in the order of OrthoMethod (NULL-terminated).
extern const char *const ORTHO_NAMES[];

typedef struct {
    // AdamW, token embedding (base values; scaled by (C/ref_width)^-0.5 and the batch scale)
    float wte_lr;             // 0.3
    float wte_beta1;          // 0.8
    float wte_beta2;          // 0.995
    float wte_wd;             // 0.001 (constant, not scheduled)
    // AdamW, lm_head (likewise scaled)
    float lm_head_lr;         // 0.008
    float lm_head_beta1;      // 0.8
    float lm_head_beta2;      // 0.96
    float lm_head_wd;         // 0.01 (constant)
    float adam_eps;           // 1e-10
    // AdamW, nanochat's scalars (resid/x0 lambdas, backout; scaled by the batch scale only):
    // resid_lambdas at 0.01·scalar_lr, betas (0.8, 0.95), wd 0.05; x0_lambdas at scalar_lr,
    // betas (0.96, 0.95); gate scalars (backout_lambda) at gate_lr, betas (0.8, 0.95).
    float scalar_lr;          // 0.5
    float gate_lr;            // 0.2
    // Muon (base lr scaled by the batch scale only)
    float muon_lr;            // 0.02
    float muon_momentum_start;  // 0.85
    float muon_momentum_end;    // 0.95
    int muon_momentum_steps;    // 300: linear ramp over the first steps
    float muon_wd;            // 0.2 at the start, decaying linearly to 0 over progress
    OrthoMethod ortho;        // ORTHO_POLAR_EXPRESS
    int ns_steps;             // 5 (1..5 for Polar Express)
    int normuon;              // 0: NorMuon variance reduction
    float normuon_beta2;      // 0.9
    int muon_eq;              // 0: MuonEq row equilibration before orthogonalisation
    int muon_plus;            // 0: Muon+ (snap ||X||_F to sqrt(min(rows, cols)) after it)
    int cautious_wd;          // 0: decay only where X·W >= 0
    // Learning-rate schedule (see schedule.h)
    int warmup_steps;         // 10
    double warmdown_frac;     // 0.5 (of progress)
    double final_lr_frac;     // 0.05
    // Scaling references
    int ref_width;                // 768: AdamW lrs × (C / ref_width)^-0.5
    int64_t ref_batch_tokens;     // 2^19: all base lrs × sqrt(B / ref_batch_tokens)
    // An exponential moving average of the weights, kept as optimizer state ("<param>.ema": saved
    // in checkpoints, sharded like the rest) and read out at the end (optim_ema_readout). Its time
    // constant is in steps or in seconds of the budget clock (one of them; both 0: no average):
    // each step ema = d·ema + (1 − d)·θ with d = exp(−1/ema_steps) or exp(−Δt/ema_seconds).
    double ema_steps;             // 0
    double ema_seconds;           // 0
    double ema_start;             // 0: the progress from which it averages (before: ema = θ); the
                                  // cool-down alone: 1 − warmdown_frac
    double ema_blend;             // 0: the readout is ema_blend·θ + (1 − ema_blend)·ema
} OptimConfig;

// Every optimizer setting of `frontier train`, once: X(flag, field, type, metavar, lo, lo_open, hi,
// hi_open, help); type INT, INT64, FLOAT, DOUBLE or ENUM (ORTHO_NAMES); [lo, hi] the flag's range
// (an end excluded where *_open). The defaults are optim_defaults()'s (the trainer's presets
// change lr-batch-ref); train/settings.h makes each a flag, a --settings row and a config.json key.
// The other fields (betas, the AdamW weight decays, ref_width) are fixed by the recipe.
#define OPTIM_SETTINGS(X)                                                                                              \
    X("lr-batch-ref", ref_batch_tokens, INT64, "N", 1, 0, 1099511627776.0, 0, "learning rates scale by sqrt(batch-tokens / N); cpu preset 4096, kit-d10 2^19") \
    X("matrix-lr", muon_lr, FLOAT, "LR", 0, 0, 1e3, 0, "Muon base learning rate")                                  \
    X("embedding-lr", wte_lr, FLOAT, "LR", 0, 0, 1e3, 0, "AdamW base learning rate for wte")                        \
    X("unembedding-lr", lm_head_lr, FLOAT, "LR", 0, 0, 1e3, 0, "AdamW base learning rate for lm_head")              \
    X("weight-decay", muon_wd, FLOAT, "WD", 0, 0, 1e3, 0, "Muon weight decay at the start (decays linearly to 0)")  \
    X("momentum-start", muon_momentum_start, FLOAT, "M", 0, 0, 1, 1, "Muon momentum at step 0")                    \
    X("momentum-end", muon_momentum_end, FLOAT, "M", 0, 0, 1, 1, "Muon momentum after the ramp")                    \
    X("momentum-steps", muon_momentum_steps, INT, "N", 0, 0, 1 << 30, 0, "steps of the momentum ramp")             \
    X("adam-eps", adam_eps, FLOAT, "EPS", 0, 1, 1, 0, "AdamW epsilon")                                              \
    X("scalar-lr", scalar_lr, FLOAT, "LR", 0, 0, 1e3, 0, "AdamW base learning rate of x0_lambdas (resid_lambdas: 0.01 x it)") \
    X("gate-lr", gate_lr, FLOAT, "LR", 0, 0, 1e3, 0, "AdamW base learning rate of backout_lambda, smear_gate and smear_lambda") \
    X("warmup-steps", warmup_steps, INT, "N", 0, 0, 1 << 30, 0, "linear LR warm-up steps")                          \
    X("warmdown", warmdown_frac, DOUBLE, "FRAC", 0, 0, 1, 0, "fraction of progress spent in the final linear warm-down") \
    X("final-lr-frac", final_lr_frac, DOUBLE, "FRAC", 0, 0, 1, 0, "LR multiplier at the end of the warm-down")     \
    X("ortho", ortho, ENUM, "NAME", 0, 0, 0, 0, "Muon orthogonalisation: polar-express or newton-schulz")           \
    X("ns-steps", ns_steps, INT, "N", 1, 0, 100, 0, "orthogonalisation iterations")                                 \
    X("normuon", normuon, INT, "0|1", 0, 0, 1, 0, "NorMuon variance reduction")                                     \
    X("normuon-beta2", normuon_beta2, FLOAT, "B", 0, 0, 1, 1, "NorMuon second-moment decay")                        \
    X("muon-eq", muon_eq, INT, "0|1", 0, 0, 1, 0, "MuonEq row equilibration")                                       \
    X("muon-plus", muon_plus, INT, "0|1", 0, 0, 1, 0, "Muon+ Frobenius-norm snap")                                  \
    X("cautious-wd", cautious_wd, INT, "0|1", 0, 0, 1, 0, "cautious weight decay")                                  \
    X("ema-steps", ema_steps, DOUBLE, "N", 0, 0, 1e9, 0, "average the weights (EMA) with a time constant of N steps; the run's val_bpb, the saved model_avg.safetensors and eval read the average (0 = off)") \
    X("ema-seconds", ema_seconds, DOUBLE, "S", 0, 0, 1e7, 0, "the same with a time constant of S seconds of the budget clock, so it follows the wall-clock schedule (0 = off; not with --ema-steps)") \
    X("ema-start", ema_start, DOUBLE, "FRAC", 0, 0, 1, 0, "the progress from which the average runs (before it, it is the weights); 1 - warmdown averages the cool-down alone") \
    X("ema-blend", ema_blend, DOUBLE, "A", 0, 0, 1, 0, "the readout: A x weights + (1 - A) x average (0 = the average alone)")

// This step's scheduled values (see schedule.h; optim_schedule() computes them from a config).
typedef struct {
    float lr_mult;        // multiplies every effective base lr
    float muon_momentum;  // Muon momentum
    float muon_wd;        // Muon weight decay (absolute, already scheduled)
} OptimSchedule;

// A named view into the state buffer, for checkpoints. Names are "<param>.exp_avg",
// "<param>.exp_avg_sq" (AdamW), "<param>.momentum_buffer" and, with NorMuon,
// "<param>.normuon_v" (shape (rows, 1) if rows >= cols, else (1, cols)).
typedef struct {
    char name[128];
    int rows, cols;
    size_t offset;  // first element in `state` (floats, 16-float aligned)
    size_t numel;   // rows * cols
} OptimStateTensor;

typedef struct OptimSlot OptimSlot;  // per-parameter bookkeeping (private to optim.c)

// Sharding (ZeRO-1, for data-parallel training): with `world` > 1 the parameter tensors are split
// into `world` contiguous groups of about equal optimizer work (dist_partition over a per-tensor
// cost: Polar Express FLOPs for Muon matrices, a per-element cost for AdamW); rank r updates and
// holds the state of its group only. `st` still lists every state tensor with its offset in the
// full layout, but only the owned slice [state_lo, state_lo + n_state_own) is allocated: use
// optim_state_ptr(). With world = 1 the slice is the whole layout and `state` is it.
typedef struct {
    OptimConfig cfg;
    ParamTensor *params;     // (n_params) copy of the parameter table
    int n_params;
    float *state;            // (n_state_own) the owned state, 64-byte aligned, zero at start
    size_t n_state;          // floats of state in the full layout (every rank's)
    size_t state_lo, n_state_own;  // the owned slice of the full layout
    OptimStateTensor *st;    // (n_st) named tensors of the full layout, in parameter order
    int n_st;
    int rank, world;         // this shard of `world`
    int own_lo, own_hi;      // parameter tensors [own_lo, own_hi) are updated by this rank
    size_t *param_bounds;    // (world+1) each rank's slice of the flat parameter/gradient buffer
    size_t *state_bounds;    // (world+1) each rank's slice of the full state layout
    long long step;          // optim_step calls so far (AdamW's t of the last step); save it too
    float lr_wte;            // effective base lrs: 0.3 · (C/768)^-0.5 · sqrt(B/2^19), ...
    float lr_ve;             // the value embeddings': lr_wte / 2 (betas wte's, wd 0.01)
    float lr_lm_head;
    float lr_muon;
    float lr_resid, lr_x0, lr_gate;  // the scalars' (optim.h's OptimConfig: scalar_lr, gate_lr)
    KernelPrecision precision; // of Muon's products (kernels_for): KP_FP32 from optim_init; the
                               // trainer sets the model's, after kernels_precision_check
    // private
    OptimSlot *slot;         // (n_params)
    int workers;             // threads that may orthogonalise matrices side by side (one scratch each)
    int *muon_order;         // (n_muon_order) the owned Muon matrices, costliest first
    int n_muon_order;
    size_t scratch_floats;   // per worker: muon_scratch_floats of the largest matrix
    size_t dscratch_doubles; // per worker: 2 · largest matrix dimension
    float *scratch;          // (workers · scratch_floats)
    double *dscratch;        // (workers · dscratch_doubles)
} Optimizer;

// For the element-wise updates (adamw.c, muon.c): their loops are `omp simd`, and a compiler may
// contract a*b + c differently in a vector body and its scalar tail, which would make the bits
// depend on where the thread split falls. The multiply-adds are therefore written out: fmaf
// where the target has an FMA unit, plain a*b + c (nothing to contract) where it has none.
#ifdef __FMA__
#define MULADD(a, b, c) fmaf(a, b, c)
#else
#define MULADD(a, b, c) ((a) * (b) + (c))
#endif

OptimConfig optim_defaults(void);
// Checks a config; -1 with err_set() naming the bad field.
int optim_config_check(const OptimConfig *cfg);
// Whether the config keeps a weight average.
static inline int optim_ema_on(const OptimConfig *c) { return c->ema_steps > 0 || c->ema_seconds > 0; }

// An optimizer for `params` (copied) with zeroed state. n_embd: the model width C; batch_tokens:
// total tokens per optimizer step B. NULL with err_set() on a bad config or table.
Optimizer *optim_new(const OptimConfig *cfg, const ParamTable *params, int n_embd, long long batch_tokens);
// The same, holding and updating only shard `rank` of `world` (see above).
Optimizer *optim_new_shard(const OptimConfig *cfg, const ParamTable *params, int n_embd, long long batch_tokens,
                           int rank, int world);
void optim_free(Optimizer *o);
// Where state tensor t lives in this rank's memory, or NULL if another rank owns it.
float *optim_state_ptr(const Optimizer *o, const OptimStateTensor *t);

// The scheduled values for step `step` (from 0) at progress p (see schedule.h).
OptimSchedule optim_schedule(const OptimConfig *cfg, int step, double progress);

// One step: updates `params` in place from `grads` (both laid out by the table given to
// optim_new) and the state; increments o->step. A shard updates only its own tensors
// ([param_bounds[rank], param_bounds[rank+1]) of the flat buffers); the caller all-gathers them.
// Each tensor, once updated, goes to kernels_repack_weight: where the caller pinned it and marked
// the pins stale (kernels.h), its packed copies are made again as part of the update.
void optim_step(Optimizer *o, float *params, const float *grads, const OptimSchedule *s);

// The weight average's decay for optimizer step `step` (1, 2, ...; o->step after optim_step, saved
// in checkpoints) of dt_s seconds, begun at progress p (see OptimConfig): exp(−1/ema_steps) or
// exp(−dt_s/ema_seconds); −1 at the first step and before ema_start (the average starts from the
// weights). Its update after a step, on this shard's tensors (params: the whole flat buffer,
// after the all-gather): ema = d·ema + (1 − d)·θ, element by element (the same bits whatever the
// thread count), or ema = θ for d < 0. And its readout into params (this shard's tensors; the
// caller all-gathers): θ = ema_blend·θ + (1 − ema_blend)·ema. A no-op without an average.
double optim_ema_decay(const OptimConfig *cfg, long long step, double dt_s, double progress);
void optim_ema_update(Optimizer *o, const float *params, double decay);
void optim_ema_readout(const Optimizer *o, float *params);

// The named state tensor, or NULL.
const OptimStateTensor *optim_state_find(const Optimizer *o, const char *name);
// The AdamW hyperparameters of tensor `name`'s group: its effective base lr (before the
// schedule's multiplier), betas and weight decay. 0, or -1 + err (no such tensor, or a Muon one).
int optim_adamw_hparams(const Optimizer *o, const char *name, float *lr, float *beta1, float *beta2, float *wd);

// ---- building blocks (used by optim_step; public for tests and benchmarks) ----

// One AdamW update of n elements at step t (from 1), as above. Per element it reads p, g, m, v
// and writes p, m, v (28 bytes) in about 12 FLOPs: the profiler's figures for its "adamw" span.
#define ADAMW_FLOPS_PER_ELEM 12.0
#define ADAMW_BYTES_PER_ELEM 28.0
void adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float wd, long long t);

// Floats of scratch muon_orthogonalize / muon_update need for a (rows, cols) matrix.
size_t muon_scratch_floats(int rows, int cols);

// Orthogonalise x (rows, cols) in place: normalise, then `steps` iterations of `method`, the
// products on K (kernels_for of the optimizer's precision). scratch: muon_scratch_floats(rows,
// cols) floats; dscratch: max(rows, cols) doubles.
void muon_orthogonalize(const Kernels *K, float *x, int rows, int cols, OrthoMethod method, int steps, float *scratch,
                        double *dscratch);

// One Muon update of w (rows, cols) from g, with momentum buffer buf (rows·cols) and, if
// cfg->normuon, its variance state nv ((rows) if rows >= cols, else (cols)). lr is this step's
// base lr (before the shape scale). scratch: muon_scratch_floats(rows, cols) floats;
// dscratch: 2·max(rows, cols) doubles.
void muon_update(const Kernels *K, const OptimConfig *cfg, float *w, const float *g, float *buf, float *nv, int rows, int cols,
                 float lr, float momentum, float wd, float *scratch, double *dscratch);
