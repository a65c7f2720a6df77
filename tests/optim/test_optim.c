// tests/optim/test_optim.c — Muon (Polar Express / Newton–Schulz, NorMuon, MuonEq, Muon+,
// cautious wd), AdamW and the schedules, against plain double-precision references written
// here from the formulas in SPEC §2 and the nanochat reference (§2.4–2.6).
//
// Tolerances: the optimizer computes in fp32 (norms in double); the references compute
// everything in double. Orthogonalised matrices have entries of size ~1/sqrt(min(rows, cols))
// and agree to 2e-5 absolute after 5 iterations (measured: at most 2e-6); weights after three
// Muon or AdamW steps agree to 1e-5 absolute (measured: at most 1e-6). Every "option changes the
// result" check asks for a difference at least 100 times the tolerance.
//
// The optimizer's state, the same bits for any thread count, resume and bad configs are tested in
// test_optim_state.c.
#include <math.h>

#include "test_util.h"

#include "model/params.h"
#include "optim/optim.h"

#include "optim_test_util.h"

#define ORTHO_TOL 2e-5
#define STEP_TOL 1e-5

static double max_abs_diff_fd(const float *a, const double *b, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (d > m) m = d;
    }
    return m;
}
static double max_abs_diff_ff(const float *a, const float *b, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m) m = d;
    }
    return m;
}

#define assert_close(got, want, tol)                                                            \
    do {                                                                                        \
        double g_ = (got), w_ = (want), t_ = (tol);                                             \
        if (!(fabs(g_ - w_) <= t_)) {                                                           \
            print_error("%s = %.10g, expected %.10g (tolerance %g)\n", #got, g_, w_, t_);       \
            fail();                                                                             \
        }                                                                                       \
    } while (0)

#define assert_below(x, bound)                                                                  \
    do {                                                                                        \
        double x_ = (x), b_ = (bound);                                                          \
        if (!(x_ <= b_)) {                                                                      \
            print_error("%s = %g, must be <= %g\n", #x, x_, b_);                                \
            fail();                                                                             \
        }                                                                                       \
    } while (0)

#define assert_above(x, bound)                                                                  \
    do {                                                                                        \
        double x_ = (x), b_ = (bound);                                                          \
        if (!(x_ >= b_)) {                                                                      \
            print_error("%s = %g, must be >= %g\n", #x, x_, b_);                                \
            fail();                                                                             \
        }                                                                                       \
    } while (0)

// ---- plain double references ----

static const double PE_COEFFS[5][3] = {
    {8.156554524902461, -22.48329292557795, 15.878769915207462},
    {4.042929935166739, -2.808917465908714, 0.5000178451051316},
    {3.8916678022926607, -2.772484153217685, 0.5060648178503393},
    {3.285753657755655, -2.3681294933425376, 0.46449024233003106},
    {2.3465413258596377, -1.7097828382687081, 0.42323551169305323},
};
static const double NS_COEFFS[3] = {3.4445, -4.7750, 2.0315};

static double ref_frob(const double *x, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}

// x (m,n) in place, naive triple loops, the wide form for m <= n and the transposed one for m > n.
static void ref_orthogonalize(double *x, int m, int n, OrthoMethod method, int steps) {
    size_t mn = (size_t)m * n;
    double nrm = ref_frob(x, mn);
    double denom = method == ORTHO_POLAR_EXPRESS ? nrm * 1.01 + 1e-6 : nrm + 1e-7;
    for (size_t i = 0; i < mn; i++) x[i] /= denom;
    int tall = m > n, k = tall ? n : m;
    double *A = calloc((size_t)k * k, sizeof *A), *B = calloc((size_t)k * k, sizeof *B), *Y = calloc(mn, sizeof *Y);
    for (int s = 0; s < steps; s++) {
        const double *co = method == ORTHO_POLAR_EXPRESS ? PE_COEFFS[s] : NS_COEFFS;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                double acc = 0.0;
                if (tall)
                    for (int r = 0; r < m; r++) acc += x[(size_t)r * n + i] * x[(size_t)r * n + j];  // XᵀX
                else
                    for (int c = 0; c < n; c++) acc += x[(size_t)i * n + c] * x[(size_t)j * n + c];  // XXᵀ
                A[i * k + j] = acc;
            }
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                double acc = 0.0;
                for (int l = 0; l < k; l++) acc += A[i * k + l] * A[l * k + j];
                B[i * k + j] = co[1] * A[i * k + j] + co[2] * acc;
            }
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double acc = 0.0;
                if (tall)
                    for (int l = 0; l < n; l++) acc += x[(size_t)i * n + l] * B[l * k + j];  // X·B
                else
                    for (int l = 0; l < m; l++) acc += B[i * k + l] * x[(size_t)l * n + j];  // B·X
                Y[(size_t)i * n + j] = acc;
            }
        for (size_t i = 0; i < mn; i++) x[i] = co[0] * x[i] + Y[i];
    }
    free(A);
    free(B);
    free(Y);
}

