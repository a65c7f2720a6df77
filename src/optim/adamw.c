// optim/adamw.c — AdamW with decoupled weight decay applied first (see optim.h).
//
// Purely element-wise, so any thread split gives the same bits. The bias corrections are
// computed in double and rounded once to fp32, as nanochat passes them in as fp32 scalars.
#include <math.h>

#include "optim/optim.h"

void adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1, float beta2,
                  float eps, float wd, long long t) {
    const float step_size = (float)(lr / (1.0 - pow(beta1, (double)t)));  // lr / (1 - b1^t)
    const float bias2 = (float)(1.0 - pow(beta2, (double)t));             // 1 - b2^t
    const float decay = 1.0f - lr * wd;
    const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i];
        float pi = p[i] * decay;
        const float mi = beta1 * m[i] + one_b1 * gi;
        const float vi = beta2 * v[i] + one_b2 * gi * gi;
        const float denom = sqrtf(vi / bias2) + eps;
        pi -= step_size * (mi / denom);
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
    }
}
