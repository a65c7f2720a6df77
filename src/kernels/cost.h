// kernels/cost.h — analytic FLOPs and bytes of every kernel op, for the profiler's rates and
// roofline. Counts: a multiply-add is 2 FLOPs; exp/tanh/sqrt/division count 1 each. Bytes: fp32
// tensors read plus written once (a lower bound: what an ideal kernel must move), int32 indices.
#pragma once
#include <stddef.h>

typedef struct {
    double flops, bytes;
} OpCost;

OpCost cost_matmul(int M, int N, int K, int accumulate);  // any layout (nt, nn, tn)
OpCost cost_matmul_symmetric(int M, int K);  // nt/tn with a == b, M == N, no accumulation
OpCost cost_embedding_fwd(int N, int C);
OpCost cost_embedding_bwd(int N, int C);
OpCost cost_rmsnorm_fwd(int N, int C);
OpCost cost_rmsnorm_bwd(int N, int C, int accumulate);
OpCost cost_rope(int B, int T, int nh, int D);  // forward or backward
OpCost cost_rope_rmsnorm_fwd(int B, int T, int nh, int D);
OpCost cost_rope_rmsnorm_bwd(int B, int T, int nh, int D);
OpCost cost_attention_fwd(int B, int T, int H, int Hkv, int D, int window);
OpCost cost_attention_bwd(int B, int T, int H, int Hkv, int D, int window);
OpCost cost_relu2_fwd(size_t n);
OpCost cost_relu2_bwd(size_t n);
OpCost cost_dropout(size_t n, int accumulate);
OpCost cost_relu2_linear_fwd(int M, int N, int K, int accumulate);
OpCost cost_relu2_linear_bwd(int M, int N, int K);
OpCost cost_softcap_ce(int N, int V, int with_grad);
OpCost cost_head_ce(int N, int V, int C, int with_grad, int with_dx);
OpCost cost_head_dw(int N, int V, int C);
