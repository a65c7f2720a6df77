// kernels/lab/lab.c — checking kernel tables against the reference (see lab.h); the benchmark is
// in lab_bench.c.
#include "kernels/lab/lab.h"
#include "kernels/lab/guard.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/attention/attention_bf16.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/head/head.h"
#include "kernels/ref/ref.h"
#include "util/error.h"
#include "util/mem.h"
#include "util/rng.h"

// The fast attention and cross-entropy use polynomial exp/tanh (1-2 ulp) and sum in another
// order than ref: their errors sit around 1e-6 of the output scale; 2e-5 leaves headroom
// without hiding a real bug (those show up as 1e-3 and beyond).
double lab_default_tol(int op) {
    const char *name = KERNEL_OP_NAMES[op];
    if (!strncmp(name, "attention", 9) || !strcmp(name, "softcap_ce") || !strcmp(name, "head_ce")) return 2e-5;
    return 1e-5;
}

// ---------------------------------------------------------------------------------------------
// A case: one shape of one op — its guarded buffers, oracle, and the call
// ---------------------------------------------------------------------------------------------

#define MAX_IN 8
#define MAX_OUT 4

typedef struct Case Case;
struct Case {
    const Kernels *k;
    char shape[160];
    int n_in, n_out, n_own;
    GBuf in[MAX_IN], out[MAX_OUT];
    const char *out_name[MAX_OUT];
    const float *init[MAX_OUT];    // content before each call (NULL: NaN)
    const float *expect[MAX_OUT];  // the oracle's result
    const double *scale[MAX_OUT];  // per-element error scale (NULL: |expect| + rms(expect))
    double tol[MAX_OUT];           // a tolerance of its own (0: the op's)
    void *own[16];                 // heap blocks freed with the case
    void (*call)(const Case *);
    // the op's arguments
    const float *a[6];
    const int32_t *idx;
    int M, N, K, acc, B, T, H, Hkv, D, mode, window;
    int bf16;  // matmul, head ops: the oracle rounds the operands to bf16; head ops' dlogits are bf16
    size_t n;
    float cap, dscale;
    float p;           // dropout
    uint32_t key, i0;  // dropout
};

static void *case_own(Case *c, size_t bytes) {
    if (c->n_own == (int)(sizeof c->own / sizeof *c->own)) abort();  // a check builder owns too many blocks
    void *p = xmalloc(bytes ? bytes : 1);
    c->own[c->n_own++] = p;
    return p;
}

static void fill(float *x, size_t n, Rng *r, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

// A sealed input of n floats, uniform in [lo, hi).
static const float *case_input(Case *c, size_t n, Rng *r, float lo, float hi) {
    GBuf *b = &c->in[c->n_in++];
    *b = gb_input(n, sizeof(float));
    fill(b->p, n, r, lo, hi);
    gb_seal(b);
    return b->p;
}

// A sealed input holding a copy of x.
static const float *case_input_copy(Case *c, const float *x, size_t n) {
    GBuf *b = &c->in[c->n_in++];
    *b = gb_input(n, sizeof(float));
    memcpy(b->p, x, n * sizeof *x);
    gb_seal(b);
    return b->p;
}

// A sealed input holding x rounded to bf16 (uint16 storage).
static const void *case_input_bf16(Case *c, const float *x, size_t n) {
    GBuf *b = &c->in[c->n_in++];
    *b = gb_input(n, sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) ((uint16_t *)b->p)[i] = head_bf16_bits(x[i]);
    gb_seal(b);
    return b->p;
}

// Output slot o: n floats, initial content init (NULL: NaN) and the expected result.
static float *case_output(Case *c, const char *name, size_t n, const float *init, const float *expect, int misalign) {
    int o = c->n_out++;
    c->out[o] = gb_output(n, sizeof(float), misalign);
    c->out_name[o] = name;
    c->init[o] = init;
    c->expect[o] = expect;
    return c->out[o].p;
}

static void case_free(Case *c) {
    for (int i = 0; i < c->n_in; i++) gb_free(&c->in[i]);
    for (int i = 0; i < c->n_out; i++) gb_free(&c->out[i]);
    for (int i = 0; i < c->n_own; i++) free(c->own[i]);
}

// ---------------------------------------------------------------------------------------------
// Running a case
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *op, *variant;
    const int *threads;
    int n_threads;
    double tol;
    int bf16;  // LabCheckOpts.bf16_operands
    LabOpResult *res;
    int case_failed;
} Run;

static void case_fail(Run *r, const Case *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void case_fail(Run *r, const Case *c, const char *fmt, ...) {
    if (!r->case_failed) r->res->failures++;
    r->case_failed = 1;
    if (r->res->first_failure[0]) return;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->res->first_failure, sizeof r->res->first_failure, "%s: %s", c->shape, msg);
}

// Worst error of y against x (metric of lab.h); *at = its index. slack: a relative error of x
// forgiven first (bf16 outputs: half an ulp of rounding).
static double output_error(const float *y, const float *x, const double *scale, size_t n, size_t *at, double slack) {
    double rms = 0;
    if (!scale) {
        for (size_t i = 0; i < n; i++) rms += (double)x[i] * x[i];
        rms = sqrt(rms / (double)(n ? n : 1)) + 1e-30;
    }
    double worst = 0;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)y[i] - x[i]) - slack * fabs((double)x[i]);
        double s = scale ? scale[i] : fabs((double)x[i]) + rms, e = (d > 0 ? d : 0) / (s > 0 ? s : 1e-30);
        if (isnan(y[i])) e = INFINITY;
        if (isnan(e)) e = INFINITY;
        if (e > worst) worst = e, *at = i;
    }
    return worst;
}

// An output of n bf16 values (NaN-filled before each call), judged against the fp32 `expect`
// with room for the rounding: |y - x| may exceed the tolerance by half a bf16 ulp of x.
static void case_output_bf16(Case *c, const char *name, size_t n, const float *expect, int misalign) {
    int o = c->n_out++;
    c->out[o] = gb_output(n, sizeof(uint16_t), misalign);
    c->out_name[o] = name;
    c->expect[o] = expect;
}

