// optim/optim.c — the optimizer over the flat buffers: config, state layout, the step (see optim.h).
#include "optim/optim.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "kernels/kernels.h"
#include "profile/profile.h"
#include "util/error.h"
#include "util/mem.h"

struct OptimSlot {
    ParamKind kind;
    float beta1, beta2, wd;  // AdamW groups
    float *lr;               // points at the Optimizer's effective base lr for the group
    int s0, s1;              // state tensor indices: exp_avg, exp_avg_sq (AdamW);
                             // momentum_buffer, normuon_v or -1 (Muon)
    int ema;                 // the weight average's state tensor, or -1
};

const char *const ORTHO_NAMES[] = {"polar-express", "newton-schulz", NULL};

OptimConfig optim_defaults(void) {
    return (OptimConfig){
        .wte_lr = 0.3f,
        .wte_beta1 = 0.8f,
        .wte_beta2 = 0.995f,
        .wte_wd = 0.001f,
        .lm_head_lr = 0.008f,
        .lm_head_beta1 = 0.8f,
        .lm_head_beta2 = 0.96f,
        .lm_head_wd = 0.01f,
        .adam_eps = 1e-10f,
        .scalar_lr = 0.5f,
        .gate_lr = 0.2f,
        .muon_lr = 0.02f,
        .muon_momentum_start = 0.85f,
        .muon_momentum_end = 0.95f,
        .muon_momentum_steps = 300,
        .muon_wd = 0.2f,
        .ortho = ORTHO_POLAR_EXPRESS,
        .ns_steps = 5,
        .normuon = 0,
        .normuon_beta2 = 0.9f,
        .muon_eq = 0,
        .muon_plus = 0,
        .cautious_wd = 0,
        .warmup_steps = 10,
        .warmdown_frac = 0.5,
        .final_lr_frac = 0.05,
        .ref_width = 768,
        .ref_batch_tokens = 1LL << 19,
    };
}

static int check_beta(const char *name, float b) {
    if (!(b >= 0.0f && b < 1.0f)) return err_set("optimizer: %s = %g must lie in [0, 1)", name, (double)b);
    return 0;
}

static int check_nonneg(const char *name, double x) {
    if (!(x >= 0.0) || isinf(x)) return err_set("optimizer: %s = %g must be finite and >= 0", name, x);
    return 0;
}

int optim_config_check(const OptimConfig *c) {
    if (check_nonneg("wte_lr", c->wte_lr) || check_nonneg("lm_head_lr", c->lm_head_lr) ||
        check_nonneg("muon_lr", c->muon_lr) || check_nonneg("wte_wd", c->wte_wd) ||
        check_nonneg("lm_head_wd", c->lm_head_wd) || check_nonneg("muon_wd", c->muon_wd) ||
        check_nonneg("adam_eps", c->adam_eps) || check_nonneg("scalar_lr", c->scalar_lr) ||
        check_nonneg("gate_lr", c->gate_lr) || check_beta("wte_beta1", c->wte_beta1) ||
        check_beta("wte_beta2", c->wte_beta2) || check_beta("lm_head_beta1", c->lm_head_beta1) ||
        check_beta("lm_head_beta2", c->lm_head_beta2) || check_beta("normuon_beta2", c->normuon_beta2) ||
        check_beta("muon_momentum_start", c->muon_momentum_start) ||
        check_beta("muon_momentum_end", c->muon_momentum_end))
        return -1;
    if (c->muon_momentum_steps < 0)
        return err_set("optimizer: muon_momentum_steps = %d must be >= 0", c->muon_momentum_steps);
    if (c->ortho != ORTHO_POLAR_EXPRESS && c->ortho != ORTHO_NEWTON_SCHULZ)
        return err_set("optimizer: unknown orthogonalisation method %d", (int)c->ortho);
    int max_steps = c->ortho == ORTHO_POLAR_EXPRESS ? 5 : 100;
    if (c->ns_steps < 1 || c->ns_steps > max_steps)
        return err_set("optimizer: ns_steps = %d must lie in 1..%d for %s", c->ns_steps, max_steps,
                       c->ortho == ORTHO_POLAR_EXPRESS ? "Polar Express (5 coefficient sets)" : "Newton-Schulz");
    if (c->warmup_steps < 0) return err_set("optimizer: warmup_steps = %d must be >= 0", c->warmup_steps);
    if (!(c->warmdown_frac >= 0.0 && c->warmdown_frac <= 1.0))
        return err_set("optimizer: warmdown_frac = %g must lie in [0, 1]", c->warmdown_frac);
    if (!(c->final_lr_frac >= 0.0 && c->final_lr_frac <= 1.0))
        return err_set("optimizer: final_lr_frac = %g must lie in [0, 1]", c->final_lr_frac);
    if (c->ref_width <= 0) return err_set("optimizer: ref_width = %d must be > 0", c->ref_width);
    if (c->ema_steps > 0 && c->ema_seconds > 0)
        return err_set("--ema-steps and --ema-seconds are two ways to give the average's time constant: give one");
    if (c->ref_batch_tokens <= 0)
        return err_set("optimizer: ref_batch_tokens = %lld must be > 0", (long long)c->ref_batch_tokens);
    return 0;
}

