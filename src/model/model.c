// model/model.c — the GPT: build, init, forward, backward (see model.h).
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/head/head.h"
#include "kernels/kernels.h"
#include "model/recipe.h"
#include "profile/profile.h"
#include "util/error.h"
#include "util/mem.h"
#include "util/rng.h"

// ---------------------------------------------------------------------------------------------
// Build: the parameter table (nanochat names, (out, in) shapes) over one flat buffer
// ---------------------------------------------------------------------------------------------

static void add_tensors(ParamTable *t, const ModelConfig *c) {
    int C = c->n_embd, qd = c->n_head * c->head_dim, kvd = c->n_kv_head * c->head_dim, F = c->mlp_ratio * C;
    char name[96];
    param_table_add(t, "transformer.wte.weight", c->vocab_size, C, PARAM_WTE);
    for (int l = 0; l < c->depth; l++) {
#define ADD(suffix, rows, cols)                                            \
    snprintf(name, sizeof name, "transformer.h.%d.%s.weight", l, suffix); \
    param_table_add(t, name, rows, cols, PARAM_MATRIX)
        ADD("attn.c_q", qd, C);
        ADD("attn.c_k", kvd, C);
        ADD("attn.c_v", kvd, C);
        ADD("attn.c_proj", C, qd);
        ADD("mlp.c_fc", F, C);
        ADD("mlp.c_proj", C, F);
#undef ADD
    }
    param_table_add(t, "lm_head.weight", c->vocab_size, C, PARAM_LM_HEAD);
    // nanochat's scalars after every matrix (so the matrices' offsets, and their init streams,
    // are the same with them on or off), 1-D as nanochat saves them
    if (c->lambdas) {
        param_table_add(t, "resid_lambdas", 1, c->depth, PARAM_RESID_LAMBDAS)->vector = 1;
        param_table_add(t, "x0_lambdas", 1, c->depth, PARAM_X0_LAMBDAS)->vector = 1;
    }
    if (c->backout) param_table_add(t, "backout_lambda", 1, 1, PARAM_GATE_SCALARS)->vector = 1;
    for (int l = 0; l < c->depth; l++) {
        if (!model_config_has_ve(c, l)) continue;
        snprintf(name, sizeof name, "value_embeds.%d.weight", l);
        param_table_add(t, name, c->vocab_size, kvd, PARAM_VALUE_EMBED);
        snprintf(name, sizeof name, "transformer.h.%d.attn.ve_gate.weight", l);
        param_table_add(t, name, c->n_kv_head, MODEL_VE_GATE_CHANNELS, PARAM_MATRIX);
    }
    if (c->smear) {
        param_table_add(t, "smear_gate.weight", 1, MODEL_SMEAR_CHANNELS, PARAM_GATE_SCALARS);
        param_table_add(t, "smear_lambda", 1, 1, PARAM_GATE_SCALARS)->vector = 1;
    }
    if (c->bigram) param_table_add(t, "bigram_embed.weight", c->bigram, C, PARAM_BIGRAM);
}

// The view of tensor `name` in base, or NULL where the config has no such tensor.
static float *view_of(float *base, const ParamTable *t, const char *name) {
    const ParamTensor *p = param_table_find(t, name);
    return p ? base + p->offset : NULL;
}

static void point_views(float *base, const ParamTable *t, int L, float **wte, float **lm_head, LayerWeights *w) {
    *wte = base + t->t[0].offset;
    for (int l = 0; l < L; l++) {
        const ParamTensor *p = &t->t[1 + 6 * l];
        w[l] = (LayerWeights){.c_q = base + p[0].offset, .c_k = base + p[1].offset, .c_v = base + p[2].offset,
                              .attn_proj = base + p[3].offset, .c_fc = base + p[4].offset,
                              .mlp_proj = base + p[5].offset};  // ve, ve_gate: model_build
    }
    *lm_head = base + t->t[1 + 6 * L].offset;
}

static void build_rope(Model *m) {
    int T = m->cfg.seq_len, half = m->cfg.head_dim / 2;
    m->rope_cos = xmalloc((size_t)T * half * sizeof *m->rope_cos);
    m->rope_sin = xmalloc((size_t)T * half * sizeof *m->rope_sin);
    for (int j = 0; j < half; j++) {
        double inv_freq = pow((double)m->cfg.rope_base, -2.0 * j / m->cfg.head_dim);
        for (int t = 0; t < T; t++) {
            double a = t * inv_freq;
            m->rope_cos[(size_t)t * half + j] = (float)cos(a);
            m->rope_sin[(size_t)t * half + j] = (float)sin(a);
        }
    }
}