static void prepare_outputs(Case *c) {
    for (int o = 0; o < c->n_out; o++) {
        if (c->out[o].elem == sizeof(uint16_t))
            for (size_t i = 0; i < c->out[o].n; i++) ((uint16_t *)c->out[o].p)[i] = 0x7fc0;  // NaN
        else if (c->init[o]) memcpy(c->out[o].p, c->init[o], c->out[o].n * sizeof(float));
        else
            for (size_t i = 0; i < c->out[o].n; i++) c->out[o].p[i] = NAN;
    }
}

static int check_canaries(Run *r, Case *c, int threads) {
    int bad = 0;
    for (int o = 0; o < c->n_out; o++) {
        const char *where;
        size_t n = gb_damage(&c->out[o], &where);
        if (!n) continue;
        case_fail(r, c, "wrote outside %s (%zu canary bytes changed, first %s it) with %d threads", c->out_name[o], n,
                  where, threads);
        gb_restore_canaries(&c->out[o]);
        bad = 1;
    }
    return bad;
}

static void check_values(Run *r, Case *c) {
    for (int o = 0; o < c->n_out; o++) {
        size_t at, n = c->out[o].n;
        int half = c->out[o].elem == sizeof(uint16_t);
        float *y = c->out[o].p;
        if (half) {  // widened (exactly) for the comparison
            y = xmalloc((n ? n : 1) * sizeof *y);
            for (size_t i = 0; i < n; i++) y[i] = head_bf16_value(((const uint16_t *)c->out[o].p)[i]);
        }
        double e = output_error(y, c->expect[o], c->scale[o], n, &at, half ? 1.0 / 256 : 0.0);
        double tol = c->tol[o] > 0 ? c->tol[o] : r->tol;
        if (e / tol * r->tol > r->res->max_err) r->res->max_err = e / tol * r->tol;  // in units of the op's tol
        if (e > tol)
            case_fail(r, c, "%s[%zu] = %.9g, expected %.9g (error %.3g > tol %.3g)", c->out_name[o], at, y[at],
                      c->expect[o][at], e, tol);
        if (half) free(y);
    }
}

static void case_run(Run *r, Case *c) {
    r->res->cases++;
    r->case_failed = 0;
    float *first[MAX_OUT] = {0};
    int prev = omp_get_max_threads();
    for (int ti = 0; ti < r->n_threads && !r->case_failed; ti++) {
        int t = r->threads[ti];
        prepare_outputs(c);
        snprintf(lab_fault_context, sizeof lab_fault_context, "%s [%s] %s with %d threads", r->op, r->variant,
                 c->shape, t);
        omp_set_num_threads(t);
        c->call(c);
        omp_set_num_threads(prev);
        if (check_canaries(r, c, t)) break;
        if (ti == 0) {
            check_values(r, c);
            for (int o = 0; o < c->n_out; o++) {
                first[o] = xmalloc(c->out[o].n * c->out[o].elem + 1);
                memcpy(first[o], c->out[o].p, c->out[o].n * c->out[o].elem);
            }
            continue;
        }
        for (int o = 0; o < c->n_out; o++) {
            size_t elem = c->out[o].elem;
            for (size_t i = 0; i < c->out[o].n; i++)
                if (memcmp((char *)first[o] + i * elem, (char *)c->out[o].p + i * elem, elem)) {
                    case_fail(r, c, "%s[%zu] differs between %d and %d threads", c->out_name[o], i, r->threads[0], t);
                    break;
                }
        }
    }
    for (int o = 0; o < MAX_OUT; o++) free(first[o]);
}

// ---------------------------------------------------------------------------------------------
// Matmuls: a float64 oracle
// ---------------------------------------------------------------------------------------------

enum { NT, NN, TN };

static void call_matmul(const Case *c) {
    void (*f)(float *, const float *, const float *, int, int, int, int) =
        c->mode == NT ? c->k->matmul_nt : c->mode == NN ? c->k->matmul_nn : c->k->matmul_tn;
    f(c->out[0].p, c->a[0], c->a[1], c->M, c->N, c->K, c->acc);
}

// matmul_nt with its b pinned (kernels.h): packed once, read packed; must pass the same checks.
static void call_matmul_pinned(const Case *c) {
    if (kernels_pin_weight(c->a[1], c->N, c->K) != 0) abort();  // cannot happen: the only pin
    call_matmul(c);
    kernels_unpin_weights();
}

// expect (M,N) = c0 (or 0) + the product of layout (NT, NN or TN, as the matmuls) summed in
// float64, operands rounded to bf16 first when bf16; scale = |c0| + sum_k |a_ik b_kj|.
static void product_oracle(int layout, const float *a, const float *b, int M, int N, int K, int bf16,
                           const float *c0, float *expect, double *scale) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = c0 ? c0[(size_t)i * N + j] : 0, sa = fabs(s);
            for (int k = 0; k < K; k++) {
                float xf = layout == TN ? a[(size_t)k * M + i] : a[(size_t)i * K + k];
                float yf = layout == NT ? b[(size_t)j * K + k] : b[(size_t)k * N + j];
                double x = bf16 ? ref_round_bf16(xf) : xf, y = bf16 ? ref_round_bf16(yf) : yf;
                s += x * y;
                sa += fabs(x * y);
            }
            expect[(size_t)i * N + j] = (float)s;
            scale[(size_t)i * N + j] = sa > 0 ? sa : 1e-30;
        }
}

static void matmul_oracle(Case *c, const float *c0, float *expect, double *scale) {
    product_oracle(c->mode, c->a[0], c->a[1], c->M, c->N, c->K, c->bf16, c0, expect, scale);
}

static void check_matmul_shape(Run *r, const Kernels *k, int layout, int M, int N, int K, int acc, int misalign,
                               int pinned, Rng *rng) {
    Case c = {.k = k, .call = pinned ? call_matmul_pinned : call_matmul, .mode = layout, .M = M, .N = N, .K = K,
              .acc = acc, .bf16 = r->bf16};
    snprintf(c.shape, sizeof c.shape, "M=%d N=%d K=%d accumulate=%d%s", M, N, K, acc, pinned ? " pinned" : "");
    size_t nc = (size_t)M * N;
    c.a[0] = case_input(&c, (size_t)M * K, rng, -1, 1);
    c.a[1] = case_input(&c, (size_t)N * K, rng, -1, 1);
    float *c0 = NULL;
    if (acc) fill(c0 = case_own(&c, nc * sizeof(float)), nc, rng, -1, 1);
    float *expect = case_own(&c, nc * sizeof(float));
    double *scale = case_own(&c, nc * sizeof(double));
    matmul_oracle(&c, c0, expect, scale);
    case_output(&c, "c", nc, c0, expect, misalign);
    c.scale[0] = scale;
    case_run(r, &c);
    case_free(&c);
}

