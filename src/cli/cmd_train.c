// cli/cmd_train.c — `frontier train`, `frontier run` and `frontier eval`.
//
// Every setting is a flag; `--config FILE.json` sets many at once (keys are flag names; flags
// on the command line win). The full set is written to RUN_DIR/config.json and into every
// checkpoint; `--resume RUN_DIR` reads it back from the newest checkpoint (the unit it resumes),
// and refuses a config.json that disagrees with it (an edited run folder). On resume, a flag that
// contradicts the saved config is an error (except the ones that only say how long to go on or how
// to save: --budget, --steps, --stop-after, --save-every, --keep-checkpoints, --quiet, --threads,
// ...). The saved --stop-after is not kept: it stands for the interruption the resume continues.
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/corpus.h"
#include "data/shard.h"
#include "dist/dist.h"
#include "eval/bpb.h"
#include "kernels/kernels.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/train.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Flags: plain values the option table points at, turned into a TrainConfig afterwards
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *preset, *budget, *run_dir, *data, *cache, *resume, *config, *ortho, *precision, *window_pattern;
    const char *save_every;
    int keep_checkpoints, overwrite;
    int depth, n_embd, n_head, n_kv_head, head_dim, seq_len, vocab_size, mlp_ratio, qk_norm, window;
    int lambdas, backout, value_embeds, smear, bigram;
    double rope_base, softcap, qk_scale, scalar_lr, gate_lr;
    int64_t batch_tokens, steps, stop_after, eval_tokens, seed, lr_batch_ref;
    int device_batch, excluded_steps, eval_batch, threads, quiet;
    double peak_flops;
    double matrix_lr, embedding_lr, unembedding_lr, weight_decay, momentum_start, momentum_end, adam_eps;
    double warmdown, final_lr_frac, normuon_beta2;
    int momentum_steps, warmup_steps, ns_steps, normuon, muon_eq, muon_plus, cautious_wd;
} Flags;

static Flags default_flags(void) {
    TrainConfig d = train_defaults();
    OptimConfig o = d.optim;
    return (Flags){
        .preset = "cpu", .budget = "5m", .cache = "cache", .ortho = "polar-express", .save_every = "auto",
        .keep_checkpoints = d.keep_checkpoints,
        .precision = "auto", .window_pattern = "L",
        .depth = d.model.depth, .n_embd = d.model.n_embd, .n_head = d.model.n_head, .n_kv_head = d.model.n_kv_head,
        .head_dim = d.model.head_dim, .seq_len = d.model.seq_len, .vocab_size = d.model.vocab_size,
        .mlp_ratio = d.model.mlp_ratio, .qk_norm = d.model.qk_norm, .rope_base = d.model.rope_base,
        .softcap = d.model.softcap, .lambdas = d.model.lambdas, .backout = d.model.backout,
        .value_embeds = d.model.value_embeds, .smear = d.model.smear, .bigram = d.model.bigram,
        .qk_scale = model_config_qk_scale(&d.model), .scalar_lr = o.scalar_lr, .gate_lr = o.gate_lr,
        .batch_tokens = d.batch_tokens, .device_batch = d.device_batch,
        .excluded_steps = d.excluded_steps, .seed = (int64_t)d.seed, .lr_batch_ref = o.ref_batch_tokens,
        .matrix_lr = o.muon_lr, .embedding_lr = o.wte_lr, .unembedding_lr = o.lm_head_lr, .weight_decay = o.muon_wd,
        .momentum_start = o.muon_momentum_start, .momentum_end = o.muon_momentum_end, .adam_eps = o.adam_eps,
        .momentum_steps = o.muon_momentum_steps, .warmup_steps = o.warmup_steps, .warmdown = o.warmdown_frac,
        .final_lr_frac = o.final_lr_frac, .ns_steps = o.ns_steps, .normuon_beta2 = o.normuon_beta2,
    };
}

// Tokens per step at most: 2^40, far past any batch this trains, small enough that the token
// counts derived from it (steps x batch) stay within int64.
#define MAX_BATCH_TOKENS ((int64_t)1 << 40)

#define O(name, type, field, meta, help) {name, type, &f->field, meta, help, 0, 0, 0}
#define R(name, type, field, meta, help, lo, hi) {name, type, &f->field, meta, help, lo, hi, 0}

// The options that never change what is trained, only for how long or how visibly.
static const char *const RESUMABLE[] = {"budget", "steps", "stop-after", "quiet", "threads", "resume", "config",
                                        "eval-tokens", "eval-batch", "peak-flops", "save-every",
                                        "keep-checkpoints", NULL};

