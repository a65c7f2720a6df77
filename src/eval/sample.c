// eval/sample.c — text generation with a KV cache (see sample.h).
#include "eval/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "util/error.h"
#include "util/mem.h"

struct Sampler {
    const Model *m;
    int cap, len;       // positions the cache holds / holds now
    float **k, **v;     // (L) each (cap, Hkv*D): keys after RoPE and QK-norm, values
    // one position's activations
    float *x, *xn;      // (C) residual stream, its norm
    float *x0, *x_half; // (C) cfg.lambdas: the normed embedding; cfg.backout: the residual after block depth/2
    float *xe, *xe_prev;// (C) cfg.smear: this position's norm(embedding) before the smear, and the last one's
    int32_t prev_token; // the last position's token (-1 at position 0): the bigram table's row
    float *ve_sig;      // (Hkv) the value-embedding gate's sigmoids
    float *q_rot, *q;   // (H*D) q after RoPE, after QK-norm
    float *k_rot;       // (Hkv*D)
    float *att;         // (H*D) attention output
    float *fc;          // (F) c_fc output, then relu²
    float *rstd;        // (max(H, 1)) norm statistics (not needed, the kernel writes them)
    double *score;      // (cap) one head's attention weights
    float *logits;      // (V)
};

Sampler *sampler_new(const Model *m, int max_len) {
    const ModelConfig *c = &m->cfg;
    if (max_len < 0 || max_len > c->seq_len) {
        err_set("sampler: max_len %d is outside 0..%d (0 = the model's seq_len %d: RoPE positions end there)",
                max_len, c->seq_len, c->seq_len);
        return NULL;
    }
    Sampler *s = xcalloc(1, sizeof *s);
    s->m = m;
    s->cap = max_len ? max_len : c->seq_len;
    size_t C = (size_t)c->n_embd, qd = (size_t)c->n_head * c->head_dim, kvd = (size_t)c->n_kv_head * c->head_dim;
    size_t F = (size_t)c->mlp_ratio * C;
    s->k = xcalloc((size_t)c->depth, sizeof *s->k);
    s->v = xcalloc((size_t)c->depth, sizeof *s->v);
    for (int l = 0; l < c->depth; l++) {
        s->k[l] = xaligned_alloc((size_t)s->cap * kvd * sizeof(float));
        s->v[l] = xaligned_alloc((size_t)s->cap * kvd * sizeof(float));
    }
    s->x = xaligned_alloc(C * sizeof(float));
    s->xn = xaligned_alloc(C * sizeof(float));
    s->x0 = xaligned_alloc(C * sizeof(float));
    s->x_half = xaligned_alloc(C * sizeof(float));
    s->xe = xaligned_alloc(C * sizeof(float));
    s->xe_prev = xaligned_alloc(C * sizeof(float));
    s->ve_sig = xaligned_alloc((size_t)c->n_kv_head * sizeof(float));
    s->prev_token = -1;
    s->q_rot = xaligned_alloc(qd * sizeof(float));
    s->q = xaligned_alloc(qd * sizeof(float));
    s->k_rot = xaligned_alloc(kvd * sizeof(float));
    s->att = xaligned_alloc(qd * sizeof(float));
    s->fc = xaligned_alloc(F * sizeof(float));
    s->rstd = xaligned_alloc((size_t)(c->n_head > 0 ? c->n_head : 1) * sizeof(float));
    s->score = xmalloc((size_t)s->cap * sizeof *s->score);
    s->logits = xaligned_alloc((size_t)c->vocab_size * sizeof(float));
    model_pin_weights(m, 0);  // one-token steps: packing the weights per call would dominate
    return s;
}