// Singular values of x (m,n): square roots of the eigenvalues of the smaller Gram matrix, by
// cyclic Jacobi rotations. sv: min(m,n) values, unsorted.
static void ref_singular_values(const float *x, int m, int n, double *sv) {
    int k = m < n ? m : n;
    double *G = calloc((size_t)k * k, sizeof *G);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
            double acc = 0.0;
            if (m <= n)
                for (int c = 0; c < n; c++) acc += (double)x[(size_t)i * n + c] * x[(size_t)j * n + c];
            else
                for (int r = 0; r < m; r++) acc += (double)x[(size_t)r * n + i] * x[(size_t)r * n + j];
            G[i * k + j] = acc;
        }
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0;
        for (int p = 0; p < k; p++)
            for (int q = p + 1; q < k; q++) off += G[p * k + q] * G[p * k + q];
        if (off < 1e-26) break;
        for (int p = 0; p < k; p++)
            for (int q = p + 1; q < k; q++) {
                double apq = G[p * k + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (G[q * k + q] - G[p * k + p]) / (2.0 * apq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int r = 0; r < k; r++) {  // G = Jᵀ G J
                    double grp = G[r * k + p], grq = G[r * k + q];
                    G[r * k + p] = c * grp - s * grq;
                    G[r * k + q] = s * grp + c * grq;
                }
                for (int r = 0; r < k; r++) {
                    double gpr = G[p * k + r], gqr = G[q * k + r];
                    G[p * k + r] = c * gpr - s * gqr;
                    G[q * k + r] = s * gpr + c * gqr;
                }
            }
    }
    for (int i = 0; i < k; i++) sv[i] = sqrt(G[i * k + i] > 0 ? G[i * k + i] : 0.0);
    free(G);
}

typedef struct {
    OrthoMethod method;
    int steps, eq, plus, normuon, cautious;
    double beta2;
} RefMuonOpts;

static RefMuonOpts ref_opts(const OptimConfig *c) {
    return (RefMuonOpts){c->ortho, c->ns_steps, c->muon_eq, c->muon_plus, c->normuon, c->cautious_wd,
                         c->normuon_beta2};
}

// One Muon step in double, straight from the nanochat reference §2.5.
static void ref_muon_step(double *w, const float *g, double *buf, double *nv, int m, int n, double lr, double mom,
                          double wd, RefMuonOpts o) {
    size_t mn = (size_t)m * n;
    double *x = calloc(mn, sizeof *x);
    for (size_t i = 0; i < mn; i++) {
        buf[i] = mom * buf[i] + (1 - mom) * g[i];
        x[i] = (1 - mom) * g[i] + mom * buf[i];
    }
    if (o.eq) {
        double target = ref_frob(x, mn) / sqrt((double)m);
        for (int i = 0; i < m; i++) {
            double rn = ref_frob(x + (size_t)i * n, (size_t)n);
            for (int j = 0; j < n; j++) x[(size_t)i * n + j] *= target / fmax(rn, 1e-6);
        }
    }
    ref_orthogonalize(x, m, n, o.method, o.steps);
    if (o.plus) {
        double s = sqrt((double)(m < n ? m : n)) / fmax(ref_frob(x, mn), 1e-6);
        for (size_t i = 0; i < mn; i++) x[i] *= s;
    }
    if (o.normuon) {
        int per_row = m >= n, ns = per_row ? m : n, red = per_row ? n : m;
        double *vm = calloc((size_t)ns, sizeof *vm), *step = calloc((size_t)ns, sizeof *step);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) vm[per_row ? i : j] += x[(size_t)i * n + j] * x[(size_t)i * n + j] / red;
        double sum_vm = 0.0, sum_new = 0.0;
        for (int s = 0; s < ns; s++) {
            nv[s] = o.beta2 * nv[s] + (1 - o.beta2) * vm[s];
            step[s] = 1.0 / sqrt(fmax(nv[s], 1e-10));
            sum_vm += vm[s];
            sum_new += vm[s] * red * step[s] * step[s];
        }
        double v_norm = sqrt(sum_vm * red), v_norm_new = sqrt(sum_new);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                x[(size_t)i * n + j] *= step[per_row ? i : j] * (v_norm / fmax(v_norm_new, 1e-10));
        free(vm);
        free(step);
    }
    double lr_eff = lr * sqrt(fmax(1.0, (double)m / n));
    for (size_t i = 0; i < mn; i++) {
        double mask = (!o.cautious || x[i] * w[i] >= 0) ? 1.0 : 0.0;
        w[i] -= lr_eff * x[i] + lr_eff * wd * w[i] * mask;
    }
    free(x);
}

