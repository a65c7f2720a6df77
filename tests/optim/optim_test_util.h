// tests/optim/optim_test_util.h — what the optimizer tests (test_optim.c, test_optim_state.c)
// share: a self-contained random number source (splitmix64 + Box–Muller), so a seed gives the
// same draws in every test file.
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static uint64_t rng_state;
static inline uint64_t rnd_u64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline double rnd_unif(void) { return (double)(rnd_u64() >> 11) * 0x1.0p-53; }
static inline double rnd_normal(void) {
    double u1 = rnd_unif(), u2 = rnd_unif();
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static inline void fill_normal(float *x, size_t n, double scale) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * rnd_normal());
}
