// tests/kernels/rows/test_avx512_ops.c — the AVX-512 non-matmul ops against the reference kernels.
//
// Every op runs over many shapes, ragged ones included (widths not a multiple of 16, sequence
// lengths not a multiple of the attention block, T = 1, B > 1, grouped-query heads), with
// outputs pre-filled with NaN (so an unwritten element fails) and a run of canary values past
// the end of every output (so an overrun fails). Thread invariance: 1, 2 and 3 OpenMP threads
// give identical bytes. Skipped on CPUs without AVX-512.
//
// Tolerances, each relative to the size of the terms that make up the element; the measured
// worst cases (gcc and clang, 2 threads) are in brackets, and test_report prints them:
//   embedding fwd/bwd, relu2 fwd/bwd   bit-identical to the reference;
//   rmsnorm fwd (out, rstd)            1e-6 · |value|                          [bit-identical];
//   rmsnorm bwd                        1e-6 · (sum of |terms|)                 [2e-7];
//   rope                               1e-6 · (|x1| + |x2|)                    [1.2e-7];
//   softcap_ce loss                    1e-6 · (|max| + |log-sum-exp| + |c_target|) + 1e-6
//                                                                              [0.11 of that];
//   softcap_ce dlogits                 1e-5 · |dscale| · (p_i + onehot_i) + 1e-9·|dscale| [1.3e-6];
//   attention out                      1e-5 · max|v|                           [1.5e-6];
//   attention lse                      4e-6 · (1 + |lse|)                      [6e-7];
//   attention dq, dk, dv               5e-5 · max|reference tensor| (+ the size of the p·(dp - D_i)
//                                      terms for dq/dk, which may cancel)      [3e-6];
//   vector exp / tanh vs libm          relative 4e-7                           [1.2e-7 / 1.4e-7].
#include <math.h>
#include <omp.h>

#include "test_util.h"

#include "kernels/rows/avx512_ops.h"
#include "kernels/simd/avx512_vmath.h"
#include "kernels/cpu/cpu.h"
#include "kernels/ref/ref.h"
#include "util/rng.h"

#define GUARD 16
#define CANARY 12345.678f

// ---------------------------------------------------------------------------------------------
// Helpers: random numbers, guarded buffers, comparisons
// ---------------------------------------------------------------------------------------------

static uint64_t rng_state = 42;
static uint64_t rnd_u64(void) { return splitmix64(&rng_state); }  // util/rng.h
static double rnd_unif(void) { return (double)(rnd_u64() >> 11) * 0x1.0p-53; }
static float rnd_normal(void) {
    double u1 = rnd_unif(), u2 = rnd_unif();
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
static void fill_normal(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * rnd_normal();
}

// n floats followed by GUARD canaries.
static float *galloc(size_t n) {
    float *p = malloc((n + GUARD) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < GUARD; i++) p[n + i] = CANARY;
    return p;
}
static float *galloc_nan(size_t n) {
    float *p = galloc(n);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}
static float *galloc_copy(const float *src, size_t n) {
    float *p = galloc(n);
    memcpy(p, src, n * sizeof *p);
    return p;
}
static void check_guard(const float *p, size_t n, const char *what) {
    for (size_t i = 0; i < GUARD; i++)
        if (p[n + i] != CANARY) fail_msg("%s: canary %zu past the end overwritten", what, i);
}

static void check_equal(const float *got, const float *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof *got))
            fail_msg("%s: element %zu is %.9g, reference %.9g", what, i, got[i], want[i]);
}

// |got - want| <= tol[i] everywhere (NaN fails); returns the worst err/tol seen.
static double check_tol(const float *got, const float *want, const float *tol, size_t n, const char *what) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        if (!(e <= tol[i]))
            fail_msg("%s: element %zu is %.9g, reference %.9g (diff %.3g > tol %.3g)", what, i, got[i], want[i], e,
                     tol[i]);
        if (tol[i] > 0 && e / tol[i] > worst) worst = e / tol[i];
    }
    return worst;
}