static Option *train_options(Flags *f, int with_resume) {
    Option opts[] = {
        O("config", OPT_STRING, config, "FILE.json", "read settings from a JSON object (keys = flag names)"),
        O("preset", OPT_STRING, preset, "NAME", "model preset: cpu (d2, T 256) or kit-d10 (the competition baseline)"),
        O("budget", OPT_STRING, budget, "TIME", "wall-clock training budget: 90s, 5m, 1h, or seconds"),
        R("steps", OPT_INT64, steps, "N", "run exactly N optimizer steps instead of a budget (0 = use the budget)", 0, INT32_MAX),
        R("stop-after", OPT_INT64, stop_after, "N", "stop and save after N steps as if interrupted (for resume tests; --resume goes on past it)", 0, INT32_MAX),
        R("depth", OPT_INT, depth, "L", "layers; also sets width 64*L (rounded to head-dim) and heads, unless given", 1, 256),
        R("n-embd", OPT_INT, n_embd, "C", "residual width", 1, 65536),
        R("n-head", OPT_INT, n_head, "H", "query heads", 1, 1024),
        R("n-kv-head", OPT_INT, n_kv_head, "H", "key/value heads (divides --n-head; default = --n-head)", 1, 1024),
        R("head-dim", OPT_INT, head_dim, "D", "head dimension (even)", 2, 4096),
        R("seq-len", OPT_INT, seq_len, "T", "context length", 1, 1 << 20),
        R("vocab-size", OPT_INT, vocab_size, "V", "vocabulary (must match the tokenizer)", 265, 65536),
        R("mlp-ratio", OPT_INT, mlp_ratio, "R", "MLP hidden = R * width", 1, 64),
        O("rope-base", OPT_DOUBLE, rope_base, "B", "RoPE base"),
        O("softcap", OPT_DOUBLE, softcap, "S", "logit softcap S*tanh(z/S); 0 = off"),
        R("qk-norm", OPT_INT, qk_norm, "0|1", "RMSNorm q and k over the head dim", 0, 1),
        O("qk-scale", OPT_DOUBLE, qk_scale, "S", "q and k times S after the QK-norm (nanochat 1.2; 1 = off)"),
        R("lambdas", OPT_INT, lambdas, "0|1", "nanochat's resid and x0 lambdas: block i's input is resid_lambdas[i]*x + x0_lambdas[i]*x0", 0, 1),
        R("backout", OPT_INT, backout, "0|1", "nanochat's backout: subtract backout_lambda * (the residual after block depth/2) before the final norm; on by default from depth 3 (below it that block is the last one)", 0, 1),
        R("value-embeds", OPT_INT, value_embeds, "0|1", "ResFormer value embeddings (nanochat): on alternating layers ending with the last, v += 3*sigmoid(gate(x[:12])) * value_embeds[l][token]", 0, 1),
        R("smear", OPT_INT, smear, "0|1", "nanochat's smear: each position's embedding += smear_lambda * sigmoid(gate(e[:24])) * the previous position's", 0, 1),
        R("bigram", OPT_INT, bigram, "ROWS", "bigram hash embedding (modded-nanogpt): a table of ROWS rows indexed by a hash of (previous token, token), added to wte (0 = off; e.g. 5 x the vocabulary)", 0, 1 << 22),
        O("window-pattern", OPT_STRING, window_pattern, "P", "sliding-window attention per layer, tiled over the depth: L = full causal, S = the last --window keys (nanochat's SSSL); the last layer is always L"),
        R("window", OPT_INT, window, "N", "keys before each query an S layer sees (0 = nanochat's rule: ceil(T/4/128)*128, 512 at T 2048)", 0, 1 << 20),
        R("batch-tokens", OPT_INT64, batch_tokens, "N", "tokens per optimizer step (all micro-batches); kit-d10: 2^19", 1, MAX_BATCH_TOKENS),
        R("device-batch", OPT_INT, device_batch, "B", "rows per micro-batch", 1, 1 << 20),
        R("lr-batch-ref", OPT_INT64, lr_batch_ref, "N", "learning rates scale by sqrt(batch-tokens / N); cpu preset 4096, kit-d10 2^19", 1, MAX_BATCH_TOKENS),
        O("matrix-lr", OPT_DOUBLE, matrix_lr, "LR", "Muon base learning rate"),
        O("embedding-lr", OPT_DOUBLE, embedding_lr, "LR", "AdamW base learning rate for wte"),
        O("unembedding-lr", OPT_DOUBLE, unembedding_lr, "LR", "AdamW base learning rate for lm_head"),
        O("weight-decay", OPT_DOUBLE, weight_decay, "WD", "Muon weight decay at the start (decays linearly to 0)"),
        O("momentum-start", OPT_DOUBLE, momentum_start, "M", "Muon momentum at step 0"),
        O("momentum-end", OPT_DOUBLE, momentum_end, "M", "Muon momentum after the ramp"),
        R("momentum-steps", OPT_INT, momentum_steps, "N", "steps of the momentum ramp", 0, 1 << 30),
        O("adam-eps", OPT_DOUBLE, adam_eps, "EPS", "AdamW epsilon"),
        O("scalar-lr", OPT_DOUBLE, scalar_lr, "LR", "AdamW base learning rate of x0_lambdas (resid_lambdas: 0.01 x it)"),
        O("gate-lr", OPT_DOUBLE, gate_lr, "LR", "AdamW base learning rate of backout_lambda, smear_gate and smear_lambda"),
        R("warmup-steps", OPT_INT, warmup_steps, "N", "linear LR warm-up steps", 0, 1 << 30),
        O("warmdown", OPT_DOUBLE, warmdown, "FRAC", "fraction of progress spent in the final linear warm-down"),
        O("final-lr-frac", OPT_DOUBLE, final_lr_frac, "FRAC", "LR multiplier at the end of the warm-down"),
        O("ortho", OPT_STRING, ortho, "NAME", "Muon orthogonalisation: polar-express or newton-schulz"),
        R("ns-steps", OPT_INT, ns_steps, "N", "orthogonalisation iterations", 1, 100),
        R("normuon", OPT_INT, normuon, "0|1", "NorMuon variance reduction", 0, 1),
        O("normuon-beta2", OPT_DOUBLE, normuon_beta2, "B", "NorMuon second-moment decay"),
        R("muon-eq", OPT_INT, muon_eq, "0|1", "MuonEq row equilibration", 0, 1),
        R("muon-plus", OPT_INT, muon_plus, "0|1", "Muon+ Frobenius-norm snap", 0, 1),
        R("cautious-wd", OPT_INT, cautious_wd, "0|1", "cautious weight decay", 0, 1),
        O("precision", OPT_STRING, precision, "auto|fp32|bf16", "matmul operands in training steps: bf16 = mixed "
          "precision (fp32 master weights, state and accumulation; evaluation is fp32); auto = bf16 where the CPU "
          "has AVX512_BF16, else fp32"),
        R("excluded-steps", OPT_INT, excluded_steps, "N", "warm-up steps before the budget clock starts", 0, 1 << 20),
        R("seed", OPT_INT64, seed, "S", "seed for init and data order", 0, INT64_MAX),
        R("eval-tokens", OPT_INT64, eval_tokens, "N", "cap on validation tokens (0 = the whole set)", 0, INT64_MAX),
        R("eval-batch", OPT_INT, eval_batch, "B", "rows per forward in evaluation (0 = --device-batch)", 0, 1 << 20),
        O("peak-flops", OPT_DOUBLE, peak_flops, "F", "peak FLOP/s for MFU (0 = this machine's fp32 estimate)"),
        R("threads", OPT_INT, threads, "N", "threads (0 = all cores)", 0, 1024),
        O("run-dir", OPT_STRING, run_dir, "DIR", "run folder (default runs/<date>-<time>)"),
        O("data", OPT_STRING, data, "DIR", "prepared data folder (default: prepare the shared corpus, cached)"),
        O("cache", OPT_STRING, cache, "DIR", "cache folder for prepare"),
        O("resume", OPT_STRING, resume, "RUN_DIR", "continue the run in RUN_DIR from its newest checkpoint, exactly "
          "where it stopped (after a kill too)"),
        O("save-every", OPT_STRING, save_every, "TIME|Nsteps", "save a checkpoint every TIME of wall clock (90s, 5m, "
          "1h) or every N steps (500steps); 0 = only at the end; auto = 5m when the budget is 10m or more (or with "
          "--steps), else only at the end. Saving is off the budget clock"),
        R("keep-checkpoints", OPT_INT, keep_checkpoints, "K", "keep the newest K checkpoints in RUN_DIR/checkpoints", 1, 1000000),
        O("overwrite", OPT_FLAG, overwrite, NULL, "replace the run already in --run-dir (its checkpoints, metrics, "
          "summary); without it such a folder is refused"),
        O("quiet", OPT_FLAG, quiet, NULL, "no progress line"),
        {0, 0, 0, 0, 0, 0, 0, 0},
    };
    if (!with_resume)
        for (Option *o = opts; o->name; o++)
            if (!strcmp(o->name, "resume")) memmove(o, o + 1, (size_t)((opts + sizeof opts / sizeof *opts) - o - 1) * sizeof *o);
    Option *out = xmalloc(sizeof opts);
    memcpy(out, opts, sizeof opts);
    return out;
}

