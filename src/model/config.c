// model/config.c — shapes and presets (see config.h).
#include "model/config.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"

const char *const MODEL_PRESETS[] = {"cpu", "kit-d10", NULL};

ModelConfig model_config_from_depth(int depth, int vocab_size, int seq_len) {
    const int head_dim = 128;
    int c = 64 * depth;
    c = (c + head_dim - 1) / head_dim * head_dim;
    return (ModelConfig){
        .depth = depth,
        .n_embd = c,
        .n_head = c / head_dim,
        .n_kv_head = c / head_dim,
        .head_dim = head_dim,
        .seq_len = seq_len,
        .vocab_size = vocab_size,
        .mlp_ratio = 4,
        .rope_base = 100000.0f,
        .softcap = 15.0f,
        .qk_norm = 1,
        .window_pattern = "L",
        .window = model_config_default_window(seq_len),
        // The recipe on: at the budget it beat the plain block on every seed
        // (bench/recipe_ablation.sh, docs/training.md). A config file without these fields still
        // reads as the plain block (RECIPE_FIELDS below).
        .lambdas = 1,
        // Below depth 3 the block backout subtracts (depth / 2) is the last one, so the final norm
        // sees (1 - backout_lambda) * x: inert while the scalar stays under 1, and a sign flip of
        // every logit (loss spikes to ~20) when Adam's noise-sized steps carry it across
        .backout = depth >= 3,
        .qk_scale = 1.2f,
        .value_embeds = 1,
        .smear = 1,
        .bigram = MODEL_BIGRAM_PER_VOCAB * vocab_size,
    };
}

int model_config_default_window(int seq_len) { return (seq_len + 511) / 512 * 128; }

// The pattern, an empty one (a config built field by field) read as "L".
static const char *pattern_of(const ModelConfig *c) { return c->window_pattern[0] ? c->window_pattern : "L"; }

int model_config_layer_window(const ModelConfig *c, int l) {
    size_t n = strlen(c->window_pattern);
    if (l == c->depth - 1 || n == 0 || c->window_pattern[l % n] != 'S') return 0;
    return c->window;
}

int model_config_preset(const char *name, ModelConfig *cfg) {
    if (!strcmp(name, "kit-d10")) { *cfg = model_config_from_depth(10, 8192, 1024); return 0; }
    // Chosen by measurement at the main job's 5 minutes against other depths and widths
    // (bench/preset_sweep.sh; the figures: docs/perf.md).
    if (!strcmp(name, "cpu")) { *cfg = model_config_from_depth(2, 8192, 256); return 0; }
    return err_usage("--preset: unknown preset '%s' (have: cpu, kit-d10)", name);
}

