// tests/kernels/rows/test_avx2_ops.c — the AVX2 ops beyond the matmuls (avx2_ops.h) and their vector
// math (avx2_vmath.h). Skipped on CPUs without AVX2 and FMA.
//
//   vector exp / tanh     against libm, relative 4e-7 (as the AVX-512 ones); and, where the CPU
//                         has AVX-512 too, bit for bit the AVX-512 functions' results, over
//                         their whole input range (exp's subnormal results included);
//   softcap_ce            against the reference with test_avx512_ops.c's tolerances (loss 1e-6 of
//                         its terms, dlogits 1e-5 · |dscale| · (p + onehot)); outputs NaN-filled and
//                         guarded by canaries; 1, 2 and 3 threads give the same bytes;
//   softcap_ce_inplace    bit for bit avx2_softcap_ce on each row, with padded rows (ldz > V),
//                         streamed and plain dlogits stores, ignored targets;
//   row ops               embedding_bwd, rmsnorm_fwd/bwd (accumulating, and dx aliasing dout),
//                         rope_fwd/bwd, rope_rmsnorm_fwd/bwd, relu2_fwd/bwd (NaN, ±0) as the avx2
//                         table dispatches them: bit for bit the AVX-512 table's where the CPU has
//                         it, else within 1e-6 of the reference; ragged widths (1 to 131, not
//                         multiples of 8); outputs NaN-filled and guarded by canaries; 1 and 3
//                         threads give the same bytes.
#include <float.h>
#include <math.h>
#include <omp.h>

#include "test_util.h"

#include "kernels/rows/avx2_ops.h"
#include "kernels/simd/avx2_vmath.h"
#include "kernels/simd/avx512_vmath.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "util/rng.h"

#define GUARD 8
#define CANARY 12345.678f

static uint64_t rng_state = 7;
static double rnd_unif(void) { return (double)(splitmix64(&rng_state) >> 11) * 0x1.0p-53; }
static float rnd_normal(void) {
    double u1 = rnd_unif(), u2 = rnd_unif();
    return (float)(sqrt(-2.0 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(6.283185307179586 * u2));
}

// n floats, NaN, then GUARD canaries.
static float *galloc_nan(size_t n) {
    float *p = malloc((n + GUARD) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    for (size_t i = 0; i < GUARD; i++) p[n + i] = CANARY;
    return p;
}
static void check_guard(const float *p, size_t n, const char *what) {
    for (size_t i = 0; i < GUARD; i++)
        if (p[n + i] != CANARY) fail_msg("%s: canary %zu past the end overwritten", what, i);
}
static void check_same(const float *got, const float *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof *got))
            fail_msg("%s: element %zu is %.9g, expected the same bits as %.9g", what, i, got[i], want[i]);
}

static int have_avx2(void) { return cpu_info()->avx2 && cpu_info()->fma; }
static int have_avx512(void) { return cpu_info()->avx512f && cpu_info()->avx512bw && cpu_info()->avx512vl; }
#define REQUIRE_AVX2()            \
    do {                          \
        if (!have_avx2()) SKIP_HARDWARE("this CPU lacks AVX2 + FMA"); \
    } while (0)

// ---------------------------------------------------------------------------------------------
// Vector exp and tanh
// ---------------------------------------------------------------------------------------------

static AVX2_FN void vexp8(float *y, const float *x) { _mm256_storeu_ps(y, v8_exp(_mm256_loadu_ps(x))); }
static AVX2_FN void vtanh8(float *y, const float *x) { _mm256_storeu_ps(y, v8_tanh(_mm256_loadu_ps(x))); }
static AVX512_FN void vexp16(float *y, const float *x) { _mm512_storeu_ps(y, v_exp(_mm512_loadu_ps(x))); }
static AVX512_FN void vtanh16(float *y, const float *x) { _mm512_storeu_ps(y, v_tanh(_mm512_loadu_ps(x))); }

