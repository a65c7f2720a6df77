// planner/scaling.c — the loss law with repetition: variable-projection fit and bootstrap.
#include "planner/scaling.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/mem.h"
#include "util/rng.h"

double scaling_effective_data(double D, double U, double rstar) {
    if (!(U > 0) || D <= U) return D;
    double R = D / U - 1;
    return U + U * rstar * (1 - exp(-R / rstar));
}

int scaling_in_domain(double P, double D, double U) {
    return !(U > 0) || D <= 1.05 * U || U >= SCALING_MIN_UNIQUE_PER_PARAM * P;
}

int scaling_split_domain(ScalingPoint *p, int n) {
    ScalingPoint *out = xmalloc(sizeof *p * (size_t)(n > 0 ? n : 1));
    int k = 0, m = 0;
    for (int i = 0; i < n; i++) {
        if (scaling_in_domain(p[i].P > 0 ? p[i].P : p[i].N, p[i].D, p[i].U)) p[k++] = p[i];
        else out[m++] = p[i];
    }
    memcpy(p + k, out, sizeof *p * (size_t)m);
    free(out);
    return m;
}

double scaling_eval(const ScalingLaw *l, double N, double D, double U) {
    return l->E + l->A * pow(N, -l->alpha) + l->B * pow(scaling_effective_data(D, U, l->rstar), -l->beta);
}

double scaling_effective_mix(double D, const ScalingData *d, double rstar) {
    double eff = 0;
    for (int s = 0; s < d->n; s++)
        if (d->w[s] > 0) eff += (1 - d->discount[s]) * scaling_effective_data(d->w[s] * D, d->U[s], rstar);
    return fmax(eff, 1);  // a harmful source can take D' to 0: the law's D'^-beta needs a token
}

double scaling_eval_mix(const ScalingLaw *l, double N, double D, const ScalingData *d) {
    return l->E + l->A * pow(N, -l->alpha) + l->B * pow(scaling_effective_mix(D, d, l->rstar), -l->beta);
}

// Least squares of L on the columns of `mask` (bit 0: 1, bit 1: N^-alpha, bit 2: D'^-beta) from the
// weighted normal equations G c = g of all three (yy = sum of w y^2); the others are 0. Returns the
// weighted sum of squared residuals, or INFINITY when the solution is singular or has a negative
// coefficient.
static double solve_subset(const double G[3][3], const double g[3], double yy, int mask, double c[3]) {
    int idx[3], k = 0;
    for (int j = 0; j < 3; j++)
        if (mask >> j & 1) idx[k++] = j;
    double M[3][4];
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++) M[i][j] = G[idx[i]][idx[j]];
        M[i][k] = g[idx[i]];
    }
    for (int col = 0; col < k; col++) {
        int p = col;
        for (int i = col + 1; i < k; i++)
            if (fabs(M[i][col]) > fabs(M[p][col])) p = i;
        if (fabs(M[p][col]) < 1e-18 * (1 + fabs(G[0][0]))) return INFINITY;
        for (int j = 0; j <= k; j++) { double t = M[col][j]; M[col][j] = M[p][j]; M[p][j] = t; }
        for (int i = 0; i < k; i++) {
            if (i == col) continue;
            double f = M[i][col] / M[col][col];
            for (int j = col; j <= k; j++) M[i][j] -= f * M[col][j];
        }
    }
    double cc[3] = {0, 0, 0};
    for (int i = 0; i < k; i++) {
        cc[idx[i]] = M[i][k] / M[i][i];
        if (cc[idx[i]] < 0) return INFINITY;
    }
    double sse = yy;  // |y - Xc|^2 = y'y - 2 c'g + c'Gc
    for (int i = 0; i < 3; i++) {
        sse -= 2 * cc[i] * g[i];
        for (int j = 0; j < 3; j++) sse += cc[i] * G[i][j] * cc[j];
    }
    for (int i = 0; i < 3; i++) c[i] = (double)cc[i];
    return sse > 0 ? (double)sse : 0;
}

typedef struct {
    const ScalingPoint *p;
    const int *w;
    int n;
    double (*X)[3];  // (n) the columns 1, N^-alpha, D'^-beta at the point of the search
    double *y;       // (n) the losses
    double *logN, *logD;  // (n) ln N; ln D' at the current R*
} Problem;