int model_build(Model *m, const ModelConfig *cfg) {
    memset(m, 0, sizeof *m);
    if (model_config_validate(cfg) != 0) return -1;
    m->cfg = *cfg;
    add_tensors(&m->params, cfg);
    m->param = xaligned_alloc(m->params.total * sizeof *m->param);
    m->grad = xaligned_alloc(m->params.total * sizeof *m->grad);
    m->w = xcalloc((size_t)cfg->depth, sizeof *m->w);
    m->dw = xcalloc((size_t)cfg->depth, sizeof *m->dw);
    point_views(m->param, &m->params, cfg->depth, &m->wte, &m->lm_head, m->w);
    point_views(m->grad, &m->params, cfg->depth, &m->dwte, &m->dlm_head, m->dw);
#define VIEW(field, name) \
    m->field = view_of(m->param, &m->params, name), m->d##field = view_of(m->grad, &m->params, name)
    VIEW(resid_lambdas, "resid_lambdas");
    VIEW(x0_lambdas, "x0_lambdas");
    VIEW(backout_lambda, "backout_lambda");
    VIEW(smear_gate, "smear_gate.weight");
    VIEW(smear_lambda, "smear_lambda");
    VIEW(bigram, "bigram_embed.weight");
#undef VIEW
    for (int l = 0; l < cfg->depth; l++) {
        char ve[64], gate[64];
        snprintf(ve, sizeof ve, "value_embeds.%d.weight", l);
        snprintf(gate, sizeof gate, "transformer.h.%d.attn.ve_gate.weight", l);
        m->w[l].ve = view_of(m->param, &m->params, ve);
        m->dw[l].ve = view_of(m->grad, &m->params, ve);
        m->w[l].ve_gate = view_of(m->param, &m->params, gate);
        m->dw[l].ve_gate = view_of(m->grad, &m->params, gate);
    }
    build_rope(m);
    return 0;
}

void model_free(Model *m) {
    free(m->param);
    free(m->grad);
    free(m->w);
    free(m->dw);
    free(m->rope_cos);
    free(m->rope_sin);
    param_table_free(&m->params);
    memset(m, 0, sizeof *m);
}

void model_zero_grad(Model *m) {
    prof_begin("zero_grad", "op", -1);
    memset(m->grad, 0, m->params.total * sizeof *m->grad);
    prof_end(0, (double)m->params.total * sizeof *m->grad);
}

// ---------------------------------------------------------------------------------------------
// Init, as nanochat's. One RNG stream per tensor (seed, tensor index), so adding a tensor or
// changing one shape does not reshuffle the others.
// ---------------------------------------------------------------------------------------------