static float max_abs(const float *x, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

// Worst err/tol per op over the run, printed at the end.
static double worst_ratio[16];
enum { W_RMS_F, W_RMS_B, W_ROPE, W_CE_LOSS, W_CE_GRAD, W_ATT_OUT, W_ATT_LSE, W_ATT_GRAD, W_N };
static const char *const worst_name[W_N] = {"rmsnorm_fwd", "rmsnorm_bwd", "rope", "softcap_ce loss",
                                            "softcap_ce dlogits", "attention out", "attention lse",
                                            "attention dq/dk/dv"};
static void note(int which, double r) {
    if (r > worst_ratio[which]) worst_ratio[which] = r;
}

static int have_avx512(void) {
    const CpuInfo *c = cpu_info();
    return c->avx512f && c->avx512bw && c->avx512vl;
}
#define REQUIRE_AVX512() \
    do {                 \
        if (!have_avx512()) SKIP_HARDWARE("this CPU lacks AVX-512 F/BW/VL"); \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Vector exp and tanh against libm
// ---------------------------------------------------------------------------------------------

static AVX512_FN void vexp16(float *y, const float *x) { _mm512_storeu_ps(y, v_exp(_mm512_loadu_ps(x))); }
static AVX512_FN void vtanh16(float *y, const float *x) { _mm512_storeu_ps(y, v_tanh(_mm512_loadu_ps(x))); }

// Max relative error of f over [lo, hi] sampled densely, against a double-precision libm.
static double sweep_rel_err(void (*f)(float *, const float *), double (*ref)(double), double lo, double hi, int n) {
    double worst = 0;
    float x[16], y[16];
    for (int i = 0; i < n; i += 16) {
        for (int l = 0; l < 16; l++) x[l] = (float)(lo + (hi - lo) * (i + l) / (n - 1));
        f(y, x);
        for (int l = 0; l < 16; l++) {
            double want = ref(x[l]);
            if (want == 0) continue;
            double e = fabs((y[l] - want) / want);
            if (e > worst) worst = e;
        }
    }
    return worst;
}

static void test_vmath_accuracy(void **state) {
    (void)state;
    REQUIRE_AVX512();
    double e_exp = sweep_rel_err(vexp16, exp, -87.0, 88.0, 1 << 20);
    double e_exp2 = sweep_rel_err(vexp16, exp, -1.0, 1.0, 1 << 18);
    double e_tanh = sweep_rel_err(vtanh16, tanh, -12.0, 12.0, 1 << 20);
    double e_tanh2 = sweep_rel_err(vtanh16, tanh, -1.0, 1.0, 1 << 18);
    print_message("vector exp max rel err %.3g (near 0: %.3g); tanh %.3g (near 0: %.3g)\n", e_exp, e_exp2, e_tanh,
                  e_tanh2);
    assert_true(e_exp < 4e-7 && e_exp2 < 4e-7);
    assert_true(e_tanh < 4e-7 && e_tanh2 < 4e-7);
    // Special values: exp(-inf) = 0, below the range 0, NaN stays NaN, tanh saturates to ±1.
    float x[16] = {-INFINITY, -200.0f, -104.5f, NAN, 0.0f, -0.0f, 100.0f, 1e-30f}, y[16];
    for (int i = 8; i < 16; i++) x[i] = 0;
    vexp16(y, x);
    assert_true(y[0] == 0 && y[1] == 0 && y[2] == 0 && isnan(y[3]) && y[4] == 1 && y[5] == 1 && isinf(y[6]));
    float t[16] = {50.0f, -50.0f, 0.0f, 1e-30f, -1e-30f, 9.0f, -9.0f, 0.625f}, z[16];
    for (int i = 8; i < 16; i++) t[i] = 0;
    vtanh16(z, t);
    assert_true(z[0] == 1 && z[1] == -1 && z[2] == 0 && z[3] == 1e-30f && z[4] == -1e-30f);
    assert_true(fabs(z[7] - tanh(0.625)) < 2e-7);
}

// ---------------------------------------------------------------------------------------------
// Embedding and ReLU² (bit-identical to the reference)
// ---------------------------------------------------------------------------------------------

static void test_embedding(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const int Ns[] = {1, 7, 64, 300}, Cs[] = {1, 15, 16, 17, 128, 200}, Vocab = 37;
    for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
        for (size_t c = 0; c < sizeof Cs / sizeof *Cs; c++) {
            int N = Ns[a], C = Cs[c];
            int32_t *idx = malloc((size_t)N * sizeof *idx);
            for (int n = 0; n < N; n++) idx[n] = (int32_t)(rnd_u64() % (n % 3 ? Vocab : 3));  // many repeats
            float *wte = galloc((size_t)Vocab * C), *dout = galloc((size_t)N * C);
            fill_normal(wte, (size_t)Vocab * C, 1);
            fill_normal(dout, (size_t)N * C, 1);
            float *o1 = galloc_nan((size_t)N * C), *o2 = galloc_nan((size_t)N * C);
            ref_embedding_fwd(o1, idx, wte, N, C);
            avx512_embedding_fwd(o2, idx, wte, N, C);
            check_equal(o2, o1, (size_t)N * C, "embedding_fwd");
            check_guard(o2, (size_t)N * C, "embedding_fwd");
            float *d1 = galloc_copy(wte, (size_t)Vocab * C), *d2 = galloc_copy(wte, (size_t)Vocab * C);
            ref_embedding_bwd(d1, dout, idx, N, C);
            avx512_embedding_bwd(d2, dout, idx, N, C);
            check_equal(d2, d1, (size_t)Vocab * C, "embedding_bwd");
            check_guard(d2, (size_t)Vocab * C, "embedding_bwd");
            free(idx), free(wte), free(dout), free(o1), free(o2), free(d1), free(d2);
        }
}

static void test_relu2(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const size_t ns[] = {0, 1, 15, 16, 17, 4096, 3 * 4096 + 5};
    for (size_t a = 0; a < sizeof ns / sizeof *ns; a++) {
        size_t n = ns[a];
        float *x = galloc(n), *g = galloc(n);
        fill_normal(x, n, 1);
        fill_normal(g, n, 1);
        if (n > 3) x[0] = 0.0f, x[1] = -0.0f, x[2] = NAN;  // edge cases of the select
        float *o1 = galloc_nan(n), *o2 = galloc_nan(n);
        ref_relu2_fwd(o1, x, n);
        avx512_relu2_fwd(o2, x, n);
        check_equal(o2, o1, n, "relu2_fwd");
        check_guard(o2, n, "relu2_fwd");
        ref_relu2_bwd(o1, g, x, n);
        avx512_relu2_bwd(o2, g, x, n);
        check_equal(o2, o1, n, "relu2_bwd");
        float *a2 = galloc_copy(g, n);  // dx aliasing dout, as the model calls it
        avx512_relu2_bwd(a2, a2, x, n);
        check_equal(a2, o1, n, "relu2_bwd in place");
        check_guard(o2, n, "relu2_bwd");
        check_guard(a2, n, "relu2_bwd in place");
        free(x), free(g), free(o1), free(o2), free(a2);
    }
}

// ---------------------------------------------------------------------------------------------
// RMSNorm and RoPE
// ---------------------------------------------------------------------------------------------

static void rmsnorm_case(int N, int C, float xscale) {
    size_t n = (size_t)N * C;
    float *x = galloc(n), *g = galloc(n), *prev = galloc(n);
    fill_normal(x, n, xscale);
    fill_normal(g, n, 1);
    fill_normal(prev, n, 1);
    float *o1 = galloc_nan(n), *o2 = galloc_nan(n), *r1 = galloc_nan((size_t)N), *r2 = galloc_nan((size_t)N);
    ref_rmsnorm_fwd(o1, r1, x, N, C);
    avx512_rmsnorm_fwd(o2, r2, x, N, C);
    float *tol = galloc(n > (size_t)N ? n : (size_t)N);
    for (int i = 0; i < N; i++) tol[i] = 1e-6f * r1[i];
    note(W_RMS_F, check_tol(r2, r1, tol, (size_t)N, "rmsnorm_fwd rstd"));
    for (size_t i = 0; i < n; i++) tol[i] = 1e-6f * fabsf(o1[i]);
    note(W_RMS_F, check_tol(o2, o1, tol, n, "rmsnorm_fwd out"));
    check_guard(o2, n, "rmsnorm_fwd out");
    check_guard(r2, (size_t)N, "rmsnorm_fwd rstd");
    for (int acc = 0; acc <= 1; acc++) {
        float *d1 = acc ? galloc_copy(prev, n) : galloc_nan(n), *d2 = acc ? galloc_copy(prev, n) : galloc_nan(n);
        float *d3 = galloc_copy(g, n);  // dx aliasing dout (accumulate=0 only, as the model does)
        ref_rmsnorm_bwd(d1, g, x, r1, N, C, acc);
        avx512_rmsnorm_bwd(d2, g, x, r1, N, C, acc);
        // Terms: r·g, r·x·r·mean(g·x·r), and the accumulated value.
        for (int r = 0; r < N; r++) {
            double dot = 0;
            for (int c = 0; c < C; c++) dot += (double)g[(size_t)r * C + c] * x[(size_t)r * C + c] * r1[r];
            double m = fabs(dot / C);
            for (int c = 0; c < C; c++) {
                size_t i = (size_t)r * C + c;
                double terms = r1[r] * fabs(g[i]) + r1[r] * r1[r] * fabs(x[i]) * m + (acc ? fabs(prev[i]) : 0);
                tol[i] = (float)(1e-6 * terms);
            }
        }
        note(W_RMS_B, check_tol(d2, d1, tol, n, acc ? "rmsnorm_bwd accumulate" : "rmsnorm_bwd"));
        check_guard(d2, n, "rmsnorm_bwd");
        if (!acc) {
            avx512_rmsnorm_bwd(d3, d3, x, r1, N, C, 0);
            note(W_RMS_B, check_tol(d3, d1, tol, n, "rmsnorm_bwd in place"));
            check_guard(d3, n, "rmsnorm_bwd in place");
        }
        free(d1), free(d2), free(d3);
    }
    free(x), free(g), free(prev), free(o1), free(o2), free(r1), free(r2), free(tol);
}

static void test_rmsnorm(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const int Ns[] = {1, 3, 64}, Cs[] = {1, 2, 15, 16, 17, 64, 128, 129, 640};
    for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
        for (size_t c = 0; c < sizeof Cs / sizeof *Cs; c++) rmsnorm_case(Ns[a], Cs[c], c % 2 ? 3.0f : 0.01f);
}

static void rope_case(int B, int T, int nh, int D) {
    size_t n = (size_t)B * T * nh * D, nt = (size_t)T * (D / 2);
    float *x = galloc(n), *cs = galloc(nt), *sn = galloc(nt);
    fill_normal(x, n, 1);
    for (size_t i = 0; i < nt; i++) {
        double ang = rnd_unif() * 6.283185307179586;
        cs[i] = (float)cos(ang), sn[i] = (float)sin(ang);
    }
    float *tol = galloc(n);
    int half = D / 2;
    for (size_t row = 0; row < n / D; row++)
        for (int j = 0; j < half; j++) {
            const float *v = x + row * D;
            tol[row * D + j] = tol[row * D + j + half] = 1e-6f * (fabsf(v[j]) + fabsf(v[j + half]));
        }
    for (int dir = 0; dir < 2; dir++) {
        float *a = galloc_copy(x, n), *b = galloc_copy(x, n);
        (dir ? ref_rope_bwd : ref_rope_fwd)(a, cs, sn, B, T, nh, D);
        (dir ? avx512_rope_bwd : avx512_rope_fwd)(b, cs, sn, B, T, nh, D);
        note(W_ROPE, check_tol(b, a, tol, n, dir ? "rope_bwd" : "rope_fwd"));
        check_guard(b, n, "rope");
        free(a), free(b);
    }
    free(x), free(cs), free(sn), free(tol);
}

static void test_rope(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const int shapes[][4] = {{1, 1, 1, 2},  {1, 5, 3, 8},   {2, 7, 2, 32},  {1, 4, 1, 34},
                             {2, 9, 4, 64}, {3, 3, 5, 128}, {1, 2, 2, 130}, {2, 16, 1, 96}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        rope_case(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
}

// The fused RoPE + QK-norm is the separate ops' row kernels in one pass: the same bits as
// rope_fwd then rmsnorm_fwd (forward) and rmsnorm_bwd then rope_bwd (backward), with dx
// aliasing dout as the model calls it; nothing written past any output.
static void rope_rmsnorm_case(int B, int T, int nh, int D) {
    size_t n = (size_t)B * T * nh * D, nt = (size_t)T * (D / 2), rows = (size_t)B * T * nh;
    float *x = galloc(n), *cs = galloc(nt), *sn = galloc(nt), *dout = galloc(n);
    fill_normal(x, n, 2);
    fill_normal(dout, n, 1);
    for (size_t i = 0; i < nt; i++) {
        double ang = rnd_unif() * 6.283185307179586;
        cs[i] = (float)cos(ang), sn[i] = (float)sin(ang);
    }
    float *xa = galloc_copy(x, n), *outa = galloc_nan(n), *ra = galloc_nan(rows);
    avx512_rope_fwd(xa, cs, sn, B, T, nh, D);
    avx512_rmsnorm_fwd(outa, ra, xa, (int)rows, D);
    float *xb = galloc_copy(x, n), *outb = galloc_nan(n), *rb = galloc_nan(rows);
    avx512_rope_rmsnorm_fwd(outb, rb, xb, cs, sn, B, T, nh, D);
    check_equal(xb, xa, n, "rope_rmsnorm_fwd x");
    check_equal(outb, outa, n, "rope_rmsnorm_fwd out");
    check_equal(rb, ra, rows, "rope_rmsnorm_fwd rstd");
    check_guard(xb, n, "rope_rmsnorm_fwd x");
    check_guard(outb, n, "rope_rmsnorm_fwd out");
    check_guard(rb, rows, "rope_rmsnorm_fwd rstd");

    float *da = galloc_nan(n), *db = galloc_copy(dout, n);
    avx512_rmsnorm_bwd(da, dout, xa, ra, (int)rows, D, 0);
    avx512_rope_bwd(da, cs, sn, B, T, nh, D);
    avx512_rope_rmsnorm_bwd(db, db, xa, ra, cs, sn, B, T, nh, D);  // in place, as the model does
    check_equal(db, da, n, "rope_rmsnorm_bwd");
    check_guard(db, n, "rope_rmsnorm_bwd");
    float *dc = galloc_nan(n), *ref = galloc_nan(n);  // and against the reference, separately
    avx512_rope_rmsnorm_bwd(dc, dout, xa, ra, cs, sn, B, T, nh, D);
    check_equal(dc, da, n, "rope_rmsnorm_bwd (dx != dout)");
    ref_rope_rmsnorm_bwd(ref, dout, xa, ra, cs, sn, B, T, nh, D);
    for (size_t i = 0; i < n; i++) assert_true(fabsf(dc[i] - ref[i]) <= 1e-5f * (1.0f + fabsf(ref[i])));
    free(x), free(cs), free(sn), free(dout), free(xa), free(outa), free(ra), free(xb), free(outb), free(rb);
    free(da), free(db), free(dc), free(ref);
}

static void test_rope_rmsnorm(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const int shapes[][4] = {{1, 1, 1, 2}, {1, 5, 3, 8}, {2, 7, 2, 34}, {3, 3, 5, 128}, {2, 16, 1, 130}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        rope_rmsnorm_case(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
}

// ---------------------------------------------------------------------------------------------
// Softcapped cross-entropy
// ---------------------------------------------------------------------------------------------

// Tolerances from the reference's own row statistics (recomputed here in double).
static void ce_tolerances(float *tl, float *tg, const float *z, const int32_t *tg_idx, int N, int V, float cap,
                          float dscale) {
    for (int n = 0; n < N; n++) {
        const float *zr = z + (size_t)n * V;
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < V; i++) {
            double c = cap > 0 ? cap * tanh(zr[i] / cap) : zr[i];
            mx = c > mx ? c : mx;
        }
        for (int i = 0; i < V; i++) sum += exp((cap > 0 ? cap * tanh(zr[i] / cap) : zr[i]) - mx);
        int t = tg_idx ? tg_idx[n] : -1;
        double ct = t >= 0 ? (cap > 0 ? cap * tanh(zr[t] / cap) : zr[t]) : 0;
        tl[n] = (float)(1e-6 * (fabs(mx) + fabs(log(sum)) + fabs(ct)) + 1e-6);
        if (!tg) continue;
        for (int i = 0; i < V; i++) {
            double c = cap > 0 ? cap * tanh(zr[i] / cap) : zr[i];
            double p = exp(c - mx) / sum;
            tg[(size_t)n * V + i] = (float)(fabs(dscale) * (1e-5 * (p + (i == t)) + 1e-9));
        }
    }
}

static void ce_case(int N, int V, float cap, float zscale, float dscale, int ignore_some) {
    size_t n = (size_t)N * V;
    float *z = galloc(n);
    fill_normal(z, n, zscale);
    int32_t *tg = malloc((size_t)N * sizeof *tg);
    for (int i = 0; i < N; i++) tg[i] = ignore_some && i % 3 == 1 ? -1 : (int32_t)(rnd_u64() % (uint64_t)V);
    float *tl = galloc(N), *tgr = galloc(n);
    ce_tolerances(tl, tgr, z, tg, N, V, cap, dscale);
    char what[160];
    snprintf(what, sizeof what, "softcap_ce N=%d V=%d cap=%g zscale=%g", N, V, cap, zscale);

    float *l1 = galloc_nan(N), *l2 = galloc_nan(N), *g1 = galloc_nan(n), *g2 = galloc_nan(n);
    ref_softcap_ce(l1, g1, z, tg, N, V, cap, dscale);
    avx512_softcap_ce(l2, g2, z, tg, N, V, cap, dscale);  // separate output
    note(W_CE_LOSS, check_tol(l2, l1, tl, N, what));
    note(W_CE_GRAD, check_tol(g2, g1, tgr, n, what));
    check_guard(l2, N, what), check_guard(g2, n, what);

    float *za = galloc_copy(z, n), *l3 = galloc_nan(N);  // dlogits aliasing logits
    avx512_softcap_ce(l3, za, za, tg, N, V, cap, dscale);
    note(W_CE_LOSS, check_tol(l3, l1, tl, N, what));
    note(W_CE_GRAD, check_tol(za, g1, tgr, n, what));
    check_guard(za, n, what);

    float *l4 = galloc_nan(N);  // no gradient
    avx512_softcap_ce(l4, NULL, z, tg, N, V, cap, dscale);
    note(W_CE_LOSS, check_tol(l4, l1, tl, N, what));
    check_guard(l4, N, what);

    float *l5 = galloc_nan(N), *g5 = galloc_nan(n);  // no targets: zero losses and gradients
    avx512_softcap_ce(l5, g5, z, NULL, N, V, cap, dscale);
    for (int i = 0; i < N; i++) assert_true(l5[i] == 0.0f);
    for (size_t i = 0; i < n; i++) assert_true(g5[i] == 0.0f);
    check_guard(g5, n, what);
    free(z), free(tg), free(tl), free(tgr), free(l1), free(l2), free(g1), free(g2), free(za), free(l3), free(l4),
        free(l5), free(g5);
}

static void test_softcap_ce(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const int Vs[] = {2, 15, 16, 17, 100, 1000, 8192, 8200};
    for (size_t v = 0; v < sizeof Vs / sizeof *Vs; v++) {
        ce_case(5, Vs[v], 15.0f, 3.0f, 1.0f / 5, 1);
        ce_case(3, Vs[v], 0.0f, 3.0f, 0.5f, 1);
        ce_case(4, Vs[v], 2.0f, 4.0f, 1.0f, 0);    // most logits in tanh's exp branch
        ce_case(2, Vs[v], 0.0f, 30.0f, -2.0f, 0);  // peaky rows, tiny probabilities
        ce_case(1, Vs[v], 30.0f, 0.1f, 1.0f, 0);   // nearly uniform
    }
    ce_case(33, 8192, 15.0f, 5.0f, 1.0f / 33, 1);
}

// ---------------------------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------------------------

typedef struct {
    int B, T, H, Hkv, D, window;
} AttCase;

// The last six with a sliding window: 1 key, within a block, one block (64), across blocks (100,
// 150: whole key blocks skipped on both sides of the window), and one at least T (no effect).
static const AttCase ATT_CASES[] = {
    {1, 1, 1, 1, 64, 0},   {2, 5, 2, 1, 32, 0},   {1, 64, 1, 1, 128, 0}, {1, 65, 4, 2, 64, 0},
    {2, 130, 4, 2, 32, 0}, {1, 200, 2, 2, 128, 0}, {3, 17, 3, 1, 16, 0}, {1, 128, 2, 1, 64, 0},
    {1, 256, 1, 1, 128, 0}, {2, 3, 2, 2, 8, 0},   {1, 67, 6, 3, 48, 0},  {2, 70, 2, 1, 32, 1},
    {1, 130, 4, 2, 64, 20}, {1, 200, 2, 2, 64, 64}, {2, 300, 2, 1, 32, 100}, {1, 400, 4, 2, 16, 150},
    {1, 65, 2, 2, 32, 80},
};

typedef struct {
    size_t nq, nkv, nl;
    float *q, *k, *v, *dout, *out, *lse;  // inputs; out/lse from the reference forward
} AttInputs;

static AttInputs att_inputs(const AttCase *c, float qscale) {
    AttInputs a = {.nq = (size_t)c->B * c->T * c->H * c->D, .nkv = (size_t)c->B * c->T * c->Hkv * c->D,
                   .nl = (size_t)c->B * c->H * c->T};
    a.q = galloc(a.nq), a.k = galloc(a.nkv), a.v = galloc(a.nkv), a.dout = galloc(a.nq);
    fill_normal(a.q, a.nq, qscale);
    fill_normal(a.k, a.nkv, 1);
    fill_normal(a.v, a.nkv, 1);
    fill_normal(a.dout, a.nq, 1);
    a.out = galloc_nan(a.nq), a.lse = galloc_nan(a.nl);
    ref_attention_fwd(a.out, a.lse, a.q, a.k, a.v, c->B, c->T, c->H, c->Hkv, c->D, c->window);
    return a;
}
static void att_free(AttInputs *a) { free(a->q), free(a->k), free(a->v), free(a->dout), free(a->out), free(a->lse); }

// Largest Euclidean norm of the rows of D floats.
static float max_row_norm(const float *x, size_t n, int D) {
    double m = 0;
    for (size_t r = 0; r < n / D; r++) {
        double s = 0;
        for (int d = 0; d < D; d++) s += (double)x[r * D + d] * x[r * D + d];
        m = s > m ? s : m;
    }
    return (float)sqrt(m);
}

static void fill_tol(float *tol, size_t n, float v) {
    for (size_t i = 0; i < n; i++) tol[i] = v;
}

static void att_case(const AttCase *c, float qscale) {
    AttInputs a = att_inputs(c, qscale);
    char what[160];
    snprintf(what, sizeof what, "attention B=%d T=%d H=%d Hkv=%d D=%d window=%d qscale=%g", c->B, c->T, c->H, c->Hkv,
             c->D, c->window, qscale);
    float *o = galloc_nan(a.nq), *l = galloc_nan(a.nl), *tol = galloc(a.nq > a.nkv ? a.nq : a.nkv);
    avx512_attention_fwd(o, l, a.q, a.k, a.v, c->B, c->T, c->H, c->Hkv, c->D, c->window);
    fill_tol(tol, a.nq, 1e-5f * max_abs(a.v, a.nkv));
    note(W_ATT_OUT, check_tol(o, a.out, tol, a.nq, what));
    for (size_t i = 0; i < a.nl; i++) tol[i] = 4e-6f * (1 + fabsf(a.lse[i]));
    note(W_ATT_LSE, check_tol(l, a.lse, tol, a.nl, what));
    check_guard(o, a.nq, what), check_guard(l, a.nl, what);

    float *dq1 = galloc_nan(a.nq), *dk1 = galloc_nan(a.nkv), *dv1 = galloc_nan(a.nkv);
    float *dq2 = galloc_nan(a.nq), *dk2 = galloc_nan(a.nkv), *dv2 = galloc_nan(a.nkv);
    ref_attention_bwd(dq1, dk1, dv1, a.dout, a.out, a.lse, a.q, a.k, a.v, c->B, c->T, c->H, c->Hkv, c->D, c->window);
    avx512_attention_bwd(dq2, dk2, dv2, a.dout, a.out, a.lse, a.q, a.k, a.v, c->B, c->T, c->H, c->Hkv, c->D,
                         c->window);
    // dq and dk are sums of p (dp - D_i) scale k (resp. q), where dp - D_i may cancel (T = 1 leaves
    // only rounding noise): their tolerance also covers the size of those terms.
    float g = 2.0f / sqrtf((float)c->D) * max_row_norm(a.dout, a.nq, c->D) * max_row_norm(a.v, a.nkv, c->D);
    fill_tol(tol, a.nq, 5e-5f * max_abs(dq1, a.nq) + 1e-6f * g * max_abs(a.k, a.nkv));
    note(W_ATT_GRAD, check_tol(dq2, dq1, tol, a.nq, what));
    fill_tol(tol, a.nkv, 5e-5f * max_abs(dk1, a.nkv) + 1e-6f * g * max_abs(a.q, a.nq));
    note(W_ATT_GRAD, check_tol(dk2, dk1, tol, a.nkv, what));
    fill_tol(tol, a.nkv, 5e-5f * max_abs(dv1, a.nkv));
    note(W_ATT_GRAD, check_tol(dv2, dv1, tol, a.nkv, what));
    check_guard(dq2, a.nq, what), check_guard(dk2, a.nkv, what), check_guard(dv2, a.nkv, what);
    free(o), free(l), free(tol), free(dq1), free(dk1), free(dv1), free(dq2), free(dk2), free(dv2);
    att_free(&a);
}

static void test_attention(void **state) {
    (void)state;
    REQUIRE_AVX512();
    for (size_t i = 0; i < sizeof ATT_CASES / sizeof *ATT_CASES; i++) {
        att_case(&ATT_CASES[i], 1.0f);
        att_case(&ATT_CASES[i], 4.0f);  // peaky softmax
    }
}

// ---------------------------------------------------------------------------------------------
// Thread invariance: identical bytes whatever the thread count (and attention backward's two
// schedules agree bit for bit).
// ---------------------------------------------------------------------------------------------

static void att_run(const AttCase *c, const AttInputs *a, float *o, float *l, float *dq, float *dk, float *dv) {
    avx512_attention_fwd(o, l, a->q, a->k, a->v, c->B, c->T, c->H, c->Hkv, c->D, c->window);
    avx512_attention_bwd(dq, dk, dv, a->dout, a->out, a->lse, a->q, a->k, a->v, c->B, c->T, c->H, c->Hkv, c->D,
                         c->window);
}

static void test_thread_invariance_attention(void **state) {
    (void)state;
    REQUIRE_AVX512();
    const AttCase cases[] = {{2, 130, 4, 2, 64, 0}, {1, 200, 2, 1, 128, 0}, {4, 70, 2, 2, 32, 0}, {2, 300, 2, 1, 32, 100}};
    const char *schedules[] = {"split", "fused", NULL};
    int saved = omp_get_max_threads();
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const AttCase *c = &cases[ci];
        AttInputs a = att_inputs(c, 2.0f);
        float *base[5] = {NULL};
        for (int sch = 0; sch < 3; sch++)
            for (int nt = 1; nt <= 3; nt++) {
                if (schedules[sch]) setenv("FRONTIER_ATTN_BWD", schedules[sch], 1);
                else unsetenv("FRONTIER_ATTN_BWD");
                omp_set_num_threads(nt);
                float *r[5] = {galloc_nan(a.nq), galloc_nan(a.nl), galloc_nan(a.nq), galloc_nan(a.nkv),
                               galloc_nan(a.nkv)};
                att_run(c, &a, r[0], r[1], r[2], r[3], r[4]);
                size_t sz[5] = {a.nq, a.nl, a.nq, a.nkv, a.nkv};
                for (int t = 0; t < 5; t++) {
                    if (!base[t]) { base[t] = r[t]; continue; }
                    if (memcmp(base[t], r[t], sz[t] * sizeof(float)))
                        fail_msg("attention output %d differs with %d threads, schedule %s", t, nt,
                                 schedules[sch] ? schedules[sch] : "auto");
                    free(r[t]);
                }
            }
        unsetenv("FRONTIER_ATTN_BWD");
        for (int t = 0; t < 5; t++) free(base[t]);
        att_free(&a);
    }
    omp_set_num_threads(saved);
}

static void test_thread_invariance_ops(void **state) {
    (void)state;
    REQUIRE_AVX512();
    int saved = omp_get_max_threads();
    const int N = 37, V = 1000, C = 100, Vocab = 11;
    size_t n = (size_t)N * V;
    float *z = galloc(n), *x = galloc((size_t)N * C), *g = galloc((size_t)N * C);
    fill_normal(z, n, 4);
    fill_normal(x, (size_t)N * C, 1);
    fill_normal(g, (size_t)N * C, 1);
    int32_t tg[37], idx[37];
    for (int i = 0; i < N; i++) tg[i] = i % 5 ? (int32_t)(rnd_u64() % V) : -1, idx[i] = (int32_t)(rnd_u64() % Vocab);
    float *keep[6] = {NULL};
    for (int nt = 1; nt <= 3; nt++) {
        omp_set_num_threads(nt);
        float *l = galloc_nan(N), *d = galloc_nan(n), *o = galloc_nan((size_t)N * C), *r = galloc_nan(N);
        float *dx = galloc_nan((size_t)N * C), *dw = galloc((size_t)Vocab * C);
        memset(dw, 0, (size_t)Vocab * C * sizeof *dw);
        avx512_softcap_ce(l, d, z, tg, N, V, 15.0f, 0.1f);
        avx512_rmsnorm_fwd(o, r, x, N, C);
        avx512_rmsnorm_bwd(dx, g, x, r, N, C, 0);
        avx512_embedding_bwd(dw, g, idx, N, C);
        float *got[6] = {l, d, o, r, dx, dw};
        size_t sz[6] = {(size_t)N, n, (size_t)N * C, (size_t)N, (size_t)N * C, (size_t)Vocab * C};
        for (int t = 0; t < 6; t++) {
            if (!keep[t]) { keep[t] = got[t]; continue; }
            if (memcmp(keep[t], got[t], sz[t] * sizeof(float))) fail_msg("op %d differs with %d threads", t, nt);
            free(got[t]);
        }
    }
    for (int t = 0; t < 6; t++) free(keep[t]);
    free(z), free(x), free(g);
    omp_set_num_threads(saved);
}

// Empty inputs touch nothing (and do not crash).
static void test_empty(void **state) {
    (void)state;
    REQUIRE_AVX512();
    float *g = galloc(0);
    avx512_softcap_ce(g, g, g, NULL, 0, 8, 15.0f, 1.0f);
    avx512_attention_fwd(g, g, g, g, g, 1, 0, 2, 1, 64, 0);
    avx512_attention_bwd(g, g, g, g, g, g, g, g, g, 1, 0, 2, 1, 64, 0);
    avx512_rmsnorm_fwd(g, g, g, 0, 16);
    avx512_relu2_fwd(g, g, 0);
    avx512_embedding_bwd(g, g, NULL, 0, 16);
    check_guard(g, 0, "empty");
    free(g);
}

static void test_report(void **state) {
    (void)state;
    REQUIRE_AVX512();
    for (int i = 0; i < W_N; i++) print_message("worst err/tol %-20s %.2e\n", worst_name[i], worst_ratio[i]);
}

int main(void) {
    if (!have_avx512()) return test_exit_skip(1, "this CPU lacks AVX-512 F/BW/VL, which every case here runs");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vmath_accuracy),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_relu2),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_rope_rmsnorm),
        cmocka_unit_test(test_softcap_ce),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_thread_invariance_attention),
        cmocka_unit_test(test_thread_invariance_ops),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
