// kernels/lab/lab_bench.c — benchmarking kernel tables on a model preset's shapes (see lab.h).
//
// Times are wall clock per call (the kernels use every OpenMP thread), after one warm-up call;
// each (shape, variant) is repeated for about LabBenchOpts.seconds (3 to 200 calls) and reported
// as median, p10 and p90. Rates come from the analytic costs of cost.h; "%FMA" is the FLOP rate
// over the measured all-thread fp32 FMA peak (the bf16 peak for the bf16 matmuls), "%triad" the
// byte rate over the triad bandwidth — above 100% when the working set stays in cache.
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cost.h"
#include "kernels/cpu/cpu.h"
#include "kernels/head/head.h"
#include "kernels/lab/lab.h"
#include "kernels/ref/ref.h"
#include "util/error.h"
#include "util/mem.h"
#include "util/rng.h"
#include "util/timer.h"

typedef struct {
    int op;            // index in KERNEL_OP_NAMES
    const char *what;  // where the model runs it
    int M, N, K, acc;  // matmuls (M, N, K); other ops use what they need:
    int sym;           // matmul with one operand for both (X·Xᵀ, XᵀX): symmetric, half computed
    int B, T, H, Hkv, D, C, V, rows;
    int window;        // attention: the sliding window (0 = full causal)
    size_t n;
} BenchCase;

// Short names for the op indices (KERNEL_OPS order, so they stay right when ops are added).
#define OP_INDEX(op) K_##op,
enum { KERNEL_OPS(OP_INDEX) };
enum {
    OP_NT = K_matmul_nt, OP_NN = K_matmul_nn, OP_TN = K_matmul_tn, OP_EMB_F = K_embedding_fwd,
    OP_EMB_B = K_embedding_bwd, OP_RMS_F = K_rmsnorm_fwd, OP_RMS_B = K_rmsnorm_bwd, OP_ROPE_F = K_rope_fwd,
    OP_ROPE_B = K_rope_bwd, OP_RR_F = K_rope_rmsnorm_fwd, OP_RR_B = K_rope_rmsnorm_bwd, OP_ATT_F = K_attention_fwd,
    OP_ATT_B = K_attention_bwd, OP_RELU_F = K_relu2_fwd, OP_RELU_B = K_relu2_bwd, OP_RL_F = K_relu2_linear_fwd,
    OP_RL_B = K_relu2_linear_bwd, OP_CE = K_softcap_ce, OP_HEAD = K_head_ce, OP_HEAD_B = K_head_dw,
    OP_DROP = K_dropout
};

// ---------------------------------------------------------------------------------------------
// The preset's cases
// ---------------------------------------------------------------------------------------------

#define MAX_CASES 48

static int add_mm(BenchCase *cs, int n, int op, const char *what, int M, int N, int K, int acc) {
    cs[n] = (BenchCase){.op = op, .what = what, .M = M, .N = N, .K = K, .acc = acc};
    return n + 1;
}

// Muon's X·Xᵀ / XᵀX / A·Aᵀ as Polar Express runs them (muon.c): one operand, a symmetric C.
static int add_sym(BenchCase *cs, int n, int op, const char *what, int M, int K) {
    cs[n] = (BenchCase){.op = op, .what = what, .M = M, .N = M, .K = K, .sym = 1};
    return n + 1;
}

