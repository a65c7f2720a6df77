// eval/sample.h — text generation with a KV cache.
//
// A Sampler runs ONE token at a time through the model (model/model.h), keeping every layer's
// keys and values of the earlier positions, so step t costs O(t) attention instead of a whole
// forward over the prefix. Same ops, same order and the same kernels() as model_forward: the
// logits of step t equal model_forward's logits at position t of the same sequence (up to fp32
// rounding in the attention sums; the tests hold them to 1e-4).
//
// Positions are absolute: the token of step t is rotated with RoPE at position t, so at most
// the model's seq_len positions fit (the RoPE tables end there). A full cache is reported, never
// wrapped around.
//
// Sampling: temperature 0 = greedy (argmax, the lowest id on ties); otherwise softmax(logits /
// temperature) over the top_k highest logits (top_k 0 = all; ties broken by lower id), in fp64,
// drawn with util/rng.h. Same seed, same tokens.
#pragma once
#include <stdint.h>

#include "model/model.h"
#include "util/rng.h"

typedef struct Sampler Sampler;

// A sampler for m (which must outlive it) with room for max_len positions (0 = the model's
// seq_len). NULL + err if max_len < 0 or > seq_len. It pins m's weights (model_pin_weights:
// packed once for the one-token products) until sampler_free: do not change them meanwhile.
Sampler *sampler_new(const Model *m, int max_len);
void sampler_free(Sampler *s);
void sampler_reset(Sampler *s);           // empty the cache (start a new sequence)
int sampler_len(const Sampler *s);        // positions in the cache = the next token's position
int sampler_capacity(const Sampler *s);   // max_len
int sampler_full(const Sampler *s);       // 1 if no further token fits

// Run `token` at position sampler_len(s) and append its keys and values to the cache. Returns the
// softcapped logits cap·tanh(z/cap) (V floats, owned by s, valid until the next step), or NULL +
// err when the cache is full or the token is outside the vocabulary.
const float *sampler_step(Sampler *s, int32_t token);

// Pick a token from V logits (see the top of this file). Draws one rng_uniform unless greedy.
int sample_pick(const float *logits, int V, double temperature, int top_k, Rng *rng);

typedef struct {
    double temperature;  // 0 = greedy
    int top_k;           // 0 = all
    uint64_t seed;
    int32_t stop_id;     // stop (without emitting it) when this token is drawn; -1 = never
} SampleConfig;

typedef enum {
    SAMPLE_STOP_N = 0,     // generated the n tokens asked for
    SAMPLE_STOP_TOKEN = 1, // drew stop_id (e.g. <|bos|>: a new document would start)
    SAMPLE_STOP_FULL = 2,  // the cache is full: the model's context ends here
} SampleStop;

// Called with each generated token as soon as it is drawn.
typedef void (*SampleEmit)(int32_t token, void *ctx);

// Reset s, feed the prompt (n_prompt >= 1 tokens, e.g. <|bos|> + the encoded text) one token
// at a time through sampler_step (prefill), then draw up to n tokens, each fed back in before
// the next is drawn. Writes the tokens to out (room for n; may be NULL) and calls emit (may be
// NULL) for each. Returns the number generated and *why it stopped, or -1 + err when the prompt
// is empty or does not fit in the cache.
int sampler_generate(Sampler *s, const int32_t *prompt, int n_prompt, int n, const SampleConfig *c,
                     int32_t *out, SampleEmit emit, void *ctx, SampleStop *why);
