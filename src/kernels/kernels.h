// kernels/kernels.h — the one place every compute op goes through.
//
// A Kernels table holds one function pointer per op. `ref` is the plain, obviously-correct
// implementation (fp32, OpenMP over independent outputs, deterministic whatever the thread
// count: every output element is reduced by one thread in a fixed order). Faster variants
// (AVX-512, AMX) are added as further tables and checked against `ref` on many shapes;
// FRONTIER_KERNELS=ref forces the reference path.
//
// Matrix layout: row-major. "nt" means the second operand is used transposed, as nn.Linear
// stores its weight (out, in): y (M,N) = x (M,K) @ W(N,K)^T.
#pragma once
#include <stddef.h>

typedef struct {
    const char *name;
    // c (M,N) (+)= a (M,K) @ b (N,K)^T
    void (*matmul_nt)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // c (M,N) (+)= a (M,K) @ b (K,N)
    void (*matmul_nn)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // c (M,N) (+)= a (K,M)^T @ b (K,N)
    void (*matmul_tn)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
} Kernels;

extern const Kernels KERNELS_REF;

// The active table (default: the best available; FRONTIER_KERNELS=ref forces the reference).
const Kernels *kernels(void);
