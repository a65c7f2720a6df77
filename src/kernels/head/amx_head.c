// kernels/head/amx_head.c — the fused head on AMX tiles (head.h): head.c's bf16 head (its strips,
// the AVX-512 loss on each, the row-pair dlogits) around AMX's GemmImpl (gemm/amx_matmul.h), on
// the tile instructions (amx_*) or on their emulator (amx_emu_*).
#include "kernels/gemm/amx_matmul.h"
#include "kernels/head/head.h"

void amx_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets, int N,
                 int V, int C, float cap, float dscale) {
    bf16_head_ce_with(amx_gemm_impl(), losses, dlogits, dx, x, w, targets, N, V, C, cap, dscale);
}

void amx_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    bf16_head_dw_with(amx_gemm_impl(), dw, dlogits, x, N, V, C);
}

void amx_emu_head_ce(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                     int N, int V, int C, float cap, float dscale) {
    bf16_head_ce_with(amx_emu_gemm_impl(), losses, dlogits, dx, x, w, targets, N, V, C, cap, dscale);
}

void amx_emu_head_dw(float *dw, const void *dlogits, const float *x, int N, int V, int C) {
    bf16_head_dw_with(amx_emu_gemm_impl(), dw, dlogits, x, N, V, C);
}