// --save-every: "auto", "0", a duration ("90s", "5m", "1h", bare seconds) or "Nsteps".
static int parse_save_every(const char *s, TrainConfig *c) {
    c->save_every_s = 0, c->save_every_steps = 0;
    if (!strcmp(s, "auto")) {
        if (c->steps > 0 || c->budget_s >= 600) c->save_every_s = 300;
        return 0;
    }
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (end != s && (!strcmp(end, "steps") || !strcmp(end, "step"))) {
        if (n <= 0 || errno || n > INT32_MAX)
            return err_usage("--save-every '%s': the step count must be a positive integer (at most %d)", s, INT32_MAX);
        c->save_every_steps = n;
        return 0;
    }
    double d = args_parse_duration(s);
    if (d < 0) return err_usage("--save-every '%s': expected auto, 0, a duration of at most a year like 90s, 5m or 1h, "
                                "or Nsteps", s);
    c->save_every_s = d;
    return 0;
}

// The real-valued flags' ranges (the option table bounds integers only): outside them a value
// means nothing for training (a negative rate, a momentum of 1 or more, a NaN from --config) or
// is too large to be the float the model and optimizer keep.
typedef struct {
    const char *flag;
    size_t off;          // of the double in Flags
    double lo, hi;
    int lo_open, hi_open;
} DoubleRange;
#define DR(flag, field, lo, lo_open, hi, hi_open) {flag, offsetof(Flags, field), lo, hi, lo_open, hi_open}
static const DoubleRange DOUBLE_RANGES[] = {
    DR("rope-base", rope_base, 1, 1, 1e12, 0),        DR("softcap", softcap, 0, 0, 1e6, 0),
    DR("matrix-lr", matrix_lr, 0, 0, 1e3, 0),         DR("embedding-lr", embedding_lr, 0, 0, 1e3, 0),
    DR("unembedding-lr", unembedding_lr, 0, 0, 1e3, 0), DR("weight-decay", weight_decay, 0, 0, 1e3, 0),
    DR("momentum-start", momentum_start, 0, 0, 1, 1), DR("momentum-end", momentum_end, 0, 0, 1, 1),
    DR("adam-eps", adam_eps, 0, 1, 1, 0),             DR("warmdown", warmdown, 0, 0, 1, 0),
    DR("final-lr-frac", final_lr_frac, 0, 0, 1, 0),   DR("normuon-beta2", normuon_beta2, 0, 0, 1, 1),
    DR("peak-flops", peak_flops, 0, 0, 1e18, 0),       DR("qk-scale", qk_scale, 0, 1, 100, 0),
    DR("scalar-lr", scalar_lr, 0, 0, 1e3, 0),          DR("gate-lr", gate_lr, 0, 0, 1e3, 0),
};
#undef DR