void model_init_weights(Model *m, uint64_t seed) {
    double s = sqrt(3.0 / m->cfg.n_embd);
    for (int i = 0; i < m->params.n; i++) {
        const ParamTensor *p = &m->params.t[i];
        float *w = m->param + p->offset;
        Rng r;
        rng_seed(&r, seed * 1000003ULL + (uint64_t)i);
        const char *name = p->name;
        int is_proj = strstr(name, "c_proj") != NULL;
        int Lm1 = m->cfg.depth > 1 ? m->cfg.depth - 1 : 1;
        for (size_t k = 0; k < p->numel; k++) {
            double v;
            if (p->kind == PARAM_RESID_LAMBDAS) v = 1.15 - 0.10 * (double)k / Lm1;  // 1.15 -> 1.05 over depth
            else if (p->kind == PARAM_X0_LAMBDAS) v = 0.20 - 0.15 * (double)k / Lm1;  // 0.20 -> 0.05
            else if (!strcmp(name, "backout_lambda")) v = 0.2;
            else if (!strcmp(name, "smear_lambda")) v = 0.0;     // smear starts off and learns its way in
            else if (!strcmp(name, "smear_gate.weight") || strstr(name, "ve_gate")) v = 0.02 * rng_uniform(&r);
            else if (p->kind == PARAM_BIGRAM) v = 0.0;         // starts as no change to the embedding
            else if (p->kind == PARAM_WTE) v = 0.8 * rng_normal(&r);
            else if (p->kind == PARAM_LM_HEAD) v = 0.001 * rng_normal(&r);
            else if (is_proj) v = 0.0;
            else if (strstr(name, "c_fc")) v = 0.4 * s * (2.0 * rng_uniform(&r) - 1.0);
            else v = s * (2.0 * rng_uniform(&r) - 1.0);  // c_q, c_k, c_v and the value embeddings
            w[k] = (float)v;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// RunState
// ---------------------------------------------------------------------------------------------

// Rows per lm_head chunk: about 128 MB of logits, at least 512 rows. Smaller chunks cost speed:
// lm_head's weight gradient (K = the chunk's rows) is summed in more, shorter products (64 MB
// chunks made the cpu preset's 4096-position batch 1.4-2.1% slower in two A/B rounds), so the
// chunk is as large as memory comfortably allows: the cpu preset (4096 x 8192) stays one chunk,
// and larger batches or vocabularies never hold more than this.
int runstate_head_rows(int V, int N) {
    long rows = (128L << 20) / ((long)V * (long)sizeof(float));
    if (rows < 512) rows = 512;
    if (rows > N) rows = N;
    return rows > 0 ? (int)rows : 1;
}

// The forward's buffers: every layer's own, or (forward_only) one set all layers share.
static void build_forward_buffers(RunState *s, const ModelConfig *c, int B, int T, int forward_only) {
    memset(s, 0, sizeof *s);
    s->B = B;
    s->T = T;
    s->L = c->depth;
    s->forward_only = forward_only;
    size_t N = (size_t)B * T, C = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim;
    size_t kvd = (size_t)c->n_kv_head * c->head_dim, F = (size_t)c->mlp_ratio * C;
    s->layer = xcalloc((size_t)c->depth, sizeof *s->layer);
    for (int l = 0; l < c->depth; l++) {
        LayerActs *a = &s->layer[l];
        if (forward_only && l > 0) {  // layer l reads x and writes the next x: the same buffer works
            *a = s->layer[0];
            continue;
        }
        a->x = xaligned_alloc(N * C * sizeof(float));
        a->xn1 = xaligned_alloc(N * C * sizeof(float));
        a->rstd1 = xaligned_alloc(N * sizeof(float));
        a->q_rot = xaligned_alloc(N * qd * sizeof(float));
        a->k_rot = xaligned_alloc(N * kvd * sizeof(float));
        a->q = xaligned_alloc(N * qd * sizeof(float));
        a->k = xaligned_alloc(N * kvd * sizeof(float));
        a->v = xaligned_alloc(N * kvd * sizeof(float));
        a->rstd_q = xaligned_alloc(N * c->n_head * sizeof(float));
        a->rstd_k = xaligned_alloc(N * c->n_kv_head * sizeof(float));
        a->att = xaligned_alloc(N * qd * sizeof(float));
        a->lse = xaligned_alloc(N * c->n_head * sizeof(float));
        a->x2 = xaligned_alloc(N * C * sizeof(float));
        a->xn2 = xaligned_alloc(N * C * sizeof(float));
        a->rstd2 = xaligned_alloc(N * sizeof(float));
        a->fc = xaligned_alloc(N * F * sizeof(float));
        if (c->lambdas && (l > 0 || forward_only)) a->xr = xaligned_alloc(N * C * sizeof(float));
        if (c->value_embeds) a->ve_sig = xaligned_alloc(N * c->n_kv_head * sizeof(float));
    }
    if (c->lambdas) s->x0 = xaligned_alloc(N * C * sizeof(float));
    if (c->bigram) s->bigram_rows = xmalloc(N * sizeof *s->bigram_rows);
    if (c->smear) {
        s->xe = xaligned_alloc(N * C * sizeof(float));
        s->smear_sig = xaligned_alloc(N * sizeof(float));
    }
    if (c->backout) {
        s->x_half = xaligned_alloc(N * C * sizeof(float));
        s->x_back = xaligned_alloc(N * C * sizeof(float));
    }
    s->emb = xaligned_alloc(N * C * sizeof(float));
    s->rstd0 = xaligned_alloc(N * sizeof(float));
    s->x_final = xaligned_alloc(N * C * sizeof(float));
    s->xn_final = xaligned_alloc(N * C * sizeof(float));
    s->rstd_final = xaligned_alloc(N * sizeof(float));
    s->head_rows = runstate_head_rows(c->vocab_size, (int)N);
    s->head = NULL;  // on the first backward: a forward alone never stores logits (head_ce)
    s->logits = NULL;  // (N, V) only when a forward without targets asks for every logit
    s->losses = xaligned_alloc(N * sizeof(float));
}

void runstate_build_forward(RunState *s, const ModelConfig *c, int B, int T) { build_forward_buffers(s, c, B, T, 1); }

size_t runstate_bytes(const ModelConfig *c, int B, int T, int forward_only) {
    size_t N = (size_t)B * T, C = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim;
    size_t kvd = (size_t)c->n_kv_head * c->head_dim, F = (size_t)c->mlp_ratio * C;
    size_t H = (size_t)c->n_head, Hkv = (size_t)c->n_kv_head, L = forward_only ? 1 : (size_t)c->depth;
    // build_forward_buffers' layer set, its top-level buffers, then runstate_build's backward scratch
    size_t layer = 4 * N * C + 2 * N + 3 * N * qd + 3 * N * kvd + 2 * N * H + N * Hkv + N * F;
    size_t floats = L * layer + 3 * N * C + 3 * N;
    if (c->lambdas) floats += L * N * C + N * C;    // xr, x0
    if (c->backout) floats += 2 * N * C;            // x_half, x_back
    if (c->value_embeds) floats += L * N * Hkv;     // ve_sig
    if (c->bigram) floats += N;                     // bigram_rows (int32)
    if (c->smear) floats += N * C + N;              // xe, smear_sig
    if (!forward_only && c->value_embeds) floats += N * Hkv;  // dve_z
    if (!forward_only) floats += 2 * N * C + 2 * N * qd + 2 * N * kvd + N * F + 2 * N;
    if (!forward_only && c->lambdas) floats += N * C;   // dx0
    if (!forward_only && c->backout) floats += N * C;   // dx_back
    // the head's one chunk of logits (training: dlogits in the run state; evaluation: head_ce's own)
    floats += (size_t)runstate_head_rows(c->vocab_size, (int)(N < INT32_MAX ? N : INT32_MAX)) * c->vocab_size;
    return floats * sizeof(float);
}

void runstate_build(RunState *s, const ModelConfig *c, int B, int T) {
    build_forward_buffers(s, c, B, T, 0);
    size_t N = (size_t)B * T, C = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim;
    size_t kvd = (size_t)c->n_kv_head * c->head_dim, F = (size_t)c->mlp_ratio * C;
    s->dx = xaligned_alloc(N * C * sizeof(float));
    s->dxn = xaligned_alloc(N * C * sizeof(float));
    s->dq = xaligned_alloc(N * qd * sizeof(float));
    s->dk = xaligned_alloc(N * kvd * sizeof(float));
    s->dv = xaligned_alloc(N * kvd * sizeof(float));
    s->datt = xaligned_alloc(N * qd * sizeof(float));
    s->dfc = xaligned_alloc(N * F * sizeof(float));
    if (c->lambdas) s->dx0 = xaligned_alloc(N * C * sizeof(float));
    if (c->backout) s->dx_back = xaligned_alloc(N * C * sizeof(float));
    if (c->value_embeds) s->dve_z = xaligned_alloc(N * c->n_kv_head * sizeof(float));
    s->row_sums = xmalloc(N * sizeof(double));
}

void runstate_free(RunState *s) {
    for (int l = 0; l < (s->forward_only && s->L ? 1 : s->L); l++) {
        LayerActs *a = &s->layer[l];
        float **f = (float **)a;  // LayerActs is all float pointers
        for (size_t i = 0; i < sizeof *a / sizeof(float *); i++) free(f[i]);
    }
    free(s->layer);
    float *bufs[] = {s->emb, s->rstd0, s->x_final, s->xn_final, s->rstd_final, s->logits, s->head,
                     s->losses, s->dx, s->dxn, s->dq, s->dk, s->dv, s->datt, s->dfc,
                     s->x0, s->x_half, s->x_back, s->dx0, s->dx_back, s->xe, s->smear_sig, s->dve_z, s->drop};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(s->bigram_rows);
    free(s->row_sums);
    memset(s, 0, sizeof *s);
}

// ---------------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------------

// out (N, rows) = x (N, cols) @ W(rows, cols)^T, optionally added to what out holds.
static inline void linear(const Kernels *K, float *out, const float *x, const float *w, int N, int rows, int cols,
                          int accumulate) {
    K->matmul_nt(out, x, w, N, rows, cols, accumulate);
}

// Attention of B sequences of T queries at positions P..P+T-1 over a cached prefix of P
// positions (pk, pv (P, Hkv*D), shared by every sequence) and, causally, their own T keys; with
// a window (0: none) query position p sees keys p-window .. p only.
// Evaluation only (no lse, no backward). Per (sequence, head): scores = q·kᵀ/√D and the output
// with the matmul kernels, an exact softmax in between; the prefix's keys of a kv head are
// gathered once for all sequences.
static void prefix_attention(const Kernels *K, float *out, const float *q, const float *k, const float *v,
                             const float *pk, const float *pv, int P, int B, int T, int H, int Hkv, int D, int window) {
    int S = P + T, kvd = Hkv * D, qd = H * D, group = H / Hkv;
    float scale = 1.0f / sqrtf((float)D);
    float *kh = xaligned_alloc((size_t)S * D * sizeof *kh), *vh = xaligned_alloc((size_t)S * D * sizeof *vh);
    float *qh = xaligned_alloc((size_t)T * D * sizeof *qh), *oh = xaligned_alloc((size_t)T * D * sizeof *oh);
    float *sc = xaligned_alloc((size_t)T * S * sizeof *sc);
    for (int g = 0; g < Hkv; g++) {
        for (int p = 0; p < P; p++) {
            memcpy(kh + (size_t)p * D, pk + (size_t)p * kvd + (size_t)g * D, D * sizeof *kh);
            memcpy(vh + (size_t)p * D, pv + (size_t)p * kvd + (size_t)g * D, D * sizeof *vh);
        }
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T; t++) {
                size_t row = (size_t)b * T + t;
                memcpy(kh + (size_t)(P + t) * D, k + row * kvd + (size_t)g * D, D * sizeof *kh);
                memcpy(vh + (size_t)(P + t) * D, v + row * kvd + (size_t)g * D, D * sizeof *vh);
            }
            for (int h = g * group; h < (g + 1) * group; h++) {
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < D; d++) qh[(size_t)t * D + d] = q[((size_t)b * T + t) * qd + (size_t)h * D + d] * scale;
                K->matmul_nt(sc, qh, kh, T, S, D, 0);
#pragma omp parallel for schedule(static)
                for (int t = 0; t < T; t++) {  // query t sees keys j0 .. P+t
                    float *r = sc + (size_t)t * S, mx = -INFINITY;
                    int n = P + t + 1, j0 = attention_first_key(P + t, window);
                    for (int j = j0; j < n; j++) mx = r[j] > mx ? r[j] : mx;
                    double sum = 0;
                    for (int j = j0; j < n; j++) sum += r[j] = expf(r[j] - mx);
                    float inv = (float)(1.0 / sum);
                    for (int j = 0; j < j0; j++) r[j] = 0.0f;
                    for (int j = j0; j < n; j++) r[j] *= inv;
                    for (int j = n; j < S; j++) r[j] = 0.0f;
                }
                K->matmul_nn(oh, sc, vh, T, D, S, 0);
                for (int t = 0; t < T; t++)
                    memcpy(out + ((size_t)b * T + t) * qd + (size_t)h * D, oh + (size_t)t * D, D * sizeof *oh);
            }
        }
    }
    free(kh);
    free(vh);
    free(qh);
    free(oh);
    free(sc);
}