static void check_matmul(Run *r, const Kernels *k, int layout, int quick, Rng *rng) {
    static const int small[][3] = {{1, 1, 1},    {1, 33, 17},  {3, 5, 7},     {14, 32, 16},  {15, 33, 31},
                                   {33, 1, 5},   {29, 70, 129}, {64, 128, 385}, {2, 17, 1000}, {1, 300, 40}};
    static const int big[][3] = {{100, 130, 260}, {1, 1000, 128}, {128, 128, 512}, {17, 530, 777},
                                 {300, 300, 300}, {1024, 128, 128}, {28, 64, 4096}, {1000, 40, 1100},
                                 {45, 70, 1031}, {70, 33, 2049}};
    int i = 0;
    for (size_t s = 0; s < sizeof small / sizeof *small; s++, i++) {
        check_matmul_shape(r, k, layout, small[s][0], small[s][1], small[s][2], i % 2, i % 3 == 1, 0, rng);
        if (layout == NT && s % 3 == 0)  // the evaluation's pinned weights (kernels_pin_weight)
            check_matmul_shape(r, k, layout, small[s][0], small[s][1], small[s][2], i % 2, 0, 1, rng);
    }
    if (quick) return;
    for (size_t s = 0; s < sizeof big / sizeof *big; s++)
        for (int acc = 0; acc < 2; acc++, i++) {
            check_matmul_shape(r, k, layout, big[s][0], big[s][1], big[s][2], acc, i % 3 == 1, 0, rng);
            if (layout == NT && acc == 0 && s % 2 == 1)
                check_matmul_shape(r, k, layout, big[s][0], big[s][1], big[s][2], acc, 0, 1, rng);
        }
}

// ---------------------------------------------------------------------------------------------
// Other ops: the ref kernel is the oracle
// ---------------------------------------------------------------------------------------------

// A buffer of n floats (freed with the case) holding x, or uniform values when x is NULL.
static float *owned(Case *c, size_t n, const float *x, Rng *r, float lo, float hi) {
    float *p = case_own(c, n * sizeof(float));
    if (x) memcpy(p, x, n * sizeof(float));
    else fill(p, n, r, lo, hi);
    return p;
}

static const int32_t *case_indices(Case *c, size_t n, int range, Rng *r, int ignore_every) {
    GBuf *b = &c->in[c->n_in++];
    *b = gb_input(n, sizeof(int32_t));
    int32_t *idx = (int32_t *)b->p;
    for (size_t i = 0; i < n; i++)
        idx[i] = ignore_every && i % (size_t)ignore_every == 1 ? -1 : (int32_t)(rng_next(r) % (uint64_t)range);
    gb_seal(b);
    return idx;
}

static void call_embedding_fwd(const Case *c) { c->k->embedding_fwd(c->out[0].p, c->idx, c->a[0], c->N, c->K); }
static void call_embedding_bwd(const Case *c) { c->k->embedding_bwd(c->out[0].p, c->a[0], c->idx, c->N, c->K); }

static void check_embedding(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const int shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 128, 50}, {33, 130, 1000}, {1024, 640, 300}};
    int n = quick ? 4 : 5;
    for (int s = 0; s < n; s++) {
        int N = shapes[s][0], C = shapes[s][1], V = shapes[s][2];
        Case c = {.k = k, .N = N, .K = C};
        snprintf(c.shape, sizeof c.shape, "N=%d C=%d vocab=%d", N, C, V);
        c.idx = case_indices(&c, (size_t)N, V, rng, 0);
        if (!bwd) {
            c.call = call_embedding_fwd;
            c.a[0] = case_input(&c, (size_t)V * C, rng, -1, 1);
            float *expect = owned(&c, (size_t)N * C, NULL, rng, 0, 0);
            ref_embedding_fwd(expect, c.idx, c.a[0], N, C);
            case_output(&c, "out", (size_t)N * C, NULL, expect, s % 2);
        } else {
            c.call = call_embedding_bwd;
            c.a[0] = case_input(&c, (size_t)N * C, rng, -1, 1);
            float *init = owned(&c, (size_t)V * C, NULL, rng, -1, 1);
            float *expect = owned(&c, (size_t)V * C, init, rng, 0, 0);
            ref_embedding_bwd(expect, c.a[0], c.idx, N, C);
            case_output(&c, "dwte", (size_t)V * C, init, expect, s % 2);
        }
        case_run(r, &c);
        case_free(&c);
    }
}

static void call_rmsnorm_fwd(const Case *c) { c->k->rmsnorm_fwd(c->out[0].p, c->out[1].p, c->a[0], c->N, c->K); }
static void call_rmsnorm_bwd(const Case *c) {
    c->k->rmsnorm_bwd(c->out[0].p, c->a[0], c->a[1], c->a[2], c->N, c->K, c->acc);
}

// dx = rstd (dout - out mean(dout out)) cancels to ~0 when C is tiny: measure its error against
// the size of the terms, rstd (|dout| + |out| mean|dout out|) (+ |dx| before, when accumulating),
// as matmuls are measured against sum |a||b|.
static const double *rmsnorm_bwd_scale(Case *c, const float *dout, const float *out, const float *rstd,
                                       const float *init, int N, int C) {
    double *scale = case_own(c, (size_t)N * C * sizeof(double));
    for (int n = 0; n < N; n++) {
        const float *g = dout + (size_t)n * C, *y = out + (size_t)n * C;
        double m = 0;
        for (int i = 0; i < C; i++) m += fabs((double)g[i] * y[i]);
        m /= C;
        for (int i = 0; i < C; i++) {
            size_t at = (size_t)n * C + i;
            scale[at] = rstd[n] * (fabs(g[i]) + fabs(y[i]) * m) + (init ? fabs(init[at]) : 0) + 1e-30;
        }
    }
    return scale;
}

