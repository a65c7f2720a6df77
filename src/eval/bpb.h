// eval/bpb.h — validation bits per byte (as nanochat computes it).
//
// val_bpb = Σ nats over targets whose token has token_bytes > 0, divided by
// ln 2 · Σ token_bytes of those targets. CE on the softcapped fp32 logits, summed in fp64, over
// the validation shards packed exactly like training (BOS-aligned best fit, rows of T+1, file
// order, no shuffle), the whole set unless max_tokens caps it. Special-token targets (every BOS
// that starts a packed document) contribute neither nats nor bytes.
#pragma once
#include <stdint.h>

#include "model/model.h"

typedef struct {
    double bpb;          // bits per byte
    double nats;         // Σ nats over counted targets
    int64_t bytes;       // Σ token_bytes over counted targets
    int64_t tokens;      // targets counted (token_bytes > 0)
    int64_t positions;   // target positions evaluated (incl. special tokens)
    int64_t rows;        // packed rows evaluated
    int T;               // row length used
    double seconds;
} BpbResult;

// B rows per forward (any B gives the same result); max_tokens 0 = the whole set, otherwise
// stop after the row that reaches max_tokens target positions. token_bytes has the model's
// vocab_size entries (the tokenizer's vocab must be the model's). Every shard token is checked
// against the model's vocab_size as the shards are loaded: an id past it is an err_usage error
// naming the shard, the token's offset and the id, never a forward pass.
int eval_bpb(Model *m, const char *const *val_shards, int n_shards, int bos_id, const int32_t *token_bytes, int B,
             int T, int64_t max_tokens, BpbResult *res);