static int preset_cases(const LabShape *m, int rows, BenchCase *cs) {
    int C = m->n_embd, F = m->mlp_ratio * C, qd = m->n_head * m->head_dim, kvd = m->n_kv_head * m->head_dim;
    int T = m->seq_len, B = rows / T > 0 ? rows / T : 1, N = B * T, V = m->vocab_size, n = 0;
    n = add_mm(cs, n, OP_NT, "q proj fwd", N, qd, C, 0);
    if (kvd != qd) n = add_mm(cs, n, OP_NT, "k/v proj fwd", N, kvd, C, 0);
    n = add_mm(cs, n, OP_NT, "attn proj fwd", N, C, qd, 0);
    n = add_mm(cs, n, OP_NT, "mlp fc fwd", N, F, C, 0);
    n = add_mm(cs, n, OP_NT, "mlp proj fwd", N, C, F, 0);
    n = add_mm(cs, n, OP_NT, "lm_head fwd", N, V, C, 0);
    n = add_mm(cs, n, OP_NT, "lm_head, 1 token", 1, V, C, 0);
    n = add_mm(cs, n, OP_NN, "attn proj dx", N, qd, C, 0);
    n = add_mm(cs, n, OP_NN, "q proj dx", N, C, qd, 0);
    n = add_mm(cs, n, OP_NN, "mlp proj dx", N, F, C, 0);
    n = add_mm(cs, n, OP_NN, "mlp fc dx", N, C, F, 0);
    n = add_mm(cs, n, OP_NN, "lm_head dx", N, C, V, 0);
    n = add_sym(cs, n, OP_NT, "muon A·Aᵀ", C, C);
    n = add_sym(cs, n, OP_NT, "muon X·Xᵀ (wide)", C, F);
    n = add_mm(cs, n, OP_NN, "muon X·B", F, C, C, 0);
    n = add_mm(cs, n, OP_TN, "attn proj dW", C, qd, N, 1);
    n = add_mm(cs, n, OP_TN, "q proj dW", qd, C, N, 1);
    n = add_mm(cs, n, OP_TN, "mlp proj dW", C, F, N, 1);
    n = add_mm(cs, n, OP_TN, "mlp fc dW", F, C, N, 1);
    n = add_mm(cs, n, OP_TN, "lm_head dW", V, C, N, 1);
    n = add_sym(cs, n, OP_TN, "muon XᵀX (tall)", C, F);
    n = add_mm(cs, n, OP_RL_F, "mlp proj fwd", N, C, F, 1);  // ReLU² inside: x2 += relu²(fc) @ W
    n = add_mm(cs, n, OP_RL_B, "mlp proj bwd", N, C, F, 0);  // dW and dfc
    BenchCase base = {.B = B, .T = T, .H = m->n_head, .Hkv = m->n_kv_head, .D = m->head_dim, .C = C, .V = V,
                      .rows = N, .n = (size_t)N * F};
    static const struct {
        int op;
        const char *what;
    } others[] = {{OP_EMB_F, "token embedding"}, {OP_EMB_B, "token embedding"}, {OP_RMS_F, "every norm"},
                  {OP_RMS_B, "every norm"},      {OP_ROPE_F, "q, k"},          {OP_ROPE_B, "q, k"},
                  {OP_RR_F, "q (QK-norm)"},      {OP_RR_B, "q (QK-norm)"},
                  {OP_ATT_F, "each layer"},      {OP_ATT_B, "each layer"},     {OP_RELU_F, "mlp"},
                  {OP_RELU_B, "mlp"},            {OP_CE, "loss + grad"},
                  {OP_HEAD, "lm_head+loss+dx"}, {OP_HEAD_B, "lm_head dW"}};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        cs[n] = base;
        cs[n].op = others[i].op;
        cs[n++].what = others[i].what;
    }
    cs[n] = base;  // --dropout on a block's output, added to the residual stream
    cs[n].op = OP_DROP, cs[n].n = (size_t)N * C, cs[n].acc = 1;
    cs[n++].what = "block output";
    // attention in an S layer of --window-pattern (nanochat's window for this T), where it is shorter
    int w = m->window;
    for (int op = OP_ATT_F; w > 0 && w + 1 < T && op <= OP_ATT_B; op++) {
        cs[n] = base;
        cs[n].op = op;
        cs[n].window = w;
        cs[n++].what = "S layer (window)";
    }
    return n;
}