// Over [lo, hi] sampled densely: the max relative error against libm, and with `same` (AVX-512
// present) a failure on the first lane whose bits differ from the AVX-512 function's.
static double sweep(void (*f8)(float *, const float *), void (*f16)(float *, const float *), double (*ref)(double),
                    double lo, double hi, int n, const char *what) {
    double worst = 0;
    float x[16], y[16], z[16];
    for (int i = 0; i < n; i += 16) {
        for (int l = 0; l < 16; l++) x[l] = (float)(lo + (hi - lo) * (i + l) / (n - 1));
        f8(y, x), f8(y + 8, x + 8);
        if (have_avx512()) {
            f16(z, x);
            for (int l = 0; l < 16; l++)
                if (memcmp(&y[l], &z[l], sizeof *y))
                    fail_msg("%s(%.9g): %.9g, AVX-512 %.9g", what, x[l], y[l], z[l]);
        }
        for (int l = 0; l < 16; l++) {
            double want = ref(x[l]);
            if (fabs(want) > FLT_MAX) {  // beyond float's range: inf
                if (!isinf(y[l])) fail_msg("%s(%.9g): %.9g, want inf", what, x[l], y[l]);
                continue;
            }
            if (want == 0 || fabs(want) < 0x1p-126) continue;  // subnormal results: compared bitwise only
            double e = fabs((y[l] - want) / want);
            if (e > worst) worst = e;
        }
    }
    return worst;
}

static void test_vmath(void **state) {
    (void)state;
    REQUIRE_AVX2();
    double e_exp = sweep(vexp8, vexp16, exp, -104.5, 89.5, 1 << 20, "exp");
    double e_exp2 = sweep(vexp8, vexp16, exp, -1.0, 1.0, 1 << 18, "exp");
    double e_tanh = sweep(vtanh8, vtanh16, tanh, -12.0, 12.0, 1 << 20, "tanh");
    double e_tanh2 = sweep(vtanh8, vtanh16, tanh, -1.0, 1.0, 1 << 18, "tanh");
    print_message("avx2 exp max rel err %.3g (near 0: %.3g); tanh %.3g (near 0: %.3g)%s\n", e_exp, e_exp2, e_tanh,
                  e_tanh2, have_avx512() ? "; bit for bit the AVX-512 functions" : "");
    assert_true(e_exp < 4e-7 && e_exp2 < 4e-7);
    assert_true(e_tanh < 4e-7 && e_tanh2 < 4e-7);
    // Special values: exp(-inf) = 0, below the range 0, NaN stays NaN, overflow to inf; tanh
    // saturates to ±1 and keeps tiny values and signed zeros.
    float x[8] = {-INFINITY, -200.0f, -104.5f, NAN, 0.0f, -0.0f, 100.0f, 88.8f}, y[8];
    vexp8(y, x);
    assert_true(y[0] == 0 && y[1] == 0 && y[2] == 0 && isnan(y[3]) && y[4] == 1 && y[5] == 1 && isinf(y[6]) &&
                isinf(y[7]));
    float t[8] = {50.0f, -50.0f, 0.0f, 1e-30f, -1e-30f, 9.0f, -9.0f, NAN}, z[8];
    vtanh8(z, t);
    assert_true(z[0] == 1 && z[1] == -1 && z[2] == 0 && z[3] == 1e-30f && z[4] == -1e-30f && isnan(z[7]));
    assert_true(fabs(z[5] - tanh(9.0)) < 2e-7 && fabs(z[6] + tanh(9.0)) < 2e-7);
}

// ---------------------------------------------------------------------------------------------
// Softcapped cross-entropy
// ---------------------------------------------------------------------------------------------

// Loss and dlogits tolerances from the row statistics in double (test_avx512_ops.c's).
static void ce_tolerances(float *tl, float *tgr, const float *z, const int32_t *tg, int N, int V, float cap,
                          float dscale) {
    for (int n = 0; n < N; n++) {
        const float *zr = z + (size_t)n * V;
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < V; i++) mx = fmax(mx, cap > 0 ? cap * tanh(zr[i] / cap) : zr[i]);
        for (int i = 0; i < V; i++) sum += exp((cap > 0 ? cap * tanh(zr[i] / cap) : zr[i]) - mx);
        double ct = tg[n] >= 0 ? (cap > 0 ? cap * tanh(zr[tg[n]] / cap) : zr[tg[n]]) : 0;
        tl[n] = (float)(1e-6 * (fabs(mx) + fabs(log(sum)) + fabs(ct)) + 1e-6);
        for (int i = 0; i < V; i++) {
            double p = exp((cap > 0 ? cap * tanh(zr[i] / cap) : zr[i]) - mx) / sum;
            tgr[(size_t)n * V + i] = (float)(fabs(dscale) * (1e-5 * (p + (i == tg[n])) + 1e-9));
        }
    }
}