// Append a named state tensor; offsets are 16-float aligned, like the parameter table's.
static int add_state(Optimizer *o, const char *param, const char *suffix, int rows, int cols) {
    o->st = xrealloc(o->st, (size_t)(o->n_st + 1) * sizeof *o->st);
    OptimStateTensor *t = &o->st[o->n_st];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s.%s", param, suffix);
    t->rows = rows;
    t->cols = cols;
    t->numel = (size_t)rows * (size_t)cols;
    t->offset = (o->n_state + 15) & ~(size_t)15;
    o->n_state = t->offset + t->numel;
    return o->n_st++;
}

// Relative optimizer work of one tensor, for splitting the tensors between ranks: Polar Express
// is ns_steps x (two products with the small Gram matrix and one small x small product) =
// ns·(4·s²·l + 2·s³) FLOPs for s = min(rows, cols), l = max; AdamW is memory-bound, ~20
// FLOP-equivalents an element (it streams four arrays).
static double tensor_cost(const OptimConfig *cfg, const ParamTensor *p) {
    if (p->kind != PARAM_MATRIX) return 20.0 * (double)p->numel;
    double sm = p->rows < p->cols ? p->rows : p->cols, lg = p->rows < p->cols ? p->cols : p->rows;
    return cfg->ns_steps * (4 * sm * sm * lg + 2 * sm * sm * sm) + 10.0 * (double)p->numel;
}

// The owned Muon matrices in the order threads take them side by side (optim_step): costliest
// first, ties in parameter order, so that the last ones handed out are short and no thread waits
// long for another's big matrix at the end (longest processing time first). In parameter order
// kit-d10 ended with layer 9's two 640 x 2560 matrices, each ~3x a 640 x 640 one.
typedef struct {
    double cost;
    int index;
} MatrixCost;

static int by_cost_desc(const void *pa, const void *pb) {
    const MatrixCost *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost < b->cost ? 1 : -1;
    return (a->index > b->index) - (a->index < b->index);
}

static void plan_muon_order(Optimizer *o) {
    int n = 0;
    MatrixCost *key = xmalloc((size_t)(o->own_hi - o->own_lo + 1) * sizeof *key);
    for (int i = o->own_lo; i < o->own_hi; i++)
        if (o->slot[i].kind == PARAM_MATRIX) key[n++] = (MatrixCost){tensor_cost(&o->cfg, &o->params[i]), i};
    qsort(key, (size_t)n, sizeof *key, by_cost_desc);
    o->muon_order = xmalloc((size_t)(n ? n : 1) * sizeof *o->muon_order);
    for (int j = 0; j < n; j++) o->muon_order[j] = key[j].index;
    o->n_muon_order = n;
    free(key);
}