static int check_double_ranges(const Flags *f) {
    for (size_t i = 0; i < sizeof DOUBLE_RANGES / sizeof *DOUBLE_RANGES; i++) {
        const DoubleRange *r = &DOUBLE_RANGES[i];
        double v = *(const double *)((const char *)f + r->off);
        int ok = isfinite(v) && (r->lo_open ? v > r->lo : v >= r->lo) && (r->hi_open ? v < r->hi : v <= r->hi);
        if (!ok)
            return err_usage("--%s must be in %c%g, %g%c, got %g", r->flag, r->lo_open ? '(' : '[', r->lo, r->hi,
                             r->hi_open ? ')' : ']', v);
    }
    return 0;
}

// A folder flag: not empty, and where something exists already it must be a folder. `must_exist`
// for an input folder (--data).
static int check_dir_flag(const char *flag, const char *path, int must_exist) {
    if (!path) return 0;
    if (!*path) return err_usage("--%s is empty: give a folder", flag);
    if (path_exists(path) && !is_dir(path)) return err_usage("--%s %s: not a folder (it is a file)", flag, path);
    if (must_exist && !path_exists(path)) return err_usage("--%s %s: no such folder", flag, path);
    return 0;
}

// Flags -> TrainConfig. The preset sets the shape; --depth re-derives width and heads; explicit
// shape flags win over both. Every value is checked here, before any work: a bad one is a usage
// error (exit 2) naming its flag, whether it came from the command line, --config or --resume.
static int build_config(Option *opts, const Flags *f, TrainConfig *c) {
    *c = train_defaults();
    if (model_config_preset(f->preset, &c->model) != 0) return -1;
    if (check_double_ranges(f) != 0) return -1;
    if (check_dir_flag("data", f->data, 1) != 0 || check_dir_flag("run-dir", f->run_dir, 0) != 0 ||
        check_dir_flag("cache", f->cache, 0) != 0)
        return -1;
    ModelConfig *m = &c->model;
    int vocab = args_find(opts, "vocab-size")->seen ? f->vocab_size : m->vocab_size;
    int T = args_find(opts, "seq-len")->seen ? f->seq_len : m->seq_len;
    if (args_find(opts, "depth")->seen) *m = model_config_from_depth(f->depth, vocab, T);
    m->vocab_size = vocab;
    m->seq_len = T;
#define SHAPE(flag, field) \
    if (args_find(opts, flag)->seen) m->field = f->field;
    SHAPE("n-embd", n_embd) SHAPE("n-head", n_head) SHAPE("head-dim", head_dim) SHAPE("mlp-ratio", mlp_ratio)
    SHAPE("qk-norm", qk_norm) SHAPE("lambdas", lambdas) SHAPE("backout", backout)
    SHAPE("value-embeds", value_embeds) SHAPE("smear", smear) SHAPE("bigram", bigram)
#undef SHAPE
    if (args_find(opts, "qk-scale")->seen) m->qk_scale = (float)f->qk_scale;
    m->n_kv_head = args_find(opts, "n-kv-head")->seen ? f->n_kv_head : m->n_head;
    if (args_find(opts, "rope-base")->seen) m->rope_base = (float)f->rope_base;
    if (args_find(opts, "softcap")->seen) m->softcap = (float)f->softcap;
    if (args_find(opts, "window-pattern")->seen) {
        if (!f->window_pattern || !*f->window_pattern)
            return err_usage("--window-pattern is empty: give letters S and L, e.g. SSSL (L = every layer full)");
        if (strlen(f->window_pattern) >= sizeof m->window_pattern)
            return err_usage("--window-pattern '%s' is longer than %zu letters", f->window_pattern, sizeof m->window_pattern - 1);
        snprintf(m->window_pattern, sizeof m->window_pattern, "%s", f->window_pattern);
    }
    m->window = f->window > 0 ? f->window : model_config_default_window(T);
    OptimConfig *o = &c->optim;
    o->ref_batch_tokens = f->lr_batch_ref;
    o->muon_lr = (float)f->matrix_lr;
    o->wte_lr = (float)f->embedding_lr;
    o->lm_head_lr = (float)f->unembedding_lr;
    o->muon_wd = (float)f->weight_decay;
    o->muon_momentum_start = (float)f->momentum_start;
    o->muon_momentum_end = (float)f->momentum_end;
    o->muon_momentum_steps = f->momentum_steps;
    o->adam_eps = (float)f->adam_eps;
    o->scalar_lr = (float)f->scalar_lr;
    o->gate_lr = (float)f->gate_lr;
    o->warmup_steps = f->warmup_steps;
    o->warmdown_frac = f->warmdown;
    o->final_lr_frac = f->final_lr_frac;
    o->ns_steps = f->ns_steps;
    o->normuon = f->normuon;
    o->normuon_beta2 = (float)f->normuon_beta2;
    o->muon_eq = f->muon_eq;
    o->muon_plus = f->muon_plus;
    o->cautious_wd = f->cautious_wd;
    if (!strcmp(f->ortho, "polar-express")) o->ortho = ORTHO_POLAR_EXPRESS;
    else if (!strcmp(f->ortho, "newton-schulz")) o->ortho = ORTHO_NEWTON_SCHULZ;
    else return err_usage("--ortho must be polar-express or newton-schulz, got '%s'", f->ortho);
    if (o->ortho == ORTHO_POLAR_EXPRESS && f->ns_steps > 5)
        return err_usage("--ns-steps %d: Polar Express has 5 coefficient sets, so 1..5 (or --ortho newton-schulz for up "
                         "to 100)", f->ns_steps);
    if (optim_config_check(o) != 0) return err_mark_usage();
    KernelPrecision prec;
    if (kernels_precision_parse(f->precision, &prec) != 0) return err_mark_usage();
    c->precision = prec;
    if (model_config_validate(m) != 0) return -1;
    // The batch and the learning-rate reference batch follow the preset unless given.
    int kit = !strcmp(f->preset, "kit-d10");
    // cpu: 16384 tokens (4 micro-batches of 16 x 256) at learning rates referenced to 4096, so
    // sqrt(4) = 2x nanochat's: found better than 4096 at the main job's 5 minutes by `frontier
    // research` (docs/research.md)
    c->batch_tokens = args_find(opts, "batch-tokens")->seen ? f->batch_tokens : kit ? 524288 : 16384;
    c->device_batch = args_find(opts, "device-batch")->seen ? f->device_batch : 16;
    if (!args_find(opts, "lr-batch-ref")->seen) o->ref_batch_tokens = kit ? 524288 : 4096;
    // The step's rows and micro-batches are counted in ints (train.c): bound them here, where the
    // message can name the flags, and check the batch splits as train.c will split it.
    const int64_t rows = c->batch_tokens / T, world = dist_world();
    if (rows > INT32_MAX)
        return err_usage("--batch-tokens %lld / --seq-len %d = %lld rows per step; at most %d fit: lower --batch-tokens",
                         (long long)c->batch_tokens, T, (long long)rows, INT32_MAX);
    if (world == 1 && c->batch_tokens % ((int64_t)c->device_batch * T) != 0)
        return err_usage("--batch-tokens %lld is not a multiple of --device-batch %d x --seq-len %d = %lld tokens per "
                         "micro-batch", (long long)c->batch_tokens, c->device_batch, T, (long long)c->device_batch * T);
    if (c->batch_tokens % (T * world) != 0)
        return err_usage("--batch-tokens %lld is not a multiple of %lld ranks x --seq-len %d: the step's rows cannot be "
                         "split evenly over the ranks", (long long)c->batch_tokens, (long long)world, T);
    c->budget_s = args_parse_duration(f->budget);
    if (!(c->budget_s > 0))
        return err_usage("--budget '%s': expected a positive duration of at most a year, like 90s, 5m or 1h", f->budget);
    c->steps = f->steps;
    c->stop_after = f->stop_after;
    c->excluded_steps = f->excluded_steps;
    c->seed = (uint64_t)f->seed;
    c->eval_tokens = f->eval_tokens;
    c->eval_batch = f->eval_batch;
    c->peak_flops = f->peak_flops;
    c->threads = f->threads;
    c->quiet = f->quiet;
    c->data_dir = f->data;
    c->cache_dir = f->cache;
    c->resume = f->resume;
    c->run_dir = f->resume ? f->resume : f->run_dir;
    c->keep_checkpoints = f->keep_checkpoints;
    c->overwrite = f->overwrite;
    if (f->resume && f->overwrite) return err_usage("--overwrite and --resume contradict each other: give one");
    return parse_save_every(f->save_every, c);
}

