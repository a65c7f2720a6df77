// kernels/prof_kernels.c — the profiled kernel table: each op is wrapped in a profiler span
// carrying its analytic FLOPs and bytes (cost.h), then calls the same op of the table it wraps:
// one wrapper table per precision (kernels_for), so fp32 and bf16 users can be profiled side by
// side. kernels_set_profiling() switches them in and out.
#include "kernels/cost.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/kernels.h"
#include "profile/profile.h"

static const Kernels *inner[2];  // the tables being profiled, by KernelPrecision

#define WRAP(name, cost, call) WRAP_SHAPE(name, cost, 0, 0, 0, call)

// ...with the dims `frontier profile` groups the op's calls by (prof_shape): a GEMM's M, N, K; the
// head's rows, vocabulary and width; attention's sequences x heads, T and head dim.
#define WRAP_SHAPE(name, cost, d0, d1, d2, call) \
    do {                                        \
        OpCost c_ = cost;                       \
        prof_begin(name, "op", -1);             \
        prof_shape(d0, d1, d2);                 \
        call;                                   \
        prof_end(c_.flops, c_.bytes);           \
    } while (0)

// Symmetric products (Muon's X·Xᵀ) are costed by their upper triangle, which is all the fast
// GEMMs compute (gemm_driver.h), so their GFLOP/s and HFU are not doubled.
static OpCost matmul_cost(GemmLayout layout, const float *a, const float *b, int M, int N, int K, int acc) {
    return gemm_is_symmetric(layout, a, b, M, N, acc) ? cost_matmul_symmetric(M, K) : cost_matmul(M, N, K, acc);
}

#define PROF_(x) fp32_##x
#define PROF_INNER inner[KP_FP32]
#include "kernels/prof_kernels.inc"
#undef PROF_
#undef PROF_INNER
#define PROF_(x) bf16_##x
#define PROF_INNER inner[KP_BF16]
#include "kernels/prof_kernels.inc"

const Kernels *kernels_profiled(KernelPrecision p, const Kernels *base) {
    inner[p] = base;
    return p == KP_BF16 ? &bf16_table : &fp32_table;
}
