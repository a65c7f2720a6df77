// model/params.h — the table of named parameter tensors over one flat fp32 buffer.
//
// Parameters, gradients and optimizer state all live in flat contiguous buffers (one buffer
// to all-reduce, save and shard); a ParamTensor says where a named tensor sits in them.
// Names follow nanochat's state_dict; 2-D shapes are (out, in) = (rows, cols).
#pragma once
#include <stddef.h>

typedef enum {
    PARAM_WTE,      // token embedding (V, C): AdamW, embedding group
    PARAM_LM_HEAD,  // unembedding (V, C): AdamW, lm_head group
    PARAM_MATRIX,   // a 2-D matrix inside a block (ve_gate included, as nanochat): Muon
    // nanochat's scalars, each its own AdamW group:
    PARAM_RESID_LAMBDAS,  // resid_lambdas (L)
    PARAM_X0_LAMBDAS,     // x0_lambdas (L)
    PARAM_GATE_SCALARS,   // backout_lambda (1), smear_gate.weight (1, 24), smear_lambda (1)
    PARAM_VALUE_EMBED,    // value_embeds.<l>.weight (V, Hkv*D): AdamW at half the embedding lr
    PARAM_BIGRAM,         // bigram_embed.weight (rows, C): AdamW, the embedding group's settings
} ParamKind;

typedef struct {
    char name[96];    // e.g. "transformer.h.3.mlp.c_fc.weight"
    int rows, cols;   // (out, in)
    size_t offset;    // first element in the flat buffers (floats)
    size_t numel;     // rows * cols
    ParamKind kind;
    int vector;       // 1: a 1-D tensor of cols elements (rows 1), saved with shape [cols] as nanochat's
} ParamTensor;

typedef struct {
    ParamTensor *t;   // (n)
    int n;
    size_t total;     // floats in all tensors
} ParamTable;

// Append a tensor at the end of the table (offsets are assigned in order, 16-float aligned so
// every tensor starts on a 64-byte boundary when the buffer does).
ParamTensor *param_table_add(ParamTable *tab, const char *name, int rows, int cols, ParamKind kind);
const ParamTensor *param_table_find(const ParamTable *tab, const char *name);
void param_table_free(ParamTable *tab);