static void scale_floats(float *x, size_t n, float s) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

// The key of dropout's mask for layer l's site (0: attention, 1: MLP): element 2l+site+1 of the
// splitmix64 stream from the micro-batch's key.
static uint32_t dropout_key(uint64_t key, int l, int site) {
    uint64_t x = key + 0x9e3779b97f4a7c15ULL * (uint64_t)(2 * l + site);
    return (uint32_t)splitmix64(&x);
}

void model_dropout_batch(Model *m, uint64_t seed, int64_t step, int64_t first_row, int T) {
    uint64_t x = seed + 0x9e3779b97f4a7c15ULL * (uint64_t)step;
    m->dropout_key = splitmix64(&x);
    m->dropout_i0 = (uint32_t)((uint64_t)first_row * (uint64_t)T * (uint64_t)m->cfg.n_embd);
}

// A block's output proj (N, C) joins the residual stream `out` that holds its input: fused into
// the product (accumulate) without dropout, through s->drop with it.
static float *block_output(const RunState *s, float *out) { return s->drop_p > 0 ? s->drop : out; }
static void block_output_done(const Model *m, const RunState *s, float *out, int N, int l, int site) {
    if (s->drop_p > 0)
        kernels_for(m->precision)->dropout(out, s->drop, (size_t)N * m->cfg.n_embd, s->drop_p,
                                           dropout_key(s->drop_key, l, site), s->drop_i0, 1);
}

