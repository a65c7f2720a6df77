// eval/pyrandom.h — a faithful C port of the parts of CPython's `random` module that the CORE
// benchmark needs (nanochat shuffles rows with random.Random(1337).shuffle(rows) and draws few-shot
// examples with random.Random(1234 + idx).sample(others, k)).
//
// Matched exactly (same numbers, same state consumption) against CPython 3.11.2
// (Lib/random.py + Modules/_randommodule.c), see tests/eval/test_pyrandom.c and
// tests/fixtures/gen_pyrandom.py:
//   - MT19937 genrand_uint32 and init_genrand(19650218)/init_by_array seeding;
//   - random.Random(n) for an int n >= 0: key = |n| split into 32-bit words, least significant
//     word first, at least one word (n = 0 -> key [0]);
//   - getrandbits(k), 0 <= k <= 64: k <= 32 -> u32 >> (32 - k); otherwise 32-bit words filled
//     least significant first, the last (most significant) word keeping its top k % 32 bits;
//   - _randbelow_with_getrandbits(n): k = n.bit_length(); r = getrandbits(k) until r < n
//     (this is also randrange(n) for n > 0);
//   - random(): (a * 67108864 + b) / 2**53, a = u32 >> 5, b = u32 >> 6;
//   - shuffle(x): for i = n-1 .. 1: j = randbelow(i + 1); swap x[i], x[j];
//   - sample(population, k) with both CPython 3.11 algorithms (pool list when
//     n <= 21 + (k > 5 ? 4 ** ceil(log(3k) / log(4)) : 0), else rejection with a set of indices).
//
// Not thread-safe per PyRandom (one generator per thread); no allocation except in sample().
#pragma once
#include <stddef.h>
#include <stdint.h>

#define PYRANDOM_N 624

typedef struct {
    uint32_t state[PYRANDOM_N];
    int index;  // next word of state to temper; PYRANDOM_N means "regenerate first"
} PyRandom;

// random.Random(seed) for a non-negative int seed.
void pyrandom_seed(PyRandom *r, uint64_t seed);
// MT19937 genrand_uint32 (what getrandbits(32) returns).
uint32_t pyrandom_u32(PyRandom *r);
// getrandbits(k) for 0 <= k <= 64 (k outside that range returns 0 and consumes nothing).
uint64_t pyrandom_getrandbits(PyRandom *r, int k);
// _randbelow(n) == randrange(n) for n > 0. For n == 0 Python would loop forever; this returns 0
// without touching the state.
uint64_t pyrandom_randbelow(PyRandom *r, uint64_t n);
// random(): a double in [0, 1) with 53 random bits.
double pyrandom_random(PyRandom *r);
// shuffle(x) in place.
void pyrandom_shuffle(PyRandom *r, int64_t *x, size_t n);
// sample(population, k) into out[0..k). Returns 0, or -1 with err_set() if k > n or memory runs
// out (state untouched in both cases). population is not modified.
int pyrandom_sample(PyRandom *r, const int64_t *population, size_t n, size_t k, int64_t *out);
// The set-size threshold sample() compares n against (exposed for tests):
// 21 + (k > 5 ? 4 ** ceil(log(k * 3) / log(4)) : 0), computed in double as CPython does.
uint64_t pyrandom_sample_setsize(size_t k);
