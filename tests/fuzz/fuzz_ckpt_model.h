// tests/fuzz/fuzz_ckpt_model.h — the tiny run that the checkpoint seeds come from and that
// fuzz_ckpt restores train_state.safetensors into (tool_fuzz_seeds.c writes the seeds with it).
#pragma once
#include <stdint.h>

#include "data/loader.h"
#include "model/config.h"

static inline ModelConfig fuzz_ckpt_config(void) {
    ModelConfig c = model_config_from_depth(1, 300, 8);  // a byte-level tokenizer has at least 265 ids
    c.n_embd = 8, c.n_head = 1, c.n_kv_head = 1, c.head_dim = 8, c.mlp_ratio = 2;
    // The plain block: C 8 is below the gates' widths, and the seeds predate the recipe.
    c.lambdas = c.backout = c.value_embeds = c.smear = c.bigram = 0, c.qk_scale = 1.0f;
    return c;
}

// Its data: documents of <|bos|> (31) and a few ids, packed into rows of 8.
#define FUZZ_CKPT_BOS 31
static const uint16_t FUZZ_CKPT_TOKENS[] = {31, 1, 2, 3, 4, 5, 31, 6, 7, 31, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                            31, 17, 18, 31, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30};

static inline LoaderConfig fuzz_ckpt_loader_config(void) {
    LoaderConfig c = loader_defaults();
    c.B = 2, c.T = 8, c.seed = 1, c.buffer_docs = 3, c.refill_docs = 2, c.vocab_size = 300;
    return c;
}