// The best (E, A, B) >= 0 for the columns in pb->X: the feasible subset with the least residual.
static double project(Problem *pb, double c[3]) {
    double G[3][3] = {{0}}, g[3] = {0}, yy = 0;
    for (int r = 0; r < pb->n; r++) {
        if (!pb->w[r]) continue;
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) G[i][j] += (double)pb->w[r] * pb->X[r][i] * pb->X[r][j];
            g[i] += (double)pb->w[r] * pb->X[r][i] * pb->y[r];
        }
        yy += (double)pb->w[r] * pb->y[r] * pb->y[r];
    }
    double best = INFINITY;
    c[0] = c[1] = c[2] = 0;
    for (int mask = 1; mask < 8; mask++) {
        double t[3] = {0}, s = solve_subset((const double (*)[3])G, g, yy, mask, t);
        if (s < best) best = s, memcpy(c, t, sizeof t);
    }
    return best;
}

#define EXP_LO 0.02
#define EXP_HI 2.0
#define LOG_RSTAR_LO -1.5  // R* from e^-1.5 = 0.22 ...
#define LOG_RSTAR_HI 5.3   // ... to e^5.3 = 200 repetitions

// The grid search over (alpha, R*, beta), refined 7 times around the best point (halving the step); fit_rstar 0
// keeps the prior. Each column is computed once per value of the parameter it depends on.
static double fit_weighted(Problem *pb, int fit_rstar, ScalingLaw *out) {
    double best = INFINITY, ba = 0, bb = 0, br = log(SCALING_RSTAR_PRIOR), c[3] = {0};
    double step = 0.08, rstep = fit_rstar ? 0.4 : 1;
    double lo_a = EXP_LO, hi_a = EXP_HI, lo_b = EXP_LO, hi_b = EXP_HI;
    double lo_r = fit_rstar ? LOG_RSTAR_LO : br, hi_r = fit_rstar ? LOG_RSTAR_HI : br;
    for (int r = 0; r < pb->n; r++) pb->X[r][0] = 1, pb->y[r] = pb->p[r].L, pb->logN[r] = log(pb->p[r].N);
    for (int round = 0; round < 8; round++) {
        for (double a = lo_a; a <= hi_a + 1e-12; a += step) {
            for (int r = 0; r < pb->n; r++) pb->X[r][1] = exp(-a * pb->logN[r]);
            for (double lr = lo_r; lr <= hi_r + 1e-12; lr += rstep) {
                for (int r = 0; r < pb->n; r++)
                    pb->logD[r] = log(scaling_effective_data(pb->p[r].D, pb->p[r].U, exp(lr)));
                for (double b = lo_b; b <= hi_b + 1e-12; b += step) {
                    for (int r = 0; r < pb->n; r++) pb->X[r][2] = exp(-b * pb->logD[r]);
                    double t[3] = {0}, s = project(pb, t);
                    if (s < best) best = s, ba = a, bb = b, br = lr, memcpy(c, t, sizeof t);
                }
            }
        }
        lo_a = fmax(EXP_LO, ba - 2 * step), hi_a = fmin(EXP_HI, ba + 2 * step);
        lo_b = fmax(EXP_LO, bb - 2 * step), hi_b = fmin(EXP_HI, bb + 2 * step);
        if (fit_rstar) lo_r = fmax(LOG_RSTAR_LO, br - 2 * rstep), hi_r = fmin(LOG_RSTAR_HI, br + 2 * rstep), rstep /= 2;
        step /= 2;
    }
    *out = (ScalingLaw){c[0], c[1], ba, c[2], bb, fit_rstar ? exp(br) : SCALING_RSTAR_PRIOR};
    return best;
}

int scaling_fit(const ScalingPoint *p, int n, unsigned long long seed, ScalingFit *fit) {
    if (n < 6) return err_usage("scaling fit: %d points; the law has 6 parameters, so at least 6 runs are needed", n);
    int distinct_n = 0, distinct_d = 0, repeated = 0;
    for (int r = 0; r < n; r++) {
        if (!(p[r].N > 0 && p[r].D > 0 && p[r].U >= 0 && isfinite(p[r].L)))
            return err_usage("scaling fit: point %d has N %g, D %g, U %g, L %g (need N, D > 0, U >= 0 and a finite "
                             "loss)", r, p[r].N, p[r].D, p[r].U, p[r].L);
        int nn = 1, nd = 1;
        for (int q = 0; q < r; q++) nn &= fabs(p[q].N / p[r].N - 1) > 1e-6, nd &= fabs(p[q].D / p[r].D - 1) > 0.05;
        distinct_n += nn, distinct_d += nd;
        repeated += p[r].U > 0 && p[r].D > 1.05 * p[r].U;
    }
    if (distinct_n < 2 || distinct_d < 2)
        return err_usage("scaling fit: the points span %d model sizes and %d token counts; the law needs at least 2 of "
                         "each", distinct_n, distinct_d);
    memset(fit, 0, sizeof *fit);
    fit->rstar_fitted = repeated >= 2;
    int *w = malloc(sizeof(int) * (size_t)n);
    Problem pb = {p, w, n, malloc(sizeof(double[3]) * (size_t)n), malloc(sizeof(double) * (size_t)n),
                  malloc(sizeof(double) * (size_t)n), malloc(sizeof(double) * (size_t)n)};
    if (!w || !pb.X || !pb.y || !pb.logN || !pb.logD) {
        free(w), free(pb.X), free(pb.y), free(pb.logN), free(pb.logD);
        return err_set("scaling fit: out of memory");
    }
    for (int r = 0; r < n; r++) w[r] = 1;
    double sse = fit_weighted(&pb, fit->rstar_fitted, &fit->law);
    fit->n_points = n;
    fit->rms_resid = sqrt(sse / n);
    Rng rng;
    rng_seed(&rng, seed);
    for (int b = 0; b < SCALING_BOOT; b++) {
        memset(w, 0, sizeof(int) * (size_t)n);
        for (int r = 0; r < n; r++) w[rng_next(&rng) % (uint64_t)n]++;
        int used = 0;
        for (int r = 0; r < n; r++) used += w[r] > 0;
        if (used < 4) continue;
        ScalingLaw l;
        if (isfinite(fit_weighted(&pb, fit->rstar_fitted, &l))) fit->boot[fit->n_boot++] = l;
    }
    free(w), free(pb.X), free(pb.y), free(pb.logN), free(pb.logD);
    return 0;
}

