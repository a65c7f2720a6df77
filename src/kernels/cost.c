// kernels/cost.c — analytic op costs (see cost.h).
#include "kernels/cost.h"

#define F 4.0  // bytes per fp32 / int32

OpCost cost_matmul(int M, int N, int K, int accumulate) {
    double m = M, n = N, k = K;
    return (OpCost){2 * m * n * k, F * (m * k + n * k + m * n * (accumulate ? 2 : 1))};
}

// X·Xᵀ or XᵀX (one operand, no accumulation): the GEMMs compute the upper triangle and the
// diagonal (M(M+1)/2 elements) and mirror the rest; X read once, C written
OpCost cost_matmul_symmetric(int M, int K) {
    double m = M, k = K;
    return (OpCost){m * (m + 1) * k, F * (m * k + m * m)};
}

// gather: read one row of C per position (+ the index), write it
OpCost cost_embedding_fwd(int N, int C) { return (OpCost){0, F * ((double)N + 2.0 * N * C)}; }
// scatter-add: read dout and the destination row, write it back
OpCost cost_embedding_bwd(int N, int C) { return (OpCost){(double)N * C, F * ((double)N + 3.0 * N * C)}; }

// sum of squares (2/elem), rsqrt per row, scale (1/elem); read x, write out and rstd
OpCost cost_rmsnorm_fwd(int N, int C) { return (OpCost){3.0 * N * C + N, F * (2.0 * N * C + N)}; }
// dot(dout, x·r) (3/elem), dx = r·(g - x·r·m) (4/elem); read x, dout, rstd (+dx), write dx
OpCost cost_rmsnorm_bwd(int N, int C, int accumulate) {
    return (OpCost){7.0 * N * C, F * ((3.0 + (accumulate ? 1 : 0)) * N * C + N)};
}

// per rotated pair: 4 multiplies + 2 adds; read and write x (the tables stay in cache)
OpCost cost_rope(int B, int T, int nh, int D) {
    double pairs = (double)B * T * nh * D / 2;
    return (OpCost){6 * pairs, F * 4 * pairs};
}

// the two ops' FLOPs; memory once: read x, write x, out and rstd (forward); read dout, x and
// rstd, write dx (backward)
OpCost cost_rope_rmsnorm_fwd(int B, int T, int nh, int D) {
    int N = B * T * nh;
    return (OpCost){cost_rope(B, T, nh, D).flops + cost_rmsnorm_fwd(N, D).flops, F * (3.0 * N * D + N)};
}
OpCost cost_rope_rmsnorm_bwd(int B, int T, int nh, int D) {
    int N = B * T * nh;
    return (OpCost){cost_rope(B, T, nh, D).flops + cost_rmsnorm_bwd(N, D, 0).flops, F * (3.0 * N * D + N)};
}

// (query, key) pairs a head sees: s <= t, and with a window s >= t - window (window + 1 keys at
// most per query).
static double causal_pairs(int B, int T, int H, int window) {
    double per_seq = (double)T * (T + 1) / 2;
    if (window > 0 && window + 1 < T) per_seq = (double)(window + 1) * (window + 2) / 2 + (double)(T - window - 1) * (window + 1);
    return (double)B * H * per_seq;
}

// per (query, key) pair seen: q·k (2D) and p·v (2D), + exp; read q, k, v, write out, lse
OpCost cost_attention_fwd(int B, int T, int H, int Hkv, int D, int window) {
    double p = causal_pairs(B, T, H, window), bt = (double)B * T;
    return (OpCost){p * (4.0 * D + 1), F * (bt * D * (2.0 * H + 2.0 * Hkv) + (double)B * H * T)};
}

// per pair: recompute q·k (2D) and exp, dout·v (2D), dv += p·dout (2D), dq += ds·k (2D),
// dk += ds·q (2D); read q, k, v, out, dout, lse, write dq, dk, dv
OpCost cost_attention_bwd(int B, int T, int H, int Hkv, int D, int window) {
    double p = causal_pairs(B, T, H, window), bt = (double)B * T;
    return (OpCost){p * (10.0 * D + 4), F * (bt * D * (4.0 * H + 4.0 * Hkv) + (double)B * H * T)};
}

OpCost cost_relu2_fwd(size_t n) { return (OpCost){2.0 * (double)n, F * 2.0 * (double)n}; }
OpCost cost_relu2_bwd(size_t n) { return (OpCost){3.0 * (double)n, F * 3.0 * (double)n}; }
// one multiply (and an add when accumulating) per element; the mask's ~10 integer operations are
// not FLOPs. Read x (and out), write out.
OpCost cost_dropout(size_t n, int accumulate) {
    return (OpCost){(accumulate ? 2.0 : 1.0) * (double)n, F * (accumulate ? 3.0 : 2.0) * (double)n};
}

// ReLU² fused into the product: its FLOPs plus the product's; memory as the product's with fc in
// place of act (act never stored). bwd: the tn and nn products, fc read by both, ReLU²'s
// forward again (2/elem) and backward (3/elem).
OpCost cost_relu2_linear_fwd(int M, int N, int K, int accumulate) {
    OpCost mm = cost_matmul(M, N, K, accumulate);
    return (OpCost){mm.flops + 2.0 * M * K, mm.bytes};
}
OpCost cost_relu2_linear_bwd(int M, int N, int K) {
    OpCost tn = cost_matmul(N, K, M, 1), nn = cost_matmul(M, K, N, 0);
    return (OpCost){tn.flops + nn.flops + 5.0 * M * K, tn.bytes + nn.bytes + F * (double)M * K};
}

// per logit: tanh (+2: scale in and out), exp (+1 subtract, +1 add to the sum); with the
// gradient: exp again, subtract, the tanh slope (3), scale. Read the logits (+write dlogits).
OpCost cost_softcap_ce(int N, int V, int with_grad) {
    double nv = (double)N * V;
    return (OpCost){nv * (6.0 + (with_grad ? 7.0 : 0.0)), F * (nv * (with_grad ? 2.0 : 1.0) + 2.0 * N)};
}

// the products' FLOPs and the loss's; memory: read x and w, write dlogits and dx (the logits
// stay in cache), plus the losses and targets
OpCost cost_head_ce(int N, int V, int C, int with_grad, int with_dx) {
    double nv = (double)N * V, nc = (double)N * C;
    OpCost mm = cost_matmul(N, V, C, 0), ce = cost_softcap_ce(N, V, with_grad);
    double dx = with_grad && with_dx ? cost_matmul(N, C, V, 0).flops : 0.0;
    return (OpCost){mm.flops + ce.flops + dx,
                    F * (nc + (double)V * C + (with_grad ? nv : 0.0) + (dx > 0 ? nc : 0.0) + 2.0 * N)};
}

// the product's FLOPs; memory: read dlogits (counted in fp32; bf16 tables read half) and x,
// read and write dw
OpCost cost_head_dw(int N, int V, int C) {
    return (OpCost){cost_matmul(V, C, N, 1).flops, F * ((double)N * V + (double)N * C + 2.0 * (double)V * C)};
}
