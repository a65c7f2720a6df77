// model/recipe.c — the recipe's forward and backward pieces (see recipe.h).
#include "model/recipe.h"

#include <string.h>

#include "kernels/kernels.h"

double recipe_dot_rows(const float *a, const float *b, int N, int C, double *row_sums) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *x = a + (size_t)n * C, *y = b + (size_t)n * C;
        double acc = 0;
        for (int j = 0; j < C; j++) acc += (double)x[j] * y[j];
        row_sums[n] = acc;
    }
    double total = 0;
    for (int n = 0; n < N; n++) total += row_sums[n];
    return total;
}

// ---------------------------------------------------------------------------------------------
// Input stage: embedding (+ bigram), norm, smear
// ---------------------------------------------------------------------------------------------

void recipe_input_fwd(const Model *m, RunState *s, const KVPrefix *prefix, const int32_t *inputs, int B, int T,
                      float *x0) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int N = B * T, C = c->n_embd;
    if (prefix && prefix->P == 0) prefix = NULL;
    K->embedding_fwd(s->emb, inputs, m->wte, N, C);
    if (c->bigram) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < N; n++) {
            int t = n % T, prev = t ? inputs[n - 1] : prefix ? prefix->last_token : -1;
            int r = model_bigram_row(prev, inputs[n], c->vocab_size, c->bigram);
            s->bigram_rows[n] = r;
            float *e = s->emb + (size_t)n * C;
            const float *b = m->bigram + (size_t)r * C;
            for (int j = 0; j < C; j++) e[j] += b[j];
        }
    }
    K->rmsnorm_fwd(c->smear ? s->xe : x0, s->rstd0, s->emb, N, C);
    if (!c->smear) return;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        int t = n % T;
        const float *xe = s->xe + (size_t)n * C;
        const float *prev = t ? xe - C : prefix ? prefix->last_xe : NULL;
        if (prev) {
            s->smear_sig[n] = model_smear_row(x0 + (size_t)n * C, xe, prev, m->smear_gate, m->smear_lambda[0], C);
        } else {
            s->smear_sig[n] = 0.0f;
            memcpy(x0 + (size_t)n * C, xe, (size_t)C * sizeof *x0);
        }
    }
}

// x0[n] = xe[n] + λ·σ_n·xe[n-1], σ_n = sigmoid(w · xe[n][:24]), for t >= 1:
//   d xe[n] = d x0[n] + λ·σ_{n+1}·d x0[n+1] (+ dz_n·w on the first 24), with p_n = d x0[n] · xe[n-1],
//   d λ = Σ σ_n·p_n, dz_n = λ·p_n·σ_n(1-σ_n), d w = Σ dz_n·xe[n][:24].
static void smear_bwd(Model *m, RunState *s, const float *d, float *dxe, int N, int T, int C) {
    const float *xe = s->xe, *sig = s->smear_sig, *w = m->smear_gate;
    float lambda = m->smear_lambda[0];
    double *p = s->row_sums;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        double acc = 0;
        if (n % T)
            for (int j = 0; j < C; j++) acc += (double)d[(size_t)n * C + j] * xe[(size_t)(n - 1) * C + j];
        p[n] = acc;
    }
    double dl = 0, dw[MODEL_SMEAR_CHANNELS] = {0};
    for (int n = 0; n < N; n++) {  // in order: the sums do not depend on the thread count
        if (!(n % T)) continue;
        double sg = sig[n];
        dl += sg * p[n];
        p[n] = lambda * p[n] * sg * (1.0 - sg);  // now dz_n
        for (int j = 0; j < MODEL_SMEAR_CHANNELS; j++) dw[j] += p[n] * xe[(size_t)n * C + j];
    }
    m->dsmear_lambda[0] += (float)dl;
    for (int j = 0; j < MODEL_SMEAR_CHANNELS; j++) m->dsmear_gate[j] += (float)dw[j];
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const float *g = d + (size_t)n * C;
        float *o = dxe + (size_t)n * C;
        if (n % T + 1 < T) {  // the next position of the same sequence read this one
            float next = lambda * sig[n + 1];
            for (int j = 0; j < C; j++) o[j] = g[j] + next * g[C + j];
        } else {
            memcpy(o, g, (size_t)C * sizeof *o);
        }
        if (n % T)
            for (int j = 0; j < MODEL_SMEAR_CHANNELS; j++) o[j] += (float)p[n] * w[j];
    }
}

