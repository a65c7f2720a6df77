// train/settings.c — the settings table, resolution, comparison and the config.json format (see
// settings.h).
#include "train/settings.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/mix.h"
#include "data/prepare.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fileio.h"

// Tokens per step at most: 2^40, far past any batch this trains, small enough that the token
// counts derived from it (steps x batch) stay within int64.
#define MAX_BATCH_TOKENS ((int64_t)1 << 40)

static const char *const PRECISION_WORDS[] = {"fp32", "bf16", "auto", NULL};  // KernelPrecision's order
_Static_assert(KP_FP32 == 0 && KP_BF16 == 1 && KP_AUTO == 2, "PRECISION_WORDS follows KernelPrecision");

static const char *const TRAIN_SUBSET_WORDS[] = {"sample", "first", NULL};  // TRAIN_SUBSET_*'s order
static const char *const DATA_ORDER_WORDS[] = {"docs", "rows", NULL};  // DATA_ORDER_*'s order
static const char *const EPOCH_ORDER_WORDS[] = {"fresh", "same", NULL};
static const char *const CROP_REST_WORDS[] = {"keep", "drop", NULL};

#define FIELD(f) offsetof(TrainConfig, f), sizeof(((TrainConfig *)0)->f)
// A run setting: integers with their bounds, reals with theirs, the rest without.
#define RUN_INT(name, type, f, meta, lo, hi, flags, help) \
    {name, SETTING_##type, FIELD(f), meta, lo, hi, 0, 0, 0, 0, 0, NULL, flags, help}
#define RUN_REAL(name, type, f, meta, lo, lo_open, hi, hi_open, flags, help) \
    {name, SETTING_##type, FIELD(f), meta, 0, 0, lo, hi, lo_open, hi_open, 1, NULL, flags, help}
#define RUN_OTHER(name, type, f, meta, words, flags, help) \
    {name, SETTING_##type, FIELD(f), meta, 0, 0, 0, 0, 0, 0, 0, words, flags, help}

// The model's rows (MODEL_SETTINGS) and the optimizer's (OPTIM_SETTINGS), each macro row one entry.
#define MODEL_ROW_INT(f, flag, meta, lo, lo_open, hi, hi_open, help) \
    {flag, SETTING_INT, FIELD(model.f), meta, (int64_t)(lo), (int64_t)(hi), 0, 0, 0, 0, 0, NULL, SETTING_MODEL, help},
#define MODEL_ROW_FLOAT(f, flag, meta, lo, lo_open, hi, hi_open, help) \
    {flag, SETTING_FLOAT, FIELD(model.f), meta, 0, 0, lo, hi, lo_open, hi_open, 1, NULL, SETTING_MODEL, help},
#define MODEL_ROW_CHARS(f, flag, meta, lo, lo_open, hi, hi_open, help) \
    {flag, SETTING_CHARS, FIELD(model.f), meta, 0, 0, 0, 0, 0, 0, 0, NULL, SETTING_MODEL, help},
#define MODEL_ROW(f, flag, type, meta, lo, lo_open, hi, hi_open, absent, help) \
    MODEL_ROW_##type(f, flag, meta, lo, lo_open, hi, hi_open, help)

#define OPTIM_ROW_INT(name, f, meta, lo, lo_open, hi, hi_open, help) \
    {name, SETTING_INT, FIELD(optim.f), meta, (int64_t)(lo), (int64_t)(hi), 0, 0, 0, 0, 0, NULL, 0, help},
#define OPTIM_ROW_INT64(name, f, meta, lo, lo_open, hi, hi_open, help) \
    {name, SETTING_INT64, FIELD(optim.f), meta, (int64_t)(lo), (int64_t)(hi), 0, 0, 0, 0, 0, NULL, 0, help},
#define OPTIM_ROW_FLOAT(name, f, meta, lo, lo_open, hi, hi_open, help) \
    {name, SETTING_FLOAT, FIELD(optim.f), meta, 0, 0, lo, hi, lo_open, hi_open, 1, NULL, 0, help},
#define OPTIM_ROW_DOUBLE(name, f, meta, lo, lo_open, hi, hi_open, help) \
    {name, SETTING_DOUBLE, FIELD(optim.f), meta, 0, 0, lo, hi, lo_open, hi_open, 1, NULL, 0, help},
#define OPTIM_ROW_ENUM(name, f, meta, lo, lo_open, hi, hi_open, help) \
    {name, SETTING_ENUM, FIELD(optim.f), meta, 0, 0, 0, 0, 0, 0, 0, ORTHO_NAMES, 0, help},
#define OPTIM_ROW(name, f, type, meta, lo, lo_open, hi, hi_open, help) \
    OPTIM_ROW_##type(name, f, meta, lo, lo_open, hi, hi_open, help)

enum { R = SETTING_RESUMABLE, P = SETTING_PROCESS, I = SETTING_INVOCATION };

const Setting TRAIN_SETTINGS[] = {
    RUN_OTHER("config", TEXT, config_path, "FILE.json", NULL, P | R, "read settings from a JSON object (keys = flag names)"),
    RUN_OTHER("preset", ENUM, preset, "NAME", MODEL_PRESETS, 0, "model preset: cpu (d2, T 256) or kit-d10 (the competition baseline)"),
    RUN_OTHER("budget", DURATION, budget_s, "TIME", NULL, R | I, "wall-clock training budget: 90s, 5m, 1h, or seconds"),
    RUN_INT("steps", INT64, steps, "N", 0, INT32_MAX, R | I, "run exactly N optimizer steps instead of a budget (0 = use the budget)"),
    RUN_INT("stop-after", INT64, stop_after, "N", 0, INT32_MAX, R | I, "stop and save after N steps as if interrupted (for resume tests; --resume goes on past it)"),
    MODEL_SETTINGS(MODEL_ROW)
    RUN_INT("batch-tokens", INT64, batch_tokens, "N", 1, MAX_BATCH_TOKENS, 0, "tokens per optimizer step (all micro-batches); kit-d10: 2^19"),
    RUN_INT("device-batch", INT, device_batch, "B", 1, 1 << 20, 0, "rows per micro-batch"),
    OPTIM_SETTINGS(OPTIM_ROW)
    RUN_OTHER("precision", ENUM, precision, "auto|fp32|bf16", PRECISION_WORDS, 0, "matmul operands in training steps: bf16 = mixed "
              "precision (fp32 master weights, state and accumulation; evaluation is fp32); auto = bf16 where the CPU "
              "has AVX512_BF16, else fp32"),
    RUN_INT("excluded-steps", INT, excluded_steps, "N", 0, 1 << 20, 0, "warm-up steps before the budget clock starts"),
    RUN_INT("seed", INT64, seed, "S", 0, INT64_MAX, 0, "seed for init and data order"),
    RUN_INT("train-tokens", INT64, train_tokens, "N", 0, INT64_MAX, 0, "train on a fixed subset of the training "
            "data's documents that add up to at most N tokens, read again each epoch (0 = all): the data-limited "
            "regime at a small scale"),
    RUN_OTHER("train-subset", ENUM, train_subset, "sample|first", TRAIN_SUBSET_WORDS, 0, "which documents "
              "--train-tokens keeps: sample = a fixed random sample of the whole corpus (the same for every seed); "
              "first = the first documents in file order (one or two books: a narrow domain)"),
    RUN_OTHER("data-order", ENUM, data_order, "docs|rows", DATA_ORDER_WORDS, 0, "what is shuffled: docs = the "
              "documents, each epoch, then packed into rows (nanochat's best fit); rows = the token data cut once "
              "into fixed rows of seq-len+1 tokens, the rows shuffled each epoch (llm.c, nanoGPT)"),
    RUN_OTHER("epoch-order", ENUM, epoch_order, "fresh|same", EPOCH_ORDER_WORDS, 0, "fresh = a new shuffle every "
              "epoch; same = every epoch in the first epoch's order"),
    RUN_OTHER("crop-rest", ENUM, crop_rest, "keep|drop", CROP_REST_WORDS, 0, "--data-order docs: the rest of a "
              "document cropped at a row's end continues a later row (keep) or is skipped for this epoch (drop, "
              "nanochat's way; it drops most tokens of long documents)"),
    RUN_OTHER("mix", TEXT, mix, "SPEC", NULL, 0, "train on a mixture of sources, SOURCE[=W],...: SOURCE is train "
              "(the data's own training shards), a folder of the data root's text/ (extra_books, extra_wiki, "
              "extra_textbooks) or a path to .jsonl/.txt files; W its share of the training tokens (no W: shares by "
              "token count; train unlisted or without W: the remainder). Unset: train alone"),
    RUN_REAL("dropout", FLOAT, dropout, "P", 0, 0, 0.9, 0, 0, "dropout on every block's attention and MLP output "
             "before the residual add, in training only (0 = off): regularisation when the data repeats"),
    RUN_REAL("wd-per-epoch", FLOAT, wd_per_epoch, "G", 0, 0, 1000, 0, 0, "Muon's weight decay times 1 + G x (epochs "
             "read - 1) once the training data repeats (0 = off): heavier decay the more each token is seen again"),
    RUN_INT("eval-tokens", INT64, eval_tokens, "N", 0, INT64_MAX, R | I, "cap on validation tokens (0 = the whole set)"),
    RUN_INT("eval-batch", INT, eval_batch, "B", 0, 1 << 20, R, "rows per forward in evaluation (0 = --device-batch)"),
    RUN_REAL("peak-flops", DOUBLE, peak_flops, "F", 0, 0, 1e18, 0, R, "peak FLOP/s for MFU (0 = this machine's fp32 estimate)"),
    RUN_INT("threads", INT, threads, "N", 0, 1024, R, "threads (0 = all cores)"),
    RUN_OTHER("run-dir", TEXT, run_dir, "DIR", NULL, I, "run folder (default runs/<date>-<time>)"),
    RUN_OTHER("data", TEXT, data_dir, "DIR", NULL, 0, "prepared data folder (default: prepare the shared corpus, cached)"),
    RUN_OTHER("cache", TEXT, cache_dir, "DIR", NULL, 0, "cache folder for prepare"),
    RUN_OTHER("resume", TEXT, resume, "RUN_DIR", NULL, P | R | SETTING_TRAIN_ONLY, "continue the run in RUN_DIR from its newest checkpoint, exactly "
              "where it stopped (after a kill too)"),
    RUN_OTHER("save-every", TEXT, save_every, "TIME|Nsteps", NULL, R, "save a checkpoint every TIME of wall clock (90s, 5m, "
              "1h) or every N steps (500steps); 0 = only at the end; auto = 5m when the budget is 10m or more (or with "
              "--steps), else only at the end. Saving is off the budget clock"),
    RUN_INT("keep-checkpoints", INT, keep_checkpoints, "K", 1, 1000000, R, "keep the newest K checkpoints in RUN_DIR/checkpoints"),
    RUN_OTHER("overwrite", FLAG, overwrite, NULL, NULL, P, "replace the run already in --run-dir (its checkpoints, metrics, "
              "summary); without it such a folder is refused"),
    RUN_OTHER("quiet", FLAG, quiet, NULL, NULL, R | I, "no progress line"),
};
const int TRAIN_N_SETTINGS = (int)(sizeof TRAIN_SETTINGS / sizeof *TRAIN_SETTINGS);
_Static_assert(sizeof TRAIN_SETTINGS / sizeof *TRAIN_SETTINGS <= TRAIN_MAX_SETTINGS, "raise TRAIN_MAX_SETTINGS");

const Setting *train_setting_find(const char *name) {
    for (int i = 0; i < TRAIN_N_SETTINGS; i++)
        if (!strcmp(TRAIN_SETTINGS[i].name, name)) return &TRAIN_SETTINGS[i];
    return NULL;
}

void train_setting_give(unsigned char *given, const char *name) {
    const Setting *s = train_setting_find(name);
    if (!s) {
        fprintf(stderr, "frontier: internal error: \"%s\" is not a setting\n", name);
        abort();
    }
    given[s - TRAIN_SETTINGS] = 1;
}

TrainConfig train_defaults(void) {
    TrainConfig c = {0};
    model_config_preset("cpu", &c.model);
    c.optim = optim_defaults();
    c.batch_tokens = 16384;  // the "cpu" preset's batch (kit-d10: 2^19); frontier research, docs/research.md
    c.device_batch = 16;
    c.optim.ref_batch_tokens = 4096;  // its learning rates were set at this batch
    c.budget_s = 300;
    c.excluded_steps = 2;
    c.seed = 42;
    c.run_dir = NULL;
    c.cache_dir = "cache";
    c.keep_checkpoints = 2;
    return c;
}

TrainConfig train_settings_defaults(void) {
    TrainConfig c = train_defaults();
    c.precision = KP_AUTO;
    c.save_every = "auto";
    c.model.window = 0;  // nanochat's rule for the sequence length, once it is known
    return c;
}


// ---------------------------------------------------------------------------------------------
// Resolution
// ---------------------------------------------------------------------------------------------

static int index_of(const char *name) {
    const Setting *s = train_setting_find(name);
    return s ? (int)(s - TRAIN_SETTINGS) : -1;
}

static int given_by_name(const unsigned char *given, const char *name) {
    int i = index_of(name);
    return i >= 0 && given[i];
}

// A real setting against its range: 0, or -1 + a usage error naming the flag.
static int check_real(const Setting *s, double v) {
    int ok = isfinite(v) && (s->lo_open ? v > s->lo : v >= s->lo) && (s->hi_open ? v < s->hi : v <= s->hi);
    if (ok) return 0;
    return err_usage("--%s must be in %c%g, %g%c, got %g", s->name, s->lo_open ? '(' : '[', s->lo, s->hi,
                     s->hi_open ? ')' : ']', v);
}

static int check_reals(const TrainConfig *raw) {
    for (int i = 0; i < TRAIN_N_SETTINGS; i++) {
        const Setting *s = &TRAIN_SETTINGS[i];
        if (!s->has_range) continue;
        double v = s->type == SETTING_FLOAT ? *(const float *)train_setting_cptr(s, raw)
                                            : *(const double *)train_setting_cptr(s, raw);
        if (check_real(s, v) != 0) return -1;
    }
    return 0;
}

// A folder setting: not empty, and where something exists already it must be a folder. `must_exist`
// for an input folder (--data).
static int check_dir(const char *flag, const char *path, int must_exist) {
    if (!path) return 0;
    if (!*path) return err_usage("--%s is empty: give a folder", flag);
    if (path_exists(path) && !is_dir(path)) return err_usage("--%s %s: not a folder (it is a file)", flag, path);
    if (must_exist && !path_exists(path)) return err_usage("--%s %s: no such folder", flag, path);
    return 0;
}

// --save-every: "auto", "0", a duration ("90s", "5m", "1h", bare seconds) or "Nsteps".
static int resolve_save_every(const char *s, TrainConfig *c) {
    c->save_every_s = 0, c->save_every_steps = 0;
    if (!s || !strcmp(s, "auto")) {
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
    double d = duration_parse(s);
    if (d < 0) return err_usage("--save-every '%s': expected auto, 0, a duration of at most a year like 90s, 5m or 1h, "
                                "or Nsteps", s);
    c->save_every_s = d;
    return 0;
}

int train_config_resolve(const TrainConfig *raw, const unsigned char *given, int world, TrainConfig *c) {
    *c = *raw;
    if (check_reals(raw) != 0) return -1;
    if (check_dir("data", raw->data_dir, 1) != 0 || check_dir("run-dir", raw->run_dir, 0) != 0 ||
        check_dir("cache", raw->cache_dir, 0) != 0)
        return -1;
    // The shape: the preset's; --depth re-derives width and heads; explicit shape settings win.
    const char *preset = MODEL_PRESETS[raw->preset];
    if (model_config_preset(preset, &c->model) != 0) return -1;
    ModelConfig *m = &c->model;
    int vocab = given_by_name(given, "vocab-size") ? raw->model.vocab_size : m->vocab_size;
    int T = given_by_name(given, "seq-len") ? raw->model.seq_len : m->seq_len;
    if (given_by_name(given, "depth")) *m = model_config_from_depth(raw->model.depth, vocab, T);
    m->vocab_size = vocab, m->seq_len = T;
    for (int i = 0; i < TRAIN_N_SETTINGS; i++) {
        const Setting *s = &TRAIN_SETTINGS[i];
        if ((s->flags & SETTING_MODEL) && given[i])
            memcpy(train_setting_ptr(s, c), train_setting_cptr(s, raw), s->size);
    }
    if (!given_by_name(given, "n-kv-head")) m->n_kv_head = m->n_head;
    if (!m->window_pattern[0])
        return err_usage("--window-pattern is empty: give letters S and L, e.g. SSSL (L = every layer full)");
    m->window = raw->model.window > 0 ? raw->model.window : model_config_default_window(T);
    if (model_config_validate(m) != 0) return -1;
    // The optimizer
    OptimConfig *o = &c->optim;
    if (o->ortho == ORTHO_POLAR_EXPRESS && o->ns_steps > 5)
        return err_usage("--ns-steps %d: Polar Express has 5 coefficient sets, so 1..5 (or --ortho newton-schulz for up "
                         "to 100)", o->ns_steps);
    if (optim_config_check(o) != 0) return err_mark_usage();
    if (c->precision == KP_AUTO) c->precision = kernels_precision_auto();
    // The batch and the learning-rate reference batch follow the preset unless given. cpu: 16384
    // tokens (4 micro-batches of 16 x 256) at learning rates referenced to 4096, so sqrt(4) = 2x
    // nanochat's: found better than 4096 at the main job's 5 minutes by `frontier research`
    // (docs/research.md).
    int kit = !strcmp(preset, "kit-d10");
    if (!given_by_name(given, "batch-tokens")) c->batch_tokens = kit ? 524288 : 16384;
    if (!given_by_name(given, "device-batch")) c->device_batch = 16;
    if (!given_by_name(given, "lr-batch-ref")) o->ref_batch_tokens = kit ? 524288 : 4096;
    // The step's rows and micro-batches are counted in ints (train.c): bound them here, where the
    // message can name the settings, and check the batch splits as train.c will split it.
    const int64_t rows = c->batch_tokens / T;
    if (rows > INT32_MAX)
        return err_usage("--batch-tokens %lld / --seq-len %d = %lld rows per step; at most %d fit: lower --batch-tokens",
                         (long long)c->batch_tokens, T, (long long)rows, INT32_MAX);
    if (world == 1 && c->batch_tokens % ((int64_t)c->device_batch * T) != 0)
        return err_usage("--batch-tokens %lld is not a multiple of --device-batch %d x --seq-len %d = %lld tokens per "
                         "micro-batch", (long long)c->batch_tokens, c->device_batch, T, (long long)c->device_batch * T);
    if (c->batch_tokens % ((int64_t)T * world) != 0)
        return err_usage("--batch-tokens %lld is not a multiple of %d ranks x --seq-len %d: the step's rows cannot be "
                         "split evenly over the ranks", (long long)c->batch_tokens, world, T);
    if (!(c->budget_s > 0))
        return err_usage("--budget must be a positive duration of at most a year, like 90s, 5m or 1h (got %g s)", c->budget_s);
    Mix mix;  // every --mix error before any work (train.c reads the spec again)
    if (mix_parse(raw->mix, default_data_root(), &mix) != 0) return -1;
    if (c->train_tokens > 0 && mix.n > 1)
        return err_usage("--train-tokens is not supported with --mix (%d sources here): its fixed subset is of one "
                         "source's documents; drop one of them", mix.n);
    if (c->data_order == DATA_ORDER_ROWS && c->crop_rest == CROP_REST_DROP)
        return err_usage("--crop-rest drop applies to --data-order docs: fixed rows crop nothing (drop one of them)");
    if (c->resume && c->overwrite) return err_usage("--overwrite and --resume contradict each other: give one");
    if (c->resume) c->run_dir = c->resume;
    return resolve_save_every(raw->save_every, c);
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

int train_setting_equal(const Setting *s, const TrainConfig *a, const TrainConfig *b) {
    const void *x = train_setting_cptr(s, a), *y = train_setting_cptr(s, b);
    switch (s->type) {
    case SETTING_TEXT: {
        const char *p = *(const char *const *)x, *q = *(const char *const *)y;
        return p && q ? !strcmp(p, q) : p == q;
    }
    case SETTING_CHARS: return !strncmp(x, y, s->size);
    case SETTING_FLOAT: return *(const float *)x == *(const float *)y;
    case SETTING_DOUBLE:
    case SETTING_DURATION: return *(const double *)x == *(const double *)y;
    default: return !memcmp(x, y, s->size);  // integers, enums, flags: plain values
    }
}

const Setting *train_config_diff(const TrainConfig *a, const TrainConfig *b, unsigned skip) {
    for (int i = 0; i < TRAIN_N_SETTINGS; i++)
        if (!(TRAIN_SETTINGS[i].flags & skip) && !train_setting_equal(&TRAIN_SETTINGS[i], a, b)) return &TRAIN_SETTINGS[i];
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// config.json
// ---------------------------------------------------------------------------------------------

// The shortest decimal that reads back as the same float: 0.02, not 0.019999999552965164.
static void float_text(float f, char *buf, size_t n) {
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, n, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f) return;
    }
}

cJSON *train_settings_to_json(const TrainConfig *c) { return train_settings_to_json_given(c, NULL); }

cJSON *train_settings_to_json_given(const TrainConfig *c, const unsigned char *given) {
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < TRAIN_N_SETTINGS; i++) {
        const Setting *s = &TRAIN_SETTINGS[i];
        if ((s->flags & SETTING_PROCESS) || (given && !given[i])) continue;
        const void *v = train_setting_cptr(s, c);
        char buf[64];
        switch (s->type) {
        case SETTING_INT: cJSON_AddNumberToObject(o, s->name, *(const int *)v); break;
        case SETTING_INT64: cJSON_AddNumberToObject(o, s->name, (double)*(const int64_t *)v); break;
        case SETTING_FLOAT:  // the double nearest the short decimal: cJSON prints that decimal
            float_text(*(const float *)v, buf, sizeof buf), cJSON_AddNumberToObject(o, s->name, strtod(buf, NULL));
            break;
        case SETTING_DOUBLE: cJSON_AddNumberToObject(o, s->name, *(const double *)v); break;
        case SETTING_TEXT:
            if (*(const char *const *)v) cJSON_AddStringToObject(o, s->name, *(const char *const *)v);
            else cJSON_AddNullToObject(o, s->name);
            break;
        case SETTING_CHARS: cJSON_AddStringToObject(o, s->name, (const char *)v); break;
        case SETTING_ENUM: cJSON_AddStringToObject(o, s->name, s->words[*(const int *)v]); break;
        case SETTING_DURATION: duration_format(*(const double *)v, buf, sizeof buf), cJSON_AddStringToObject(o, s->name, buf); break;
        case SETTING_FLAG: cJSON_AddBoolToObject(o, s->name, *(const int *)v); break;
        }
    }
    return o;
}

// A string read from a settings file lives as long as the process, like argv's: a TEXT setting
// points into it. Every copy stays listed here so that it is reachable to the end.
static const char *keep_string(const char *s) {
    static char **kept;
    static size_t n, cap;
    if (n == cap) {
        char **grown = realloc(kept, (cap = cap ? 2 * cap : 16) * sizeof *kept);
        if (!grown) abort();
        kept = grown;
    }
    char *copy = strdup(s);
    if (!copy) abort();
    return kept[n++] = copy;
}

// Whether a double is an integer that int64_t holds (tested before any cast: converting a value
// outside the range, or NaN, is undefined behaviour; 2^63 is exact in a double).
static int double_is_int64(double d) {
    return isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

int train_setting_from_json(const Setting *s, const cJSON *v, const char *origin, TrainConfig *raw) {
    void *dst = train_setting_ptr(s, raw);
    switch (s->type) {
    case SETTING_FLAG:
        if (!cJSON_IsBool(v)) return err_usage("%s: \"%s\" must be true or false", origin, s->name);
        *(int *)dst = cJSON_IsTrue(v);
        return 0;
    case SETTING_INT:
    case SETTING_INT64: {
        int64_t lo = s->min, hi = s->max;
        if (s->type == SETTING_INT && !(lo < hi)) lo = INT32_MIN, hi = INT32_MAX;
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
            return err_usage("%s: \"%s\" must be an integer", origin, s->name);
        int64_t x = double_is_int64(v->valuedouble) ? (int64_t)v->valuedouble : 0;
        if (!double_is_int64(v->valuedouble) || x < lo || x > hi)  // (a double next to a bound rounds to it)
            return err_usage("%s: \"%s\" must be between %lld and %lld, got %.15g", origin, s->name, (long long)lo,
                             (long long)hi, v->valuedouble);
        if (s->type == SETTING_INT) *(int *)dst = (int)x;
        else *(int64_t *)dst = x;
        return 0;
    }
    case SETTING_FLOAT:
    case SETTING_DOUBLE:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (s->type == SETTING_FLOAT && fabs(v->valuedouble) > FLT_MAX))
            return err_usage("%s: \"%s\" must be a finite number", origin, s->name);
        if (s->type == SETTING_FLOAT) *(float *)dst = (float)v->valuedouble;
        else *(double *)dst = v->valuedouble;
        return 0;
    case SETTING_TEXT:
        if (cJSON_IsNull(v)) { *(const char **)dst = NULL; return 0; }
        if (!cJSON_IsString(v)) return err_usage("%s: \"%s\" must be a string", origin, s->name);
        *(const char **)dst = keep_string(v->valuestring);
        return 0;
    case SETTING_CHARS:
        if (!cJSON_IsString(v) || strlen(v->valuestring) >= s->size)
            return err_usage("%s: \"%s\" must be a string of at most %zu characters", origin, s->name, s->size - 1);
        snprintf(dst, s->size, "%s", v->valuestring);
        return 0;
    case SETTING_ENUM:
        for (int k = 0; cJSON_IsString(v) && s->words[k]; k++)
            if (!strcmp(s->words[k], v->valuestring)) { *(int *)dst = k; return 0; }
        return err_usage("%s: \"%s\" must be one of the words --%s takes (see frontier train --help)", origin, s->name, s->name);
    case SETTING_DURATION: {
        double d = cJSON_IsString(v) ? duration_parse(v->valuestring) : -1;
        if (d < 0) return err_usage("%s: \"%s\" must be a duration like \"90s\", \"5m\" or \"1h\"", origin, s->name);
        *(double *)dst = d;
        return 0;
    }
    }
    return -1;
}

int train_settings_from_json(const cJSON *o, const char *origin, TrainConfig *raw, unsigned char *given, int override) {
    if (!cJSON_IsObject(o)) return err_usage("%s: not a JSON object", origin);
    const cJSON *item;
    cJSON_ArrayForEach(item, o) {
        const Setting *s = train_setting_find(item->string);
        if (!s) return err_usage("%s: unknown setting \"%s\" (settings are the flag names without --)", origin, item->string);
        int i = (int)(s - TRAIN_SETTINGS);
        if (given[i] && !override) continue;  // the command line wins
        if (train_setting_from_json(s, item, origin, raw) != 0) return -1;
        given[i] = 1;
    }
    return 0;
}
