// kernels/rows/avx2_ops.c — AVX2 + FMA embedding gradient, RMSNorm, RoPE and ReLU² (contracts in
// ops.h): row_kernels.inc on 8 lanes, the AVX-512 ops' bits exactly.
#include <math.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/vec_avx2.h"
#include "kernels/rows/row_ops.h"

#include "kernels/rows/row_kernels.inc"