static void check_rmsnorm(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const int shapes[][2] = {{1, 1}, {3, 17}, {33, 128}, {5, 1000}, {64, 640}, {4096, 128}};
    int n = quick ? 5 : 6;
    for (int s = 0; s < n; s++)
        for (int acc = 0; acc <= bwd; acc++) {
            int N = shapes[s][0], C = shapes[s][1];
            size_t nc = (size_t)N * C;
            Case c = {.k = k, .N = N, .K = C, .acc = acc};
            snprintf(c.shape, sizeof c.shape, "N=%d C=%d%s", N, C, bwd ? (acc ? " accumulate=1" : " accumulate=0") : "");
            c.a[0] = case_input(&c, nc, rng, -2, 2);
            float *out = owned(&c, nc, NULL, rng, 0, 0), *rstd = owned(&c, (size_t)N, NULL, rng, 0, 0);
            ref_rmsnorm_fwd(out, rstd, c.a[0], N, C);
            if (!bwd) {
                c.call = call_rmsnorm_fwd;
                case_output(&c, "out", nc, NULL, out, s % 2);
                case_output(&c, "rstd", (size_t)N, NULL, rstd, 0);
            } else {
                c.call = call_rmsnorm_bwd;
                c.a[1] = c.a[0];
                c.a[0] = case_input(&c, nc, rng, -1, 1);  // dout
                c.a[2] = case_input_copy(&c, rstd, (size_t)N);
                float *init = acc ? owned(&c, nc, NULL, rng, -1, 1) : NULL;
                float *expect = owned(&c, nc, init, rng, 0, 0);
                ref_rmsnorm_bwd(expect, c.a[0], c.a[1], c.a[2], N, C, acc);
                case_output(&c, "dx", nc, init, expect, s % 2);
                c.scale[0] = rmsnorm_bwd_scale(&c, c.a[0], out, rstd, init, N, C);
            }
            case_run(r, &c);
            case_free(&c);
        }
}

static void call_rope(const Case *c) {
    (c->mode ? c->k->rope_bwd : c->k->rope_fwd)(c->out[0].p, c->a[0], c->a[1], c->B, c->T, c->H, c->D);
}

// Sealed inputs a[0], a[1]: cos and sin tables of nt random angles.
static void rope_tables(Case *c, size_t nt, Rng *rng) {
    float *ang = owned(c, nt, NULL, rng, -3.2f, 3.2f), *cs = owned(c, nt, NULL, rng, 0, 0);
    float *sn = owned(c, nt, NULL, rng, 0, 0);
    for (size_t i = 0; i < nt; i++) cs[i] = cosf(ang[i]), sn[i] = sinf(ang[i]);
    c->a[0] = case_input_copy(c, cs, nt);
    c->a[1] = case_input_copy(c, sn, nt);
}

static void check_rope(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const int shapes[][4] = {{1, 1, 1, 2}, {2, 5, 3, 6}, {1, 17, 2, 34}, {2, 64, 4, 128}, {1, 33, 5, 130},
                                    {4, 256, 5, 128}};
    int n = quick ? 5 : 6;
    for (int s = 0; s < n; s++) {
        int B = shapes[s][0], T = shapes[s][1], nh = shapes[s][2], D = shapes[s][3];
        size_t nx = (size_t)B * T * nh * D, nt = (size_t)T * (D / 2);
        Case c = {.k = k, .call = call_rope, .mode = bwd, .B = B, .T = T, .H = nh, .D = D};
        snprintf(c.shape, sizeof c.shape, "B=%d T=%d nh=%d D=%d", B, T, nh, D);
        rope_tables(&c, nt, rng);
        float *x = owned(&c, nx, NULL, rng, -1, 1), *expect = owned(&c, nx, x, rng, 0, 0);
        (bwd ? ref_rope_bwd : ref_rope_fwd)(expect, c.a[0], c.a[1], B, T, nh, D);
        case_output(&c, bwd ? "dx" : "x", nx, x, expect, s % 2);
        case_run(r, &c);
        case_free(&c);
    }
}

static void call_rope_rmsnorm(const Case *c) {
    if (c->mode)
        c->k->rope_rmsnorm_bwd(c->out[0].p, c->a[2], c->a[3], c->a[4], c->a[0], c->a[1], c->B, c->T, c->H, c->D);
    else
        c->k->rope_rmsnorm_fwd(c->out[1].p, c->out[2].p, c->out[0].p, c->a[0], c->a[1], c->B, c->T, c->H, c->D);
}

// Fused RoPE + QK-norm against ref's rope then rmsnorm (forward: the rotated x in place, out,
// rstd) or rmsnorm_bwd then rope_bwd (backward: dx). Backward's error scale: rmsnorm_bwd's,
// summed over the two elements of each rotated pair.
static void check_rope_rmsnorm(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const int shapes[][4] = {{1, 1, 1, 2}, {2, 5, 3, 6}, {1, 17, 2, 34}, {2, 64, 4, 128}, {1, 33, 5, 130},
                                    {4, 256, 1, 128}};
    int n = quick ? 5 : 6;
    for (int s = 0; s < n; s++) {
        int B = shapes[s][0], T = shapes[s][1], nh = shapes[s][2], D = shapes[s][3], rows = B * T * nh;
        size_t nx = (size_t)rows * D, nt = (size_t)T * (D / 2);
        Case c = {.k = k, .call = call_rope_rmsnorm, .mode = bwd, .B = B, .T = T, .H = nh, .D = D};
        snprintf(c.shape, sizeof c.shape, "B=%d T=%d nh=%d D=%d", B, T, nh, D);
        rope_tables(&c, nt, rng);
        float *x = owned(&c, nx, NULL, rng, -2, 2), *xrot = owned(&c, nx, x, rng, 0, 0);
        float *out = owned(&c, nx, NULL, rng, 0, 0), *rstd = owned(&c, (size_t)rows, NULL, rng, 0, 0);
        ref_rope_rmsnorm_fwd(out, rstd, xrot, c.a[0], c.a[1], B, T, nh, D);
        if (!bwd) {
            case_output(&c, "x", nx, x, xrot, s % 2);
            case_output(&c, "out", nx, NULL, out, 0);
            case_output(&c, "rstd", (size_t)rows, NULL, rstd, 0);
        } else {
            c.a[2] = case_input(&c, nx, rng, -1, 1);  // dout
            c.a[3] = case_input_copy(&c, xrot, nx);
            c.a[4] = case_input_copy(&c, rstd, (size_t)rows);
            float *expect = owned(&c, nx, NULL, rng, 0, 0);
            ref_rope_rmsnorm_bwd(expect, c.a[2], c.a[3], c.a[4], c.a[0], c.a[1], B, T, nh, D);
            case_output(&c, "dx", nx, NULL, expect, s % 2);
            const double *sc = rmsnorm_bwd_scale(&c, c.a[2], out, rstd, NULL, rows, D);
            double *pair = case_own(&c, nx * sizeof(double));
            for (size_t i = 0; i < nx; i++) {
                size_t j = i % D, partner = j < (size_t)D / 2 ? i + D / 2 : i - D / 2;
                pair[i] = sc[i] + sc[partner];
            }
            c.scale[0] = pair;
        }
        case_run(r, &c);
        case_free(&c);
    }
}

