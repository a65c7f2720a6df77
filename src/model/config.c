// model/config.c — shapes and presets (see config.h).
#include "model/config.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

// A field's value against its row of MODEL_SETTINGS: 0, or -1 + err naming the flag.
static int check_range(const char *flag, double v, double lo, int lo_open, double hi, int hi_open) {
    if (isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi)) return 0;
    return err_usage("--%s must be in %c%g, %g%c (got %g)", flag, lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']', v);
}

int model_config_validate(const ModelConfig *c) {
    // The ranges are the flags' (MODEL_SETTINGS): a config read from a file gets no shape the
    // command line would refuse, and every size product below stays far inside size_t. A qk_scale
    // of 0 (a config built field by field) reads as 1.
    ModelConfig v = *c;
    v.qk_scale = model_config_qk_scale(c);
#define RANGE_INT(f, flag, lo, lo_open, hi, hi_open) if (check_range(flag, v.f, lo, lo_open, hi, hi_open)) return -1;
#define RANGE_FLOAT RANGE_INT
#define RANGE_CHARS(f, flag, lo, lo_open, hi, hi_open)
#define RANGE(f, flag, type, meta, lo, lo_open, hi, hi_open, absent, help) RANGE_##type(f, flag, lo, lo_open, hi, hi_open)
    MODEL_SETTINGS(RANGE)
#undef RANGE
#undef RANGE_INT
#undef RANGE_FLOAT
#undef RANGE_CHARS
    if (c->n_head % c->n_kv_head)
        return err_usage("--n-kv-head %d must divide --n-head %d (grouped-query attention)", c->n_kv_head, c->n_head);
    if (c->head_dim % 2) return err_usage("--head-dim must be even (RoPE rotates pairs), got %d", c->head_dim);
    size_t n = strnlen(c->window_pattern, sizeof c->window_pattern);
    if (n >= sizeof c->window_pattern || strspn(c->window_pattern, "SL") != n)
        return err_usage("--window-pattern must be 1-%zu letters S (sliding window) or L (full attention), e.g. SSSL; "
                       "got '%.*s'", sizeof c->window_pattern - 1, (int)n, c->window_pattern);
    if (strchr(c->window_pattern, 'S') && c->window < 1)
        return err_usage("--window must be at least 1 key for the S layers of --window-pattern %s (got %d)",
                       c->window_pattern, c->window);
    if (c->value_embeds && c->n_embd < MODEL_VE_GATE_CHANNELS)
        return err_usage("--value-embeds 1: its gate reads %d channels, so --n-embd must be at least %d (got %d; or --value-embeds 0)",
                         MODEL_VE_GATE_CHANNELS, MODEL_VE_GATE_CHANNELS, c->n_embd);
    if (c->smear && c->n_embd < MODEL_SMEAR_CHANNELS)
        return err_usage("--smear 1: its gate reads %d channels, so --n-embd must be at least %d (got %d; or --smear 0)",
                         MODEL_SMEAR_CHANNELS, MODEL_SMEAR_CHANNELS, c->n_embd);
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

size_t model_config_scaling_params(const ModelConfig *c) {
    return (size_t)c->depth * block_params(c) + (size_t)c->vocab_size * c->n_embd;
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

// One writer, reader and diff for every field of MODEL_SETTINGS (keys: the field names). Floats are
// written as the shortest decimal that reads back as the same float ("1.2", not 1.2000000476837158).

static void put_float(cJSON *o, const char *key, float f) {
    char buf[32];
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f) break;
    }
    cJSON_AddNumberToObject(o, key, strtod(buf, NULL));  // the double nearest it: cJSON prints this decimal
}