// One attention block. `prefix` (NULL in training) holds the cached keys and values of P
// earlier positions of layer l: the queries sit at positions P..P+T-1 and also attend to them.
static void attention_block(const Model *m, RunState *s, LayerActs *a, const LayerWeights *w, const int32_t *inputs,
                            int B, int T, const KVPrefix *prefix, int l) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int N = B * T, C = c->n_embd, H = c->n_head, Hkv = c->n_kv_head, D = c->head_dim;
    int P = prefix ? prefix->P : 0, window = model_config_layer_window(c, l);
    const float *cos = m->rope_cos + (size_t)P * (D / 2), *sin = m->rope_sin + (size_t)P * (D / 2);
    K->rmsnorm_fwd(a->xn1, a->rstd1, a->x, N, C);
    linear(K, a->q_rot, a->xn1, w->c_q, N, H * D, C, 0);
    linear(K, a->k_rot, a->xn1, w->c_k, N, Hkv * D, C, 0);
    linear(K, a->v, a->xn1, w->c_v, N, Hkv * D, C, 0);
    if (w->ve) recipe_ve_fwd(m, a, w, inputs, N);
    if (c->qk_norm) {  // rotate q_rot, k_rot in place, then q, k = their per-head RMSNorm
        K->rope_rmsnorm_fwd(a->q, a->rstd_q, a->q_rot, cos, sin, B, T, H, D);
        K->rope_rmsnorm_fwd(a->k, a->rstd_k, a->k_rot, cos, sin, B, T, Hkv, D);
    } else {
        K->rope_fwd(a->q_rot, cos, sin, B, T, H, D);
        K->rope_fwd(a->k_rot, cos, sin, B, T, Hkv, D);
        memcpy(a->q, a->q_rot, (size_t)N * H * D * sizeof *a->q);
        memcpy(a->k, a->k_rot, (size_t)N * Hkv * D * sizeof *a->k);
    }
    float qs = model_config_qk_scale(c);
    if (qs != 1.0f) {  // nanochat's sharper attention: q and k each times 1.2 after the norm
        scale_floats(a->q, (size_t)N * H * D, qs);
        scale_floats(a->k, (size_t)N * Hkv * D, qs);
    }
    if (P > 0) {
        size_t off = (size_t)l * prefix->cap * Hkv * D;
        prefix_attention(K, a->att, a->q, a->k, a->v, prefix->k + off, prefix->v + off, P, B, T, H, Hkv, D, window);
    } else {
        K->attention_fwd(a->att, a->lse, a->q, a->k, a->v, B, T, H, Hkv, D, window);
    }
    memcpy(a->x2, a->x, (size_t)N * C * sizeof *a->x2);  // residual
    linear(K, block_output(s, a->x2), a->att, w->attn_proj, N, C, H * D, s->drop_p == 0);
    block_output_done(m, s, a->x2, N, l, 0);
}

// relu(fc)² is formed inside c_proj's product (relu2_linear_fwd) and never stored: backward
// forms it again from fc.
static void mlp_block(const Model *m, RunState *s, LayerActs *a, const LayerWeights *w, float *out, int N, int l) {
    const Kernels *K = kernels_for(m->precision);
    int C = m->cfg.n_embd, F = m->cfg.mlp_ratio * C;
    K->rmsnorm_fwd(a->xn2, a->rstd2, a->x2, N, C);
    linear(K, a->fc, a->xn2, w->c_fc, N, F, C, 0);
    memcpy(out, a->x2, (size_t)N * C * sizeof *out);  // residual
    K->relu2_linear_fwd(block_output(s, out), a->fc, w->mlp_proj, N, C, F, s->drop_p == 0);
    block_output_done(m, s, out, N, l, 1);
}