// Which tensors this rank owns and where every rank's slice of the flat buffers lies (see
// optim.h). Returns first[] (world+1): rank r owns tensors [first[r], first[r+1]); free it.
static int *plan_shards(Optimizer *o, const ParamTable *params, int rank, int world) {
    int n = params->n;
    double *cost = xmalloc((size_t)(n ? n : 1) * sizeof *cost);
    int *first = xmalloc((size_t)(world + 1) * sizeof *first);
    for (int i = 0; i < n; i++) cost[i] = tensor_cost(&o->cfg, &params->t[i]);
    dist_partition(cost, n, world, first);
    free(cost);
    o->rank = rank;
    o->world = world;
    o->own_lo = first[rank];
    o->own_hi = first[rank + 1];
    o->param_bounds = xmalloc((size_t)(world + 1) * sizeof *o->param_bounds);
    for (int r = 0; r <= world; r++) o->param_bounds[r] = r > 0 && first[r] < n ? params->t[first[r]].offset : 0;
    o->param_bounds[world] = params->total;
    for (int r = world - 1; r > 0; r--)  // ranks that own nothing: an empty slice at the next bound
        if (first[r] >= n) o->param_bounds[r] = o->param_bounds[r + 1];
    return first;
}

// State slices per rank: the state layout is in parameter order, so rank r's slice runs from
// the first state tensor of its first parameter to the next rank's.
static void plan_state_slices(Optimizer *o, const int *first, const int *first_state_of_param) {
    o->state_bounds = xmalloc((size_t)(o->world + 1) * sizeof *o->state_bounds);
    for (int r = 0; r <= o->world; r++)
        o->state_bounds[r] = r > 0 && first[r] < o->n_params ? o->st[first_state_of_param[first[r]]].offset : 0;
    o->state_bounds[o->world] = o->n_state;
    for (int r = o->world - 1; r > 0; r--)
        if (first[r] >= o->n_params) o->state_bounds[r] = o->state_bounds[r + 1];
    o->state_lo = o->state_bounds[o->rank];
    o->n_state_own = o->state_bounds[o->rank + 1] - o->state_lo;
}

float *optim_state_ptr(const Optimizer *o, const OptimStateTensor *t) {
    if (t->offset < o->state_lo || t->offset + t->numel > o->state_lo + o->n_state_own) return NULL;
    return o->state + (t->offset - o->state_lo);
}

Optimizer *optim_new(const OptimConfig *cfg, const ParamTable *params, int n_embd, long long batch_tokens) {
    return optim_new_shard(cfg, params, n_embd, batch_tokens, 0, 1);
}

