// bench/bench_ops.c — reference vs AVX-512 non-matmul ops on a preset's shapes.
//
//   bench_ops [--preset cpu|kit-d10] [--batch B] [--reps R] [--only NAME] [--avx512-only]
//
// Times each op the way one training step calls it (shapes from model/config.c; B sequences of
// the preset's length), best of R runs, with the current OMP_NUM_THREADS. Best-of rather than
// mean because the cores are shared: the minimum is the least disturbed run. Prints one line per
// op: reference ms, AVX-512 ms, speedup. --avx512-only skips the (slow) reference, for profiling.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/rows/avx512_ops.h"
#include "kernels/cpu/cpu.h"
#include "kernels/ref/ref.h"
#include "model/config.h"
#include "util/timer.h"

typedef struct {
    int B, T, C, H, Hkv, D, V, F;
    float cap;
} Shape;

typedef struct {
    Shape s;
    float *x, *y, *g, *rstd, *cosb, *sinb, *wte, *dwte, *logits, *losses, *dlog;
    float *q, *k, *v, *att, *lse, *dq, *dk, *dv;
    int32_t *idx, *tgt;
} Bufs;

static float *randf(size_t n, float scale) {
    float *p = malloc(n * sizeof *p);
    if (!p) abort();
    for (size_t i = 0; i < n; i++) p[i] = scale * (float)((double)rand() / RAND_MAX * 2 - 1);
    return p;
}

static Bufs make_bufs(Shape s) {
    size_t N = (size_t)s.B * s.T, big = N * (size_t)(s.F > s.H * s.D ? s.F : s.H * s.D);
    if (big < N * s.C) big = N * s.C;
    Bufs b = {.s = s};
    b.x = randf(big, 1), b.y = randf(big, 1), b.g = randf(big, 1), b.rstd = randf(N * s.H + N, 1);
    b.cosb = randf((size_t)s.T * s.D / 2, 1), b.sinb = randf((size_t)s.T * s.D / 2, 1);
    b.wte = randf((size_t)s.V * s.C, 1), b.dwte = randf((size_t)s.V * s.C, 1);
    b.logits = randf(N * s.V, 5), b.dlog = randf(N * s.V, 1), b.losses = randf(N, 1);
    size_t nq = N * s.H * s.D, nkv = N * s.Hkv * s.D;
    b.q = randf(nq, 1), b.k = randf(nkv, 1), b.v = randf(nkv, 1), b.att = randf(nq, 1);
    b.lse = randf((size_t)s.B * s.H * s.T, 1), b.dq = randf(nq, 1), b.dk = randf(nkv, 1), b.dv = randf(nkv, 1);
    b.idx = malloc(N * sizeof *b.idx), b.tgt = malloc(N * sizeof *b.tgt);
    for (size_t i = 0; i < N; i++) b.idx[i] = rand() % s.V, b.tgt[i] = rand() % s.V;
    ref_attention_fwd(b.att, b.lse, b.q, b.k, b.v, s.B, s.T, s.H, s.Hkv, s.D, 0);  // consistent out/lse
    return b;
}

// One op, two implementations, selected by `fast`.
typedef void (*OpFn)(Bufs *b, int fast);