void recipe_input_bwd(Model *m, RunState *s, const int32_t *inputs, float *d) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int T = s->cur_T, N = s->cur_B * T, C = c->n_embd;
    const float *dn = d;  // d of the norm's output
    if (c->smear) {
        smear_bwd(m, s, d, s->dxn, N, T, C);
        dn = s->dxn;
    }
    float *demb = dn == d ? s->dxn : d;
    K->rmsnorm_bwd(demb, dn, s->emb, s->rstd0, N, C, 0);
    K->embedding_bwd(m->dwte, demb, inputs, N, C);
    if (c->bigram) K->embedding_bwd(m->dbigram, demb, s->bigram_rows, N, C);
}

// ---------------------------------------------------------------------------------------------
// Value embeddings
// ---------------------------------------------------------------------------------------------

void recipe_ve_fwd(const Model *m, LayerActs *a, const LayerWeights *w, const int32_t *inputs, int N) {
    const ModelConfig *c = &m->cfg;
    int C = c->n_embd, Hkv = c->n_kv_head, D = c->head_dim;
    size_t kvd = (size_t)Hkv * D;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++)
        model_ve_row(a->v + n * kvd, a->ve_sig + (size_t)n * Hkv, a->xn1 + (size_t)n * C, w->ve_gate,
                     w->ve + (size_t)inputs[n] * kvd, Hkv, D);
}

// v += 3σ_h·e_h per kv head h, σ_h = sigmoid(g_h · xn[:12]), e = ve[token]:
//   d e_h = 3σ_h·dv_h (scattered to the token's row), dz_h = 3σ_h(1-σ_h)·(dv_h · e_h),
//   d xn[:12] += Σ_h dz_h·g_h, d g_h = Σ_n dz_h·xn[:12].
void recipe_ve_bwd(const Model *m, RunState *s, const LayerActs *a, const LayerWeights *w, LayerWeights *dw,
                   const int32_t *inputs, int N) {
    const Kernels *K = kernels_for(m->precision);
    const ModelConfig *c = &m->cfg;
    int C = c->n_embd, Hkv = c->n_kv_head, D = c->head_dim, G = MODEL_VE_GATE_CHANNELS;
    size_t kvd = (size_t)Hkv * D;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        float *dv = s->dv + n * kvd, *dz = s->dve_z + (size_t)n * Hkv, *dxn = s->dxn + (size_t)n * C;
        const float *e = w->ve + (size_t)inputs[n] * kvd, *sig = a->ve_sig + (size_t)n * Hkv;
        for (int h = 0; h < Hkv; h++) {
            float dot = 0;
            for (int d = 0; d < D; d++) dot += dv[h * D + d] * e[h * D + d];
            dz[h] = 3.0f * sig[h] * (1.0f - sig[h]) * dot;
            for (int d = 0; d < D; d++) dv[h * D + d] *= 3.0f * sig[h];
        }
        for (int j = 0; j < G; j++) {
            float acc = 0;
            for (int h = 0; h < Hkv; h++) acc += dz[h] * w->ve_gate[h * G + j];
            dxn[j] += acc;
        }
    }
#pragma omp parallel for schedule(static)
    for (int i = 0; i < Hkv * G; i++) {
        int h = i / G, j = i % G;
        double acc = 0;
        for (int n = 0; n < N; n++) acc += (double)s->dve_z[(size_t)n * Hkv + h] * a->xn1[(size_t)n * C + j];
        dw->ve_gate[i] += (float)acc;
    }
    K->embedding_bwd(dw->ve, s->dv, inputs, N, (int)kvd);
}

// ---------------------------------------------------------------------------------------------
// Residual and x0 lambdas
// ---------------------------------------------------------------------------------------------

void recipe_residual_mix_bwd(Model *m, RunState *s, int l, int N, int C) {
    const float *xr = l ? s->layer[l].xr : s->x0;
    float r = m->resid_lambdas[l], a = m->x0_lambdas[l];
    size_t NC = (size_t)N * C;
    m->dresid_lambdas[l] += (float)recipe_dot_rows(s->dx, xr, N, C, s->row_sums);
    m->dx0_lambdas[l] += (float)recipe_dot_rows(s->dx, s->x0, N, C, s->row_sums);
#pragma omp parallel for simd schedule(static) if (NC > 65536)
    for (size_t i = 0; i < NC; i++) {
        float g = s->dx[i];
        s->dx0[i] += a * g + (l == 0 ? r * g : 0.0f);
        s->dx[i] = r * g;
    }
}
