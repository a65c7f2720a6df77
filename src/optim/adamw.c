// optim/adamw.c — AdamW with decoupled weight decay applied first (see optim.h).
//
// Purely element-wise, so any thread split gives the same bits. The bias corrections are
// computed in double and rounded once to fp32, as nanochat passes them in as fp32 scalars.
#include <math.h>

#include "optim/optim.h"

void adamw_update(float *restrict p, const float *restrict g, float *restrict m, float *restrict v, size_t n,
                  float lr, float beta1, float beta2, float eps, float wd, long long t) {
    const float step_size = (float)(lr / (1.0 - pow(beta1, (double)t)));  // lr / (1 - b1^t)
    const float bias2 = (float)(1.0 - pow(beta2, (double)t));             // 1 - b2^t
    const float decay = 1.0f - lr * wd;
    const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
    // `simd`: at -O2 gcc leaves this loop scalar (and with errno alive, sqrtf too); the scalar
    // sqrt and division then cost ~5 ms per step on the cpu preset's 2.1M AdamW parameters.
    // The fused multiply-adds are written out, so that the vector body, its scalar tail and any
    // compiler contract the same way: same bits whatever the thread split (and as the scalar
    // loop gcc made before). Vector sqrt and division are correctly rounded like scalar ones.
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i];
        const float mi = MULADD(beta1, m[i], one_b1 * gi);
        const float vi = MULADD(beta2, v[i], one_b2 * gi * gi);
        const float denom = sqrtf(vi / bias2) + eps;
        const float pi = MULADD(-step_size, mi / denom, p[i] * decay);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
    }
}