static void call_attention_fwd(const Case *c) {
    c->k->attention_fwd(c->out[0].p, c->out[1].p, c->a[0], c->a[1], c->a[2], c->B, c->T, c->H, c->Hkv, c->D,
                        c->window);
}
static void call_attention_bwd(const Case *c) {
    c->k->attention_bwd(c->out[0].p, c->out[1].p, c->out[2].p, c->a[3], c->a[4], c->a[5], c->a[0], c->a[1], c->a[2],
                        c->B, c->T, c->H, c->Hkv, c->D, c->window);
}

// The bf16 tables' attention (attention_bf16.h) is judged against ref_bf16_attention_*.
static void check_attention(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const int shapes[][6] = {
        {1, 1, 1, 1, 1, 0},     {1, 5, 2, 1, 3, 0},     {2, 70, 1, 1, 32, 0},   {2, 17, 4, 2, 16, 0},
        {1, 33, 3, 1, 20, 0},   {1, 64, 2, 2, 128, 0},  {1, 70, 2, 1, 32, 1},   {2, 200, 1, 1, 128, 64},
        {2, 100, 4, 1, 64, 0},  {1, 256, 2, 1, 128, 0}, {1, 300, 2, 2, 64, 0},  {3, 200, 1, 1, 128, 0},
        {1, 600, 2, 1, 64, 0},  {1, 545, 3, 1, 24, 0},  {1, 300, 2, 2, 64, 100}, {1, 256, 2, 1, 128, 128},
        {1, 600, 2, 1, 64, 130}, {1, 545, 3, 1, 24, 7},  {2, 80, 2, 1, 64, 0}};
    // T = 600: two query blocks in the bf16 attention (384 + 216 rows; attention_bf16.c); T = 545:
    // two (448 + 97), the last one odd wide, three heads reading one kv head's packed K and V.
    // The last element is the sliding window (0: none): 1 (each query sees itself and one key
    // before), one block (64) and not a multiple of any block (100, 130, 7), so that whole key
    // blocks are skipped and the window's edge falls inside blocks. T = 80: the last strip of
    // AMX's 32-row micro-tiles is 16 rows over 80 keys, read in place with a depth tail.
    int n = quick ? 8 : 19;
    for (int s = 0; s < n; s++) {
        int B = shapes[s][0], T = shapes[s][1], H = shapes[s][2], Hkv = shapes[s][3], D = shapes[s][4];
        int W = shapes[s][5];
        size_t nq = (size_t)B * T * H * D, nkv = (size_t)B * T * Hkv * D, nl = (size_t)B * H * T;
        Case c = {.k = k, .B = B, .T = T, .H = H, .Hkv = Hkv, .D = D, .window = W};
        snprintf(c.shape, sizeof c.shape, "B=%d T=%d H=%d Hkv=%d D=%d window=%d", B, T, H, Hkv, D, W);
        c.a[0] = case_input(&c, nq, rng, -2, 2);
        c.a[1] = case_input(&c, nkv, rng, -2, 2);
        c.a[2] = case_input(&c, nkv, rng, -1, 1);
        float *out = owned(&c, nq, NULL, rng, 0, 0), *lse = owned(&c, nl, NULL, rng, 0, 0);
        (r->bf16 ? ref_bf16_attention_fwd : ref_attention_fwd)(out, lse, c.a[0], c.a[1], c.a[2], B, T, H, Hkv, D, W);
        if (!bwd) {
            c.call = call_attention_fwd;
            case_output(&c, "out", nq, NULL, out, s % 2);
            case_output(&c, "lse", nl, NULL, lse, 0);
        } else {
            c.call = call_attention_bwd;
            c.a[3] = case_input(&c, nq, rng, -1, 1);  // dout
            c.a[4] = case_input_copy(&c, out, nq);
            c.a[5] = case_input_copy(&c, lse, nl);
            float *dq = owned(&c, nq, NULL, rng, 0, 0), *dk = owned(&c, nkv, NULL, rng, 0, 0);
            float *dv = owned(&c, nkv, NULL, rng, 0, 0);
            (r->bf16 ? ref_bf16_attention_bwd : ref_attention_bwd)(dq, dk, dv, c.a[3], c.a[4], c.a[5], c.a[0], c.a[1],
                                                                   c.a[2], B, T, H, Hkv, D, W);
            case_output(&c, "dq", nq, NULL, dq, s % 2);
            case_output(&c, "dk", nkv, NULL, dk, 0);
            case_output(&c, "dv", nkv, NULL, dv, 1);
        }
        // bf16 twins: judged against the reference with the same roundings. Where the two round a
        // probability or dS that differ in the last fp32 bit to neighbouring bf16 values, an
        // output moves by up to 2^-8 of that term — with few keys, a term is most of the output
        // (seen: 7.7e-4 on this grid). 4e-3 allows one such flip; a wrong mask, scale or block
        // is off by 1e-1 and more.
        for (int o = 0; r->bf16 && o < c.n_out; o++) c.tol[o] = 4e-3;
        case_run(r, &c);
        case_free(&c);
    }
}

static void call_relu2(const Case *c) {
    if (c->mode) c->k->relu2_bwd(c->out[0].p, c->a[0], c->a[1], c->n);
    else c->k->relu2_fwd(c->out[0].p, c->a[1], c->n);
}

