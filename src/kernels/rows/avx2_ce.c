// kernels/rows/avx2_ce.c — the softcapped cross-entropy on AVX2 + FMA (avx2_ops.h):
// ce_kernels.inc on 8 lanes, for CPUs without AVX-512.
//
// Before it, the AVX2 table took the reference's loss: scalar tanhf, expf and expm1f were ~70%
// of the AVX2 fused head's samples (perf, `frontier kernels bench --op head_ce --variant avx2`)
// and the head more than half of an AVX2 training step (what this kernel is worth: docs/perf.md,
// "Moved from code comments").
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/vec_avx2.h"

#include "kernels/rows/ce_kernels.inc"
