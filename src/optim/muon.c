// optim/muon.c — Muon: Nesterov momentum, Polar Express / Newton–Schulz orthogonalisation,
// NorMuon, MuonEq, Muon+ and cautious weight decay (see optim.h for the math).
//
// Reductions (norms, row and column statistics) are summed in double, each row or column block by
// one thread in a fixed order, then combined serially: the result does not depend on the thread
// count. Matrix products go through the table it is given (kernels_for of the
// optimizer's precision), which promises the same.
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"
#include "optim/optim.h"

// Polar Express (num_iters 5, safety 2e-2, cushion 2; arXiv 2505.16932), as nanochat uses them.
static const double POLAR_EXPRESS[5][3] = {
    {8.156554524902461, -22.48329292557795, 15.878769915207462},
    {4.042929935166739, -2.808917465908714, 0.5000178451051316},
    {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
    {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
    {2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
};
// The classic Newton–Schulz quintic (Keller Jordan's Muon; nanochat before Polar Express).
static const double NEWTON_SCHULZ[3] = {3.4445, -4.7750, 2.0315};

static int imin(int a, int b) { return a < b ? a : b; }

size_t muon_scratch_floats(int rows, int cols) {
    size_t k = (size_t)imin(rows, cols);
    return 2 * (size_t)rows * (size_t)cols + 2 * k * k;
}

// rowsq[i] = Σ_j x[i][j]² (double); returns Σ_i rowsq[i] summed in row order.
static double row_sumsq(const float *x, int rows, int cols, double *rowsq) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * cols;
        double s = 0.0;
        for (int j = 0; j < cols; j++) s += (double)xi[j] * xi[j];
        rowsq[i] = s;
    }
    double t = 0.0;
    for (int i = 0; i < rows; i++) t += rowsq[i];
    return t;
}

// colsq[j] = Σ_i x[i][j]² (double), each block of columns summed over rows in order by one thread.
static void col_sumsq(const float *x, int rows, int cols, double *colsq) {
    enum { BLOCK = 64 };
    int nblocks = (cols + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static)
    for (int b = 0; b < nblocks; b++) {
        int j0 = b * BLOCK, j1 = imin(cols, j0 + BLOCK);
        for (int j = j0; j < j1; j++) colsq[j] = 0.0;
        for (int i = 0; i < rows; i++) {
            const float *xi = x + (size_t)i * cols;
            for (int j = j0; j < j1; j++) colsq[j] += (double)xi[j] * xi[j];
        }
    }
}

static void scale_all(float *x, size_t n, float s) {
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

void muon_orthogonalize(const Kernels *K, float *x, int rows, int cols, OrthoMethod method, int steps, float *scratch,
                        double *dscratch) {
    const size_t n = (size_t)rows * (size_t)cols;
    const int tall = rows > cols, k = tall ? cols : rows;
    float *A = scratch, *B = A + (size_t)k * k, *Y = B + (size_t)k * k;  // (k,k) (k,k) (rows,cols)

    double norm = sqrt(row_sumsq(x, rows, cols, dscratch));
    double denom = method == ORTHO_POLAR_EXPRESS ? norm * 1.01 + 1e-6 : norm + 1e-7;
    scale_all(x, n, (float)(1.0 / denom));

    for (int s = 0; s < steps; s++) {
        const double *co = method == ORTHO_POLAR_EXPRESS ? POLAR_EXPRESS[s] : NEWTON_SCHULZ;
        const float a = (float)co[0], b = (float)co[1], c = (float)co[2];
        if (tall)
            K->matmul_tn(A, x, x, k, k, rows, 0);  // A (cols,cols) = Xᵀ X
        else
            K->matmul_nt(A, x, x, k, k, cols, 0);  // A (rows,rows) = X Xᵀ
        // A·A as A·Aᵀ (A is symmetric, bit for bit): the GEMMs then compute only its upper
        // triangle and mirror it — the same products in the same order as matmul_nn, half the work
        K->matmul_nt(B, A, A, k, k, k, 0);
        float *restrict Bv = B;
        const float *restrict Av = A;
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < (size_t)k * k; i++) Bv[i] = MULADD(b, Av[i], c * Bv[i]);
        if (tall)
            K->matmul_nn(Y, x, B, rows, cols, cols, 0);  // X·B
        else
            K->matmul_nn(Y, B, x, rows, cols, rows, 0);  // B·X
        float *restrict xv = x;
        const float *restrict Yv = Y;
#pragma omp parallel for simd schedule(static)
        for (size_t i = 0; i < n; i++) xv[i] = MULADD(a, xv[i], Yv[i]);
    }
}

// MuonEq: every row rescaled to the mean row norm ||X||_F / sqrt(rows).
static void row_equilibrate(float *x, int rows, int cols, double *dscratch) {
    double target = sqrt(row_sumsq(x, rows, cols, dscratch)) / sqrt((double)rows);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        double rn = sqrt(dscratch[i]);
        float f = (float)(target / (rn > 1e-6 ? rn : 1e-6));
        float *xi = x + (size_t)i * cols;
        for (int j = 0; j < cols; j++) xi[j] *= f;
    }
}

