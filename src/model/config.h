// model/config.h — the model's shape and its presets.
#pragma once
#include <math.h>
#include <stddef.h>

typedef struct {
    int depth;        // L, number of blocks
    int n_embd;       // C, residual width
    int n_head;       // H, query heads
    int n_kv_head;    // Hkv, key/value heads (divides H; H = MHA)
    int head_dim;     // D (even, for RoPE)
    int seq_len;      // T, the context length trained at
    int vocab_size;   // V
    int mlp_ratio;    // MLP hidden = mlp_ratio * C
    float rope_base;  // RoPE theta base
    float softcap;    // logit softcap (0 = off)
    int qk_norm;      // RMSNorm q and k over head_dim after RoPE
    // Sliding-window attention, nanochat's --window-pattern: the pattern is tiled over the layers,
    // 'L' = full causal attention, 'S' = each query sees only the `window` keys before it (and
    // itself); the last layer is always L. Default "L" (every layer full).
    char window_pattern[17];
    int window;       // keys before the query an S layer sees (default ceil(T/4/128)·128: 512 at T 2048)
    // nanochat's residual-stream recipe (model_config_from_depth turns each on; tensors only when on):
    int lambdas;      // before block i, x = resid_lambdas[i]·x + x0_lambdas[i]·x0 (x0: the normed embedding)
    int backout;      // before the final norm, x -= backout_lambda · (the residual after block depth/2)
    float qk_scale;   // q and k multiplied by this after the QK-norm (nanochat: 1.2; 1 = off; 0, as
                      // in a config built field by field, reads as 1: model_config_qk_scale)
    int value_embeds; // ResFormer's value embeddings on the layers model_config_has_ve picks: v += gate·
                      // value_embeds[l][token], gate (per kv head) = 3·sigmoid(ve_gate · norm(x)[:12])
    int smear;        // x0[t] = e[t] + smear_lambda·sigmoid(smear_gate · e[t][:24])·e[t-1], e = norm(embedding)
    int bigram;       // rows of the bigram hash embedding added to wte[token] (0 = off; model_bigram_row)
} ModelConfig;

// Channels of norm(x) the value-embedding gate reads, and of the normed embedding smear's gate reads.
enum { MODEL_VE_GATE_CHANNELS = 12, MODEL_SMEAR_CHANNELS = 24 };
// The default bigram table: this many rows per vocabulary entry (40,960 at V 8192, as measured).
enum { MODEL_BIGRAM_PER_VOCAB = 5 };

// nanochat's value-embedding layers: alternating, ending with the last (l % 2 == (L-1) % 2).
static inline int model_config_has_ve(const ModelConfig *cfg, int l) {
    return cfg->value_embeds && l % 2 == (cfg->depth - 1) % 2;
}

// The bigram table's row for token `cur` after token `prev` (prev < 0: none, the first position of
// a sequence): a 64-bit mix of the pair, mod rows. Python's form is in tests/model/torch_ref.py.
static inline int model_bigram_row(int prev, int cur, int vocab_size, int rows) {
    unsigned long long k = (unsigned long long)(prev < 0 ? vocab_size : prev) * 65537ULL + (unsigned)cur;
    k ^= k >> 31;
    k *= 0x9E3779B97F4A7C15ULL;
    k ^= k >> 29;
    return (int)(k % (unsigned long long)rows);
}

// nanochat's short window for context T: a quarter of it, rounded up to a multiple of 128.
int model_config_default_window(int seq_len);
// The window of layer l as attention_fwd takes it: 0 (full causal) or cfg->window.
int model_config_layer_window(const ModelConfig *cfg, int l);

static inline float model_config_qk_scale(const ModelConfig *cfg) { return cfg->qk_scale > 0 ? cfg->qk_scale : 1.0f; }

// The block whose output backout subtracts: depth / 2 (nanochat's n_layer // 2).
static inline int model_config_backout_layer(const ModelConfig *cfg) { return cfg->depth / 2; }

// nanochat's shape rule: C = 64·depth rounded up to a multiple of head_dim, H = C / head_dim.
ModelConfig model_config_from_depth(int depth, int vocab_size, int seq_len);

// "kit-d10" (the competition baseline: depth 10, V 8192, T 1024) or "cpu" (the default here:
// depth 2, V 8192, T 256, chosen by measurement). Returns 0, or -1 + err for an unknown name.
int model_config_preset(const char *name, ModelConfig *cfg);
extern const char *const MODEL_PRESETS[];  // NULL-terminated list of names

// 0 if consistent, else -1 + err naming the offending field (flag) and the fix.
int model_config_validate(const ModelConfig *cfg);

