// model/recipe.h — the forward and backward of nanochat's residual-stream recipe and the speedrun's
// bigram hash embedding (ModelConfig: lambdas, backout, value_embeds, smear, bigram), for model.c.
//
// Plain loops over the model's run state, OpenMP over positions; every sum a gradient needs is
// made by one thread in a fixed order (a position's by its thread, across positions in order), so
// results do not depend on the thread count. The same code serves every kernel table: what these
// ops cost is a few passes over (N, C), next to the products' (N, C, C).
#pragma once
#include <stdint.h>

#include "model/model.h"

// Σ a·b over (N, C) in double: each row by one thread into row_sums (N), then the rows in order.
double recipe_dot_rows(const float *a, const float *b, int N, int C, double *row_sums);

// The input stage, inputs (B, T) to x0 (N, C), the residual stream's start: s->emb = wte[token]
// (+ the bigram table's row of (previous token, token)), norm, then smear. Position 0 of each
// sequence has as its previous token the prefix's last (prefix non-NULL with P > 0) or none.
void recipe_input_fwd(const Model *m, RunState *s, const KVPrefix *prefix, const int32_t *inputs, int B, int T,
                      float *x0);
// Back from d x0 (N, C) in `d` (overwritten: it ends as d emb) to wte, the bigram table and smear's
// two tensors, for the batch of the last forward.
void recipe_input_bwd(Model *m, RunState *s, const int32_t *inputs, float *d);

// Value embeddings of layer l (w->ve non-NULL): a->v += 3·sigmoid(ve_gate · xn1[:12])·ve[token],
// per kv head; the sigmoids into a->ve_sig.
void recipe_ve_fwd(const Model *m, LayerActs *a, const LayerWeights *w, const int32_t *inputs, int N);
// Back through it, after c_v's products have read s->dv (d v): adds the gate's part of d xn1 to
// s->dxn and the gradients of ve_gate and the table; s->dv is left scaled by the gate.
void recipe_ve_bwd(const Model *m, RunState *s, const LayerActs *a, const LayerWeights *w, LayerWeights *dw,
                   const int32_t *inputs, int N);

// Back through block l's x = r·xr + a·x0 (s->dx: d x): d r += Σ dx·xr, d a += Σ dx·x0,
// d x0 += a·dx, and s->dx becomes d xr = r·dx (block 0's xr is x0 itself: all of it joins d x0).
void recipe_residual_mix_bwd(Model *m, RunState *s, int l, int N, int C);