static int is_resumable(const char *name) {
    for (int k = 0; RESUMABLE[k]; k++)
        if (!strcmp(RESUMABLE[k], name)) return 1;
    return 0;
}

// RUN_DIR/config.json must say what the checkpoint says (but for how long to go on): an edited or
// truncated config.json is refused rather than trusted.
static int check_config_json(const char *run_dir, const char *ckpt_config, const char *ckpt_path) {
    char *path = path_join(run_dir, "config.json");
    size_t len;
    char *text = path_exists(path) ? read_file(path, &len) : NULL;
    int rc = 0;
    if (text) {
        cJSON *a = cJSON_ParseWithLength(text, len), *b = cJSON_Parse(ckpt_config);
        if (!cJSON_IsObject(a))
            rc = err_usage("%s is not a JSON object (a truncated or edited file?): the checkpoint %s holds the run's "
                           "settings; restore config.json from it or start a new run", path, ckpt_path);
        const cJSON *item;
        cJSON_ArrayForEach(item, b) {
            if (rc || is_resumable(item->string)) continue;
            const cJSON *mine = cJSON_GetObjectItemCaseSensitive(a, item->string);
            if (!mine || !cJSON_Compare(mine, item, 1))
                rc = err_usage("%s %s \"%s\" than the checkpoint %s (edited?): a resumed run keeps the settings it "
                               "was saved with; restore config.json or start a new run", path,
                               mine ? "gives another" : "lacks the setting", item->string, ckpt_path);
        }
        cJSON_ArrayForEach(item, a)
            if (!rc && !is_resumable(item->string) && !cJSON_GetObjectItemCaseSensitive(b, item->string))
                rc = err_usage("%s has a setting \"%s\" the checkpoint %s lacks (edited?)", path, item->string, ckpt_path);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    free(text);
    free(path);
    return rc;
}

// With --resume: load the settings stored in the newest checkpoint; flags that would change the
// run are refused.
static int apply_resume(Option *opts, Flags *f) {
    Flags given = *f;
    int seen[128] = {0}, n = 0;
    for (Option *o = opts; o->name; o++, n++) seen[n] = o->seen, o->seen = 0;
    int rc = -1, fd = -1;
    // a folder another process is training into is said to be that, whatever its checkpoints
    char *dir = !is_dir(f->resume) ? (err_usage("no such run folder"), NULL)
                : dist_rank() == 0 && dir_lock(f->resume, &fd) != 0 ? NULL : ckpt_latest(f->resume, NULL);
    dir_unlock(fd);
    char *mp = dir ? ckpt_model_path(dir) : NULL, *settings = dir ? ckpt_read_config(dir) : NULL;
    if (settings && check_config_json(f->resume, settings, mp) == 0)
        rc = args_load_json_text(opts, settings, strlen(settings), mp, 1);
    if (rc != 0) err_prefix("--resume %s", f->resume);
    free(settings);
    free(mp);
    free(dir);
    Flags saved = *f;
    saved.stop_after = 0;  // the interruption being resumed from, not a setting of the run
    n = 0;
    for (Option *o = opts; o->name && rc == 0; o++, n++) {
        int resumable = is_resumable(o->name);
        if (!seen[n]) continue;
        // take the flag's value from `given` and compare with the saved one
        size_t off = (size_t)((char *)o->dest - (char *)f);
        void *gv = (char *)&given + off, *sv = (char *)&saved + off;
        size_t sz = o->type == OPT_INT || o->type == OPT_FLAG ? sizeof(int) : o->type == OPT_STRING ? sizeof(char *) : 8;
        int differs = o->type == OPT_STRING ? (*(char **)gv && *(char **)sv ? strcmp(*(char **)gv, *(char **)sv) != 0
                                                                             : *(char **)gv != *(char **)sv)
                                            : memcmp(gv, sv, sz) != 0;
        if (differs && !resumable)
            rc = err_usage("--%s conflicts with the run being resumed (--resume %s: its checkpoint's settings): a "
                           "resumed run keeps its config; start a new run to change it", o->name, f->resume);
        memcpy(sv, gv, sz);
        o->seen = 1;
    }
    if (rc == 0) {
        saved.resume = given.resume;
        *f = saved;
    }
    return rc;
}

static char *default_run_dir(void) {
    char buf[64];
    time_t t = time(NULL);
    strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", localtime(&t));
    return xstrdup(buf);
}

static void print_summary(const TrainConfig *c, const TrainResult *r) {
    printf("\n== frontier run summary ==\n");
    if (r->stopped_by != STOP_AFTER && r->stopped_by != STOP_SIGNAL)
        printf("val_bpb        %.4f  (%lld tokens, T=%d, pinned validation set)\n", r->val_bpb,
               (long long)r->eval_tokens, r->eval_T);
    printf("tokens seen    %lld  (%lld steps x %lld tokens)\n", (long long)r->tokens, (long long)r->steps,
           (long long)c->batch_tokens);
    printf("parameters     %zu  (%.1f MFLOP/token)\n", r->params, r->flops_per_token / 1e6);
    printf("throughput     %.0f tok/s, MFU %.2f%% of %.0f GFLOP/s (%s)\n", r->tok_per_s, 100 * r->mfu,
           r->peak_flops / 1e9, c->peak_flops > 0 ? "--peak-flops" : c->precision == KP_BF16
                                    ? "measured bf16 peak of the cores used: --precision bf16"
                                    : "measured fp32 peak of the cores used");
    if (c->steps > 0) printf("budget         fixed %lld steps; timed %.1f s\n", (long long)c->steps, r->timed_s);
    else printf("budget         %.1f of %.0f s used (%.1f%%); start-up %.1f s and %d excluded steps %.1f s not counted\n",
                r->timed_s, c->budget_s, 100 * r->timed_s / c->budget_s, r->startup_s, c->excluded_steps, r->excluded_s);
    if (r->checkpoints > 0)
        printf("checkpoints    %lld during training, %.1f s (not on the budget clock), and one at the end\n",
               (long long)r->checkpoints, r->checkpoint_s);
    printf("final loss     %.4f\nrun folder     %s\n", r->final_loss, c->run_dir);
}

enum { MODE_TRAIN, MODE_RUN, MODE_PROFILE };

static int train_like(int argc, char **argv, const char *usage, const char *summary, int mode) {
    if (kernels_init() != 0) { report_error(); return 2; }  // a bad FRONTIER_KERNELS is a usage error
    Flags fl = default_flags(), *f = &fl;
    Option *opts = train_options(f, mode == MODE_TRAIN);
    if (mode == MODE_TRAIN && argc == 1 && !strcmp(argv[0], "--settings")) {  // the settings table, not a run
        args_print_settings(opts, stdout);
        free(opts);
        return 0;
    }
    int rc = parse_args(usage, summary, opts, argc, argv, NULL);
    if (rc != ARGS_OK) { free(opts); return rc == ARGS_HELP ? 0 : 2; }
    if (f->config && args_load_json(opts, f->config, 0) != 0) { free(opts); return report_error(); }
    if (f->resume && apply_resume(opts, f) != 0) { free(opts); return report_error(); }
    char *run_dir = NULL;
    if (!f->run_dir && !f->resume) f->run_dir = run_dir = default_run_dir();
    TrainConfig cfg;
    if (build_config(opts, f, &cfg) != 0) { free(opts); free(run_dir); return report_error(); }
    if (mode == MODE_PROFILE) {  // --steps N counts the recorded steps, after the excluded ones
        cfg.profile_steps = f->steps > 0 ? (int)f->steps : 5;
        cfg.steps = cfg.excluded_steps + cfg.profile_steps;
    }
    // Record what will actually be trained: shape fields derived from --preset/--depth and the
    // preset's batch defaults go into config.json as their effective values, so --resume (which
    // reads every key back as if given) rebuilds exactly this run.
    f->depth = cfg.model.depth, f->n_embd = cfg.model.n_embd, f->n_head = cfg.model.n_head;
    f->n_kv_head = cfg.model.n_kv_head, f->head_dim = cfg.model.head_dim, f->seq_len = cfg.model.seq_len;
    f->vocab_size = cfg.model.vocab_size, f->mlp_ratio = cfg.model.mlp_ratio, f->qk_norm = cfg.model.qk_norm;
    f->rope_base = cfg.model.rope_base, f->softcap = cfg.model.softcap;
    f->lambdas = cfg.model.lambdas, f->backout = cfg.model.backout, f->qk_scale = model_config_qk_scale(&cfg.model);
    f->value_embeds = cfg.model.value_embeds, f->smear = cfg.model.smear, f->bigram = cfg.model.bigram;
    f->window_pattern = cfg.model.window_pattern, f->window = cfg.model.window;
    f->batch_tokens = cfg.batch_tokens, f->device_batch = cfg.device_batch;
    f->lr_batch_ref = cfg.optim.ref_batch_tokens;
    f->precision = kernels_precision_name(cfg.precision);  // auto, resolved
    // Data and cache folders are recorded as absolute paths, so `frontier eval` finds them from
    // anywhere (they live as long as the process).
    char *abs_data = f->data ? realpath(f->data, NULL) : NULL, *abs_cache = f->cache ? realpath(f->cache, NULL) : NULL;
    if (abs_data) f->data = abs_data;
    if (abs_cache) f->cache = abs_cache;
    cJSON *j = args_to_json(opts);
    cJSON_DeleteItemFromObject(j, "resume");  // how this process was started, not settings of the run
    cJSON_DeleteItemFromObject(j, "config");
    cJSON_DeleteItemFromObject(j, "overwrite");
    char *json = cJSON_Print(j);
    cJSON_Delete(j);
    cfg.config_json = json;
    TrainResult res;
    rc = train_run(&cfg, &res);
    int speaks = dist_rank() == 0;  // under mpirun every rank has the result; rank 0 says it once
    if (rc == 0 && mode != MODE_PROFILE && speaks) print_summary(&cfg, &res);
    // an error every rank shares (a diverged loss, a failed save) is said once, by rank 0
    int code = rc == 0 ? 0 : speaks || !dist_exiting_together() ? report_error() : err_exit_code();
    if (rc == 0 && res.stopped_by == STOP_SIGNAL) {
        if (speaks)
            fprintf(stderr, "frontier: interrupted by %s at step %lld; the checkpoint is saved: continue with `frontier "
                "train --resume %s`\n", res.signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)res.steps, cfg.run_dir);
        code = 128 + res.signal;
    }
    free(json);
    free(opts);
    free(run_dir);
    free(abs_data);
    free(abs_cache);
    return code;
}