size_t model_config_num_params(const ModelConfig *cfg);
// nanochat's scaling parameters (num_scaling_params): the blocks' matrices and lm_head, without the
// embedding-like tables (wte, value embeddings, bigram) and the scalars. What the tokens:params
// rule and the planner's loss model count as N.
size_t model_config_scaling_params(const ModelConfig *cfg);
// Training FLOPs per token, nanochat's convention: 6·(matmul weights incl. lm_head, excl. wte)
// + Σ_layers 12·H·D·T_eff, T_eff = min(the layer's window, T).
double model_config_flops_per_token(const ModelConfig *cfg);

// Every setting of the model, once: X(field, flag, type, metavar, lo, lo_open, hi, hi_open, absent,
// help).
// type: INT, FLOAT or CHARS (window_pattern); [lo, hi] the range (an end excluded where *_open);
// absent: what a saved config without the field means (NAN: it must be there; the recipe's fields
// came later and read as off; the window's absence means model_config_default_window(seq_len)).
// flag: the setting of `frontier train` (--n-kv-head for n_kv_head).
// From it come the JSON writer and reader and model_config_diff below, the ranges
// model_config_validate checks, and the trainer's settings (train/settings.h: flag, --help,
// --settings, config.json).
#define MODEL_SETTINGS(X)                                                                                              \
    X(depth, "depth", INT, "L", 1, 0, 256, 0, NAN, "layers; also sets width 64*L (rounded to head-dim) and heads, unless given") \
    X(n_embd, "n-embd", INT, "C", 1, 0, 65536, 0, NAN, "residual width")                                                        \
    X(n_head, "n-head", INT, "H", 1, 0, 1024, 0, NAN, "query heads")                                                            \
    X(n_kv_head, "n-kv-head", INT, "H", 1, 0, 1024, 0, NAN, "key/value heads (divides --n-head; default = --n-head)")              \
    X(head_dim, "head-dim", INT, "D", 2, 0, 4096, 0, NAN, "head dimension (even)")                                               \
    X(seq_len, "seq-len", INT, "T", 1, 0, 1 << 20, 0, NAN, "context length")                                                    \
    X(vocab_size, "vocab-size", INT, "V", 265, 0, 65536, 0, NAN, "vocabulary (must match the tokenizer)")                          \
    X(mlp_ratio, "mlp-ratio", INT, "R", 1, 0, 64, 0, NAN, "MLP hidden = R * width")                                              \
    X(rope_base, "rope-base", FLOAT, "B", 1, 1, 1e12, 0, NAN, "RoPE base")                                                        \
    X(softcap, "softcap", FLOAT, "S", 0, 0, 1e6, 0, NAN, "logit softcap S*tanh(z/S); 0 = off")                                  \
    X(qk_norm, "qk-norm", INT, "0|1", 0, 0, 1, 0, NAN, "RMSNorm q and k over the head dim")                                     \
    X(qk_scale, "qk-scale", FLOAT, "S", 0, 1, 100, 0, 1.0, "q and k times S after the QK-norm (nanochat 1.2; 1 = off)")          \
    X(lambdas, "lambdas", INT, "0|1", 0, 0, 1, 0, 0, "nanochat's resid and x0 lambdas: block i's input is resid_lambdas[i]*x + x0_lambdas[i]*x0") \
    X(backout, "backout", INT, "0|1", 0, 0, 1, 0, 0, "nanochat's backout: subtract backout_lambda * (the residual after block depth/2) before the final norm; on by default from depth 3 (below it that block is the last one)") \
    X(value_embeds, "value-embeds", INT, "0|1", 0, 0, 1, 0, 0, "ResFormer value embeddings (nanochat): on alternating layers ending with the last, v += 3*sigmoid(gate(x[:12])) * value_embeds[l][token]") \
    X(smear, "smear", INT, "0|1", 0, 0, 1, 0, 0, "nanochat's smear: each position's embedding += smear_lambda * sigmoid(gate(e[:24])) * the previous position's") \
    X(bigram, "bigram", INT, "ROWS", 0, 0, 1 << 22, 0, 0, "bigram hash embedding (modded-nanogpt): a table of ROWS rows indexed by a hash of (previous token, token), added to wte (0 = off; e.g. 5 x the vocabulary)") \
    X(window_pattern, "window-pattern", CHARS, "P", 0, 0, 0, 0, NAN, "sliding-window attention per layer, tiled over the depth: L = full causal, S = the last --window keys (nanochat's SSSL); the last layer is always L") \
    X(window, "window", INT, "N", 0, 0, 1 << 20, 0, NAN, "keys before each query an S layer sees (0 = nanochat's rule: ceil(T/4/128)*128, 512 at T 2048)")

// The config as a compact JSON string (malloc'ed), and back. Parsing checks every field is
// present (the window fields may be absent: configs written before them mean "L"); -1 + err
// naming the field otherwise.
char *model_config_to_json(const ModelConfig *cfg);
int model_config_from_json(const char *json, ModelConfig *cfg);
// Name of the first field that differs, or NULL if equal.
const char *model_config_diff(const ModelConfig *a, const ModelConfig *b);
