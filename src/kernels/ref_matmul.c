// kernels/ref_matmul.c — reference matrix products (see kernels.h).
//
// Plain loops arranged so the innermost loop runs over contiguous memory (the compiler
// vectorises it); OpenMP splits the output rows, and each output is accumulated by one thread
// in a fixed order, so results do not depend on the thread count.
#include <string.h>

#include "kernels/ref.h"

// c (M,N) (+)= a (M,K) @ b (N,K)^T: every c[i][j] is a dot product of two contiguous rows.
void ref_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        const float *ai = a + (size_t)i * K;
        for (int j = 0; j < N; j++) {
            const float *bj = b + (size_t)j * K;
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (int k = 0; k < K; k++) s += ai[k] * bj[k];
            c[(size_t)i * N + j] = accumulate ? c[(size_t)i * N + j] + s : s;
        }
    }
}

// c (M,N) (+)= a (M,K) @ b (K,N): row i of c accumulates a[i][k] * row k of b.
void ref_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *ci = c + (size_t)i * N;
        if (!accumulate) memset(ci, 0, (size_t)N * sizeof *ci);
        const float *ai = a + (size_t)i * K;
        for (int k = 0; k < K; k++) {
            const float aik = ai[k];
            const float *bk = b + (size_t)k * N;
#pragma omp simd
            for (int j = 0; j < N; j++) ci[j] += aik * bk[j];
        }
    }
}

// c (M,N) (+)= a (K,M)^T @ b (K,N): row i of c accumulates a[k][i] * row k of b.
void ref_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < M; i++) {
        float *ci = c + (size_t)i * N;
        if (!accumulate) memset(ci, 0, (size_t)N * sizeof *ci);
        for (int k = 0; k < K; k++) {
            const float aki = a[(size_t)k * M + i];
            const float *bk = b + (size_t)k * N;
#pragma omp simd
            for (int j = 0; j < N; j++) ci[j] += aki * bk[j];
        }
    }
}