int cmd_train(int argc, char **argv) {
    return train_like(argc, argv, "frontier train [options]",
                      "Train a GPT from scratch within a wall-clock budget (or a fixed number of steps), save the "
                      "checkpoint, and score it by val_bpb on the pinned validation set. Prepares the data first "
                      "if needed (cached). `frontier train --settings` prints every setting with its type, range "
                      "and default as a Markdown table.",
                      MODE_TRAIN);
}

int cmd_run(int argc, char **argv) {
    return train_like(argc, argv, "frontier run [options]",
                      "The main job: prepare the data (cached), train the default preset for --budget (5m), "
                      "evaluate val_bpb, and print one summary block. Takes the same options as `frontier train`.",
                      MODE_RUN);
}

int cmd_profile(int argc, char **argv) {
    return train_like(argc, argv, "frontier profile [train options] [--steps N]",
                      "Profile training: after the --excluded-steps warm-up, record --steps N (default 5) steps "
                      "with every kernel call timed and costed (analytic FLOPs and bytes), then write trace.json "
                      "(Chrome/Perfetto trace events: step > phase > layer > op spans, data loading on its own "
                      "lane, a tok/s counter), profile.csv, profile_shapes.csv (per op and shape) and "
                      "roofline.json into the run folder and print the per-op table (self time, % of step, "
                      "GFLOP/s, GB/s, FLOP/byte, % of roofline) with time per phase and per layer, the costliest "
                      "(op, shape) rows, MFU and HFU. No evaluation. Takes the options of `frontier train`.",
                      MODE_PROFILE);
}