static void check_tol(const float *got, const float *want, const float *tol, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol[i]))
            fail_msg("%s: element %zu is %.9g, reference %.9g (tol %.3g)", what, i, got[i], want[i], tol[i]);
}

static void ce_case(int N, int V, float cap, float zscale, float dscale) {
    size_t n = (size_t)N * V;
    float *z = malloc(n * sizeof *z), *tl = malloc(N * sizeof *tl), *tgr = malloc(n * sizeof *tgr);
    int32_t *tg = malloc(N * sizeof *tg);
    for (size_t i = 0; i < n; i++) z[i] = zscale * rnd_normal();
    for (int i = 0; i < N; i++) tg[i] = i % 3 == 1 ? -1 : (int32_t)(splitmix64(&rng_state) % (uint64_t)V);
    ce_tolerances(tl, tgr, z, tg, N, V, cap, dscale);
    char what[120];
    snprintf(what, sizeof what, "avx2_softcap_ce N=%d V=%d cap=%g zscale=%g", N, V, cap, zscale);

    float *l_ref = galloc_nan(N), *g_ref = galloc_nan(n);
    ref_softcap_ce(l_ref, g_ref, z, tg, N, V, cap, dscale);
    float *l = galloc_nan(N), *g = galloc_nan(n);
    avx2_softcap_ce(l, g, z, tg, N, V, cap, dscale);
    check_tol(l, l_ref, tl, N, what);
    check_tol(g, g_ref, tgr, n, what);
    check_guard(l, N, what), check_guard(g, n, what);

    float *la = galloc_nan(N), *ga = galloc_nan(n);  // dlogits aliasing the logits
    memcpy(ga, z, n * sizeof *ga);
    avx2_softcap_ce(la, ga, ga, tg, N, V, cap, dscale);
    check_same(la, l, N, what), check_same(ga, g, n, what);
    float *ln = galloc_nan(N);  // no gradient
    avx2_softcap_ce(ln, NULL, z, tg, N, V, cap, dscale);
    check_same(ln, l, N, what), check_guard(ln, N, what);

    for (int threads = 1; threads <= 3; threads++) {  // the same bytes at any thread count
        float *lt = galloc_nan(N), *gt = galloc_nan(n);
        omp_set_num_threads(threads);
        avx2_softcap_ce(lt, gt, z, tg, N, V, cap, dscale);
        check_same(lt, l, N, what), check_same(gt, g, n, what);
        free(lt), free(gt);
    }
    omp_set_num_threads(2);

    // the fused head's epilogue: rows ldz apart, overwritten with the gradient (ignored rows with
    // zeros), dlogits streamed when aligned (a 32-byte aligned copy) or not (offset by one float)
    size_t ldz = (size_t)V + 5;
    for (int offset = 0; offset < 2; offset++) {
        float *zz = malloc((size_t)N * ldz * sizeof *zz), *li = galloc_nan(N), *scratch = malloc(V * sizeof *scratch);
        float *gbuf = aligned_alloc(32, ((n + 1 + GUARD) * sizeof(float) + 31) / 32 * 32), *gi = gbuf + offset;
        for (size_t i = 0; i < n + GUARD; i++) gi[i] = i < n ? NAN : CANARY;
        for (int r = 0; r < N; r++) memcpy(zz + (size_t)r * ldz, z + (size_t)r * V, V * sizeof *zz);
        avx2_softcap_ce_inplace(li, gi, zz, ldz, tg, N, V, cap, dscale, scratch);
        check_same(li, l, N, what), check_same(gi, g, n, what), check_guard(gi, n, what);
        for (int r = 0; r < N; r++) check_same(zz + (size_t)r * ldz, g + (size_t)r * V, V, what);  // left in place
        free(zz), free(li), free(scratch), free(gbuf);
    }
    free(z), free(tl), free(tgr), free(tg), free(l_ref), free(g_ref), free(l), free(g), free(la), free(ga), free(ln);
}

static void test_softcap_ce(void **state) {
    (void)state;
    REQUIRE_AVX2();
    const int Vs[] = {1, 2, 7, 8, 9, 31, 32, 33, 100, 1000, 8192, 8200};
    for (size_t v = 0; v < sizeof Vs / sizeof *Vs; v++) {
        ce_case(5, Vs[v], 15.0f, 3.0f, 1.0f / 5);
        ce_case(3, Vs[v], 0.0f, 3.0f, 0.5f);
        ce_case(4, Vs[v], 2.0f, 4.0f, 1.0f);    // most logits in tanh's exp branch
        ce_case(2, Vs[v], 0.0f, 30.0f, -2.0f);  // peaky rows, tiny probabilities
        ce_case(1, Vs[v], 30.0f, 0.1f, 1.0f);   // nearly uniform
    }
    ce_case(33, 8192, 15.0f, 5.0f, 1.0f / 33);
}

