// model/model.h — the GPT (nanochat's baseline): weights in one flat buffer, forward and backward.
//
//   wte (V,C) -> RMSNorm -> L x [ x += Attn(norm(x)); x += MLP(norm(x)) ] -> RMSNorm -> lm_head
//   (nanochat's recipe, each off by default: ModelConfig's lambdas, backout, qk_scale, value_embeds,
//   smear, and the speedrun's bigram hash embedding)
//   Attn: q,k,v projections, RoPE on q,k, QK-norm, causal softmax (scale 1/sqrt(D)), c_proj.
//   MLP: c_proj(relu(c_fc(x))²), the ReLU² inside c_proj's product. Logits softcapped in fp32,
//   then cross-entropy.
//
// Every op goes through kernels_for(m->precision) (kernels/kernels.h), one call per layer op, in the order
// below; backward mirrors it in reverse. Activations for one micro-batch live in RunState.
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "model/config.h"
#include "model/params.h"

typedef struct {
    float *c_q;       // (H*D, C)
    float *c_k;       // (Hkv*D, C)
    float *c_v;       // (Hkv*D, C)
    float *attn_proj; // (C, H*D)
    float *c_fc;      // (F, C), F = mlp_ratio*C
    float *mlp_proj;  // (C, F)
    float *ve;        // (V, Hkv*D) value_embeds.<l>.weight; NULL where model_config_has_ve is 0
    float *ve_gate;   // (Hkv, MODEL_VE_GATE_CHANNELS) its gate; NULL likewise
} LayerWeights;

typedef struct {
    ModelConfig cfg;
    ParamTable params;     // names, shapes and offsets into param/grad
    float *param;          // (params.total) all weights, flat
    float *grad;           // (params.total) their gradients, same layout
    float *wte, *lm_head;  // (V, C) views into param
    float *dwte, *dlm_head;// (V, C) views into grad
    LayerWeights *w;       // (L) views into param
    LayerWeights *dw;      // (L) views into grad
    // nanochat's scalars (views into param / grad; NULL where the config has them off)
    float *resid_lambdas, *dresid_lambdas;    // (L) cfg.lambdas
    float *x0_lambdas, *dx0_lambdas;          // (L) cfg.lambdas
    float *backout_lambda, *dbackout_lambda;  // (1) cfg.backout
    float *smear_gate, *dsmear_gate;          // (MODEL_SMEAR_CHANNELS) cfg.smear
    float *smear_lambda, *dsmear_lambda;      // (1) cfg.smear
    float *bigram, *dbigram;                  // (cfg.bigram, C) cfg.bigram
    float *rope_cos;       // (T, D/2) cos(t * base^(-2j/D))
    float *rope_sin;       // (T, D/2)
    KernelPrecision precision;  // of every product it runs (kernels_for): KP_FP32 from model_build;
                                // set it after kernels_precision_check(p)
    // Dropout on every block's attention and MLP output before it joins the residual stream, in
    // model_forward_train only (evaluation never drops): p (0 = off, model_build's), and the
    // mask of the next micro-batch, which the trainer sets before each: element e of a block's
    // (N, C) output, site 0 (attention) or 1 (MLP) of layer l, is kept by dropout_bits(key(l,
    // site), dropout_i0 + e) (kernels/ops.h), key(l, site) a hash of dropout_key, l and site.
    // Indexing by the micro-batch's first element across the step (its first row x T x C) gives
    // every row the same mask however the step is split into micro-batches and ranks.
    float dropout;
    uint64_t dropout_key;
    uint32_t dropout_i0;
} Model;

