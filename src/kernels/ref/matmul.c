// kernels/ref/matmul.c — the reference matrix products (contracts in ops.h), and their bf16 twins.
//
// Plain loops, blocked just enough to be usable on a CPU: four output rows at a time share each
// load of the other operand's row, and matmul_nt walks the weight in L2-sized column blocks.
// Determinism: every output element is computed by the same code in the same order whatever
// the thread count or M (leftover rows go through the same 4-row kernel via a padded copy).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/ref.h"
#include "util/mem.h"

#define RB 4      // output rows per register block
#define NT_JB 64  // weight rows per L2 block in matmul_nt

// ---------------------------------------------------------------------------------------------
// c (M,N) (+)= a (M,K) @ b (N,K)^T: c[i][j] = dot(a_i, b_j)
// ---------------------------------------------------------------------------------------------

static inline void nt_block(float *c, const float *a, const float *b, int N, int K, int j0, int j1, int ldc,
                            int accumulate) {
    const float *a0 = a, *a1 = a + K, *a2 = a + 2 * (size_t)K, *a3 = a + 3 * (size_t)K;
    for (int j = j0; j < j1; j++) {
        const float *bj = b + (size_t)j * K;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
        for (int k = 0; k < K; k++) {
            float bk = bj[k];
            s0 += a0[k] * bk;
            s1 += a1[k] * bk;
            s2 += a2[k] * bk;
            s3 += a3[k] * bk;
        }
        float s[RB] = {s0, s1, s2, s3};
        for (int r = 0; r < RB; r++) c[(size_t)r * ldc + j] = accumulate ? c[(size_t)r * ldc + j] + s[r] : s[r];
    }
    (void)N;
}

void ref_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
    int full = M / RB * RB;
    for (int j0 = 0; j0 < N; j0 += NT_JB) {
        int j1 = j0 + NT_JB < N ? j0 + NT_JB : N;
#pragma omp parallel for schedule(static)
        for (int i = 0; i < full; i += RB)
            nt_block(c + (size_t)i * N, a + (size_t)i * K, b, N, K, j0, j1, N, accumulate);
    }
    if (full == M) return;
    // leftover rows: pad to a 4-row block so they take exactly the same code path
    int rest = M - full;
    float *ap = calloc((size_t)RB * K, sizeof *ap), *cp = calloc((size_t)RB * N, sizeof *cp);
    memcpy(ap, a + (size_t)full * K, (size_t)rest * K * sizeof *ap);
    if (accumulate) memcpy(cp, c + (size_t)full * N, (size_t)rest * N * sizeof *cp);
#pragma omp parallel for schedule(static)
    for (int j0 = 0; j0 < N; j0 += NT_JB) nt_block(cp, ap, b, N, K, j0, j0 + NT_JB < N ? j0 + NT_JB : N, N, accumulate);
    memcpy(c + (size_t)full * N, cp, (size_t)rest * N * sizeof *cp);
    free(ap);
    free(cp);
}

// ---------------------------------------------------------------------------------------------
// c (M,N) (+)= a (M,K) @ b (K,N) and c (M,N) (+)= a (K,M)^T @ b (K,N). Row i of c accumulates
// a(i,k) * row k of b in k order — an axpy per k, so no reduction is reordered and blocking
// cannot change results. Four rows of c share each pass over b.
// ---------------------------------------------------------------------------------------------

#define AXPY_KB 128  // rows of b kept in L2 while every row block of c passes over them
#define AXPY_JB 32   // columns of c held in registers (4 rows x 32 floats = 8 AVX-512 registers)

// a(i, k) for either layout of a
static inline float a_at(const float *a, int M, int K, int i, int k, int trans_a) {
    return trans_a ? a[(size_t)k * M + i] : a[(size_t)i * K + k];
}