// ---------------------------------------------------------------------------------------------
// Row ops: embedding gradient, RMSNorm, RoPE, ReLU²
// ---------------------------------------------------------------------------------------------

// Every row op of table k on one shape, its outputs (and rstd) appended to out (NaN-filled, then
// checked for untouched canaries): norms over N rows of C, RoPE over B=2 x T=3 rows of nh heads
// of D, ReLU² over n = N·C + 3 elements with NaN and ±0 among them, the embedding gradient of
// N positions into 7 vocabulary rows of C. Inputs depend on the shape alone.
typedef struct {
    float *v;
    size_t n, cap;
} Outs;

static float *outs_take(Outs *o, size_t n) {
    if (o->n + n + GUARD > o->cap) fail_msg("test bug: Outs too small");
    float *p = o->v + o->n;
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    for (size_t i = 0; i < GUARD; i++) p[n + i] = CANARY;
    o->n += n + GUARD;
    return p;
}

static float *normals(size_t n, uint64_t seed) {
    float *p = malloc(n * sizeof *p);
    uint64_t keep = rng_state;
    rng_state = seed;
    for (size_t i = 0; i < n; i++) p[i] = rnd_normal();
    rng_state = keep;
    return p;
}

static void row_ops(const Kernels *k, Outs *o, int N, int C, int nh, int D) {
    float *x = normals((size_t)N * C, 11), *g = normals((size_t)N * C, 12);
    // RMSNorm forward, backward (plain, accumulating onto g, in place over a copy of dout)
    float *y = outs_take(o, (size_t)N * C), *rstd = outs_take(o, N);
    k->rmsnorm_fwd(y, rstd, x, N, C);
    check_guard(y, (size_t)N * C, "rmsnorm_fwd"), check_guard(rstd, N, "rmsnorm_fwd rstd");
    float *dx = outs_take(o, (size_t)N * C);
    k->rmsnorm_bwd(dx, g, x, rstd, N, C, 0);
    float *acc = outs_take(o, (size_t)N * C);
    memcpy(acc, x, (size_t)N * C * sizeof *acc);
    k->rmsnorm_bwd(acc, g, x, rstd, N, C, 1);
    float *alias = outs_take(o, (size_t)N * C);
    memcpy(alias, g, (size_t)N * C * sizeof *alias);
    k->rmsnorm_bwd(alias, alias, x, rstd, N, C, 0);
    check_same(alias, dx, (size_t)N * C, "rmsnorm_bwd, dx aliasing dout");
    check_guard(dx, (size_t)N * C, "rmsnorm_bwd"), check_guard(acc, (size_t)N * C, "rmsnorm_bwd accumulate");
    // RoPE and RoPE + QK-norm over B=2, T=3
    int B = 2, T = 3, R = B * T;
    size_t nq = (size_t)R * nh * D;
    float *q = normals(nq, 13), *dq = normals(nq, 14), *cs = normals((size_t)T * D / 2, 15), *sn = normals((size_t)T * D / 2, 16);
    float *rf = outs_take(o, nq), *rb = outs_take(o, nq);
    memcpy(rf, q, nq * sizeof *rf), memcpy(rb, q, nq * sizeof *rb);
    k->rope_fwd(rf, cs, sn, B, T, nh, D);
    k->rope_bwd(rb, cs, sn, B, T, nh, D);
    float *qr = outs_take(o, nq), *qn = outs_take(o, nq), *qrs = outs_take(o, (size_t)R * nh), *dqn = outs_take(o, nq);
    memcpy(qr, q, nq * sizeof *qr);
    k->rope_rmsnorm_fwd(qn, qrs, qr, cs, sn, B, T, nh, D);
    k->rope_rmsnorm_bwd(dqn, dq, qr, qrs, cs, sn, B, T, nh, D);
    check_guard(rf, nq, "rope_fwd"), check_guard(rb, nq, "rope_bwd"), check_guard(qn, nq, "rope_rmsnorm_fwd");
    check_guard(qrs, (size_t)R * nh, "rope_rmsnorm_fwd rstd"), check_guard(dqn, nq, "rope_rmsnorm_bwd");
    // ReLU², with NaN, ±0 and negatives in x (and a NaN in dout where x <= 0: the result is +0)
    size_t n = (size_t)N * C + 3;
    float *a = normals(n, 17), *da = normals(n, 18);
    a[0] = NAN, a[n / 2] = -0.0f, a[n - 1] = 0.0f;
    if (n > 3 && a[1] <= 0) da[1] = NAN;
    float *r2 = outs_take(o, n), *dr2 = outs_take(o, n);
    k->relu2_fwd(r2, a, n);
    k->relu2_bwd(dr2, da, a, n);
    check_guard(r2, n, "relu2_fwd"), check_guard(dr2, n, "relu2_bwd");
    // embedding gradient: N positions into 7 rows, repeated indices, onto a non-zero start
    int32_t *idx = malloc(N * sizeof *idx);
    for (int i = 0; i < N; i++) idx[i] = (int32_t)((i * 5 + 3) % 7);
    float *dw = outs_take(o, (size_t)7 * C), *w0 = normals((size_t)7 * C, 19);
    memcpy(dw, w0, (size_t)7 * C * sizeof *dw);
    k->embedding_bwd(dw, g, idx, N, C);
    check_guard(dw, (size_t)7 * C, "embedding_bwd");
    free(x), free(g), free(q), free(dq), free(cs), free(sn), free(a), free(da), free(idx), free(w0);
}