// ---- orthogonalisation ----

// A well-conditioned (m,n) input: for m != n a Gaussian matrix (aspect ratio >= 2.5 keeps the
// condition number below ~5); for square, I + 0.3·Gaussian/sqrt(n) (singular values ~[0.5, 1.4]).
static void well_conditioned(float *x, int m, int n) {
    fill_normal(x, (size_t)m * n, 1.0);
    if (m == n) {
        for (size_t i = 0; i < (size_t)m * n; i++) x[i] *= (float)(0.3 / sqrt((double)n));
        for (int i = 0; i < n; i++) x[(size_t)i * n + i] += 1.0f;
    }
}

// Orthogonalise a (m,n) matrix with the library and the reference; compare; return the range of
// the library result's singular values. plain: a plain Gaussian input even when square (then
// ill-conditioned: its smallest singular values are near 0).
static void check_ortho(int m, int n, OrthoMethod method, int plain, double *smin, double *smax) {
    size_t mn = (size_t)m * n;
    float *x = malloc(mn * sizeof *x);
    double *xr = malloc(mn * sizeof *xr);
    if (plain)
        fill_normal(x, mn, 1.0);
    else
        well_conditioned(x, m, n);
    for (size_t i = 0; i < mn; i++) xr[i] = x[i];
    float *scratch = malloc(muon_scratch_floats(m, n) * sizeof *scratch);
    double *dscratch = malloc((size_t)2 * (m > n ? m : n) * sizeof *dscratch);
    muon_orthogonalize(kernels(), x, m, n, method, 5, scratch, dscratch);
    ref_orthogonalize(xr, m, n, method, 5);
    double diff = max_abs_diff_fd(x, xr, mn);
    print_message("  %s %dx%d: max |fp32 - double| = %.3g\n", method == ORTHO_POLAR_EXPRESS ? "polar" : "ns", m, n,
                  diff);
    assert_below(diff, ORTHO_TOL);
    int k = m < n ? m : n;
    double *sv = malloc((size_t)k * sizeof *sv);
    ref_singular_values(x, m, n, sv);
    *smin = INFINITY;
    *smax = 0.0;
    for (int i = 0; i < k; i++) {
        if (sv[i] < *smin) *smin = sv[i];
        if (sv[i] > *smax) *smax = sv[i];
    }
    print_message("  singular values in [%.4f, %.4f]\n", *smin, *smax);
    free(sv);
    free(x);
    free(xr);
    free(scratch);
    free(dscratch);
}

static const int SHAPES[3][2] = {{24, 64}, {32, 32}, {64, 24}};  // wide, square, tall

// Polar Express, 5 iterations, on well-conditioned inputs: measured singular values lie in
// [0.859, 1.140] for all three shapes; asserted [0.8, 1.2].
static void test_polar_express(void **state) {
    (void)state;
    rng_state = 1;
    for (int s = 0; s < 3; s++) {
        double lo, hi;
        check_ortho(SHAPES[s][0], SHAPES[s][1], ORTHO_POLAR_EXPRESS, 0, &lo, &hi);
        assert_above(lo, 0.8);
        assert_below(hi, 1.2);
    }
    // A plain Gaussian square matrix (ill-conditioned; this seed's smallest singular value is
    // still within Polar Express's design range): matches the reference, same output range
    // (measured [0.859, 1.141]).
    double lo, hi;
    check_ortho(48, 48, ORTHO_POLAR_EXPRESS, 1, &lo, &hi);
    assert_above(lo, 0.8);
    assert_below(hi, 1.2);
}

// The Newton–Schulz quintic does not converge to 1 but oscillates in roughly [0.7, 1.2]
// (measured [0.682, 1.134] on these inputs); asserted [0.6, 1.25].
static void test_newton_schulz(void **state) {
    (void)state;
    rng_state = 2;
    for (int s = 0; s < 3; s++) {
        double lo, hi;
        check_ortho(SHAPES[s][0], SHAPES[s][1], ORTHO_NEWTON_SCHULZ, 0, &lo, &hi);
        assert_above(lo, 0.6);
        assert_below(hi, 1.25);
    }
    double lo, hi;  // plain Gaussian square (measured [0.682, 1.198])
    check_ortho(48, 48, ORTHO_NEWTON_SCHULZ, 1, &lo, &hi);
    assert_above(lo, 0.6);
    assert_below(hi, 1.25);
}