static void op_embedding_fwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_embedding_fwd : ref_embedding_fwd)(b->y, b->idx, b->wte, s.B * s.T, s.C);
}
static void op_embedding_bwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_embedding_bwd : ref_embedding_bwd)(b->dwte, b->g, b->idx, s.B * s.T, s.C);
}
static void op_rmsnorm_fwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_rmsnorm_fwd : ref_rmsnorm_fwd)(b->y, b->rstd, b->x, s.B * s.T, s.C);
}
static void op_rmsnorm_bwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_rmsnorm_bwd : ref_rmsnorm_bwd)(b->y, b->g, b->x, b->rstd, s.B * s.T, s.C, 1);
}
static void op_qknorm_fwd(Bufs *b, int f) {  // rmsnorm over heads (qk-norm)
    Shape s = b->s;
    (f ? avx512_rmsnorm_fwd : ref_rmsnorm_fwd)(b->y, b->rstd, b->x, s.B * s.T * s.H, s.D);
}
static void op_rope_fwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_rope_fwd : ref_rope_fwd)(b->q, b->cosb, b->sinb, s.B, s.T, s.H, s.D);
}
static void op_relu2_fwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_relu2_fwd : ref_relu2_fwd)(b->y, b->x, (size_t)s.B * s.T * s.F);
}
static void op_relu2_bwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_relu2_bwd : ref_relu2_bwd)(b->y, b->g, b->x, (size_t)s.B * s.T * s.F);
}
static void op_attention_fwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_attention_fwd : ref_attention_fwd)(b->y, b->rstd, b->q, b->k, b->v, s.B, s.T, s.H, s.Hkv, s.D, 0);
}
static void op_attention_bwd(Bufs *b, int f) {
    Shape s = b->s;
    (f ? avx512_attention_bwd : ref_attention_bwd)(b->dq, b->dk, b->dv, b->g, b->att, b->lse, b->q, b->k, b->v, s.B,
                                                   s.T, s.H, s.Hkv, s.D, 0);
}
static void op_softcap_ce_loss(Bufs *b, int f) {  // evaluation: losses only
    Shape s = b->s;
    (f ? avx512_softcap_ce : ref_softcap_ce)(b->losses, NULL, b->logits, b->tgt, s.B * s.T, s.V, s.cap, 0.0f);
}
static void op_softcap_ce(Bufs *b, int f) {  // training: gradient in a separate buffer (logits stay intact)
    Shape s = b->s;
    (f ? avx512_softcap_ce : ref_softcap_ce)(b->losses, b->dlog, b->logits, b->tgt, s.B * s.T, s.V, s.cap,
                                             1.0f / (s.B * s.T));
}

static const struct {
    const char *name;
    OpFn fn;
} OPS[] = {
    {"embedding_fwd", op_embedding_fwd}, {"embedding_bwd", op_embedding_bwd}, {"rmsnorm_fwd", op_rmsnorm_fwd},
    {"rmsnorm_bwd", op_rmsnorm_bwd},     {"qknorm_fwd", op_qknorm_fwd},       {"rope_fwd", op_rope_fwd},
    {"relu2_fwd", op_relu2_fwd},         {"relu2_bwd", op_relu2_bwd},         {"attention_fwd", op_attention_fwd},
    {"attention_bwd", op_attention_bwd}, {"softcap_ce_loss", op_softcap_ce_loss}, {"softcap_ce", op_softcap_ce},
};

static double best_ms(OpFn fn, Bufs *b, int fast, int reps) {
    double best = INFINITY;
    fn(b, fast);  // warm-up: page faults, caches
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        fn(b, fast);
        double dt = now_seconds() - t0;
        best = dt < best ? dt : best;
    }
    return best * 1e3;
}

int main(int argc, char **argv) {
    const char *preset = "cpu", *only = NULL;
    int reps = 5, batch = 0, skip_ref = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--preset") && i + 1 < argc) preset = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--avx512-only")) skip_ref = 1;
        else {
            fprintf(stderr, "usage: bench_ops [--preset cpu|kit-d10] [--batch B] [--reps R] [--only NAME] [--avx512-only]\n");
            return 2;
        }
    }
    const CpuInfo *ci = cpu_info();
    if (!(ci->avx512f && ci->avx512bw && ci->avx512vl)) { fprintf(stderr, "bench_ops: no AVX-512 here\n"); return 0; }
    ModelConfig mc;
    if (model_config_preset(preset, &mc)) { fprintf(stderr, "bench_ops: unknown preset %s\n", preset); return 2; }
    Shape s = {.T = mc.seq_len, .C = mc.n_embd, .H = mc.n_head, .Hkv = mc.n_kv_head, .D = mc.head_dim,
               .V = mc.vocab_size, .F = mc.mlp_ratio * mc.n_embd, .cap = mc.softcap};
    s.B = batch > 0 ? batch : (4096 + s.T - 1) / s.T;  // default: 4096 tokens, the cpu preset's step
    Bufs b = make_bufs(s);
    printf("preset %s: B=%d T=%d C=%d H=%d Hkv=%d D=%d V=%d F=%d, best of %d\n", preset, s.B, s.T, s.C, s.H, s.Hkv, s.D,
           s.V, s.F, reps);
    printf("%-16s %10s %10s %8s\n", "op", "ref ms", "avx512 ms", "speedup");
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++) {
        if (only && strcmp(only, OPS[i].name)) continue;
        double r = skip_ref ? NAN : best_ms(OPS[i].fn, &b, 0, reps), a = best_ms(OPS[i].fn, &b, 1, reps);
        printf("%-16s %10.3f %10.3f %7.1fx\n", OPS[i].name, r, a, r / a);
    }
    return 0;
}