int model_config_validate(const ModelConfig *c) {
    // The upper bounds are those of the flags (cli/cmd_train.c): a config read from a file gets no
    // shape the command line would refuse, and every size product below stays far inside size_t.
    if (c->depth < 1 || c->depth > 256) return err_usage("--depth must be in [1, 256] (got %d)", c->depth);
    if (c->n_embd < 1 || c->n_embd > 65536) return err_usage("--n-embd must be in [1, 65536] (got %d)", c->n_embd);
    if (c->n_head < 1 || c->n_kv_head < 1 || c->n_head > 1024 || c->n_kv_head > 1024)
        return err_usage("--n-head and --n-kv-head must be in [1, 1024] (got %d, %d)", c->n_head, c->n_kv_head);
    if (c->n_head % c->n_kv_head)
        return err_usage("--n-kv-head %d must divide --n-head %d (grouped-query attention)", c->n_kv_head, c->n_head);
    if (c->head_dim < 2 || c->head_dim % 2 || c->head_dim > 4096)
        return err_usage("--head-dim must be even and in [2, 4096] (RoPE rotates pairs), got %d", c->head_dim);
    if (c->seq_len < 1 || c->seq_len > (1 << 20)) return err_usage("--seq-len must be in [1, 1048576] (got %d)", c->seq_len);
    if (c->vocab_size < 2 || c->vocab_size > 65536) return err_usage("--vocab-size must be in [2, 65536] (got %d)", c->vocab_size);
    if (c->mlp_ratio < 1 || c->mlp_ratio > 64) return err_usage("--mlp-ratio must be in [1, 64] (got %d)", c->mlp_ratio);
    if (!(c->rope_base > 1.0f)) return err_usage("--rope-base must be greater than 1 (got %g)", c->rope_base);
    if (c->softcap < 0) return err_usage("--softcap must be >= 0 (0 disables it), got %g", c->softcap);
    size_t n = strnlen(c->window_pattern, sizeof c->window_pattern);
    if (n >= sizeof c->window_pattern || strspn(c->window_pattern, "SL") != n)
        return err_usage("--window-pattern must be 1-%zu letters S (sliding window) or L (full attention), e.g. SSSL; "
                       "got '%.*s'", sizeof c->window_pattern - 1, (int)n, c->window_pattern);
    if (strchr(c->window_pattern, 'S') && c->window < 1)
        return err_usage("--window must be at least 1 key for the S layers of --window-pattern %s (got %d)",
                       c->window_pattern, c->window);
    if ((c->lambdas != 0 && c->lambdas != 1) || (c->backout != 0 && c->backout != 1))
        return err_usage("--lambdas and --backout are 0 or 1 (got %d, %d)", c->lambdas, c->backout);
    if (!(c->qk_scale >= 0.0f && c->qk_scale <= 100.0f))
        return err_usage("--qk-scale must be in (0, 100] (1 = off; nanochat 1.2), got %g", c->qk_scale);
    if ((c->value_embeds != 0 && c->value_embeds != 1) || (c->smear != 0 && c->smear != 1))
        return err_usage("--value-embeds and --smear are 0 or 1 (got %d, %d)", c->value_embeds, c->smear);
    if (c->value_embeds && c->n_embd < MODEL_VE_GATE_CHANNELS)
        return err_usage("--value-embeds 1: its gate reads %d channels, so --n-embd must be at least %d (got %d; or --value-embeds 0)",
                         MODEL_VE_GATE_CHANNELS, MODEL_VE_GATE_CHANNELS, c->n_embd);
    if (c->smear && c->n_embd < MODEL_SMEAR_CHANNELS)
        return err_usage("--smear 1: its gate reads %d channels, so --n-embd must be at least %d (got %d; or --smear 0)",
                         MODEL_SMEAR_CHANNELS, MODEL_SMEAR_CHANNELS, c->n_embd);
    if (c->bigram < 0 || c->bigram > (1 << 22))
        return err_usage("--bigram must be in [0, 4194304] rows (0 = off; e.g. 5 x the vocabulary), got %d", c->bigram);
    return 0;
}

static size_t block_params(const ModelConfig *c) {
    size_t C = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim, kvd = (size_t)c->n_kv_head * c->head_dim;
    size_t hid = (size_t)c->mlp_ratio * C;
    return C * qd + 2 * C * kvd + qd * C + 2 * C * hid;
}

size_t model_config_num_params(const ModelConfig *c) {
    size_t n = 2 * (size_t)c->vocab_size * c->n_embd + (size_t)c->depth * block_params(c) +
               (c->lambdas ? 2 * (size_t)c->depth : 0) + (c->backout ? 1 : 0);
    for (int l = 0; l < c->depth; l++)  // a value-embedding table and its gate
        if (model_config_has_ve(c, l))
            n += (size_t)c->n_kv_head * ((size_t)c->vocab_size * c->head_dim + MODEL_VE_GATE_CHANNELS);
    if (c->smear) n += MODEL_SMEAR_CHANNELS + 1;
    return n + (size_t)c->bigram * c->n_embd;
}