// Polar Express and Newton–Schulz give different results (the option does something).
static void test_ortho_methods_differ(void **state) {
    (void)state;
    rng_state = 3;
    int m = 16, n = 40;
    float *a = malloc((size_t)m * n * sizeof *a), *b = malloc((size_t)m * n * sizeof *b);
    well_conditioned(a, m, n);
    memcpy(b, a, (size_t)m * n * sizeof *a);
    float *scratch = malloc(muon_scratch_floats(m, n) * sizeof *scratch);
    double dscratch[80];
    muon_orthogonalize(kernels(), a, m, n, ORTHO_POLAR_EXPRESS, 5, scratch, dscratch);
    muon_orthogonalize(kernels(), b, m, n, ORTHO_NEWTON_SCHULZ, 5, scratch, dscratch);
    assert_above(max_abs_diff_ff(a, b, (size_t)m * n), 100 * ORTHO_TOL);
    free(a);
    free(b);
    free(scratch);
}

// ---- defaults ----

static void test_defaults_are_spec(void **state) {
    (void)state;
    OptimConfig c = optim_defaults();
    assert_true(c.wte_lr == 0.3f);
    assert_true(c.wte_beta1 == 0.8f);
    assert_true(c.wte_beta2 == 0.995f);
    assert_true(c.wte_wd == 0.001f);
    assert_true(c.lm_head_lr == 0.008f);
    assert_true(c.lm_head_beta1 == 0.8f);
    assert_true(c.lm_head_beta2 == 0.96f);
    assert_true(c.lm_head_wd == 0.01f);
    assert_true(c.adam_eps == 1e-10f);
    assert_true(c.muon_lr == 0.02f);
    assert_true(c.muon_momentum_start == 0.85f);
    assert_true(c.muon_momentum_end == 0.95f);
    assert_int_equal(c.muon_momentum_steps, 300);
    assert_true(c.muon_wd == 0.2f);
    assert_int_equal(c.ortho, ORTHO_POLAR_EXPRESS);
    assert_int_equal(c.ns_steps, 5);
    assert_int_equal(c.normuon + c.muon_eq + c.muon_plus + c.cautious_wd, 0);
    assert_true(c.normuon_beta2 == 0.9f);
    assert_int_equal(c.warmup_steps, 10);
    assert_close(c.warmdown_frac, 0.5, 0);
    assert_close(c.final_lr_frac, 0.05, 0);
    assert_int_equal(c.ref_width, 768);
    assert_int_equal(c.ref_batch_tokens, 1 << 19);
}

// ---- AdamW ----

// wte (6,4) and lm_head (6,4); width 4, batch 2^17 tokens.
static ParamTable adam_table(void) {
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 6, 4, PARAM_WTE);
    param_table_add(&t, "lm_head.weight", 6, 4, PARAM_LM_HEAD);
    return t;
}

static void test_adamw_effective_lrs(void **state) {
    (void)state;
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 8, 256, PARAM_WTE);
    OptimConfig cfg = optim_defaults();
    Optimizer *o = optim_new(&cfg, &t, 256, 1LL << 17);  // (256/768)^-0.5 = sqrt(3); sqrt(2^17/2^19) = 0.5
    assert_non_null(o);
    assert_close(o->lr_wte, 0.3 * sqrt(3.0) * 0.5, 1e-6);
    assert_close(o->lr_lm_head, 0.008 * sqrt(3.0) * 0.5, 1e-8);
    assert_close(o->lr_muon, 0.02 * 0.5, 1e-8);
    optim_free(o);
    // the d12 reference point: no scaling at all
    o = optim_new(&cfg, &t, 768, 1LL << 19);
    assert_close(o->lr_wte, 0.3, 1e-7);
    assert_close(o->lr_lm_head, 0.008, 1e-9);
    assert_close(o->lr_muon, 0.02, 1e-9);
    optim_free(o);
    param_table_free(&t);
}