// Activations of one layer for one micro-batch of N = B*T positions.
typedef struct {
    float *x;         // (N, C) block input (residual stream)
    float *xn1;       // (N, C) norm(x)
    float *rstd1;     // (N)
    float *q_rot;     // (N, H*D) q after RoPE (before QK-norm)
    float *k_rot;     // (N, Hkv*D)
    float *q;         // (N, H*D) q after QK-norm: what attention sees
    float *k;         // (N, Hkv*D)
    float *v;         // (N, Hkv*D)
    float *rstd_q;    // (N*H)
    float *rstd_k;    // (N*Hkv)
    float *att;       // (N, H*D) attention output
    float *lse;       // (B, H, T) softmax log-sum-exp per query
    float *x2;        // (N, C) residual after attention
    float *xn2;       // (N, C) norm(x2)
    float *rstd2;     // (N)
    float *fc;        // (N, F) c_fc output (relu(fc)² is never stored: relu2_linear_fwd/bwd form it)
    float *xr;        // (N, C) cfg.lambdas: the residual before the mix into x (layer 0: RunState.x0,
                      // so NULL there, except in a forward-only state whose layers all share it)
    float *ve_sig;    // (N, Hkv) value-embedding layers: sigmoid of the gate's logits (gate = 3·it)
} LayerActs;

typedef struct {
    int B, T;          // the micro-batch shape these buffers are sized for
    int L;             // layers
    int forward_only;  // 1: runstate_build_forward (layer[l] all share layer[0]'s buffers)
    int cur_B, cur_T;  // shape of the last forward's batch (<= B, T)
    int n_counted;     // targets counted by the last forward
    int head_done;     // model_forward_train already did the head's backward (dxn, dlm_head),
    float head_scale;  // for this grad_scale
    int head_rows;     // positions per lm_head chunk (runstate_head_rows; tests may lower it)
    float *emb;        // (N, C) wte[inputs] (+ bigram[bigram_rows]), before the first norm
    float *rstd0;      // (N)
    int32_t *bigram_rows; // (N) cfg.bigram: each position's row of the bigram table
    float *xe;         // (N, C) cfg.smear: norm(emb), before the smear
    float *smear_sig;  // (N) cfg.smear: sigmoid(smear_gate · xe[n][:24]) (0 where no previous token)
    float *x0;         // (N, C) cfg.lambdas: norm(emb), mixed into every block's input
    float *x_half;     // (N, C) cfg.backout: the residual after block backout_layer
    float *x_back;     // (N, C) cfg.backout: x_final - backout_lambda · x_half, the final norm's input
    LayerActs *layer;  // (L)
    float *x_final;    // (N, C) residual stream after the last block
    float *xn_final;   // (N, C)
    float *rstd_final; // (N)
    void *head;        // (head_rows, V) one chunk's dlogits, fp32 or bf16 (head_ce; training; allocated on first use)
    float *logits;     // (N, V) raw logits of model_forward without targets; NULL until then
    float *losses;     // (N) per-position loss in nats (0 where target < 0)
    // backward scratch
    float *dx;         // (N, C) gradient of the residual stream
    float *dxn;        // (N, C)
    float *dq, *dk, *dv, *datt; // (N, H*D) / (N, Hkv*D)
    float *dfc;        // (N, F)
    float *dx0;        // (N, C) cfg.lambdas: d x0, summed over the blocks
    float *dx_back;    // (N, C) cfg.backout: d x_back, kept until block backout_layer's turn
    float *dve_z;      // (N, Hkv) cfg.value_embeds: d(the gate's logits) of the layer in hand
    double *row_sums;  // (N) per-row partial sums of the scalars' gradients (a fixed order)
    // dropout: what the last forward applied (p 0: none), for its backward
    float drop_p;
    uint64_t drop_key;
    uint32_t drop_i0;
    float *drop;       // (N, C) a block's output before dropout, then its gradient (on first use)
} RunState;

// x = r·xr + a·x0 over n floats: the block input under cfg.lambdas (the trainer's forward and
// the sampler's, so both give the same bits).
static inline void model_residual_mix(float *x, const float *xr, const float *x0, float r, float a, size_t n) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) x[i] = r * xr[i] + a * x0[i];
}