Optimizer *optim_new_shard(const OptimConfig *cfg, const ParamTable *params, int n_embd, long long batch_tokens,
                           int rank, int world) {
    if (optim_config_check(cfg)) return NULL;
    if (world < 1 || rank < 0 || rank >= world)
        return err_set("optimizer: shard %d of %d does not exist", rank, world), NULL;
    if (n_embd <= 0) return err_set("optimizer: model width %d must be > 0", n_embd), NULL;
    if (batch_tokens <= 0) return err_set("optimizer: batch of %lld tokens must be > 0", batch_tokens), NULL;
    for (int i = 0; i < params->n; i++) {
        const ParamTensor *p = &params->t[i];
        if (p->rows <= 0 || p->cols <= 0)
            return err_set("optimizer: tensor %s has shape (%d, %d)", p->name, p->rows, p->cols), NULL;
        if (p->kind != PARAM_WTE && p->kind != PARAM_LM_HEAD && p->kind != PARAM_MATRIX &&
            p->kind != PARAM_RESID_LAMBDAS && p->kind != PARAM_X0_LAMBDAS && p->kind != PARAM_GATE_SCALARS &&
            p->kind != PARAM_VALUE_EMBED && p->kind != PARAM_BIGRAM)
            return err_set("optimizer: tensor %s has unknown kind %d", p->name, (int)p->kind), NULL;
    }

    Optimizer *o = xcalloc(1, sizeof *o);
    o->cfg = *cfg;
    o->n_params = params->n;
    o->params = xmalloc((size_t)(params->n ? params->n : 1) * sizeof *o->params);
    if (params->n) memcpy(o->params, params->t, (size_t)params->n * sizeof *o->params);
    o->slot = xcalloc((size_t)(params->n ? params->n : 1), sizeof *o->slot);

    const double batch_scale = sqrt((double)batch_tokens / (double)cfg->ref_batch_tokens);
    const double dmodel_scale = pow((double)n_embd / cfg->ref_width, -0.5);
    o->lr_wte = (float)(cfg->wte_lr * dmodel_scale * batch_scale);
    o->lr_ve = 0.5f * o->lr_wte;
    o->lr_lm_head = (float)(cfg->lm_head_lr * dmodel_scale * batch_scale);
    o->lr_muon = (float)(cfg->muon_lr * batch_scale);
    o->lr_resid = (float)(0.01 * cfg->scalar_lr * batch_scale);
    o->lr_x0 = (float)(cfg->scalar_lr * batch_scale);
    o->lr_gate = (float)(cfg->gate_lr * batch_scale);

    int *first = plan_shards(o, params, rank, world);
    int *first_state = xmalloc((size_t)(params->n ? params->n : 1) * sizeof *first_state);
    size_t max_scratch = 0;
    int max_dim = 1;
    for (int i = 0; i < params->n; i++) {
        const ParamTensor *p = &params->t[i];
        OptimSlot *s = &o->slot[i];
        first_state[i] = o->n_st;
        int owned = i >= o->own_lo && i < o->own_hi;
        s->kind = p->kind;
        s->s1 = -1;
        switch (p->kind) {
        case PARAM_WTE:
        case PARAM_BIGRAM:
        case PARAM_VALUE_EMBED:
        case PARAM_LM_HEAD: {
            int wte = p->kind != PARAM_LM_HEAD;  // the bigram table and the value embeddings: wte's betas
            s->lr = p->kind == PARAM_VALUE_EMBED ? &o->lr_ve : wte ? &o->lr_wte : &o->lr_lm_head;
            s->beta1 = wte ? cfg->wte_beta1 : cfg->lm_head_beta1;
            s->beta2 = wte ? cfg->wte_beta2 : cfg->lm_head_beta2;
            s->wd = p->kind == PARAM_VALUE_EMBED ? 0.01f : wte ? cfg->wte_wd : cfg->lm_head_wd;
            s->s0 = add_state(o, p->name, "exp_avg", p->rows, p->cols);
            s->s1 = add_state(o, p->name, "exp_avg_sq", p->rows, p->cols);
            break;
        }
        case PARAM_RESID_LAMBDAS:
        case PARAM_X0_LAMBDAS:
        case PARAM_GATE_SCALARS:
            s->lr = p->kind == PARAM_RESID_LAMBDAS ? &o->lr_resid : p->kind == PARAM_X0_LAMBDAS ? &o->lr_x0 : &o->lr_gate;
            s->beta1 = p->kind == PARAM_X0_LAMBDAS ? 0.96f : 0.8f;
            s->beta2 = 0.95f;
            s->wd = p->kind == PARAM_RESID_LAMBDAS ? 0.05f : 0.0f;
            s->s0 = add_state(o, p->name, "exp_avg", p->rows, p->cols);
            s->s1 = add_state(o, p->name, "exp_avg_sq", p->rows, p->cols);
            break;
        case PARAM_MATRIX: {
            s->lr = &o->lr_muon;
            s->s0 = add_state(o, p->name, "momentum_buffer", p->rows, p->cols);
            if (cfg->normuon)
                s->s1 = p->rows >= p->cols ? add_state(o, p->name, "normuon_v", p->rows, 1)
                                           : add_state(o, p->name, "normuon_v", 1, p->cols);
            if (!owned) break;  // scratch only for the matrices this rank orthogonalises
            size_t need = muon_scratch_floats(p->rows, p->cols);
            if (need > max_scratch) max_scratch = need;
            if (p->rows > max_dim) max_dim = p->rows;
            if (p->cols > max_dim) max_dim = p->cols;
            break;
        }
        }
        s->ema = optim_ema_on(cfg) ? add_state(o, p->name, "ema", p->rows, p->cols) : -1;
    }
    plan_state_slices(o, first, first_state);
    free(first_state);
    free(first);
    o->state = xaligned_alloc((o->n_state_own ? o->n_state_own : 1) * sizeof(float));
    memset(o->state, 0, (o->n_state_own ? o->n_state_own : 1) * sizeof(float));
    if (!max_scratch) max_scratch = 1;
    plan_muon_order(o);
    o->workers = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
    o->scratch_floats = (max_scratch + 15) / 16 * 16;  // each worker's block on its own cache lines
    o->dscratch_doubles = (2 * (size_t)max_dim + 7) / 8 * 8;
    o->scratch = xaligned_alloc((size_t)o->workers * o->scratch_floats * sizeof(float));
    o->dscratch = xaligned_alloc((size_t)o->workers * o->dscratch_doubles * sizeof(double));
    return o;
}