// c[i0.., j0..j0+jn) += Σ_{k in [k0,k1)} a(i,k) b[k][j], one FMA per k in ascending k — the same
// arithmetic for the register-blocked and the plain path, so blocking never changes results.
static void axpy_tile(float *c, const float *a, const float *b, int M, int N, int K, int i0, int nr, int j0, int jn,
                      int k0, int k1, int trans_a) {
    if (nr == RB && jn == AXPY_JB) {
        float acc[RB][AXPY_JB];
        for (int r = 0; r < RB; r++) memcpy(acc[r], c + (size_t)(i0 + r) * N + j0, sizeof acc[r]);
        for (int k = k0; k < k1; k++) {
            const float *bk = b + (size_t)k * N + j0;
            float a0 = a_at(a, M, K, i0, k, trans_a), a1 = a_at(a, M, K, i0 + 1, k, trans_a);
            float a2 = a_at(a, M, K, i0 + 2, k, trans_a), a3 = a_at(a, M, K, i0 + 3, k, trans_a);
#pragma omp simd
            for (int j = 0; j < AXPY_JB; j++) {
                acc[0][j] += a0 * bk[j];
                acc[1][j] += a1 * bk[j];
                acc[2][j] += a2 * bk[j];
                acc[3][j] += a3 * bk[j];
            }
        }
        for (int r = 0; r < RB; r++) memcpy(c + (size_t)(i0 + r) * N + j0, acc[r], sizeof acc[r]);
        return;
    }
    for (int r = 0; r < nr; r++) {
        float *cr = c + (size_t)(i0 + r) * N + j0;
        for (int k = k0; k < k1; k++) {
            float aik = a_at(a, M, K, i0 + r, k, trans_a);
            const float *bk = b + (size_t)k * N + j0;
            for (int j = 0; j < jn; j++) cr[j] += aik * bk[j];
        }
    }
}

static void rows_axpy(float *c, const float *a, const float *b, int M, int N, int K, int accumulate, int trans_a) {
    if (!accumulate) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < M; i++) memset(c + (size_t)i * N, 0, (size_t)N * sizeof *c);
    }
    for (int k0 = 0; k0 < K; k0 += AXPY_KB) {
        int k1 = k0 + AXPY_KB < K ? k0 + AXPY_KB : K;
#pragma omp parallel for schedule(static)
        for (int i0 = 0; i0 < M; i0 += RB) {
            int nr = M - i0 < RB ? M - i0 : RB;
            for (int j0 = 0; j0 < N; j0 += AXPY_JB)
                axpy_tile(c, a, b, M, N, K, i0, nr, j0, N - j0 < AXPY_JB ? N - j0 : AXPY_JB, k0, k1, trans_a);
        }
    }
}

void ref_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
    rows_axpy(c, a, b, M, N, K, accumulate, 0);
}

void ref_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
    rows_axpy(c, a, b, M, N, K, accumulate, 1);
}

// ---------------------------------------------------------------------------------------------
// bf16 operands (kernels.h, "Matmul precision"): round copies of both operands, then the fp32
// products above. A product of two bf16 values has at most 16 significant bits, so it is exact
// in fp32; the result differs from the AVX512_BF16 kernels only by summation order.
// ---------------------------------------------------------------------------------------------

// Round to the nearest bf16, ties to even, as vcvtneps2bf16 (NaN stays NaN, kept quiet).
float ref_round_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) u |= 0x00400000u;
    else u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float *bf16_copy(const float *x, size_t n) {
    float *y = xmalloc(n * sizeof *y + 1);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] = ref_round_bf16(x[i]);
    return y;
}

typedef void (*MatmulFn)(float *, const float *, const float *, int, int, int, int);

static void bf16_matmul(MatmulFn f, float *c, const float *a, const float *b, int M, int N, int K, size_t na,
                        size_t nb, int accumulate) {
    float *ar = bf16_copy(a, na), *br = bf16_copy(b, nb);
    f(c, ar, br, M, N, K, accumulate);
    free(ar);
    free(br);
}

void ref_bf16_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
    bf16_matmul(ref_matmul_nt, c, a, b, M, N, K, (size_t)M * K, (size_t)N * K, accumulate);
}

void ref_bf16_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
    bf16_matmul(ref_matmul_nn, c, a, b, M, N, K, (size_t)M * K, (size_t)K * N, accumulate);
}

void ref_bf16_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate) {
    bf16_matmul(ref_matmul_tn, c, a, b, M, N, K, (size_t)K * M, (size_t)K * N, accumulate);
}
