// kernels/gemm/amx_matmul.h — bf16 matrix products on AMX tiles, and the same code on an emulator.
//
// What AMX is: eight tile registers of up to 16 rows x 64 bytes, loaded from and stored to memory
// with a row stride, and TDPBF16PS, which multiplies a 16 x 32 bf16 tile of A by a 32 x 16 bf16
// tile of B (stored as 16 rows of 16 k pairs, the pair layout vdpbf16ps also reads) into a
// 16 x 16 fp32 tile of C: 16,384 FLOPs per instruction, 16x a vdpbf16ps.
//
// The products: gemm_driver.c's blocking and threading around a 32 x 32 micro-tile held in four
// C tiles, fed by two A tiles (rows 0-15, 16-31) and two B tiles (columns 0-15, 16-31) per 32-deep
// step — 4 TDPBF16PS per 4 tile loads. Packed A is 32-deep blocks of 32 rows of 32 bf16 (a tile's
// rows are k-contiguous); packed B is the AVX512_BF16 impl's pair layout (NR = 32), whose two
// column halves are tiles of row stride 128 bytes. Depth is zero-padded to a multiple of 32.
// Edge tiles (fewer than 32 rows or columns) go through a 32 x 32 scratch tile in the stack.
// Operands already in bf16 need no conversion: bf16 rows (the fused head's dlogits strips, the
// attention's P and dS in the nn products) are a tile's rows as they lie and are loaded in
// place; row pairs (head_dw's dlogits) and the tn products' bf16 columns are transposed once per
// strip into the packed layout.
//
// Every bf16 product runs here: the three matmuls, the ReLU² linear layers (and so Muon's Polar
// Express), the fused head (head_ce, head_dw: head/amx_head.c, head.c's strips and loss around
// these GEMMs) and attention (attention/amx_attention.c, attention_bf16.c's query blocks around
// them), which take the GemmImpl from amx_gemm_impl / amx_emu_gemm_impl.
//
// Numbers: operands rounded to bf16 (nearest even, as vcvtneps2bf16), fp32 accumulation. Per
// Intel's pseudo-code, TDPBF16PS adds to each C element the products of one k pair, element 2k
// then 2k+1, for k in ascending order, denormal inputs as zero and denormal results flushed; each
// bf16 x bf16 product is exact in fp32. So each element is a fixed ascending-k chain whatever the
// blocking and thread count (C passes through memory unchanged between depth blocks): the same
// bits at every thread count. Against the float64 product of the rounded operands the error is
// fp32 accumulation's (the lab's bf16 tables' tolerance).
//
// Two builds of the same driver-facing code (amx_matmul.c includes amx_tile_kernel.h twice):
//   amx_*      the tile instructions; needs cpu_info()->amx_tile, amx_bf16 and amx_permitted
//              (kernels_variant_available(KV_AMX)), and AVX512_BF16 for the packing.
//   amx_emu_*  every tile instruction replaced by a C function that follows Intel's pseudo-code
//              (tile registers in thread-local memory): the blocking, packing, tile addressing,
//              edge handling and padding checked on any CPU with AVX512_BF16 (for the packing),
//              ~1000x slower. The lab checks it where AMX is absent (`frontier kernels check`,
//              table "amx_emu"); where AMX is present it checks the real one ("amx_bf16").
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm/gemm_driver.h"

void amx_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void amx_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void amx_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void amx_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void amx_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N, int K);

// The GemmImpl of the tiles, for the fused head and attention (head.h, attention_bf16.h).
const GemmImpl *amx_gemm_impl(void);

void amx_emu_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void amx_emu_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void amx_emu_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void amx_emu_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void amx_emu_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                              int K);
const GemmImpl *amx_emu_gemm_impl(void);

// The emulator's TDPBF16PS on one element, for its unit test: c + a0·b0 + a1·b1 as the pseudo-code
// orders and rounds it (bf16 bit patterns in, DAZ inputs, FTZ after each add).
float amx_emu_dot_pair(float c, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1);