void optim_free(Optimizer *o) {
    if (!o) return;
    free(o->params);
    free(o->slot);
    free(o->st);
    free(o->state);
    free(o->scratch);
    free(o->dscratch);
    free(o->param_bounds);
    free(o->state_bounds);
    free(o->muon_order);
    free(o);
}

OptimSchedule optim_schedule(const OptimConfig *cfg, int step, double progress) {
    return (OptimSchedule){
        .lr_mult = lr_multiplier(step, progress, cfg->warmup_steps, cfg->warmdown_frac, cfg->final_lr_frac),
        .muon_momentum =
            muon_momentum(step, cfg->muon_momentum_steps, cfg->muon_momentum_start, cfg->muon_momentum_end),
        .muon_wd = muon_weight_decay(progress, cfg->muon_wd),
    };
}

// One tensor's update; `worker` picks the Muon scratch block.
static void update_tensor(Optimizer *o, int i, float *params, const float *grads, const OptimSchedule *s,
                          long long t, int worker) {
    const ParamTensor *p = &o->params[i];
    const OptimSlot *sl = &o->slot[i];
    const float lr = *sl->lr * s->lr_mult;
    float *w = params + p->offset;
    const float *g = grads + p->offset;
    float *s0 = optim_state_ptr(o, &o->st[sl->s0]);
    float *s1 = sl->s1 >= 0 ? optim_state_ptr(o, &o->st[sl->s1]) : NULL;
    if (sl->kind == PARAM_MATRIX)
        muon_update(kernels_for(o->precision), &o->cfg, w, g, s0, s1, p->rows, p->cols, lr, s->muon_momentum, s->muon_wd,
                    o->scratch + (size_t)worker * o->scratch_floats, o->dscratch + (size_t)worker * o->dscratch_doubles);
    else {
        // an op span of its own: the embedding tables' updates (wte, value embeddings, the bigram
        // table) are a large share of a small model's optimizer time
        prof_begin("adamw", "op", -1);
        prof_shape((int)(p->numel < INT32_MAX ? p->numel : INT32_MAX), 0, 0);
        adamw_update(w, g, s0, s1, p->numel, lr, sl->beta1, sl->beta2, o->cfg.adam_eps, sl->wd, t);
        prof_end(ADAMW_FLOPS_PER_ELEM * (double)p->numel, ADAMW_BYTES_PER_ELEM * (double)p->numel);
    }
    kernels_repack_weight(w);  // pinned copies (kernels.h) packed while w is in cache, on this thread
}

