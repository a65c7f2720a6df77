// kernels/simd/vmath_consts.h — the constants of the vector exp and tanh (internal header), shared
// by avx512_vmath.h and avx2_vmath.h so that both compute the same function bit for bit.
// Cephes' single-precision algorithms: exp by Cody–Waite reduction x = n·ln2 + r (ln2 split
// into a part exact in float and the rest) and a degree-6 polynomial in r; tanh by an odd
// polynomial x + x³·P(x²) below 0.625 and 1 - 2/(exp(2|x|) + 1) above.
#pragma once

#define VM_LOG2E 1.44269504088896341f
#define VM_LN2_HI 0.693359375f
#define VM_LN2_LO (-2.12194440e-4f)
#define VM_EXP_P0 1.9875691500e-4f  // the polynomial's coefficients, highest degree first
#define VM_EXP_P1 1.3981999507e-3f
#define VM_EXP_P2 8.3334519073e-3f
#define VM_EXP_P3 4.1665795894e-2f
#define VM_EXP_P4 1.6666665459e-1f
#define VM_EXP_P5 5.0000001201e-1f
#define VM_EXP_MIN (-104.0f)  // exp clamps its argument here: below it the result is 0
#define VM_TANH_P0 (-5.70498872745e-3f)  // P(x²), highest degree first
#define VM_TANH_P1 2.06390887954e-2f
#define VM_TANH_P2 (-5.37397155531e-2f)
#define VM_TANH_P3 1.33314422036e-1f
#define VM_TANH_P4 (-3.33332819422e-1f)
#define VM_TANH_SMALL 0.625f  // |x| below: the polynomial; above: the exp form
#define VM_TANH_CLAMP2 19.0f  // 2|x| clamped here in the exp form (tanh is 1.0f from 9.01 on)