char *model_config_to_json(const ModelConfig *c) {
    ModelConfig v = *c;
    v.qk_scale = model_config_qk_scale(c);
    snprintf(v.window_pattern, sizeof v.window_pattern, "%s", pattern_of(c));
    cJSON *o = cJSON_CreateObject();
#define PUT_INT(f) cJSON_AddNumberToObject(o, #f, v.f);
#define PUT_FLOAT(f) put_float(o, #f, v.f);
#define PUT_CHARS(f) cJSON_AddStringToObject(o, #f, v.f);
#define PUT(f, flag, type, meta, lo, lo_open, hi, hi_open, absent, help) PUT_##type(f)
    MODEL_SETTINGS(PUT)
#undef PUT
#undef PUT_INT
#undef PUT_FLOAT
#undef PUT_CHARS
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

// A number of the JSON config as the field's type. Checked before the conversion: a double outside
// int's (or float's) range converts with undefined behaviour.
static int json_number(const cJSON *v, const char *name, int is_int, double *out) {
    if (!cJSON_IsNumber(v)) return err_usage("model config: \"%s\" is not a number", name);
    double d = v->valuedouble;
    if (is_int && !(isfinite(d) && d == floor(d) && d >= INT_MIN && d <= INT_MAX))
        return err_usage("model config: \"%s\" is %.17g, not an integer in int's range", name, d);
    if (!is_int && !(isfinite(d) && fabs(d) <= FLT_MAX))
        return err_usage("model config: \"%s\" is %.17g, not a finite float", name, d);
    *out = d;
    return 0;
}

// A field's number from o, or its `absent` value (NAN: a missing field is an error). 0 or -1 + err.
static int get_number(const cJSON *o, const char *name, double absent, int is_int, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    *out = absent;
    if (v) return json_number(v, name, is_int, out);
    return isnan(absent) ? err_usage("model config: \"%s\" is missing", name) : 0;
}

// Absent before sliding windows: "L".
static int get_chars(const cJSON *o, const char *name, char *f, size_t cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (v && (!cJSON_IsString(v) || strlen(v->valuestring) >= cap))
        return err_usage("model config: \"%s\" must be a string of at most %zu letters", name, cap - 1);
    snprintf(f, cap, "%s", v ? v->valuestring : "L");
    return 0;
}

int model_config_from_json(const char *json, ModelConfig *c) {
    cJSON *o = cJSON_Parse(json);
    if (!o) return err_usage("model config is not valid JSON");
    int rc = 0;
    double d;
    // the window (absent before sliding windows) follows from seq_len: read after it, -1 = absent
#define ABSENT(f, absent) (!strcmp(#f, "window") ? -1 : (absent))
#define GET_INT(f, absent) if (rc == 0 && (rc = get_number(o, #f, ABSENT(f, absent), 1, &d)) == 0) c->f = (int)d;
#define GET_FLOAT(f, absent) if (rc == 0 && (rc = get_number(o, #f, absent, 0, &d)) == 0) c->f = (float)d;
#define GET_CHARS(f, absent) if (rc == 0) rc = get_chars(o, #f, c->f, sizeof c->f);
#define GET(f, flag, type, meta, lo, lo_open, hi, hi_open, absent, help) GET_##type(f, absent)
    MODEL_SETTINGS(GET)
#undef GET
#undef GET_INT
#undef GET_FLOAT
#undef GET_CHARS
#undef ABSENT
    if (rc == 0 && c->window == -1) c->window = model_config_default_window(c->seq_len);
    cJSON_Delete(o);
    return rc;
}

const char *model_config_diff(const ModelConfig *a, const ModelConfig *b) {
    ModelConfig x = *a, y = *b;
    x.qk_scale = model_config_qk_scale(a), y.qk_scale = model_config_qk_scale(b);
    snprintf(x.window_pattern, sizeof x.window_pattern, "%s", pattern_of(a));
    snprintf(y.window_pattern, sizeof y.window_pattern, "%s", pattern_of(b));
    if (!strchr(x.window_pattern, 'S')) x.window = y.window;  // no S layer reads it
#define CMP_INT(f) if (x.f != y.f) return #f;
#define CMP_FLOAT CMP_INT
#define CMP_CHARS(f) if (strcmp(x.f, y.f)) return #f;
#define CMP(f, flag, type, meta, lo, lo_open, hi, hi_open, absent, help) CMP_##type(f)
    MODEL_SETTINGS(CMP)
#undef CMP
#undef CMP_INT
#undef CMP_FLOAT
#undef CMP_CHARS
    return NULL;
}