void sampler_free(Sampler *s) {
    if (!s) return;
    model_unpin_weights();
    for (int l = 0; l < s->m->cfg.depth; l++) {
        free(s->k[l]);
        free(s->v[l]);
    }
    free(s->k);
    free(s->v);
    float *bufs[] = {s->x, s->xn, s->x0, s->x_half, s->xe, s->xe_prev, s->ve_sig, s->q_rot, s->q, s->k_rot, s->att, s->fc, s->rstd, s->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
    free(s->score);
    free(s);
}

void sampler_reset(Sampler *s) {
    s->len = 0;
    s->prev_token = -1;
}
int sampler_len(const Sampler *s) { return s->len; }
int sampler_capacity(const Sampler *s) { return s->cap; }
int sampler_full(const Sampler *s) { return s->len >= s->cap; }

// The one new query (H, D) against the cached keys and values of positions 0..n-1 (its own
// included): scale 1/sqrt(D), q head h reads kv head h / (H/Hkv), softmax in fp64.
static void attend(Sampler *s, const float *kc, const float *vc, int n) {
    const ModelConfig *c = &s->m->cfg;
    int H = c->n_head, Hkv = c->n_kv_head, D = c->head_dim, group = H / Hkv, kvd = Hkv * D;
    float scale = 1.0f / sqrtf((float)D);
    for (int h = 0; h < H; h++) {
        const float *qh = s->q + (size_t)h * D;
        int hk = h / group;
        double mx = -INFINITY;
        for (int t = 0; t < n; t++) {
            const float *kt = kc + (size_t)t * kvd + (size_t)hk * D;
            float dot = 0;
            for (int d = 0; d < D; d++) dot += qh[d] * kt[d];
            s->score[t] = dot * scale;
            if (s->score[t] > mx) mx = s->score[t];
        }
        double sum = 0;
        for (int t = 0; t < n; t++) sum += (s->score[t] = exp(s->score[t] - mx));
        float *o = s->att + (size_t)h * D;
        for (int d = 0; d < D; d++) {
            double acc = 0;
            for (int t = 0; t < n; t++) acc += s->score[t] * vc[(size_t)t * kvd + (size_t)hk * D + d];
            o[d] = (float)(acc / sum);
        }
    }
}

const float *sampler_step(Sampler *s, int32_t token) {
    const Model *m = s->m;
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int C = c->n_embd, H = c->n_head, Hkv = c->n_kv_head, D = c->head_dim, F = c->mlp_ratio * C, V = c->vocab_size;
    int pos = s->len, half = D / 2;
    if (pos >= s->cap) {
        err_set("the context is full: %d positions (the model's seq_len is %d)", s->cap, c->seq_len);
        return NULL;
    }
    if (token < 0 || token >= V) {
        err_set("token %d is outside the vocabulary (0..%d)", token, V - 1);
        return NULL;
    }
    const float *cos_t = m->rope_cos + (size_t)pos * half, *sin_t = m->rope_sin + (size_t)pos * half;
    // the input stage as model/recipe.c's: wte (+ bigram row), norm, smear from the last position
    K->embedding_fwd(s->xn, &token, m->wte, 1, C);
    if (c->bigram) {
        const float *b = m->bigram + (size_t)model_bigram_row(s->prev_token, token, V, c->bigram) * C;
        for (int i = 0; i < C; i++) s->xn[i] += b[i];
    }
    if (c->smear) {
        K->rmsnorm_fwd(s->xe, s->rstd, s->xn, 1, C);
        if (pos > 0) model_smear_row(s->x, s->xe, s->xe_prev, m->smear_gate, m->smear_lambda[0], C);
        else memcpy(s->x, s->xe, (size_t)C * sizeof *s->x);
        memcpy(s->xe_prev, s->xe, (size_t)C * sizeof *s->xe);
    } else {
        K->rmsnorm_fwd(s->x, s->rstd, s->xn, 1, C);
    }
    s->prev_token = token;
    if (c->lambdas) memcpy(s->x0, s->x, (size_t)C * sizeof *s->x0);
    float qs = model_config_qk_scale(c);
    for (int l = 0; l < c->depth; l++) {
        const LayerWeights *w = &m->w[l];
        if (c->lambdas) model_residual_mix(s->x, s->x, s->x0, m->resid_lambdas[l], m->x0_lambdas[l], (size_t)C);
        float *kc = s->k[l], *vc = s->v[l], *k_new = kc + (size_t)pos * Hkv * D;
        // attention
        K->rmsnorm_fwd(s->xn, s->rstd, s->x, 1, C);
        K->matmul_nt(s->q_rot, s->xn, w->c_q, 1, H * D, C, 0);
        K->matmul_nt(s->k_rot, s->xn, w->c_k, 1, Hkv * D, C, 0);
        K->matmul_nt(vc + (size_t)pos * Hkv * D, s->xn, w->c_v, 1, Hkv * D, C, 0);
        if (w->ve)
            model_ve_row(vc + (size_t)pos * Hkv * D, s->ve_sig, s->xn, w->ve_gate, w->ve + (size_t)token * Hkv * D,
                         Hkv, D);
        K->rope_fwd(s->q_rot, cos_t, sin_t, 1, 1, H, D);
        K->rope_fwd(s->k_rot, cos_t, sin_t, 1, 1, Hkv, D);
        if (c->qk_norm) {
            K->rmsnorm_fwd(s->q, s->rstd, s->q_rot, H, D);
            K->rmsnorm_fwd(k_new, s->rstd, s->k_rot, Hkv, D);
        } else {
            memcpy(s->q, s->q_rot, (size_t)H * D * sizeof *s->q);
            memcpy(k_new, s->k_rot, (size_t)Hkv * D * sizeof *k_new);
        }
        if (qs != 1.0f) {
            for (int i = 0; i < H * D; i++) s->q[i] *= qs;
            for (int i = 0; i < Hkv * D; i++) k_new[i] *= qs;
        }
        attend(s, kc, vc, pos + 1);
        K->matmul_nt(s->x, s->att, w->attn_proj, 1, C, H * D, 1);  // x += c_proj(att)
        // MLP
        K->rmsnorm_fwd(s->xn, s->rstd, s->x, 1, C);
        K->matmul_nt(s->fc, s->xn, w->c_fc, 1, F, C, 0);
        K->relu2_fwd(s->fc, s->fc, (size_t)F);
        K->matmul_nt(s->x, s->fc, w->mlp_proj, 1, C, F, 1);  // x += c_proj(relu(fc)²)
        if (c->backout && l == model_config_backout_layer(c)) memcpy(s->x_half, s->x, (size_t)C * sizeof *s->x);
    }
    if (c->backout)
        for (int i = 0; i < C; i++) s->x[i] -= m->backout_lambda[0] * s->x_half[i];
    K->rmsnorm_fwd(s->xn, s->rstd, s->x, 1, C);
    K->matmul_nt(s->logits, s->xn, m->lm_head, 1, V, C, 0);
    float cap = c->softcap;
    if (cap > 0)
        for (int i = 0; i < V; i++) s->logits[i] = cap * tanhf(s->logits[i] / cap);
    s->len++;
    return s->logits;
}

// ---------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------

typedef struct {
    float logit;
    int id;
} Cand;

static int cand_desc(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int sample_pick(const float *logits, int V, double temperature, int top_k, Rng *rng) {
    if (temperature <= 0) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    Cand *cand = xmalloc((size_t)V * sizeof *cand);
    double *p = xmalloc((size_t)V * sizeof *p);
    for (int i = 0; i < V; i++) cand[i] = (Cand){logits[i], i};
    int n = V;
    if (top_k > 0 && top_k < V) {
        qsort(cand, (size_t)V, sizeof *cand, cand_desc);  // highest first, lower id on ties
        n = top_k;
    }
    float mx = cand[0].logit;
    for (int i = 1; i < n; i++)
        if (cand[i].logit > mx) mx = cand[i].logit;
    double sum = 0;
    for (int i = 0; i < n; i++) sum += (p[i] = exp(((double)cand[i].logit - mx) / temperature));
    double u = rng_uniform(rng) * sum, acc = 0;
    int pick = -1;
    for (int i = 0; i < n; i++) {
        if (p[i] <= 0) continue;
        pick = i;  // the last candidate with weight, should rounding carry u past the end
        if ((acc += p[i]) > u) break;
    }
    int id = cand[pick < 0 ? 0 : pick].id;
    free(cand);
    free(p);
    return id;
}

int sampler_generate(Sampler *s, const int32_t *prompt, int n_prompt, int n, const SampleConfig *c,
                     int32_t *out, SampleEmit emit, void *ctx, SampleStop *why) {
    sampler_reset(s);
    *why = SAMPLE_STOP_N;
    if (n_prompt < 1) return err_set("sample: the prompt is empty (start it with <|bos|>)");
    if (n_prompt > s->cap)
        return err_set("sample: the prompt has %d tokens (with <|bos|>) but the context holds %d: shorten it",
                       n_prompt, s->cap);
    const float *logits = NULL;
    for (int i = 0; i < n_prompt; i++)
        if (!(logits = sampler_step(s, prompt[i]))) return err_prefix("sample: prompt token %d", i);
    Rng rng;
    rng_seed(&rng, c->seed);
    int V = s->m->cfg.vocab_size;
    for (int i = 0; i < n; i++) {
        int32_t tok = sample_pick(logits, V, c->temperature, c->top_k, &rng);
        if (tok == c->stop_id) {
            *why = SAMPLE_STOP_TOKEN;
            return i;
        }
        if (out) out[i] = tok;
        if (emit) emit(tok, ctx);
        if (i + 1 == n) break;
        if (sampler_full(s)) {
            *why = SAMPLE_STOP_FULL;
            return i + 1;
        }
        if (!(logits = sampler_step(s, tok))) return -1;
    }
    return n;
}