// NorMuon: per-row (rows >= cols) or per-column second-moment normalisation with the Frobenius
// norm kept. nv: (rows) or (cols) running average; dscratch: 2·max(rows, cols) doubles.
static void normuon(float *x, float *nv, int rows, int cols, float beta2, double *dscratch) {
    const int per_row = rows >= cols, nstat = per_row ? rows : cols, red = per_row ? cols : rows;
    double *vm = dscratch, *f = dscratch + nstat;
    if (per_row)
        row_sumsq(x, rows, cols, vm);
    else
        col_sumsq(x, rows, cols, vm);
    double sum_vm = 0.0, sum_new = 0.0;
    for (int i = 0; i < nstat; i++) {
        vm[i] /= red;  // mean of X² over the reduced dimension
        nv[i] = beta2 * nv[i] + (1.0f - beta2) * (float)vm[i];
        double s2 = nv[i] > 1e-10f ? (double)nv[i] : 1e-10;
        f[i] = 1.0 / sqrt(s2);
        sum_vm += vm[i];
        sum_new += vm[i] * red * f[i] * f[i];
    }
    double v_norm = sqrt(sum_vm * red), v_norm_new = sqrt(sum_new);
    double ratio = v_norm / (v_norm_new > 1e-10 ? v_norm_new : 1e-10);
    for (int i = 0; i < nstat; i++) f[i] *= ratio;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        float *xi = x + (size_t)i * cols;
        if (per_row) {
            float fi = (float)f[i];
            for (int j = 0; j < cols; j++) xi[j] *= fi;
        } else {
            for (int j = 0; j < cols; j++) xi[j] *= (float)f[j];
        }
    }
}

void muon_update(const Kernels *K, const OptimConfig *cfg, float *restrict w, const float *restrict g, float *restrict buf, float *nv,
                 int rows, int cols, float lr, float momentum, float wd, float *restrict scratch, double *dscratch) {
    const size_t n = (size_t)rows * (size_t)cols;
    float *restrict x = scratch;  // (rows, cols) the update direction
    const float mom = momentum, one_m = 1.0f - momentum;

    // Nesterov momentum
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float b = MULADD(mom, buf[i], one_m * g[i]);
        buf[i] = b;
        x[i] = MULADD(mom, b, one_m * g[i]);
    }

    if (cfg->muon_eq) row_equilibrate(x, rows, cols, dscratch);
    muon_orthogonalize(K, x, rows, cols, cfg->ortho, cfg->ns_steps, scratch + n, dscratch);
    if (cfg->muon_plus) {
        double norm = sqrt(row_sumsq(x, rows, cols, dscratch));
        scale_all(x, n, (float)(sqrt((double)imin(rows, cols)) / (norm > 1e-6 ? norm : 1e-6)));
    }
    if (cfg->normuon) normuon(x, nv, rows, cols, cfg->normuon_beta2, dscratch);

    // W -= lr_eff·X + lr_eff·wd·W·mask, both from the pre-update W
    const float lr_eff = (float)(lr * sqrt(rows > cols ? (double)rows / cols : 1.0));
    const float lwd = lr_eff * wd;
    const int cautious = cfg->cautious_wd;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float d = lr_eff * x[i];
        const int decay = !cautious || x[i] * w[i] >= 0.0f;
        w[i] = decay ? w[i] - MULADD(lwd, w[i], d) : w[i] - d;
    }
}