// The trunk: embedding, the blocks and the final norm, leaving s->xn_final (B*T, C).
// With `store` (model_prefill, B = 1), each layer's keys and values are copied into it as the
// layer finishes: a forward-only state's next layer overwrites them. `train`: model_forward_train,
// the one forward that applies the model's dropout.
static void forward_hidden(Model *m, RunState *s, const KVPrefix *prefix, KVPrefix *store, const int32_t *inputs,
                           int B, int T, int train) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int N = B * T, C = c->n_embd, L = c->depth, P = prefix ? prefix->P : 0;
    if (B > s->B || T > s->T || P + T > c->seq_len) {
        fprintf(stderr,
                "frontier: internal error: batch (%d, %d) after %d cached positions exceeds the run state (%d, %d) "
                "or seq_len %d\n",
                B, T, P, s->B, s->T, c->seq_len);
        abort();
    }
    s->drop_p = train ? m->dropout : 0;
    s->drop_key = m->dropout_key, s->drop_i0 = m->dropout_i0;
    if (s->drop_p > 0 && !s->drop) s->drop = xaligned_alloc((size_t)s->B * s->T * C * sizeof *s->drop);
    recipe_input_fwd(m, s, prefix, inputs, B, T, c->lambdas ? s->x0 : s->layer[0].x);
    if (store) {  // what the position after the prefix needs of its last: its token, its pre-smear embedding
        store->last_token = inputs[N - 1];
        if (c->smear) memcpy(store->last_xe, s->xe + (size_t)(N - 1) * C, (size_t)C * sizeof *store->last_xe);
    }
    for (int l = 0; l < L; l++) {
        if (c->lambdas)  // x = resid_lambdas[l]·(the last block's output) + x0_lambdas[l]·x0
            model_residual_mix(s->layer[l].x, l ? s->layer[l].xr : s->x0, s->x0, m->resid_lambdas[l],
                               m->x0_lambdas[l], (size_t)N * C);
        prof_begin("attention", "layer", l);
        attention_block(m, s, &s->layer[l], &m->w[l], inputs, B, T, prefix, l);
        if (store) {
            size_t kvd = (size_t)c->n_kv_head * c->head_dim, off = (size_t)l * store->cap * kvd;
            memcpy(store->k + off, s->layer[l].k, (size_t)N * kvd * sizeof *store->k);
            memcpy(store->v + off, s->layer[l].v, (size_t)N * kvd * sizeof *store->v);
        }
        prof_end(0, 0);
        prof_begin("mlp", "layer", l);
        float *out = l + 1 == L ? s->x_final : c->lambdas ? s->layer[l + 1].xr : s->layer[l + 1].x;
        mlp_block(m, s, &s->layer[l], &m->w[l], out, N, l);
        if (c->backout && l == model_config_backout_layer(c)) memcpy(s->x_half, out, (size_t)N * C * sizeof *out);
        prof_end(0, 0);
    }
    if (c->backout) {  // nanochat's backout: the final norm sees x_final - backout_lambda · x_half
        float b = m->backout_lambda[0];
        size_t n = (size_t)N * C;
#pragma omp parallel for simd schedule(static) if (n > 65536)
        for (size_t i = 0; i < n; i++) s->x_back[i] = s->x_final[i] - b * s->x_half[i];
    }
    K->rmsnorm_fwd(s->xn_final, s->rstd_final, c->backout ? s->x_back : s->x_final, N, C);
    s->n_counted = 0;
    s->head_done = 0;
    s->cur_B = B;
    s->cur_T = T;
}

// The head, chunk by chunk over the N positions: head_ce computes each chunk's logits (rows, V)
// = xn_final @ lm_headᵀ and their softcapped cross-entropy in one pass, strip by strip in cache,
// so the logits never reach memory. With `backward` (training) it also writes the chunk's
// dscale·dloss/dlogits into s->head (fp32, or bf16 with bf16 products) and, from each strip of
// them while in cache, dxn (rows, C) = dlogits @ lm_head; head_dw then adds dlogitsᵀ @ xn_final
// to dlm_head. Only one chunk of dlogits
// exists; the positions are independent, so chunking changes no loss and no dxn, and dlm_head
// only by the order of its sums over positions.
static void head_chunks(Model *m, RunState *s, const int32_t *targets, int N, int backward, float dscale) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int C = c->n_embd, V = c->vocab_size, R = s->head_rows;
    if (backward && !s->head) {  // room for fp32, or bf16 row pairs (head.h), whichever is larger
        size_t fp32 = (size_t)R * V * sizeof(float), pairs = head_dl16_elems(R, V) * sizeof(uint16_t);
        s->head = xaligned_alloc(fp32 > pairs ? fp32 : pairs);
    }
    for (int r0 = 0; r0 < N; r0 += R) {
        int n = N - r0 < R ? N - r0 : R;
        const float *xn = s->xn_final + (size_t)r0 * C;
        K->head_ce(s->losses + r0, backward ? s->head : NULL, backward ? s->dxn + (size_t)r0 * C : NULL, xn,
                   m->lm_head, targets + r0, n, V, C, c->softcap, dscale);
        if (backward) K->head_dw(m->dlm_head, s->head, xn, n, V, C);
    }
}

static int count_targets(const int32_t *targets, int N) {
    int counted = 0;
    for (int n = 0; n < N; n++) counted += targets[n] >= 0;
    return counted;
}

static float mean_loss(const RunState *s, const int32_t *targets, int N) {
    double sum = 0;
    for (int n = 0; n < N; n++)
        if (targets[n] >= 0) sum += s->losses[n];
    return s->n_counted ? (float)(sum / s->n_counted) : 0.0f;
}

float model_forward(Model *m, RunState *s, const int32_t *inputs, const int32_t *targets, int B, int T,
                    int *n_counted) {
    const ModelConfig *c = &m->cfg;
    int N = B * T, C = c->n_embd, V = c->vocab_size;
    prof_begin("forward", "phase", -1);
    forward_hidden(m, s, NULL, NULL, inputs, B, T, 0);
    if (targets) {
        head_chunks(m, s, targets, N, 0, 0.0f);
    } else {  // every logit asked for (sampling tests, parity tools): the full (N, V), made once
        if (!s->logits) s->logits = xaligned_alloc((size_t)s->B * s->T * V * sizeof *s->logits);
        linear(kernels_for(m->precision), s->logits, s->xn_final, m->lm_head, N, V, C, 0);
    }
    prof_end(0, 0);
    if (!targets) return 0.0f;
    s->n_counted = count_targets(targets, N);
    if (n_counted) *n_counted = s->n_counted;
    return mean_loss(s, targets, N);
}

// A forward-only state (runstate_build_forward) keeps no layer's activations: nothing to
// backpropagate through. Reaching here with one is a bug in the caller.
static void require_backward_buffers(const RunState *s, const char *fn) {
    if (!s->forward_only) return;
    fprintf(stderr, "frontier: internal error: %s on a forward-only run state (runstate_build_forward)\n", fn);
    abort();
}

