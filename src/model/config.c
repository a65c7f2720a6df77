// model/config.c — shapes and presets (see config.h).
#include "model/config.h"

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
    };
}

int model_config_preset(const char *name, ModelConfig *cfg) {
    if (!strcmp(name, "kit-d10")) { *cfg = model_config_from_depth(10, 8192, 1024); return 0; }
    // Chosen by measurement on a 2-vCPU AVX-512 machine with the reference kernels (docs/perf.md):
    // at 90 s, depth 2 / T 256 reached val_bpb 2.09 where depth 4 / T 512 reached 2.36.
    if (!strcmp(name, "cpu")) { *cfg = model_config_from_depth(2, 8192, 256); return 0; }
    return err_set("unknown preset '%s' (have: cpu, kit-d10)", name);
}

int model_config_validate(const ModelConfig *c) {
    if (c->depth < 1) return err_set("--depth must be at least 1 (got %d)", c->depth);
    if (c->n_embd < 1) return err_set("--n-embd must be positive (got %d)", c->n_embd);
    if (c->n_head < 1 || c->n_kv_head < 1) return err_set("--n-head and --n-kv-head must be positive");
    if (c->n_head % c->n_kv_head)
        return err_set("--n-kv-head %d must divide --n-head %d (grouped-query attention)", c->n_kv_head, c->n_head);
    if (c->head_dim < 2 || c->head_dim % 2) return err_set("--head-dim must be even and at least 2 (RoPE rotates pairs), got %d", c->head_dim);
    if (c->seq_len < 1) return err_set("--seq-len must be positive (got %d)", c->seq_len);
    if (c->vocab_size < 2 || c->vocab_size > 65536) return err_set("--vocab-size must be in [2, 65536] (got %d)", c->vocab_size);
    if (c->mlp_ratio < 1) return err_set("--mlp-ratio must be at least 1 (got %d)", c->mlp_ratio);
    if (!(c->rope_base > 1.0f)) return err_set("--rope-base must be greater than 1 (got %g)", c->rope_base);
    if (c->softcap < 0) return err_set("--softcap must be >= 0 (0 disables it), got %g", c->softcap);
    return 0;
}

static size_t block_params(const ModelConfig *c) {
    size_t C = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim, kvd = (size_t)c->n_kv_head * c->head_dim;
    size_t hid = (size_t)c->mlp_ratio * C;
    return C * qd + 2 * C * kvd + qd * C + 2 * C * hid;
}

size_t model_config_num_params(const ModelConfig *c) {
    return 2 * (size_t)c->vocab_size * c->n_embd + (size_t)c->depth * block_params(c);
}

double model_config_flops_per_token(const ModelConfig *c) {
    double matmul = (double)c->depth * block_params(c) + (double)c->vocab_size * c->n_embd;
    double attn = (double)c->depth * 12.0 * c->n_head * c->head_dim * c->seq_len;
    return 6.0 * matmul + attn;
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

#include <cjson/cJSON.h>
#include <stdlib.h>

#define CONFIG_FIELDS(X)                                                                              \
    X(depth, int) X(n_embd, int) X(n_head, int) X(n_kv_head, int) X(head_dim, int) X(seq_len, int) \
        X(vocab_size, int) X(mlp_ratio, int) X(rope_base, float) X(softcap, float) X(qk_norm, int)

char *model_config_to_json(const ModelConfig *c) {
    cJSON *o = cJSON_CreateObject();
#define PUT(f, t) cJSON_AddNumberToObject(o, #f, (double)c->f);
    CONFIG_FIELDS(PUT)
#undef PUT
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

int model_config_from_json(const char *json, ModelConfig *c) {
    cJSON *o = cJSON_Parse(json);
    if (!o) return err_set("model config is not valid JSON");
    const cJSON *v;
#define GET(f, t)                                                                       \
    v = cJSON_GetObjectItemCaseSensitive(o, #f);                                        \
    if (!cJSON_IsNumber(v)) { cJSON_Delete(o); return err_set("model config lacks \"%s\"", #f); } \
    c->f = (t)v->valuedouble;
    CONFIG_FIELDS(GET)
#undef GET
    cJSON_Delete(o);
    return 0;
}

const char *model_config_diff(const ModelConfig *a, const ModelConfig *b) {
#define CMP(f, t) \
    if (a->f != b->f) return #f;
    CONFIG_FIELDS(CMP)
#undef CMP
    return NULL;
}