// One step: the bias corrections make m̂ = g and v̂ = g², so with a tiny eps every element moves
// by exactly lr·sign(g) after the decay: p1 = p0·(1 - lr·wd) - lr·sign(g).
static void test_adamw_one_step_by_hand(void **state) {
    (void)state;
    rng_state = 4;
    ParamTable t = adam_table();
    OptimConfig cfg = optim_defaults();
    cfg.wte_wd = 0.05f;  // visible decay
    cfg.lm_head_wd = 0.2f;
    Optimizer *o = optim_new(&cfg, &t, 4, 1LL << 17);
    assert_non_null(o);
    float *p = calloc(t.total, sizeof *p), *g = calloc(t.total, sizeof *g), *p0 = calloc(t.total, sizeof *p0);
    fill_normal(p, t.total, 1.0);
    fill_normal(g, t.total, 0.1);
    memcpy(p0, p, t.total * sizeof *p);
    OptimSchedule s = {.lr_mult = 0.5f, .muon_momentum = 0.9f, .muon_wd = 0.0f};
    optim_step(o, p, g, &s);
    assert_int_equal(o->step, 1);
    for (int k = 0; k < t.n; k++) {
        const ParamTensor *pt = &t.t[k];
        double lr = (pt->kind == PARAM_WTE ? o->lr_wte : o->lr_lm_head) * 0.5f;
        double wd = pt->kind == PARAM_WTE ? cfg.wte_wd : cfg.lm_head_wd;
        double b1 = pt->kind == PARAM_WTE ? cfg.wte_beta1 : cfg.lm_head_beta1;
        double b2 = pt->kind == PARAM_WTE ? cfg.wte_beta2 : cfg.lm_head_beta2;
        char name[160];
        snprintf(name, sizeof name, "%s.exp_avg", pt->name);
        const OptimStateTensor *m = optim_state_find(o, name);
        snprintf(name, sizeof name, "%s.exp_avg_sq", pt->name);
        const OptimStateTensor *v = optim_state_find(o, name);
        assert_non_null(m);
        assert_non_null(v);
        for (size_t i = 0; i < pt->numel; i++) {
            size_t j = pt->offset + i;
            double want = p0[j] * (1 - lr * wd) - lr * (g[j] > 0 ? 1.0 : -1.0);
            assert_close(p[j], want, 1e-5 * (1 + fabs(want)));
            assert_close(o->state[m->offset + i], (1 - b1) * g[j], 1e-8);
            assert_close(o->state[v->offset + i], (1 - b2) * g[j] * g[j], 1e-10);
        }
    }
    free(p);
    free(g);
    free(p0);
    optim_free(o);
    param_table_free(&t);
}

// Three steps against the formulas in double, with a large decay so the order matters: decay
// first (p *= 1 - lr·wd, then the Adam step) matches; decaying after the Adam step does not.
static void test_adamw_three_steps(void **state) {
    (void)state;
    rng_state = 5;
    ParamTable t = adam_table();
    OptimConfig cfg = optim_defaults();
    cfg.wte_wd = 0.1f;
    cfg.lm_head_wd = 0.3f;
    cfg.adam_eps = 1e-3f;      // so eps enters visibly
    cfg.lm_head_beta1 = 0.7f;  // the groups' betas differ in both
    Optimizer *o = optim_new(&cfg, &t, 4, 1LL << 17);
    size_t N = t.total;
    float *p = calloc(N, sizeof *p), *g = calloc(N, sizeof *g);
    double *rp = calloc(N, sizeof *rp), *alt = calloc(N, sizeof *alt), *rm = calloc(N, sizeof *rm),
           *rv = calloc(N, sizeof *rv);
    fill_normal(p, N, 1.0);
    for (size_t i = 0; i < N; i++) rp[i] = alt[i] = p[i];
    const float mults[3] = {0.3f, 1.0f, 0.7f};
    for (int step = 1; step <= 3; step++) {
        fill_normal(g, N, 0.01);
        OptimSchedule s = {.lr_mult = mults[step - 1], .muon_momentum = 0.9f, .muon_wd = 0.0f};
        optim_step(o, p, g, &s);
        for (int k = 0; k < t.n; k++) {
            const ParamTensor *pt = &t.t[k];
            int wte = pt->kind == PARAM_WTE;
            double lr = (double)(wte ? o->lr_wte : o->lr_lm_head) * mults[step - 1];
            double wd = wte ? cfg.wte_wd : cfg.lm_head_wd, eps = cfg.adam_eps;
            double b1 = wte ? cfg.wte_beta1 : cfg.lm_head_beta1, b2 = wte ? cfg.wte_beta2 : cfg.lm_head_beta2;
            for (size_t i = pt->offset; i < pt->offset + pt->numel; i++) {
                rm[i] = b1 * rm[i] + (1 - b1) * g[i];
                rv[i] = b2 * rv[i] + (1 - b2) * g[i] * g[i];
                double upd = lr / (1 - pow(b1, step)) * rm[i] / (sqrt(rv[i] / (1 - pow(b2, step))) + eps);
                rp[i] = rp[i] * (1 - lr * wd) - upd;
                alt[i] = (alt[i] - upd) * (1 - lr * wd);
            }
        }
    }
    double d = max_abs_diff_fd(p, rp, N), d_alt = max_abs_diff_fd(p, alt, N);
    print_message("  max |fp32 - double| = %.3g; decay-after order differs by %.3g\n", d, d_alt);
    assert_below(d, STEP_TOL);
    assert_above(d_alt, 100 * STEP_TOL);
    assert_int_equal(o->step, 3);
    free(p);
    free(g);
    free(rp);
    free(alt);
    free(rm);
    free(rv);
    optim_free(o);
    param_table_free(&t);
}