float model_forward_train(Model *m, RunState *s, const int32_t *inputs, const int32_t *targets, int B, int T,
                          float grad_scale) {
    require_backward_buffers(s, "model_forward_train");
    int N = B * T;
    prof_begin("forward", "phase", -1);
    forward_hidden(m, s, NULL, NULL, inputs, B, T, 1);
    prof_end(0, 0);
    s->n_counted = count_targets(targets, N);
    if (!s->n_counted) {  // nothing to learn from: model_backward returns at once
        memset(s->losses, 0, (size_t)N * sizeof *s->losses);
        return 0.0f;
    }
    prof_begin("head", "phase", -1);
    head_chunks(m, s, targets, N, 1, grad_scale / (float)s->n_counted);
    prof_end(0, 0);
    s->head_done = 1;
    s->head_scale = grad_scale;
    return mean_loss(s, targets, N);
}

// ---------------------------------------------------------------------------------------------
// Backward: the forward in reverse. s->dx carries d(loss)/d(residual stream).
// ---------------------------------------------------------------------------------------------

// d(a block's output before dropout) from s->dx, d(the residual stream after it): s->dx itself
// without dropout, else s->dx through the forward's mask into s->drop.
static const float *block_output_grad(const Model *m, RunState *s, int N, int l, int site) {
    if (s->drop_p == 0) return s->dx;
    kernels_for(m->precision)->dropout(s->drop, s->dx, (size_t)N * m->cfg.n_embd, s->drop_p,
                                       dropout_key(s->drop_key, l, site), s->drop_i0, 0);
    return s->drop;
}

static void mlp_block_bwd(const Model *m, RunState *s, LayerActs *a, const LayerWeights *w, LayerWeights *dw, int N,
                          int l) {
    const Kernels *K = kernels_for(m->precision);
    int C = m->cfg.n_embd, F = m->cfg.mlp_ratio * C;
    // d c_proj += dout^T relu(fc)²; d fc = relu2_bwd(dout @ c_proj, fc)
    K->relu2_linear_bwd(dw->mlp_proj, s->dfc, block_output_grad(m, s, N, l, 1), w->mlp_proj, a->fc, N, C, F);
    K->matmul_tn(dw->c_fc, s->dfc, a->xn2, F, C, N, 1);         // d c_fc += dfc^T xn2
    K->matmul_nn(s->dxn, s->dfc, w->c_fc, N, C, F, 0);          // d xn2
    K->rmsnorm_bwd(s->dx, s->dxn, a->x2, a->rstd2, N, C, 1);     // + residual: d x2
}

static void attention_block_bwd(const Model *m, RunState *s, LayerActs *a, const LayerWeights *w, LayerWeights *dw,
                                const int32_t *inputs, int B, int T, int l) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int N = B * T, C = c->n_embd, H = c->n_head, Hkv = c->n_kv_head, D = c->head_dim;
    const float *dout = block_output_grad(m, s, N, l, 0);
    K->matmul_tn(dw->attn_proj, dout, a->att, C, H * D, N, 1);
    K->matmul_nn(s->datt, dout, w->attn_proj, N, H * D, C, 0);
    K->attention_bwd(s->dq, s->dk, s->dv, s->datt, a->att, a->lse, a->q, a->k, a->v, B, T, H, Hkv, D,
                     model_config_layer_window(c, l));
    float qs = model_config_qk_scale(c);
    if (qs != 1.0f) {  // back through q·qs and k·qs
        scale_floats(s->dq, (size_t)N * H * D, qs);
        scale_floats(s->dk, (size_t)N * Hkv * D, qs);
    }
    if (c->qk_norm) {
        K->rope_rmsnorm_bwd(s->dq, s->dq, a->q_rot, a->rstd_q, m->rope_cos, m->rope_sin, B, T, H, D);
        K->rope_rmsnorm_bwd(s->dk, s->dk, a->k_rot, a->rstd_k, m->rope_cos, m->rope_sin, B, T, Hkv, D);
    } else {
        K->rope_bwd(s->dq, m->rope_cos, m->rope_sin, B, T, H, D);
        K->rope_bwd(s->dk, m->rope_cos, m->rope_sin, B, T, Hkv, D);
    }
    // each gradient's two products back to back, while it is in cache (the same sums in the same
    // order: dxn still adds q's, then k's, then v's part)
    K->matmul_tn(dw->c_q, s->dq, a->xn1, H * D, C, N, 1);
    K->matmul_nn(s->dxn, s->dq, w->c_q, N, C, H * D, 0);
    K->matmul_tn(dw->c_k, s->dk, a->xn1, Hkv * D, C, N, 1);
    K->matmul_nn(s->dxn, s->dk, w->c_k, N, C, Hkv * D, 1);
    K->matmul_tn(dw->c_v, s->dv, a->xn1, Hkv * D, C, N, 1);
    K->matmul_nn(s->dxn, s->dv, w->c_v, N, C, Hkv * D, 1);
    if (w->ve) recipe_ve_bwd(m, s, a, w, dw, inputs, N);
    K->rmsnorm_bwd(s->dx, s->dxn, a->x, a->rstd1, N, C, 1);      // + residual: d x
}