static void shape_str(const BenchCase *c, char *s, size_t cap) {
    switch (c->op) {
    case OP_NT: case OP_NN: case OP_TN: case OP_RL_F: case OP_RL_B:
        snprintf(s, cap, "%dx%dx%d%s", c->M, c->N, c->K, c->acc ? " +=" : c->sym ? " sym" : "");
        break;
    case OP_EMB_F: case OP_EMB_B: case OP_RMS_F: case OP_RMS_B: snprintf(s, cap, "N=%d C=%d", c->rows, c->C); break;
    case OP_ROPE_F: case OP_ROPE_B: case OP_RR_F: case OP_RR_B:
        snprintf(s, cap, "B=%d T=%d nh=%d D=%d", c->B, c->T, c->H, c->D);
        break;
    case OP_ATT_F: case OP_ATT_B:
        if (c->window) snprintf(s, cap, "B=%d T=%d H=%d/%d D=%d W=%d", c->B, c->T, c->H, c->Hkv, c->D, c->window);
        else snprintf(s, cap, "B=%d T=%d H=%d/%d D=%d", c->B, c->T, c->H, c->Hkv, c->D);
        break;
    case OP_RELU_F: case OP_RELU_B: snprintf(s, cap, "n=%zu", c->n); break;
    case OP_DROP: snprintf(s, cap, "n=%zu p=0.1 +=", c->n); break;
    case OP_HEAD: case OP_HEAD_B: snprintf(s, cap, "N=%d V=%d C=%d", c->rows, c->V, c->C); break;
    default: snprintf(s, cap, "N=%d V=%d", c->rows, c->V);
    }
}