// ---- Muon ----

// A table with one Muon matrix (rows, cols) between an embedding and an lm_head (so offsets are
// not zero). Runs `steps` optimizer steps with random gradients and compares W, the momentum
// buffer and (NorMuon) the variance state with ref_muon_step. Returns the final W (malloc'ed).
static float *muon_case(const OptimConfig *cfg, int rows, int cols, int steps, uint64_t seed) {
    rng_state = seed;
    ParamTable t = {0};
    param_table_add(&t, "transformer.wte.weight", 5, 3, PARAM_WTE);
    param_table_add(&t, "transformer.h.0.mlp.c_fc.weight", rows, cols, PARAM_MATRIX);
    param_table_add(&t, "lm_head.weight", 5, 3, PARAM_LM_HEAD);
    const ParamTensor *pm = &t.t[1];  // (param_table_add may move the table)
    size_t off = pm->offset, mn = pm->numel;
    Optimizer *o = optim_new(cfg, &t, 3, 1LL << 19);
    assert_non_null(o);
    float *p = calloc(t.total, sizeof *p), *g = calloc(t.total, sizeof *g);
    fill_normal(p, t.total, 0.5);
    double *w = calloc(mn, sizeof *w), *buf = calloc(mn, sizeof *buf), *nv = calloc((size_t)(rows + cols), sizeof *nv);
    for (size_t i = 0; i < mn; i++) w[i] = p[off + i];
    const float lr_mult[3] = {1.0f, 0.8f, 0.5f}, mom[3] = {0.85f, 0.9f, 0.95f}, wd[3] = {0.2f, 0.15f, 0.1f};
    for (int s = 0; s < steps; s++) {
        fill_normal(g, t.total, 0.01);
        OptimSchedule sc = {.lr_mult = lr_mult[s % 3], .muon_momentum = mom[s % 3], .muon_wd = wd[s % 3]};
        optim_step(o, p, g, &sc);
        double lr = (double)o->lr_muon * lr_mult[s % 3];
        ref_muon_step(w, g + off, buf, nv, rows, cols, lr, mom[s % 3], wd[s % 3], ref_opts(cfg));
    }
    char name[160];
    snprintf(name, sizeof name, "%s.momentum_buffer", pm->name);
    const OptimStateTensor *sb = optim_state_find(o, name);
    assert_non_null(sb);
    double dw = max_abs_diff_fd(p + off, w, mn), db = max_abs_diff_fd(o->state + sb->offset, buf, mn);
    print_message("  %dx%d%s%s%s%s%s: max |W - ref| = %.3g, |buf - ref| = %.3g\n", rows, cols,
                  cfg->ortho == ORTHO_NEWTON_SCHULZ ? " ns" : "", cfg->normuon ? " normuon" : "",
                  cfg->muon_eq ? " eq" : "", cfg->muon_plus ? " plus" : "", cfg->cautious_wd ? " cautious" : "", dw,
                  db);
    assert_below(dw, STEP_TOL);
    assert_below(db, 1e-8);
    snprintf(name, sizeof name, "%s.normuon_v", pm->name);
    const OptimStateTensor *sv = optim_state_find(o, name);
    if (cfg->normuon) {
        assert_non_null(sv);
        int ns = rows >= cols ? rows : cols;
        assert_int_equal(sv->numel, ns);
        for (int i = 0; i < ns; i++) assert_close(o->state[sv->offset + i], nv[i], 1e-5 * (1 + fabs(nv[i])));
    } else {
        assert_null(sv);
    }
    float *out = malloc(mn * sizeof *out);
    memcpy(out, p + off, mn * sizeof *out);
    free(p);
    free(g);
    free(w);
    free(buf);
    free(nv);
    optim_free(o);
    param_table_free(&t);
    return out;
}

static OptimConfig muon_test_config(void) {
    OptimConfig cfg = optim_defaults();
    cfg.muon_lr = 0.1f;  // larger steps make every term visible against fp32 rounding
    return cfg;
}