void scaling_predict_mix(const ScalingFit *fit, double N, double D, const ScalingData *d, double *mean, double *sd) {
    *mean = scaling_eval_mix(&fit->law, N, D, d);
    if (fit->n_boot < 2) { *sd = NAN; return; }
    double s = 0, ss = 0;
    for (int b = 0; b < fit->n_boot; b++) {
        double v = scaling_eval_mix(&fit->boot[b], N, D, d);
        s += v, ss += v * v;
    }
    double m = s / fit->n_boot;
    *sd = sqrt(fmax(0, ss / fit->n_boot - m * m) * fit->n_boot / (fit->n_boot - 1));
}

void scaling_predict(const ScalingFit *fit, double N, double D, double U, double *mean, double *sd) {
    ScalingData one = {1, {1}, {U}, {0}, {0}};
    scaling_predict_mix(fit, N, D, &one, mean, sd);
}

static const char *const LAW_NAMES[6] = {"E", "A", "alpha", "B", "beta", "rstar"};

static cJSON *law_json(const ScalingLaw *l) {
    const double v[6] = {l->E, l->A, l->alpha, l->B, l->beta, l->rstar};
    cJSON *j = cJSON_CreateObject();
    for (int k = 0; k < 6; k++) cJSON_AddNumberToObject(j, LAW_NAMES[k], v[k]);
    return j;
}

static int law_from(const cJSON *j, const char *what, ScalingLaw *l) {
    double *dst[6] = {&l->E, &l->A, &l->alpha, &l->B, &l->beta, &l->rstar};
    for (int k = 0; k < 6; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, LAW_NAMES[k]);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
            return err_usage("%s: a law lacks the number '%s': fit again (frontier plan --fit)", what, LAW_NAMES[k]);
        *dst[k] = v->valuedouble;
    }
    return 0;
}

cJSON *scaling_fit_to_json(const ScalingFit *fit) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "law", law_json(&fit->law));
    cJSON_AddNumberToObject(j, "n_points", fit->n_points);
    cJSON_AddBoolToObject(j, "rstar_fitted", fit->rstar_fitted);
    cJSON_AddNumberToObject(j, "rms_resid", fit->rms_resid);
    cJSON *b = cJSON_AddArrayToObject(j, "bootstrap");
    for (int k = 0; k < fit->n_boot; k++) cJSON_AddItemToArray(b, law_json(&fit->boot[k]));
    return j;
}

int scaling_fit_from_json(const cJSON *j, const char *what, ScalingFit *fit) {
    memset(fit, 0, sizeof *fit);
    if (law_from(cJSON_GetObjectItemCaseSensitive(j, "law"), what, &fit->law) != 0) return -1;
    const cJSON *np = cJSON_GetObjectItemCaseSensitive(j, "n_points"), *rms = cJSON_GetObjectItemCaseSensitive(j, "rms_resid");
    fit->n_points = cJSON_IsNumber(np) ? np->valueint : 0;
    fit->rstar_fitted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "rstar_fitted"));
    fit->rms_resid = cJSON_IsNumber(rms) ? rms->valuedouble : NAN;
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "bootstrap"), *e;
    cJSON_ArrayForEach(e, b) {
        if (fit->n_boot == SCALING_BOOT) break;
        if (law_from(e, what, &fit->boot[fit->n_boot]) != 0) return -1;
        fit->n_boot++;
    }
    return 0;
}