// Smear at one position: x0 = xe + lambda·sig·xe_prev over C floats, sig = sigmoid(gate ·
// xe[:MODEL_SMEAR_CHANNELS]) returned (the trainer's forward and the sampler's: the same bits).
static inline float model_smear_row(float *x0, const float *xe, const float *xe_prev, const float *gate,
                                    float lambda, int C) {
    float z = 0;
    for (int j = 0; j < MODEL_SMEAR_CHANNELS; j++) z += gate[j] * xe[j];
    float sig = 1.0f / (1.0f + expf(-z)), g = lambda * sig;
    for (int c = 0; c < C; c++) x0[c] = xe[c] + g * xe_prev[c];
    return sig;
}

// Value embedding at one position: per kv head h, sig[h] = sigmoid(gate[h] · xn[:12]) and
// v[h] += 3·sig[h]·ve_row[h] (v, ve_row: (Hkv, D); gate: (Hkv, 12)).
static inline void model_ve_row(float *v, float *sig, const float *xn, const float *gate, const float *ve_row,
                                int Hkv, int D) {
    for (int h = 0; h < Hkv; h++) {
        float z = 0;
        for (int j = 0; j < MODEL_VE_GATE_CHANNELS; j++) z += gate[h * MODEL_VE_GATE_CHANNELS + j] * xn[j];
        float s = 1.0f / (1.0f + expf(-z)), g = 3.0f * s;
        sig[h] = s;
        for (int d = 0; d < D; d++) v[h * D + d] += g * ve_row[h * D + d];
    }
}

int model_build(Model *m, const ModelConfig *cfg);  // allocates (zeroed); -1 + err on a bad config
void model_free(Model *m);
// nanochat's init from a seed: wte N(0,0.8), lm_head N(0,0.001), q,k,v U(±sqrt(3/C)),
// c_fc U(±0.4·sqrt(3/C)), attention and MLP output projections zero.
void model_init_weights(Model *m, uint64_t seed);
void model_zero_grad(Model *m);

void runstate_build(RunState *s, const ModelConfig *cfg, int B, int T);
// For evaluation: the buffers of a forward alone. Every layer works in the same activation
// buffers (each overwrites the last's; nothing is kept for a backward) and there is no backward
// scratch: ~1/L of runstate_build's activations, the same bits (kit-d10 CORE peak RSS: 3.4 ->
// 1.1 GB, and 15% faster for the page faults saved).
// model_forward_train and model_backward abort on it.
void runstate_build_forward(RunState *s, const ModelConfig *cfg, int B, int T);
void runstate_free(RunState *s);
// Bytes runstate_build (forward_only 0) or runstate_build_forward (1) allocates for (B, T),
// counting the head's chunk of logits: for checking a config fits in memory before training.
size_t runstate_bytes(const ModelConfig *cfg, int B, int T, int forward_only);
// Positions per lm_head chunk for vocabulary V and N positions: ~128 MB of logits, >= 512 rows.
int runstate_head_rows(int V, int N);

// The head (lm_head, softcap, cross-entropy) runs in chunks of s->head_rows positions: the
// (N, V) logits are never held at once (kit-d10 at 32k positions: 4.3 GB), only one chunk.

// Forward on inputs (B,T). With targets (B,T) (-1 = ignore) fills s->losses and returns the
// mean loss over counted targets (*n_counted if non-NULL); without, fills s->logits (N, V)
// (allocated on first use) and returns 0.
float model_forward(Model *m, RunState *s, const int32_t *inputs, const int32_t *targets, int B, int T,
                    int *n_counted);