static void check_relu2(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const size_t sizes[] = {1, 7, 16, 17, 1000, 4097, 65537, 2097152 + 3};
    int n = quick ? 6 : 8;
    for (int s = 0; s < n; s++) {
        size_t sz = sizes[s];
        Case c = {.k = k, .call = call_relu2, .mode = bwd, .n = sz};
        snprintf(c.shape, sizeof c.shape, "n=%zu", sz);
        c.a[0] = case_input(&c, sz, rng, -1, 1);  // dout (bwd)
        c.a[1] = case_input(&c, sz, rng, -1, 1);  // x
        float *expect = owned(&c, sz, NULL, rng, 0, 0);
        if (bwd) ref_relu2_bwd(expect, c.a[0], c.a[1], sz);
        else ref_relu2_fwd(expect, c.a[1], sz);
        case_output(&c, bwd ? "dx" : "out", sz, NULL, expect, s % 2);
        case_run(r, &c);
        case_free(&c);
    }
}

static void call_dropout(const Case *c) { c->k->dropout(c->out[0].p, c->a[0], c->n, c->p, c->key, c->i0, c->acc); }

// Dropout: the oracle is the reference (the mask is integer arithmetic, the value one product
// and one sum), over sizes around the vector width and the parallel loop's task, probabilities
// from none to most, offsets that wrap past 2^32, both accumulate modes.
static void check_dropout(Run *r, const Kernels *k, int quick, Rng *rng) {
    static const size_t sizes[] = {1, 7, 16, 17, 4095, 4097, 65537, 1048576 + 5};
    static const float probs[] = {0.0f, 0.1f, 0.5f, 0.9f};
    int n = quick ? 6 : 8;
    for (int s = 0; s < n; s++) {
        size_t sz = sizes[s];
        Case c = {.k = k, .call = call_dropout, .n = sz, .p = probs[s % 4], .acc = s % 2,
                  .key = (uint32_t)rng_next(rng), .i0 = s == 3 ? 0xFFFFFFF0u : (uint32_t)rng_next(rng)};
        snprintf(c.shape, sizeof c.shape, "n=%zu p=%g i0=%u acc=%d", sz, (double)c.p, c.i0, c.acc);
        c.a[0] = case_input(&c, sz, rng, -1, 1);
        float *init = NULL;
        float *expect = owned(&c, sz, NULL, rng, 0, 0);
        if (c.acc) {
            init = owned(&c, sz, NULL, rng, -1, 1);
            memcpy(expect, init, sz * sizeof *expect);
        }
        ref_dropout(expect, c.a[0], sz, c.p, c.key, c.i0, c.acc);
        case_output(&c, "out", sz, init, expect, s % 2);
        case_run(r, &c);
        case_free(&c);
    }
}

// ReLU²'s linear layer: float64 oracles of the products on act = ref_relu2_fwd(fc) (rounded to
// bf16 with the products' other operand for the bf16 tables), then for dfc ref_relu2_bwd of the
// oracle's dc @ w, judged against 2|fc| times that product's scale. fc spans both signs so half
// of act is zero; shapes cross the tile edges and the depth blocks.
static void call_relu2_linear(const Case *c) {
    if (c->mode) c->k->relu2_linear_bwd(c->out[0].p, c->out[1].p, c->a[2], c->a[1], c->a[0], c->M, c->N, c->K);
    else c->k->relu2_linear_fwd(c->out[0].p, c->a[0], c->a[1], c->M, c->N, c->K, c->acc);
}

static void check_relu2_linear(Run *r, const Kernels *k, int bwd, int quick, Rng *rng) {
    static const int shapes[][3] = {{1, 1, 1},     {3, 5, 7},      {14, 32, 16},   {15, 33, 31},  {29, 70, 129},
                                    {64, 128, 512}, {300, 128, 512}, {100, 130, 800}, {1024, 128, 512},
                                    {2085, 40, 70},  {40, 300, 600}};  // the last: a relu²(A) block > 256 wide, >= 512 deep
    int n = quick ? 6 : 11;
    for (int s = 0; s < n; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], acc = s % 2;
        size_t nf = (size_t)M * K, nw = (size_t)N * K, nc = (size_t)M * N;
        Case c = {.k = k, .call = call_relu2_linear, .mode = bwd, .M = M, .N = N, .K = K, .acc = acc, .bf16 = r->bf16};
        snprintf(c.shape, sizeof c.shape, "M=%d N=%d K=%d%s", M, N, K, bwd ? "" : acc ? " accumulate=1" : "");
        c.a[0] = case_input(&c, nf, rng, -1, 1);  // fc
        c.a[1] = case_input(&c, nw, rng, -1, 1);  // w
        float *act = owned(&c, nf, NULL, rng, 0, 0);
        ref_relu2_fwd(act, c.a[0], nf);
        if (!bwd) {
            float *c0 = acc ? owned(&c, nc, NULL, rng, -1, 1) : NULL, *expect = owned(&c, nc, NULL, rng, 0, 0);
            double *scale = case_own(&c, nc * sizeof *scale);
            product_oracle(NT, act, c.a[1], M, N, K, c.bf16, c0, expect, scale);
            case_output(&c, "c", nc, c0, expect, s % 3 == 1);
            c.scale[0] = scale;
        } else {
            c.a[2] = case_input(&c, nc, rng, -1, 1);  // dc
            float *dw0 = owned(&c, nw, NULL, rng, -1, 1), *dw = owned(&c, nw, NULL, rng, 0, 0);
            double *sw = case_own(&c, nw * sizeof *sw);
            product_oracle(TN, c.a[2], act, N, K, M, c.bf16, dw0, dw, sw);
            float *dact = owned(&c, nf, NULL, rng, 0, 0), *dfc = owned(&c, nf, NULL, rng, 0, 0);
            double *sf = case_own(&c, nf * sizeof *sf);
            product_oracle(NN, c.a[2], c.a[1], M, K, N, c.bf16, NULL, dact, sf);
            ref_relu2_bwd(dfc, dact, c.a[0], nf);
            for (size_t i = 0; i < nf; i++) sf[i] *= c.a[0][i] > 0 ? 2.0 * c.a[0][i] : 1.0;
            case_output(&c, "dw", nw, dw0, dw, s % 2);
            case_output(&c, "dfc", nf, NULL, dfc, s % 3 == 1);
            c.scale[0] = sw;
            c.scale[1] = sf;
        }
        case_run(r, &c);
        case_free(&c);
    }
}

