// eval/pyrandom.c — CPython `random` semantics in C (see pyrandom.h for what is matched).
#include "eval/pyrandom.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define MT_M 397
#define MT_MATRIX_A 0x9908b0dfU
#define MT_UPPER_MASK 0x80000000U
#define MT_LOWER_MASK 0x7fffffffU

// Modules/_randommodule.c: init_genrand.
static void init_genrand(PyRandom *r, uint32_t s) {
    uint32_t *mt = r->state;
    mt[0] = s;
    for (int i = 1; i < PYRANDOM_N; i++) mt[i] = 1812433253U * (mt[i - 1] ^ (mt[i - 1] >> 30)) + (uint32_t)i;
    r->index = PYRANDOM_N;
}

// Modules/_randommodule.c: init_by_array.
static void init_by_array(PyRandom *r, const uint32_t *key, size_t key_length) {
    uint32_t *mt = r->state;
    init_genrand(r, 19650218U);
    size_t i = 1, j = 0;
    size_t k = PYRANDOM_N > key_length ? PYRANDOM_N : key_length;
    for (; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525U)) + key[j] + (uint32_t)j;  // non linear
        i++;
        j++;
        if (i >= PYRANDOM_N) {
            mt[0] = mt[PYRANDOM_N - 1];
            i = 1;
        }
        if (j >= key_length) j = 0;
    }
    for (k = PYRANDOM_N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;  // non linear
        i++;
        if (i >= PYRANDOM_N) {
            mt[0] = mt[PYRANDOM_N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000U;  // MSB is 1, assuring non-zero initial array
}

void pyrandom_seed(PyRandom *r, uint64_t seed) {
    // random_seed(): key = abs(n) as little-endian 32-bit words, keyused = max(1, ceil(bits / 32)).
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    init_by_array(r, key, seed >> 32 ? 2 : 1);
}

uint32_t pyrandom_u32(PyRandom *r) {
    static const uint32_t mag01[2] = {0x0U, MT_MATRIX_A};
    uint32_t *mt = r->state, y;
    if (r->index >= PYRANDOM_N) {  // generate N words at one time
        int kk;
        for (kk = 0; kk < PYRANDOM_N - MT_M; kk++) {
            y = (mt[kk] & MT_UPPER_MASK) | (mt[kk + 1] & MT_LOWER_MASK);
            mt[kk] = mt[kk + MT_M] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        for (; kk < PYRANDOM_N - 1; kk++) {
            y = (mt[kk] & MT_UPPER_MASK) | (mt[kk + 1] & MT_LOWER_MASK);
            mt[kk] = mt[kk + (MT_M - PYRANDOM_N)] ^ (y >> 1) ^ mag01[y & 0x1U];
        }
        y = (mt[PYRANDOM_N - 1] & MT_UPPER_MASK) | (mt[0] & MT_LOWER_MASK);
        mt[PYRANDOM_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 0x1U];
        r->index = 0;
    }
    y = mt[r->index++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680U;
    y ^= (y << 15) & 0xefc60000U;
    y ^= (y >> 18);
    return y;
}

uint64_t pyrandom_getrandbits(PyRandom *r, int k) {
    if (k <= 0 || k > 64) return 0;  // getrandbits(0) == 0 without consuming state
    if (k <= 32) return pyrandom_u32(r) >> (32 - k);
    // _random_Random_getrandbits_impl: words filled least significant first; the last word (the
    // most significant) keeps the top (k - 32) bits of its output.
    uint64_t lo = pyrandom_u32(r);
    uint64_t hi = pyrandom_u32(r) >> (64 - k);
    return lo | hi << 32;
}

static int bit_length(uint64_t n) { return n ? 64 - __builtin_clzll(n) : 0; }

uint64_t pyrandom_randbelow(PyRandom *r, uint64_t n) {
    if (n == 0) return 0;  // Python: infinite loop (getrandbits(0) == 0 >= 0); callers never do it
    int k = bit_length(n);  // n.bit_length(), not (n-1): n can be 1
    uint64_t v = pyrandom_getrandbits(r, k);
    while (v >= n) v = pyrandom_getrandbits(r, k);
    return v;
}

double pyrandom_random(PyRandom *r) {
    uint32_t a = pyrandom_u32(r) >> 5, b = pyrandom_u32(r) >> 6;
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

void pyrandom_shuffle(PyRandom *r, int64_t *x, size_t n) {
    for (size_t i = n; i-- > 1;) {
        size_t j = (size_t)pyrandom_randbelow(r, (uint64_t)i + 1);
        int64_t t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
}

uint64_t pyrandom_sample_setsize(size_t k) {
    uint64_t setsize = 21;  // size of a small set minus size of an empty list
    if (k > 5) {
        // _ceil(_log(k * 3, 4)): math.log(x, base) is log(float(x)) / log(float(base)).
        double e = ceil(log((double)k * 3.0) / log(4.0));
        if (e >= 32) return UINT64_MAX;  // 4 ** e > any size_t n: always the pool path
        setsize += (uint64_t)1 << (2 * (int)e);
    }
    return setsize;
}

int pyrandom_sample(PyRandom *r, const int64_t *population, size_t n, size_t k, int64_t *out) {
    if (k > n) return err_set("pyrandom_sample: sample of %zu larger than population of %zu", k, n);
    if (k == 0) return 0;
    if ((uint64_t)n <= pyrandom_sample_setsize(k)) {
        // An n-length list is smaller than a k-length set. Invariant: non-selected at pool[0 : n-i].
        int64_t *pool = malloc(n * sizeof *pool);
        if (!pool) return err_set("pyrandom_sample: out of memory for a pool of %zu", n);
        memcpy(pool, population, n * sizeof *pool);
        for (size_t i = 0; i < k; i++) {
            size_t j = (size_t)pyrandom_randbelow(r, (uint64_t)(n - i));
            out[i] = pool[j];
            pool[j] = pool[n - i - 1];  // move non-selected item into vacancy
        }
        free(pool);
        return 0;
    }
    // Rejection with a set of selected indices: open addressing, slots hold index + 1 (0 = empty),
    // at most half full.
    size_t cap = 16;
    while (cap < 2 * k) cap <<= 1;
    size_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return err_set("pyrandom_sample: out of memory for a set of %zu", k);
    for (size_t i = 0; i < k; i++) {
        for (;;) {
            size_t j = (size_t)pyrandom_randbelow(r, (uint64_t)n);
            size_t h = (size_t)(((uint64_t)j * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
            while (slots[h] && slots[h] != j + 1) h = (h + 1) & (cap - 1);
            if (slots[h]) continue;  // j in selected: draw again
            slots[h] = j + 1;
            out[i] = population[j];
            break;
        }
    }
    free(slots);
    return 0;
}
