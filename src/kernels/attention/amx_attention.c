// kernels/attention/amx_attention.c — causal attention with bf16 products on AMX tiles
// (attention_bf16.h): attention_bf16.c's query blocks around AMX's GemmImpl (gemm/amx_matmul.h),
// on the tile instructions (amx_*) or on their emulator (amx_emu_*).
#include "kernels/attention/attention_bf16.h"
#include "kernels/gemm/amx_matmul.h"

void amx_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                       int Hkv, int D, int window) {
    bf16_attention_fwd_with(amx_gemm_impl(), out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void amx_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                       const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D, int window) {
    bf16_attention_bwd_with(amx_gemm_impl(), dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void amx_emu_attention_fwd(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                           int Hkv, int D, int window) {
    bf16_attention_fwd_with(amx_emu_gemm_impl(), out, lse, q, k, v, B, T, H, Hkv, D, window);
}

void amx_emu_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                           const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                           int window) {
    bf16_attention_bwd_with(amx_emu_gemm_impl(), dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, window);
}