// A loss is logsumexp(c) - c[target], the difference of two numbers of the size of the capped
// logits: its error is measured against max |c| of its row (+ |loss|), not against the loss,
// which can be exactly 0.
static const double *softcap_loss_scale(Case *c, const float *logits, const float *losses, int N, int V, float cap) {
    double *scale = case_own(c, (size_t)N * sizeof(double));
    for (int n = 0; n < N; n++) {
        double m = 0;
        for (int i = 0; i < V; i++) {
            double z = logits[(size_t)n * V + i], v = fabs(cap > 0 ? cap * tanh(z / cap) : z);
            m = v > m ? v : m;
        }
        scale[n] = m + fabs((double)losses[n]) + 1e-30;
    }
    return scale;
}

// mode 0: losses only; 1: dlogits in its own buffer; 2: dlogits overwrites the logits.
static void call_softcap(const Case *c) {
    float *dl = c->mode == 0 ? NULL : c->out[1].p;
    const float *logits = c->mode == 2 ? c->out[1].p : c->a[0];
    c->k->softcap_ce(c->out[0].p, dl, logits, c->idx, c->N, c->K, c->cap, c->dscale);
}

static void check_softcap(Run *r, const Kernels *k, int quick, Rng *rng) {
    static const struct {
        int N, V;
        float cap, dscale;
    } shapes[] = {{1, 2, 15, 1}, {3, 17, 0, 0.5f}, {5, 100, 15, 0.2f}, {16, 1000, 30, 1}, {4, 8192, 15, 0.25f},
                  {64, 8192, 15, 1.0f / 64}};
    int n = quick ? 5 : 6;
    for (int s = 0; s < n; s++)
        for (int mode = 0; mode < 3; mode++) {
            int N = shapes[s].N, V = shapes[s].V;
            size_t nl = (size_t)N * V;
            Case c = {.k = k, .call = call_softcap, .mode = mode, .N = N, .K = V, .cap = shapes[s].cap,
                      .dscale = shapes[s].dscale};
            snprintf(c.shape, sizeof c.shape, "N=%d V=%d cap=%g dscale=%g %s", N, V, shapes[s].cap, shapes[s].dscale,
                     mode == 0 ? "(no grad)" : mode == 1 ? "(grad)" : "(grad in place)");
            c.idx = case_indices(&c, (size_t)N, V, rng, 3);  // every third target ignored (-1)
            float *logits = owned(&c, nl, NULL, rng, -20, 20);
            c.a[0] = case_input_copy(&c, logits, nl);
            float *losses = owned(&c, (size_t)N, NULL, rng, 0, 0), *dl = owned(&c, nl, NULL, rng, 0, 0);
            ref_softcap_ce(losses, dl, logits, c.idx, N, V, shapes[s].cap, shapes[s].dscale);
            case_output(&c, "losses", (size_t)N, NULL, losses, 0);
            c.scale[0] = softcap_loss_scale(&c, logits, losses, N, V, shapes[s].cap);
            if (mode) case_output(&c, "dlogits", nl, mode == 2 ? logits : NULL, dl, s % 2);
            case_run(r, &c);
            case_free(&c);
        }
}

// x (N, V) laid out in head.h's bf16 row pairs (still fp32 values; zeros in the gaps).
static float *in_row_pairs(Case *c, const float *x, int N, int V) {
    size_t n = head_dl16_elems(N, V);
    float *p = case_own(c, n * sizeof *p);
    memset(p, 0, n * sizeof *p);
    for (int r = 0; r < N; r++)
        for (int v = 0; v < V; v++) p[head_dl16_at(r, v, V)] = x[(size_t)r * V + v];
    return p;
}

// mode 0: losses only; 1: with dlogits and dx (training); 2: with dlogits, without dx.
static void call_head_ce(const Case *c) {
    c->k->head_ce(c->out[0].p, c->mode ? c->out[1].p : NULL, c->mode == 1 ? c->out[2].p : NULL, c->a[0], c->a[1],
                  c->idx, c->N, c->M, c->K, c->cap, c->dscale);
}

// The fused head: the oracle is a float64 product (operands rounded to bf16 for the bf16
// tables), stored as fp32 logits, then ref_softcap_ce, then a float64 dx from those dlogits — so
// a fast variant is judged on its products and its loss at once. Shapes cross the micro-tile
// (14 rows) and panel (32 columns) edges, and C = 800 spans several depth blocks. In the bf16
// tables dlogits are bf16 (judged with half an ulp of slack), and dx may differ from the oracle
// where the variant's fp32 dlogits and ref's round to neighbouring bf16 values: 4e-3 of the scale.
static void check_head_ce(Run *r, const Kernels *k, int quick, Rng *rng) {
    static const struct {
        int N, V, C;
        float cap, dscale;
    } shapes[] = {{1, 2, 1, 15, 1},      {3, 17, 5, 0, 0.5f},     {15, 100, 33, 15, 0.2f}, {29, 1000, 64, 30, 1},
                  {1, 8192, 128, 15, 1}, {40, 300, 800, 15, 1},   {64, 8192, 128, 15, 1.0f / 64},
                  {100, 4099, 130, 15, 0.01f}};
    int n = quick ? 5 : 8;
    for (int s = 0; s < n; s++)
        for (int mode = 0; mode < 3; mode++) {
            int N = shapes[s].N, V = shapes[s].V, C = shapes[s].C;
            size_t nl = (size_t)N * V;
            Case c = {.k = k, .call = call_head_ce, .mode = mode, .N = N, .M = V, .K = C, .cap = shapes[s].cap,
                      .dscale = shapes[s].dscale, .bf16 = r->bf16};
            snprintf(c.shape, sizeof c.shape, "N=%d V=%d C=%d cap=%g dscale=%g %s", N, V, C, shapes[s].cap,
                     shapes[s].dscale, mode == 0 ? "(no grad)" : mode == 1 ? "(grad, dx)" : "(grad)");
            c.idx = case_indices(&c, (size_t)N, V, rng, 3);  // every third target ignored (-1)
            c.a[0] = case_input(&c, (size_t)N * C, rng, -1, 1);
            c.a[1] = case_input(&c, (size_t)V * C, rng, -0.5f, 0.5f);
            float *logits = owned(&c, nl, NULL, rng, 0, 0);
            product_oracle(NT, c.a[0], c.a[1], N, V, C, c.bf16, NULL, logits, case_own(&c, nl * sizeof(double)));
            float *losses = owned(&c, (size_t)N, NULL, rng, 0, 0), *dl = owned(&c, nl, NULL, rng, 0, 0);
            ref_softcap_ce(losses, dl, logits, c.idx, N, V, shapes[s].cap, shapes[s].dscale);
            case_output(&c, "losses", (size_t)N, NULL, losses, 0);
            c.scale[0] = softcap_loss_scale(&c, logits, losses, N, V, shapes[s].cap);
            if (mode && c.bf16)  // the bf16 tables' format: row pairs (head.h)
                case_output_bf16(&c, "dlogits", head_dl16_elems(N, V), in_row_pairs(&c, dl, N, V), s % 2);
            else if (mode) case_output(&c, "dlogits", nl, NULL, dl, s % 2);
            if (mode == 1) {
                float *dx = owned(&c, (size_t)N * C, NULL, rng, 0, 0);
                double *scale = case_own(&c, (size_t)N * C * sizeof *scale);
                product_oracle(NN, dl, c.a[1], N, C, V, c.bf16, NULL, dx, scale);
                case_output(&c, "dx", (size_t)N * C, NULL, dx, s % 3 == 1);
                c.scale[2] = scale;
                if (c.bf16) c.tol[2] = 4e-3;
            }
            case_run(r, &c);
            case_free(&c);
        }
}

