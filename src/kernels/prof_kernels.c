// kernels/prof_kernels.c — the profiled kernel table: each op is wrapped in a profiler span
// carrying its analytic FLOPs and bytes (cost.h), then calls the same op of the table that was
// active when profiling began. kernels_set_profiling() switches it in and out.
#include "kernels/cost.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/kernels.h"
#include "profile/profile.h"

static const Kernels *inner;  // the table being profiled

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

static void p_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    WRAP_SHAPE("matmul_nt", matmul_cost(GEMM_NT, a, b, M, N, K, acc), M, N, K,
               inner->matmul_nt(c, a, b, M, N, K, acc));
}
static void p_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    WRAP_SHAPE("matmul_nn", matmul_cost(GEMM_NN, a, b, M, N, K, acc), M, N, K,
               inner->matmul_nn(c, a, b, M, N, K, acc));
}
static void p_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int acc) {
    WRAP_SHAPE("matmul_tn", matmul_cost(GEMM_TN, a, b, M, N, K, acc), M, N, K,
               inner->matmul_tn(c, a, b, M, N, K, acc));
}
static void p_embedding_fwd(float *out, const int32_t *idx, const float *wte, int N, int C) {
    WRAP("embedding_fwd", cost_embedding_fwd(N, C), inner->embedding_fwd(out, idx, wte, N, C));
}
static void p_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C) {
    WRAP("embedding_bwd", cost_embedding_bwd(N, C), inner->embedding_bwd(dwte, dout, idx, N, C));
}
static void p_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C) {
    WRAP("rmsnorm_fwd", cost_rmsnorm_fwd(N, C), inner->rmsnorm_fwd(out, rstd, x, N, C));
}
static void p_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int acc) {
    WRAP("rmsnorm_bwd", cost_rmsnorm_bwd(N, C, acc), inner->rmsnorm_bwd(dx, dout, x, rstd, N, C, acc));
}
static void p_rope_fwd(float *x, const float *cs, const float *sn, int B, int T, int nh, int D) {
    WRAP("rope_fwd", cost_rope(B, T, nh, D), inner->rope_fwd(x, cs, sn, B, T, nh, D));
}
static void p_rope_bwd(float *dx, const float *cs, const float *sn, int B, int T, int nh, int D) {
    WRAP("rope_bwd", cost_rope(B, T, nh, D), inner->rope_bwd(dx, cs, sn, B, T, nh, D));
}
static void p_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cs, const float *sn, int B, int T,
                               int nh, int D) {
    WRAP("rope_rmsnorm_fwd", cost_rope_rmsnorm_fwd(B, T, nh, D),
         inner->rope_rmsnorm_fwd(out, rstd, x, cs, sn, B, T, nh, D));
}
static void p_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cs,
                               const float *sn, int B, int T, int nh, int D) {
    WRAP("rope_rmsnorm_bwd", cost_rope_rmsnorm_bwd(B, T, nh, D),
         inner->rope_rmsnorm_bwd(dx, dout, x, rstd, cs, sn, B, T, nh, D));
}
static void p_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T,
                            int H, int Hkv, int D, int window) {
    WRAP_SHAPE("attention_fwd", cost_attention_fwd(B, T, H, Hkv, D, window), B * H, T, D,
               inner->attention_fwd(out, lse, q, k, v, B, T, H, Hkv, D, window));
}
static void p_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                            const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                            int window) {
    WRAP_SHAPE("attention_bwd", cost_attention_bwd(B, T, H, Hkv, D, window), B * H, T, D,
               inner->attention_bwd(dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window));
}
static void p_relu2_fwd(float *out, const float *x, size_t n) {
    WRAP("relu2_fwd", cost_relu2_fwd(n), inner->relu2_fwd(out, x, n));
}
static void p_relu2_bwd(float *dx, const float *dout, const float *x, size_t n) {
    WRAP("relu2_bwd", cost_relu2_bwd(n), inner->relu2_bwd(dx, dout, x, n));
}
static void p_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int acc) {
    WRAP_SHAPE("relu2_linear_fwd", cost_relu2_linear_fwd(M, N, K, acc), M, N, K,
               inner->relu2_linear_fwd(c, fc, w, M, N, K, acc));
}
static void p_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                               int K) {
    WRAP_SHAPE("relu2_linear_bwd", cost_relu2_linear_bwd(M, N, K), M, N, K,
               inner->relu2_linear_bwd(dw, dfc, dc, w, fc, M, N, K));
}
static void p_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                         float cap, float dscale) {
    WRAP(dlogits ? "softcap_ce_grad" : "softcap_ce", cost_softcap_ce(N, V, dlogits != NULL),
         inner->softcap_ce(losses, dlogits, logits, targets, N, V, cap, dscale));
}

static void p_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                      int N, int V, int C, float cap, float dscale) {
    WRAP_SHAPE(!dlogits ? "head_ce" : dx ? "head_ce_dx" : "head_ce_grad",
               cost_head_ce(N, V, C, dlogits != NULL, dx != NULL), N, V, C,
               inner->head_ce(losses, dlogits, dx, x, w, targets, N, V, C, cap, dscale));
}

static void p_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    WRAP_SHAPE("head_dw", cost_head_dw(N, V, C), N, V, C, inner->head_dw(dw, dlogits, x, N, V, C));
}

static const Kernels KERNELS_PROF = {
    .name = "profiled",
    .matmul_nt = p_matmul_nt, .matmul_nn = p_matmul_nn, .matmul_tn = p_matmul_tn,
    .embedding_fwd = p_embedding_fwd, .embedding_bwd = p_embedding_bwd,
    .rmsnorm_fwd = p_rmsnorm_fwd, .rmsnorm_bwd = p_rmsnorm_bwd,
    .rope_fwd = p_rope_fwd, .rope_bwd = p_rope_bwd,
    .rope_rmsnorm_fwd = p_rope_rmsnorm_fwd, .rope_rmsnorm_bwd = p_rope_rmsnorm_bwd,
    .attention_fwd = p_attention_fwd, .attention_bwd = p_attention_bwd,
    .relu2_fwd = p_relu2_fwd, .relu2_bwd = p_relu2_bwd,
    .relu2_linear_fwd = p_relu2_linear_fwd, .relu2_linear_bwd = p_relu2_linear_bwd,
    .softcap_ce = p_softcap_ce, .head_ce = p_head_ce, .head_dw = p_head_dw,
};

const Kernels *kernels_profiled(const Kernels *base) {
    inner = base;
    return &KERNELS_PROF;
}