// Three steps of plain Muon (Nesterov momentum, Polar Express, decoupled decay), on a wide, a
// square and a tall matrix; the tall one (4C, C) also gets lr·sqrt(rows/cols) = 2·lr.
static void test_muon_three_steps(void **state) {
    (void)state;
    OptimConfig cfg = muon_test_config();
    free(muon_case(&cfg, 12, 40, 3, 10));
    free(muon_case(&cfg, 24, 24, 3, 11));
    free(muon_case(&cfg, 64, 16, 3, 12));
}

// The shape scale on its own: one step from zero momentum on a tall matrix, with no decay,
// moves W by exactly lr·2·X where X is the orthogonalised (1-mom)·G + mom·(1-mom)·G.
static void test_muon_shape_scale(void **state) {
    (void)state;
    rng_state = 13;
    int m = 64, n = 16;
    OptimConfig cfg = muon_test_config();
    ParamTable t = {0};
    param_table_add(&t, "transformer.h.0.mlp.c_fc.weight", m, n, PARAM_MATRIX);
    Optimizer *o = optim_new(&cfg, &t, 16, 1LL << 19);
    float *p = calloc(t.total, sizeof *p), *g = calloc(t.total, sizeof *g), *p0 = calloc(t.total, sizeof *p0);
    fill_normal(p, t.total, 0.5);
    fill_normal(g, t.total, 0.01);
    memcpy(p0, p, t.total * sizeof *p);
    OptimSchedule s = {.lr_mult = 1.0f, .muon_momentum = 0.9f, .muon_wd = 0.0f};
    optim_step(o, p, g, &s);
    double *x = calloc((size_t)m * n, sizeof *x);
    for (int i = 0; i < m * n; i++) x[i] = g[i];  // the momentum mix is a positive multiple of G:
    ref_orthogonalize(x, m, n, ORTHO_POLAR_EXPRESS, 5);  // normalisation removes it
    double maxd = 0.0;
    for (int i = 0; i < m * n; i++) {
        double d = fabs((p0[i] - p[i]) - 0.1 * 2.0 * x[i]);
        if (d > maxd) maxd = d;
    }
    assert_below(maxd, 1e-5);
    free(x);
    free(p);
    free(g);
    free(p0);
    optim_free(o);
    param_table_free(&t);
}

static void assert_option_changes(const OptimConfig *on, int rows, int cols, uint64_t seed) {
    OptimConfig off = muon_test_config();
    float *a = muon_case(on, rows, cols, 3, seed), *b = muon_case(&off, rows, cols, 3, seed);
    double d = max_abs_diff_ff(a, b, (size_t)rows * cols);
    print_message("  option on vs off: max |dW| = %.3g\n", d);
    assert_above(d, 100 * STEP_TOL);
    free(a);
    free(b);
}

// NorMuon: per-row statistics for tall and square matrices, per-column for wide ones (wide one
// has more than 64 columns, so several column blocks).
static void test_normuon(void **state) {
    (void)state;
    OptimConfig cfg = muon_test_config();
    cfg.normuon = 1;
    assert_option_changes(&cfg, 48, 16, 20);
    assert_option_changes(&cfg, 20, 20, 21);
    assert_option_changes(&cfg, 12, 150, 22);
}

// MuonEq on rows of very different norms.
static void test_muon_eq(void **state) {
    (void)state;
    OptimConfig cfg = muon_test_config();
    cfg.muon_eq = 1;
    assert_option_changes(&cfg, 16, 40, 30);
    assert_option_changes(&cfg, 40, 16, 31);
}

static void test_cautious_wd(void **state) {
    (void)state;
    OptimConfig cfg = muon_test_config();
    cfg.cautious_wd = 1;
    assert_option_changes(&cfg, 16, 40, 40);
    assert_option_changes(&cfg, 40, 16, 41);
}

static void test_muon_plus(void **state) {
    (void)state;
    OptimConfig cfg = muon_test_config();
    cfg.muon_plus = 1;
    assert_option_changes(&cfg, 16, 40, 50);
}

// Newton–Schulz through the whole step, and everything at once.
static void test_muon_ns_and_all_options(void **state) {
    (void)state;
    OptimConfig cfg = muon_test_config();
    cfg.ortho = ORTHO_NEWTON_SCHULZ;
    assert_option_changes(&cfg, 16, 40, 60);
    cfg = muon_test_config();
    cfg.normuon = cfg.muon_eq = cfg.muon_plus = cfg.cautious_wd = 1;
    free(muon_case(&cfg, 40, 16, 3, 61));
    free(muon_case(&cfg, 16, 100, 3, 62));
}