// Dropout's mask for the next model_forward_train (m->dropout > 0): micro-batch rows
// [first_row, ...) of optimizer step `step` of a run seeded `seed` (the key: element step+1 of the
// splitmix64 stream from seed; dropout_i0 = first_row x T x n_embd).
void model_dropout_batch(Model *m, uint64_t seed, int64_t step, int64_t first_row, int T);
// Training: model_forward with targets (and m->dropout), but each head chunk's loss pass also writes
// d(grad_scale * mean loss)/d(logits) and finishes the head's backward for those positions
// (d xn_final into s->dxn, lm_head's gradient into m->grad): model_backward with the same
// grad_scale then starts at the final norm. One pass over each chunk's logits instead of a loss
// pass here and a recomputation in model_backward. m->grad must not be zeroed in between. Same
// loss and gradients as model_forward + model_backward, bit for bit (without dropout, which
// model_forward never applies).
float model_forward_train(Model *m, RunState *s, const int32_t *inputs, const int32_t *targets, int B, int T,
                          float grad_scale);
// Backward of `grad_scale * mean loss` for the batch the last forward saw; accumulates into
// m->grad (call model_zero_grad first). Pass grad_scale = 1/G for G accumulation steps. After
// model_forward (not _train) it recomputes the head's logits chunk by chunk.
void model_backward(Model *m, RunState *s, const int32_t *inputs, const int32_t *targets, float grad_scale);

// Pin every weight matrix the forward multiplies by (kernels.h, kernels_pin_weight), so products
// pack them once instead of per call — what evaluation's short prompts and one-token decode steps
// are dominated by; with `backward`, also in the layout the backward's products read them
// (training: packed once per optimizer step instead of twice per micro-batch). The weights must
// not change until model_unpin_weights (which unpins all), or kernels_weights_changed must be
// called after each change.
void model_pin_weights(const Model *m, int backward);
void model_unpin_weights(void);

// Allow sequences up to T positions (rebuilds the RoPE tables if T > cfg.seq_len; the weights do
// not depend on it). For evaluation prompts longer than the training context.
void model_extend_context(Model *m, int T);

// ---------------------------------------------------------------------------------------------
// Scoring (evaluation). CORE scores several sequences that share a long token prefix (the
// few-shot examples and the question; only the answers differ) and needs logits only at the
// answer's positions. Causal attention makes the prefix's keys and values the same in every
// sequence, so they are computed once (model_prefill); each sequence then runs only its own
// tokens against them (model_forward_hidden), and the logits come from the rows asked for
// (model_logits_rows) instead of the whole (N, V). Same ops and kernels as model_forward; the
// results equal its results at those positions up to fp32 rounding in the attention sums
// (tests/model/test_model.c holds them to 1e-4).
// ---------------------------------------------------------------------------------------------

typedef struct {
    int P, cap;    // positions held / room (grown by model_prefill, never shrunk)
    float *k, *v;  // (L, cap, Hkv*D) each layer's keys (after RoPE and QK-norm) and values
    int32_t last_token; // the prefix's last token: the bigram row of the position after it
    float *last_xe;     // (C) cfg.smear: its norm(embedding), which smear adds to the next position
} KVPrefix;        // zero-initialise; free with kvprefix_free

void kvprefix_free(KVPrefix *p);
// Run one sequence of P >= 0 tokens (s sized for at least (1, P); P <= seq_len) and keep every
// layer's keys and values in p. Overwrites s's activations.
void model_prefill(Model *m, RunState *s, KVPrefix *p, const int32_t *tokens, int P);
// B sequences of T tokens at positions P..P+T-1 after the prefix (NULL or P 0: 0..T-1, exactly
// model_forward's trunk), each attending to the prefix and causally to its own tokens. Leaves
// the final-normed hidden states in s->xn_final (B*T, C); computes no logits. Call
// model_extend_context(m, P + T) first for positions past seq_len.
void model_forward_hidden(Model *m, RunState *s, const KVPrefix *prefix, const int32_t *inputs, int B, int T);
// logits (M, V), raw (before softcap), of rows `rows` (indices into the B*T positions) of the
// last model_forward_hidden. xbuf: (M, C) scratch.
void model_logits_rows(const Model *m, const RunState *s, const int *rows, int M, float *xbuf, float *logits);