static OpCost case_cost(const BenchCase *c) {
    switch (c->op) {
    case OP_NT: case OP_NN: case OP_TN:
        return c->sym ? cost_matmul_symmetric(c->M, c->K) : cost_matmul(c->M, c->N, c->K, c->acc);
    case OP_RL_F: return cost_relu2_linear_fwd(c->M, c->N, c->K, c->acc);
    case OP_RL_B: return cost_relu2_linear_bwd(c->M, c->N, c->K);
    case OP_EMB_F: return cost_embedding_fwd(c->rows, c->C);
    case OP_EMB_B: return cost_embedding_bwd(c->rows, c->C);
    case OP_RMS_F: return cost_rmsnorm_fwd(c->rows, c->C);
    case OP_RMS_B: return cost_rmsnorm_bwd(c->rows, c->C, 1);
    case OP_ROPE_F: case OP_ROPE_B: return cost_rope(c->B, c->T, c->H, c->D);
    case OP_RR_F: return cost_rope_rmsnorm_fwd(c->B, c->T, c->H, c->D);
    case OP_RR_B: return cost_rope_rmsnorm_bwd(c->B, c->T, c->H, c->D);
    case OP_ATT_F: return cost_attention_fwd(c->B, c->T, c->H, c->Hkv, c->D, c->window);
    case OP_ATT_B: return cost_attention_bwd(c->B, c->T, c->H, c->Hkv, c->D, c->window);
    case OP_RELU_F: return cost_relu2_fwd(c->n);
    case OP_DROP: return cost_dropout(c->n, 1);
    case OP_RELU_B: return cost_relu2_bwd(c->n);
    case OP_HEAD: return cost_head_ce(c->rows, c->V, c->C, 1, 1);
    case OP_HEAD_B: return cost_head_dw(c->rows, c->V, c->C);
    default: return cost_softcap_ce(c->rows, c->V, 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers and calls
// ---------------------------------------------------------------------------------------------

#define NBUF 9

typedef struct {
    float *f[NBUF];
    int32_t *idx;
} Bufs;

static float *rand_buf(size_t n, Rng *r, float lo, float hi) {
    float *p = xaligned_alloc(n * sizeof(float) + 64);
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)rng_uniform(r);
    return p;
}

// Buffer sizes per op; inputs random, and valid lse/rstd where an op needs them.
static void bufs_alloc(const BenchCase *c, Bufs *d, Rng *r) {
    memset(d, 0, sizeof *d);
    size_t nc = (size_t)c->rows * c->C, nq = (size_t)c->B * c->T * c->H * c->D, nkv = (size_t)c->B * c->T * c->Hkv * c->D;
    size_t sz[NBUF] = {0};
    switch (c->op) {
    case OP_NT: case OP_NN: case OP_TN: sz[0] = (size_t)c->M * c->K, sz[1] = (size_t)c->N * c->K, sz[2] = (size_t)c->M * c->N; break;
    case OP_RL_F: case OP_RL_B:  // fc, w, c / dc, dw, dfc
        sz[0] = sz[4] = (size_t)c->M * c->K, sz[1] = sz[3] = (size_t)c->N * c->K, sz[2] = (size_t)c->M * c->N;
        break;
    case OP_EMB_F: case OP_EMB_B: sz[0] = (size_t)c->V * c->C, sz[1] = nc; break;
    case OP_RMS_F: case OP_RMS_B: sz[0] = nc, sz[1] = nc, sz[2] = (size_t)c->rows, sz[3] = nc; break;
    case OP_ROPE_F: case OP_ROPE_B: sz[0] = nq, sz[1] = sz[2] = (size_t)c->T * (c->D / 2); break;
    case OP_RR_F: case OP_RR_B:  // x, cos, sin, out/dx, rstd, dout
        sz[0] = sz[3] = sz[5] = nq, sz[1] = sz[2] = (size_t)c->T * (c->D / 2), sz[4] = (size_t)c->B * c->T * c->H;
        break;
    case OP_ATT_F: case OP_ATT_B:
        sz[0] = nq, sz[1] = sz[2] = nkv, sz[3] = nq, sz[4] = (size_t)c->B * c->H * c->T, sz[5] = nq, sz[6] = nq;
        sz[7] = sz[8] = nkv;
        break;
    case OP_RELU_F: case OP_RELU_B: sz[0] = sz[1] = sz[2] = c->n; break;
    case OP_DROP: sz[0] = sz[1] = c->n; break;
    case OP_HEAD: case OP_HEAD_B:  // x, w, dlogits (as bf16 too: see below), losses, dx / dw
        sz[0] = nc, sz[1] = (size_t)c->V * c->C, sz[2] = (size_t)c->rows * c->V, sz[3] = (size_t)c->rows;
        sz[4] = c->op == OP_HEAD ? nc : (size_t)c->V * c->C;
        break;
    default: sz[0] = sz[1] = (size_t)c->rows * c->V, sz[2] = (size_t)c->rows;
    }
    for (int i = 0; i < NBUF; i++)
        if (sz[i]) d->f[i] = rand_buf(sz[i], r, -1.0f, 1.0f);
    // softcap_ce's logits as a model's: normal with the spread of head_ce's (x, w uniform in
    // [-1, 1], C = 128: sd 3.8). softcap's tanh takes its slow branch (exp and a divide) for
    // vectors holding any |z| >= 0.625 cap: ~20% of them here, 16% in a cpu-preset model after
    // 120 s of training; with the uniform [-20, 20] logits used before, all of them.
    if (c->op == OP_CE)
        for (size_t i = 0; i < sz[0]; i++) d->f[0][i] = (float)(3.8 * rng_normal(r));
    d->idx = xmalloc(((size_t)c->rows + 1) * sizeof *d->idx);
    for (int i = 0; i < c->rows; i++) d->idx[i] = (int32_t)(rng_next(r) % (uint64_t)(c->V > 0 ? c->V : 1));
    if (c->op == OP_HEAD_B)  // each float's two halves are the same bf16: benign read either way
        for (size_t i = 0; i < sz[2]; i++) {
            uint32_t h = head_bf16_bits(d->f[2][i]);
            uint32_t u = h << 16 | h;
            memcpy(&d->f[2][i], &u, sizeof u);
        }
    if (c->op == OP_RMS_B) ref_rmsnorm_fwd(d->f[3], d->f[2], d->f[0], c->rows, c->C);
    if (c->op == OP_RR_B) ref_rope_rmsnorm_fwd(d->f[3], d->f[4], d->f[0], d->f[1], d->f[2], c->B, c->T, c->H, c->D);
    if (c->op == OP_ATT_B)
        ref_attention_fwd(d->f[3], d->f[4], d->f[0], d->f[1], d->f[2], c->B, c->T, c->H, c->Hkv, c->D, c->window);
}

static void bufs_free(Bufs *d) {
    for (int i = 0; i < NBUF; i++) free(d->f[i]);
    free(d->idx);
}

static void bench_call(const Kernels *k, const BenchCase *c, Bufs *d) {
    float **f = d->f;
    switch (c->op) {
    case OP_NT: k->matmul_nt(f[2], f[0], c->sym ? f[0] : f[1], c->M, c->N, c->K, c->acc); break;
    case OP_NN: k->matmul_nn(f[2], f[0], f[1], c->M, c->N, c->K, c->acc); break;
    case OP_TN: k->matmul_tn(f[2], f[0], c->sym ? f[0] : f[1], c->M, c->N, c->K, c->acc); break;
    case OP_RL_F: k->relu2_linear_fwd(f[2], f[0], f[1], c->M, c->N, c->K, c->acc); break;
    case OP_RL_B: k->relu2_linear_bwd(f[3], f[4], f[2], f[1], f[0], c->M, c->N, c->K); break;
    case OP_EMB_F: k->embedding_fwd(f[1], d->idx, f[0], c->rows, c->C); break;
    case OP_EMB_B: k->embedding_bwd(f[0], f[1], d->idx, c->rows, c->C); break;
    case OP_RMS_F: k->rmsnorm_fwd(f[1], f[2], f[0], c->rows, c->C); break;
    case OP_RMS_B: k->rmsnorm_bwd(f[1], f[3], f[0], f[2], c->rows, c->C, 1); break;
    case OP_ROPE_F: k->rope_fwd(f[0], f[1], f[2], c->B, c->T, c->H, c->D); break;
    case OP_ROPE_B: k->rope_bwd(f[0], f[1], f[2], c->B, c->T, c->H, c->D); break;
    case OP_RR_F: k->rope_rmsnorm_fwd(f[3], f[4], f[0], f[1], f[2], c->B, c->T, c->H, c->D); break;
    case OP_RR_B: k->rope_rmsnorm_bwd(f[3], f[5], f[0], f[4], f[1], f[2], c->B, c->T, c->H, c->D); break;
    case OP_ATT_F: k->attention_fwd(f[3], f[4], f[0], f[1], f[2], c->B, c->T, c->H, c->Hkv, c->D, c->window); break;
    case OP_ATT_B:
        k->attention_bwd(f[6], f[7], f[8], f[5], f[3], f[4], f[0], f[1], f[2], c->B, c->T, c->H, c->Hkv, c->D,
                         c->window);
        break;
    case OP_RELU_F: k->relu2_fwd(f[1], f[0], c->n); break;
    case OP_DROP: k->dropout(f[1], f[0], c->n, 0.1f, 0x5eedu, 0, 1); break;
    case OP_RELU_B: k->relu2_bwd(f[2], f[1], f[0], c->n); break;
    case OP_HEAD: k->head_ce(f[3], f[2], f[4], f[0], f[1], d->idx, c->rows, c->V, c->C, 15.0f, 1.0f / c->rows); break;
    case OP_HEAD_B: k->head_dw(f[4], f[2], f[0], c->rows, c->V, c->C); break;
    default: k->softcap_ce(f[2], f[1], f[0], d->idx, c->rows, c->V, 15.0f, 1.0f / c->rows);
    }
}

// ---------------------------------------------------------------------------------------------
// Timing and the table
// ---------------------------------------------------------------------------------------------

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    double med, p10, p90;
} Timing;

// --cold: writing this many bytes (three times a 32 MiB L3) before a call pushes its operands
// out of every cache level, as the fused head's streams do to the layers' activations in a
// training step. The writes are outside the timed span.
#define EVICT_BYTES (96u << 20)

static void evict_caches(char *buf, int round) {
    for (size_t i = 0; i < EVICT_BYTES; i += 64) buf[i] = (char)round;
}

static Timing time_case(const Kernels *k, const BenchCase *c, Bufs *d, double target, char *evict) {
    double t0 = now_seconds();
    bench_call(k, c, d);  // warm-up: caches, page faults, packing buffers
    double once = now_seconds() - t0;
    int reps = once > 0 ? (int)(target / once) : 200;
    reps = reps < 3 ? 3 : reps > 200 ? 200 : reps;
    double *ts = xmalloc((size_t)reps * sizeof *ts);
    for (int i = 0; i < reps; i++) {
        if (evict) evict_caches(evict, i);
        t0 = now_seconds();
        bench_call(k, c, d);
        ts[i] = now_seconds() - t0;
    }
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    Timing t = {ts[reps / 2], ts[reps / 10], ts[(reps * 9) / 10]};
    free(ts);
    return t;
}

// s padded with spaces to `width` characters as a terminal shows them (UTF-8: "XᵀX" is 3
// characters in 5 bytes, and printf's %-16s counts bytes).
static void pad_utf8(char *dst, size_t cap, const char *s, int width) {
    int chars = 0;
    for (const char *p = s; *p; p++) chars += ((unsigned char)*p & 0xc0) != 0x80;
    snprintf(dst, cap, "%s%*s", s, chars < width ? width - chars : 0, "");
}

static void print_row(FILE *f, const BenchCase *c, const char *variant, Timing t, double peak_flops,
                      const LabBenchOpts *o) {
    char shape[64], pf[16] = "-", pb[16] = "-";
    shape_str(c, shape, sizeof shape);
    OpCost cost = case_cost(c);
    double flops = cost.flops / t.med, bytes = cost.bytes / t.med;
    if (peak_flops > 0) snprintf(pf, sizeof pf, "%.0f%%", 100 * flops / peak_flops);
    if (o->peak && o->peak->triad_bw > 0) snprintf(pb, sizeof pb, "%.0f%%", 100 * bytes / o->peak->triad_bw);
    char what[64];
    pad_utf8(what, sizeof what, c->what, 16);
    fprintf(f, "| %-16s | %s | %-22s | %-11s | %9.3f | %9.3f | %9.3f | %8.1f | %7.1f | %5s | %6s |\n",
            KERNEL_OP_NAMES[c->op], what, shape, variant, 1e3 * t.med, 1e3 * t.p10, 1e3 * t.p90, flops / 1e9,
            bytes / 1e9, pf, pb);
    fflush(f);
}

int lab_bench(const Kernels *const *tables, const char *const *labels, int n, const LabBenchOpts *o, FILE *f) {
    const LabShape m = o->shape;
    int op_filter = -1;
    if (o->op && (op_filter = kernel_op_index(o->op)) < 0) return err_set("--op: unknown op '%s'", o->op);
    BenchCase cs[MAX_CASES];
    int nc = preset_cases(&m, o->rows > 0 ? o->rows : 4096, cs), with_bf16 = o->bf16 && cpu_info()->avx512_bf16;
    double target = o->seconds > 0 ? o->seconds : 0.3;
    fprintf(f, "\npreset %s (C=%d, H=%d/%d, D=%d, T=%d, V=%d), %d OpenMP threads; times in ms (wall clock)\n\n",
            o->preset ? o->preset : "cpu", m.n_embd, m.n_head, m.n_kv_head, m.head_dim, m.seq_len, m.vocab_size,
            omp_get_max_threads());
    fprintf(f, "| op               | where            | shape                  | variant     |    median |       p10 "
               "|       p90 |  GFLOP/s |    GB/s |  %%FMA | %%triad |\n");
    fprintf(f, "|------------------|------------------|------------------------|-------------|----------:|----------:"
               "|----------:|---------:|--------:|------:|-------:|\n");
    Rng rng;
    rng_seed(&rng, 7);
    char *evict = o->cold ? xmalloc(EVICT_BYTES) : NULL;
    for (int i = 0; i < nc; i++) {
        BenchCase *c = &cs[i];
        if (op_filter >= 0 && c->op != op_filter) continue;
        Bufs d;
        bufs_alloc(c, &d, &rng);
        for (int t = 0; t < n; t++) {
            int dup = 0;  // an earlier table with the very same function (same source) was timed already
            for (int u = 0; u < t; u++)
                dup |= !strcmp(kernels_op_source(tables[u], c->op), kernels_op_source(tables[t], c->op));
            if (dup) continue;
            print_row(f, c, labels[t], time_case(tables[t], c, &d, target, evict), o->peak ? o->peak->fp32_all : 0, o);
        }
        if (with_bf16 && kernel_op_has_precision(c->op))  // the bf16 twins
            print_row(f, c, "avx512_bf16", time_case(kernels_bf16_matmuls(1), c, &d, target, evict),
                      o->peak ? o->peak->bf16_all : 0, o);
        if (o->amx && kernels_amx_real() && kernel_op_has_precision(c->op))  // AMX's twins
            print_row(f, c, "amx_bf16", time_case(kernels_bf16_amx(0), c, &d, target, evict),
                      o->peak ? o->peak->amx_all : 0, o);
        bufs_free(&d);
    }
    free(evict);
    return 0;
}