// ---- schedules ----

static void test_lr_schedule(void **state) {
    (void)state;
    // warmup over 10 steps: (step+1)/10, whatever the progress
    assert_close(lr_multiplier(0, 0.0, 10, 0.5, 0.05), 0.1, 1e-7);
    assert_close(lr_multiplier(4, 0.01, 10, 0.5, 0.05), 0.5, 1e-7);
    assert_close(lr_multiplier(9, 0.02, 10, 0.5, 0.05), 1.0, 1e-7);
    assert_close(lr_multiplier(3, 0.9, 10, 0.5, 0.05), 0.4, 1e-7);  // warmup takes precedence
    // flat
    assert_close(lr_multiplier(10, 0.0, 10, 0.5, 0.05), 1.0, 0);
    assert_close(lr_multiplier(500, 0.49, 10, 0.5, 0.05), 1.0, 0);
    // warmdown over the last half of progress, to final_lr_frac
    assert_close(lr_multiplier(500, 0.5, 10, 0.5, 0.05), 1.0, 1e-7);
    assert_close(lr_multiplier(500, 0.75, 10, 0.5, 0.05), 0.525, 1e-7);
    assert_close(lr_multiplier(500, 0.9, 10, 0.5, 0.05), 0.05 + 0.95 * 0.2, 1e-7);
    assert_close(lr_multiplier(500, 1.0, 10, 0.5, 0.05), 0.05, 1e-7);
    assert_close(lr_multiplier(500, 1.5, 10, 0.5, 0.05), 0.05, 1e-7);  // clamped
    // other knobs
    assert_close(lr_multiplier(0, 0.0, 0, 0.5, 0.05), 1.0, 0);      // no warmup
    assert_close(lr_multiplier(50, 0.95, 10, 0.0, 0.05), 1.0, 0);   // no warmdown
    assert_close(lr_multiplier(50, 0.0, 10, 1.0, 0.0), 1.0, 1e-7);  // warmdown over everything
    assert_close(lr_multiplier(50, 0.6, 10, 1.0, 0.0), 0.4, 1e-7);
}

static void test_momentum_and_wd_schedules(void **state) {
    (void)state;
    assert_close(muon_momentum(0, 300, 0.85f, 0.95f), 0.85, 1e-7);
    assert_close(muon_momentum(150, 300, 0.85f, 0.95f), 0.90, 1e-7);
    assert_close(muon_momentum(299, 300, 0.85f, 0.95f), 0.85 + 0.1 * 299 / 300, 1e-7);
    assert_close(muon_momentum(300, 300, 0.85f, 0.95f), 0.95, 1e-7);
    assert_close(muon_momentum(10000, 300, 0.85f, 0.95f), 0.95, 1e-7);
    assert_close(muon_momentum(5, 0, 0.85f, 0.95f), 0.95, 1e-7);
    assert_close(muon_weight_decay(0.0, 0.2f), 0.2, 1e-7);
    assert_close(muon_weight_decay(0.25, 0.2f), 0.15, 1e-7);
    assert_close(muon_weight_decay(1.0, 0.2f), 0.0, 0);
    assert_close(muon_weight_decay(2.0, 0.2f), 0.0, 0);
    OptimConfig cfg = optim_defaults();
    OptimSchedule s = optim_schedule(&cfg, 150, 0.75);
    assert_close(s.lr_mult, 0.525, 1e-7);
    assert_close(s.muon_momentum, 0.90, 1e-7);
    assert_close(s.muon_wd, 0.05, 1e-7);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_spec),
        cmocka_unit_test(test_polar_express),
        cmocka_unit_test(test_newton_schulz),
        cmocka_unit_test(test_ortho_methods_differ),
        cmocka_unit_test(test_adamw_effective_lrs),
        cmocka_unit_test(test_adamw_one_step_by_hand),
        cmocka_unit_test(test_adamw_three_steps),
        cmocka_unit_test(test_muon_three_steps),
        cmocka_unit_test(test_muon_shape_scale),
        cmocka_unit_test(test_normuon),
        cmocka_unit_test(test_muon_eq),
        cmocka_unit_test(test_cautious_wd),
        cmocka_unit_test(test_muon_plus),
        cmocka_unit_test(test_muon_ns_and_all_options),
        cmocka_unit_test(test_lr_schedule),
        cmocka_unit_test(test_momentum_and_wd_schedules),
    };
    return cmocka_run_group_tests_name("optim", tests, NULL, NULL);
}