// The head's weight gradient: a float64 oracle (operands rounded to bf16 for the bf16 tables,
// whose dlogits are given in bf16), accumulated onto random values.
static void call_head_dw(const Case *c) { c->k->head_dw(c->out[0].p, c->a[2], c->a[0], c->N, c->M, c->K); }

static void check_head_dw(Run *r, const Kernels *k, int quick, Rng *rng) {
    static const int shapes[][3] = {{1, 2, 1},      {3, 17, 5},     {15, 100, 33},   {29, 1000, 64},
                                    {40, 300, 130}, {64, 8192, 128}, {100, 4099, 130}};
    int n = quick ? 5 : 7;
    for (int s = 0; s < n; s++) {
        int N = shapes[s][0], V = shapes[s][1], C = shapes[s][2];
        size_t nl = (size_t)N * V, nx = (size_t)N * C, nw = (size_t)V * C;
        Case c = {.k = k, .call = call_head_dw, .N = N, .M = V, .K = C, .bf16 = r->bf16};
        snprintf(c.shape, sizeof c.shape, "N=%d V=%d C=%d", N, V, C);
        float *dl = owned(&c, nl, NULL, rng, -0.01f, 0.01f);
        c.a[0] = case_input(&c, nx, rng, -1, 1);
        c.a[2] = c.bf16 ? case_input_bf16(&c, in_row_pairs(&c, dl, N, V), head_dl16_elems(N, V))
                        : case_input_copy(&c, dl, nl);
        float *dw0 = owned(&c, nw, NULL, rng, -1, 1), *dw = owned(&c, nw, NULL, rng, 0, 0);
        double *sw = case_own(&c, nw * sizeof *sw);
        product_oracle(TN, dl, c.a[0], V, C, N, c.bf16, dw0, dw, sw);
        case_output(&c, "dw", nw, dw0, dw, s % 2);
        c.scale[0] = sw;
        case_run(r, &c);
        case_free(&c);
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

int lab_check_op(const Kernels *k, int op, const LabCheckOpts *o, LabOpResult *res) {
    static const int full_threads[] = {1, 2, 3}, quick_threads[] = {1, 2};
    memset(res, 0, sizeof *res);
    Run r = {.op = KERNEL_OP_NAMES[op], .variant = kernels_op_source(k, op), .res = res};
    r.threads = o->threads ? o->threads : o->quick ? quick_threads : full_threads;
    r.n_threads = o->threads ? o->n_threads : o->quick ? 2 : 3;
    r.tol = res->tol = o->tol > 0 ? o->tol : lab_default_tol(op);
    r.bf16 = o->bf16_operands;
    Rng rng;
    rng_seed(&rng, 0x1ab0 + (uint64_t)op);
    FaultHandlers old;
    faults_catch(&old);
    gemm_set_poison(1);  // packed data nobody wrote reads as NaN
    const char *name = KERNEL_OP_NAMES[op];
    int bwd = strstr(name, "_bwd") != NULL;
    if (!strncmp(name, "matmul", 6)) check_matmul(&r, k, !strcmp(name, "matmul_nt") ? NT : !strcmp(name, "matmul_nn") ? NN : TN, o->quick, &rng);
    else if (!strncmp(name, "embedding", 9)) check_embedding(&r, k, bwd, o->quick, &rng);
    else if (!strncmp(name, "rmsnorm", 7)) check_rmsnorm(&r, k, bwd, o->quick, &rng);
    else if (!strncmp(name, "rope_rmsnorm", 12)) check_rope_rmsnorm(&r, k, bwd, o->quick, &rng);
    else if (!strncmp(name, "rope", 4)) check_rope(&r, k, bwd, o->quick, &rng);
    else if (!strncmp(name, "attention", 9)) check_attention(&r, k, bwd, o->quick, &rng);
    else if (!strncmp(name, "relu2_linear", 12)) check_relu2_linear(&r, k, bwd, o->quick, &rng);
    else if (!strncmp(name, "relu2", 5)) check_relu2(&r, k, bwd, o->quick, &rng);
    else if (!strcmp(name, "head_ce")) check_head_ce(&r, k, o->quick, &rng);
    else if (!strcmp(name, "head_dw")) check_head_dw(&r, k, o->quick, &rng);
    else if (!strcmp(name, "dropout")) check_dropout(&r, k, o->quick, &rng);
    else check_softcap(&r, k, o->quick, &rng);
    gemm_set_poison(0);
    faults_release(&old);
    return res->failures > 0;
}

void lab_print_result(FILE *f, const char *op, const char *variant, const LabOpResult *r) {
    fprintf(f, "  %-16s %-12s max err %8.2e  tol %.0e  %3d cases  %s\n", op, variant, r->max_err, r->tol, r->cases,
            r->failures ? "FAIL" : "PASS");
    if (r->failures) fprintf(f, "      %d failed; first: %s\n", r->failures, r->first_failure);
}