static void check_close(const float *got, const float *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &want[i], sizeof *got) == 0) continue;  // NaN, canaries, exact
        if (!(fabs((double)got[i] - want[i]) <= 1e-6 * (fabs(want[i]) + 1)))
            fail_msg("%s: element %zu is %.9g, reference %.9g", what, i, got[i], want[i]);
    }
}

static void test_row_ops(void **state) {
    (void)state;
    REQUIRE_AVX2();
    const Kernels *avx2 = kernels_variant(KV_AVX2), *avx512 = kernels_variant(KV_AVX512);
    assert_non_null(avx2);
    assert_ptr_equal(avx2->rmsnorm_fwd, avx2_rmsnorm_fwd);  // the table dispatches these
    assert_ptr_equal(avx2->rope_rmsnorm_bwd, avx2_rope_rmsnorm_bwd);
    static const int shapes[][4] = {  // N, C, nh, D
        {1, 1, 1, 2}, {3, 5, 1, 10}, {4, 8, 2, 16}, {3, 9, 1, 18}, {2, 12, 3, 34}, {5, 16, 1, 32}, {3, 23, 2, 18}, {2, 25, 2, 50},
        {7, 128, 2, 128}, {2, 131, 3, 130}, {64, 640, 5, 128},
    };
    size_t cap = 1 << 22;
    Outs want = {malloc(cap * sizeof(float)), 0, cap}, got = {malloc(cap * sizeof(float)), 0, cap};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int *sh = shapes[s];
        char what[96];
        snprintf(what, sizeof what, "row ops N=%d C=%d nh=%d D=%d", sh[0], sh[1], sh[2], sh[3]);
        want.n = got.n = 0;
        int bitwise = avx512 != NULL;
        row_ops(bitwise ? avx512 : &KERNELS_REF, &want, sh[0], sh[1], sh[2], sh[3]);
        for (int threads = 1; threads <= 3; threads += 2) {
            omp_set_num_threads(threads);
            got.n = 0;
            row_ops(avx2, &got, sh[0], sh[1], sh[2], sh[3]);
            assert_int_equal(got.n, want.n);
            if (bitwise) check_same(got.v, want.v, got.n, what);
            else check_close(got.v, want.v, got.n, what);
        }
        omp_set_num_threads(2);
    }
    print_message("row ops on %zu shapes: %s\n", sizeof shapes / sizeof *shapes,
                  avx512 ? "bit for bit the AVX-512 table's at 1 and 3 threads" : "within 1e-6 of the reference");
    free(want.v), free(got.v);
}

int main(void) {
    if (!have_avx2()) return test_exit_skip(1, "this CPU lacks AVX2 + FMA, which every case here runs");
    if (!have_avx512())
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX-512: the AVX2 exp and tanh are not compared bit for bit with "
                              "the AVX-512 ones");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vmath),
        cmocka_unit_test(test_softcap_ce),
        cmocka_unit_test(test_row_ops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
