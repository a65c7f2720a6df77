// kernels/rows/avx2_ops.h — AVX2 + FMA ops beyond the matmuls (simd_matmul.h), for CPUs without
// AVX-512: the AVX2 table's embedding gradient, RMSNorm, RoPE and ReLU², its softcapped
// cross-entropy, the fused head's epilogue and flash attention. Each is compiled for AVX2 + FMA whatever the build's -march; the caller (the kernel
// registry, head.c) checks cpu_info() first.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Kernels.embedding_bwd, rmsnorm_fwd/bwd, rope_fwd/bwd, rope_rmsnorm_fwd/bwd and relu2_fwd/bwd
// (ops.h) on 8 lanes (avx2_ops.c): the AVX-512 ops' (avx512_ops.h) bits exactly, their row
// sums grouped the same way; results do not depend on the thread count.
void avx2_embedding_bwd(float *dwte, const float *dout, const int32_t *idx, int N, int C);
void avx2_rmsnorm_fwd(float *out, float *rstd, const float *x, int N, int C);
void avx2_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int accumulate);
void avx2_rope_fwd(float *x, const float *cos, const float *sin, int B, int T, int nh, int D);
void avx2_rope_bwd(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D);
void avx2_rope_rmsnorm_fwd(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T, int nh,
                           int D);
void avx2_rope_rmsnorm_bwd(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                           const float *sin, int B, int T, int nh, int D);
void avx2_relu2_fwd(float *out, const float *x, size_t n);
void avx2_relu2_bwd(float *dx, const float *dout, const float *x, size_t n);
void avx2_dropout(float *out, const float *x, size_t n, float p, uint32_t key, uint32_t i0, int accumulate);

// Kernels.softcap_ce (ops.h) on 8 lanes (avx2_ce.c): every element's capping and exp as
// avx512_softcap_ce computes them; the row sums grouped over 8 lanes, so loss and gradients can
// differ from AVX-512's in the last bits. Results do not depend on the thread count.
void avx2_softcap_ce(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                     float cap, float dscale);
// The same on the calling thread only, on rows the caller no longer needs (logits row n at
// logits + n·ldz, ldz >= V, overwritten: with dlogits, by the fp32 gradient row), with scratch
// for V floats: the AVX2 fused head's epilogue on a strip of rows in cache. The same bits as
// avx2_softcap_ce. dlogits rows 32-byte aligned (V a multiple of 8) go out with non-temporal
// stores, fenced before it returns.
void avx2_softcap_ce_inplace(float *losses, float *dlogits, float *logits, size_t ldz, const int32_t *targets, int N,
                             int V, float cap, float dscale, float *scratch);

// Kernels.attention_fwd/bwd (ops.h) on 8-lane vectors (avx2_attention.c): flash_attention.c's
// tiles and sums, so results do not depend on the thread count; head dims not a multiple of 8 go
// to the reference.
void avx2_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                        int Hkv, int D, int window);
void avx2_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                        const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                        int window);