void model_backward(Model *m, RunState *s, const int32_t *inputs, const int32_t *targets, float grad_scale) {
    require_backward_buffers(s, "model_backward");
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int B = s->cur_B, T = s->cur_T, N = B * T, C = c->n_embd;
    if (!s->n_counted) return;  // nothing to learn from
    prof_begin("backward", "phase", -1);
    if (s->head_done && s->head_scale != grad_scale) {
        fprintf(stderr, "frontier: internal error: model_backward(grad_scale %g) after model_forward_train(%g)\n",
                grad_scale, s->head_scale);
        abort();
    }
    if (!s->head_done) head_chunks(m, s, targets, N, 1, grad_scale / (float)s->n_counted);  // logits recomputed
    s->head_done = 0;  // consumed
    size_t NC = (size_t)N * C;
    K->rmsnorm_bwd(s->dx, s->dxn, c->backout ? s->x_back : s->x_final, s->rstd_final, N, C, 0);
    if (c->backout) {  // d backout_lambda = -Σ d x_back · x_half; d x_half joins at its block below
        m->dbackout_lambda[0] -= (float)recipe_dot_rows(s->dx, s->x_half, N, C, s->row_sums);
        memcpy(s->dx_back, s->dx, NC * sizeof *s->dx);
    }
    if (c->lambdas) memset(s->dx0, 0, NC * sizeof *s->dx0);
    for (int l = c->depth - 1; l >= 0; l--) {
        if (c->backout && l == model_config_backout_layer(c)) {  // s->dx is d(this block's output)
            float b = m->backout_lambda[0];
#pragma omp parallel for simd schedule(static) if (NC > 65536)
            for (size_t i = 0; i < NC; i++) s->dx[i] -= b * s->dx_back[i];
        }
        prof_begin("mlp_bwd", "layer", l);
        mlp_block_bwd(m, s, &s->layer[l], &m->w[l], &m->dw[l], N, l);
        prof_end(0, 0);
        prof_begin("attention_bwd", "layer", l);
        attention_block_bwd(m, s, &s->layer[l], &m->w[l], &m->dw[l], inputs, B, T, l);
        prof_end(0, 0);
        if (c->lambdas) recipe_residual_mix_bwd(m, s, l, N, C);  // s->dx: d(the residual before the mix)
    }
    recipe_input_bwd(m, s, inputs, c->lambdas ? s->dx0 : s->dx);
    prof_end(0, 0);
}

// ---------------------------------------------------------------------------------------------
// Scoring (evaluation): a cached prefix, hidden states, logits only where asked
// ---------------------------------------------------------------------------------------------

void kvprefix_free(KVPrefix *p) {
    free(p->k);
    free(p->v);
    free(p->last_xe);
    memset(p, 0, sizeof *p);
}

void model_prefill(Model *m, RunState *s, KVPrefix *p, const int32_t *tokens, int P) {
    const ModelConfig *c = &m->cfg;
    int L = c->depth, kvd = c->n_kv_head * c->head_dim;
    if (P > p->cap) {
        free(p->k);
        free(p->v);
        p->cap = (P + 255) / 256 * 256;
        p->k = xaligned_alloc((size_t)L * p->cap * kvd * sizeof *p->k);
        p->v = xaligned_alloc((size_t)L * p->cap * kvd * sizeof *p->v);
    }
    if (c->smear && !p->last_xe) p->last_xe = xaligned_alloc((size_t)c->n_embd * sizeof *p->last_xe);
    p->P = 0;
    if (P == 0) return;
    prof_begin("prefill", "phase", -1);
    forward_hidden(m, s, NULL, p, tokens, 1, P, 0);
    prof_end(0, 0);
    p->P = P;
}

void model_forward_hidden(Model *m, RunState *s, const KVPrefix *prefix, const int32_t *inputs, int B, int T) {
    prof_begin("forward", "phase", -1);
    forward_hidden(m, s, prefix && prefix->P > 0 ? prefix : NULL, NULL, inputs, B, T, 0);
    prof_end(0, 0);
}

void model_logits_rows(const Model *m, const RunState *s, const int *rows, int M, float *xbuf, float *logits) {
    int C = m->cfg.n_embd;
    for (int i = 0; i < M; i++) memcpy(xbuf + (size_t)i * C, s->xn_final + (size_t)rows[i] * C, C * sizeof *xbuf);
    linear(kernels_for(m->precision), logits, xbuf, m->lm_head, M, m->cfg.vocab_size, C, 0);
}

// w (rows, cols) as linear(K, ) passes it to matmul_nt; with `backward`, also in the layout the
// backward's matmul_nn (dx = dy w) and the fused head's dx product read it.
static void pin(const float *w, int rows, int cols, int backward) {
    kernels_pin_weight(w, rows, cols);  // a full pin table only costs speed
    if (backward) kernels_pin_weight_nn(w, rows, cols);
}

void model_pin_weights(const Model *m, int backward) {
    const ModelConfig *c = &m->cfg;
    int C = c->n_embd, qd = c->n_head * c->head_dim, kvd = c->n_kv_head * c->head_dim, F = c->mlp_ratio * C;
    for (int l = 0; l < c->depth; l++) {
        const LayerWeights *w = &m->w[l];
        pin(w->c_q, qd, C, backward);
        pin(w->c_k, kvd, C, backward);
        pin(w->c_v, kvd, C, backward);
        pin(w->attn_proj, C, qd, backward);
        pin(w->c_fc, F, C, backward);
        pin(w->mlp_proj, C, F, backward);
    }
    pin(m->lm_head, c->vocab_size, C, backward);
}

void model_unpin_weights(void) { kernels_unpin_weights(); }

void model_extend_context(Model *m, int T) {
    if (T <= m->cfg.seq_len) return;
    free(m->rope_cos);
    free(m->rope_sin);
    m->cfg.seq_len = T;
    build_rope(m);
}