// Muon's matrices are independent. With at least two per thread, each thread takes whole
// matrices (its own scratch; the products and loops inside then run on that thread alone)
// instead of every small product and element-wise loop being split across the threads with a
// fork and join each (~130 products per cpu-preset step). The bits are the same either way:
// every product and reduction inside gives the same result whatever the thread count.
void optim_step(Optimizer *o, float *params, const float *grads, const OptimSchedule *s) {
    const long long t = ++o->step;
    int workers = omp_get_max_threads() < o->workers ? omp_get_max_threads() : o->workers;
    int side_by_side = workers > 1 && o->n_muon_order >= 2 * workers && !omp_in_parallel();
    for (int i = o->own_lo; i < o->own_hi; i++)
        if (!side_by_side || o->slot[i].kind != PARAM_MATRIX) update_tensor(o, i, params, grads, s, t, 0);
    if (!side_by_side) return;
#pragma omp parallel for schedule(dynamic, 1) num_threads(workers)
    for (int j = 0; j < o->n_muon_order; j++)
        update_tensor(o, o->muon_order[j], params, grads, s, t, omp_get_thread_num());
}

double optim_ema_decay(const OptimConfig *c, long long step, double dt_s, double progress) {
    if (!optim_ema_on(c) || step <= 1 || progress < c->ema_start) return -1;
    return c->ema_steps > 0 ? exp(-1.0 / c->ema_steps) : exp(-dt_s / c->ema_seconds);
}

void optim_ema_update(Optimizer *o, const float *params, double decay) {
    const float d = (float)decay, e1 = 1.0f - d;
    for (int i = o->own_lo; i < o->own_hi; i++) {
        if (o->slot[i].ema < 0) continue;
        const ParamTensor *p = &o->params[i];
        float *restrict e = optim_state_ptr(o, &o->st[o->slot[i].ema]);
        const float *restrict w = params + p->offset;
        if (decay < 0) {
            memcpy(e, w, p->numel * sizeof *e);
            continue;
        }
        const long long n = (long long)p->numel;
#pragma omp parallel for simd schedule(static)
        for (long long k = 0; k < n; k++) e[k] = MULADD(d, e[k], e1 * w[k]);
    }
}

void optim_ema_readout(const Optimizer *o, float *params) {
    const float a = (float)o->cfg.ema_blend, b = 1.0f - a;
    for (int i = o->own_lo; i < o->own_hi; i++) {
        if (o->slot[i].ema < 0) continue;
        const ParamTensor *p = &o->params[i];
        const float *restrict e = optim_state_ptr(o, &o->st[o->slot[i].ema]);
        float *restrict w = params + p->offset;
        const long long n = (long long)p->numel;
#pragma omp parallel for simd schedule(static)
        for (long long k = 0; k < n; k++) w[k] = MULADD(a, w[k], b * e[k]);
    }
}

int optim_adamw_hparams(const Optimizer *o, const char *name, float *lr, float *beta1, float *beta2, float *wd) {
    for (int i = 0; i < o->n_params; i++) {
        if (strcmp(o->params[i].name, name)) continue;
        const OptimSlot *s = &o->slot[i];
        if (s->kind == PARAM_MATRIX) return err_set("optimizer: %s is a Muon matrix, not an AdamW tensor", name);
        *lr = *s->lr, *beta1 = s->beta1, *beta2 = s->beta2, *wd = s->wd;
        return 0;
    }
    return err_set("optimizer: no tensor %s", name);
}

const OptimStateTensor *optim_state_find(const Optimizer *o, const char *name) {
    for (int i = 0; i < o->n_st; i++)
        if (!strcmp(o->st[i].name, name)) return &o->st[i];
    return NULL;
}