double model_config_flops_per_token(const ModelConfig *c) {
    double matmul = (double)c->depth * block_params(c) + (double)c->vocab_size * c->n_embd, attn = 0;
    for (int l = 0; l < c->depth; l++) {
        int w = model_config_layer_window(c, l), t_eff = w > 0 && w < c->seq_len ? w : c->seq_len;
        attn += 12.0 * c->n_head * c->head_dim * t_eff;
    }
    return 6.0 * matmul + attn;
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#define CONFIG_FIELDS(X)                                                                              \
    X(depth, int) X(n_embd, int) X(n_head, int) X(n_kv_head, int) X(head_dim, int) X(seq_len, int) \
        X(vocab_size, int) X(mlp_ratio, int) X(rope_base, float) X(softcap, float) X(qk_norm, int)
// The recipe's fields, with the value a config written before them means (the feature off).
#define RECIPE_FIELDS(X)                                                                             \
    X(lambdas, int, 0) X(backout, int, 0) X(qk_scale, float, 1.0f) X(value_embeds, int, 0) X(smear, int, 0) \
        X(bigram, int, 0)

char *model_config_to_json(const ModelConfig *c) {
    cJSON *o = cJSON_CreateObject();
#define PUT(f, t) cJSON_AddNumberToObject(o, #f, (double)c->f);
    CONFIG_FIELDS(PUT)
#undef PUT
    cJSON_AddNumberToObject(o, "lambdas", c->lambdas);
    cJSON_AddNumberToObject(o, "backout", c->backout);
    cJSON_AddNumberToObject(o, "qk_scale", model_config_qk_scale(c));
    cJSON_AddNumberToObject(o, "value_embeds", c->value_embeds);
    cJSON_AddNumberToObject(o, "smear", c->smear);
    cJSON_AddNumberToObject(o, "bigram", c->bigram);
    cJSON_AddStringToObject(o, "window_pattern", pattern_of(c));
    cJSON_AddNumberToObject(o, "window", c->window);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

// A number of the JSON config as the field's type. Checked before the conversion: a double outside
// int's (or float's) range converts with undefined behaviour.
static int json_field(const cJSON *o, const char *name, int is_int, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v)) return err_usage("model config: \"%s\" is missing or not a number", name);
    double d = v->valuedouble;
    if (is_int && !(isfinite(d) && d == floor(d) && d >= INT_MIN && d <= INT_MAX))
        return err_usage("model config: \"%s\" is %.17g, not an integer in int's range", name, d);
    if (!is_int && !(isfinite(d) && fabs(d) <= FLT_MAX))
        return err_usage("model config: \"%s\" is %.17g, not a finite float", name, d);
    *out = d;
    return 0;
}

int model_config_from_json(const char *json, ModelConfig *c) {
    cJSON *o = cJSON_Parse(json);
    if (!o) return err_usage("model config is not valid JSON");
    double d;
    const cJSON *v;
    // (t)0.5 is 0 for the int fields only
#define GET(f, t)                                           \
    if (json_field(o, #f, (t)0.5 == (t)0, &d) != 0) {       \
        cJSON_Delete(o);                                    \
        return -1;                                          \
    }                                                       \
    c->f = (t)d;
    CONFIG_FIELDS(GET)
#undef GET
#define GET_RECIPE(f, t, off)                                                       \
    if (!cJSON_GetObjectItemCaseSensitive(o, #f)) c->f = off;                       \
    else if (json_field(o, #f, (t)0.5 == (t)0, &d) != 0) {                          \
        cJSON_Delete(o);                                                            \
        return -1;                                                                  \
    } else                                                                          \
        c->f = (t)d;
    RECIPE_FIELDS(GET_RECIPE)
#undef GET_RECIPE
    v = cJSON_GetObjectItemCaseSensitive(o, "window_pattern");  // absent before sliding windows: "L"
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "window");
    if (v && (!cJSON_IsString(v) || strlen(v->valuestring) >= sizeof c->window_pattern)) {
        cJSON_Delete(o);
        return err_usage("model config: \"window_pattern\" must be a string of at most %zu letters",
                         sizeof c->window_pattern - 1);
    }
    snprintf(c->window_pattern, sizeof c->window_pattern, "%s", v ? v->valuestring : "L");
    if (w && json_field(o, "window", 1, &d) != 0) {
        cJSON_Delete(o);
        return -1;
    }
    c->window = w ? (int)d : model_config_default_window(c->seq_len);
    cJSON_Delete(o);
    return 0;
}

const char *model_config_diff(const ModelConfig *a, const ModelConfig *b) {
#define CMP(f, t) \
    if (a->f != b->f) return #f;
    CONFIG_FIELDS(CMP)
#undef CMP
    if (a->lambdas != b->lambdas) return "lambdas";
    if (a->backout != b->backout) return "backout";
    if (model_config_qk_scale(a) != model_config_qk_scale(b)) return "qk_scale";
    if (a->value_embeds != b->value_embeds) return "value_embeds";
    if (a->smear != b->smear) return "smear";
    if (a->bigram != b->bigram) return "bigram";
    if (strcmp(pattern_of(a), pattern_of(b))) return "window_pattern";
    if (strchr(a->window_pattern, 'S') && a->window != b->window) return "window";
    return NULL;
}
