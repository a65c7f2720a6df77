// bench/bench_gemm.c — frontier's AVX-512 matmuls against oneDNN's, on the model's products.
//
//   bench_gemm [--preset cpu|kit-d10|all] [--rows N] [--seconds S] [--threads N]
//
// For each linear layer of the preset (q/k/v and attention projections, MLP fc and proj,
// lm_head) at N = rows tokens: the forward product (nt: x · Wᵀ), and the two backward ones (nn:
// dx = dy · W; tn: dW += dyᵀ · x). Each is timed with frontier's avx512_matmul_*, oneDNN's fp32
// matmul and oneDNN's bf16 matmul (fp32 output) in the same run, interleaved call by call so that
// load from other processes hits all of them alike. oneDNN's bf16 matmul is timed twice: on bf16
// operands converted beforehand (a trainer that stores activations in bf16), and from the same
// fp32 operands frontier gets (two oneDNN reorders to bf16, then the matmul, all timed: what
// frontier's --precision bf16 does, rounding while it packs).
// Prints a markdown table: median and fastest times, GFLOP/s, frontier / oneDNN time ratios, % of
// the measured fp32 peak of `frontier info --peak`, and oneDNN's implementation names.
//
// oneDNN (Debian libdnnl-dev, C API) is a benchmark-only dependency: only this program links it.
#include <dnnl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gemm/amx_matmul.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"
#include "kernels/cpu/peak.h"
#include "kernels/gemm/simd_matmul.h"
#include "model/config.h"
#include "util/error.h"
#include "util/mem.h"
#include "util/timer.h"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        dnnl_status_t s_ = (call);                                                         \
        if (s_ != dnnl_success) {                                                          \
            fprintf(stderr, "bench_gemm: %s failed (status %d)\n", #call, (int)s_);         \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

enum { NT, NN, TN };
static const char *const LAYOUT[] = {"nt", "nn", "tn"};

typedef struct {
    const char *what;
    int layout, M, N, K, acc;
} Product;

// ---------------------------------------------------------------------------------------------
// oneDNN: one primitive per product and data type, memory objects over our buffers
// ---------------------------------------------------------------------------------------------

typedef struct {
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c;
    const char *impl;
    int ok;
} Dnnl;

static dnnl_engine_t engine;
static dnnl_stream_t stream;

// a (M,K) in the product's storage: row-major, or transposed (tn: stored K x M); b (K,N): stored
// N x K for nt, else K x N. c (M,N) row-major.
static Dnnl dnnl_make(const Product *p, dnnl_data_type_t in_type, void *a, void *b, float *c) {
    Dnnl d = {0};
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t ad = {p->M, p->K}, bd = {p->K, p->N}, cd = {p->M, p->N};
    dnnl_dims_t as = {p->layout == TN ? 1 : p->K, p->layout == TN ? p->M : 1};
    dnnl_dims_t bs = {p->layout == NT ? 1 : p->N, p->layout == NT ? p->K : 1}, cs = {p->N, 1};
    CHECK(dnnl_memory_desc_init_by_strides(&a_md, 2, ad, in_type, as));
    CHECK(dnnl_memory_desc_init_by_strides(&b_md, 2, bd, in_type, bs));
    CHECK(dnnl_memory_desc_init_by_strides(&c_md, 2, cd, dnnl_f32, cs));
    dnnl_matmul_desc_t md;
    CHECK(dnnl_matmul_desc_init(&md, &a_md, &b_md, NULL, &c_md));
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    CHECK(dnnl_primitive_attr_create(&attr));
    CHECK(dnnl_post_ops_create(&po));
    if (p->acc) CHECK(dnnl_post_ops_append_sum(po, 1.0f));
    CHECK(dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL) == dnnl_success) {
        CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &d.impl));
        CHECK(dnnl_primitive_create(&d.prim, pd));
        CHECK(dnnl_memory_create(&d.a, &a_md, engine, a));
        CHECK(dnnl_memory_create(&d.b, &b_md, engine, b));
        CHECK(dnnl_memory_create(&d.c, &c_md, engine, c));
        d.ok = 1;
        dnnl_primitive_desc_destroy(pd);
    }
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return d;
}

// fp32 operands to the bf16 matmul's: a reorder for A and one for B (oneDNN's conversion,
// round to nearest even like vcvtneps2bf16), over the product's own strides.
typedef struct {
    dnnl_primitive_t ra, rb;
    dnnl_memory_t fa, fb;  // the fp32 operands (the bf16 ones are the matmul's memories)
    const Dnnl *mm;
    int ok;
} DnnlFromF32;

static int reorder_make(dnnl_memory_t to, void *from_data, dnnl_primitive_t *prim, dnnl_memory_t *from) {
    const dnnl_memory_desc_t *to_md;
    CHECK(dnnl_memory_get_memory_desc(to, &to_md));
    dnnl_memory_desc_t from_md = *to_md;
    from_md.data_type = dnnl_f32;
    dnnl_primitive_desc_t pd;
    if (dnnl_reorder_primitive_desc_create(&pd, &from_md, engine, to_md, engine, NULL) != dnnl_success) return 0;
    CHECK(dnnl_primitive_create(prim, pd));
    dnnl_primitive_desc_destroy(pd);
    CHECK(dnnl_memory_create(from, &from_md, engine, from_data));
    return 1;
}

static DnnlFromF32 dnnl_from_f32(const Dnnl *mm, float *a, float *b) {
    DnnlFromF32 d = {.mm = mm};
    d.ok = mm->ok && reorder_make(mm->a, a, &d.ra, &d.fa) && reorder_make(mm->b, b, &d.rb, &d.fb);
    return d;
}

// Whatever was made: B's reorder can fail after A's was made.
static void dnnl_from_f32_free(DnnlFromF32 *d) {
    if (d->ra) dnnl_primitive_destroy(d->ra), dnnl_memory_destroy(d->fa);
    if (d->rb) dnnl_primitive_destroy(d->rb), dnnl_memory_destroy(d->fb);
}

static void dnnl_run(const Dnnl *d) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, d->a}, {DNNL_ARG_WEIGHTS, d->b}, {DNNL_ARG_DST, d->c}};
    CHECK(dnnl_primitive_execute(d->prim, stream, 3, args));
    CHECK(dnnl_stream_wait(stream));
}

static void dnnl_free(Dnnl *d) {
    if (!d->ok) return;
    dnnl_primitive_destroy(d->prim);
    dnnl_memory_destroy(d->a);
    dnnl_memory_destroy(d->b);
    dnnl_memory_destroy(d->c);
}

// ---------------------------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------------------------

static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1)) >> 16);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

// A timing's median: the upper middle of the sorted calls, an actual call's time (the reps are odd
// or many, so the choice is immaterial); the summary over products below averages its middle two.
static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

// frontier's bf16 GEMMs here: AMX's tiles where this CPU has them (FRONTIER_KERNELS=amx
// --precision bf16), else AVX512_BF16's vdpbf16ps.
static int use_amx(void) { return kernels_amx_real(); }

static void frontier_run(const Product *p, float *c, const float *a, const float *b, int bf16) {
    if (bf16 && use_amx()) {
        if (p->layout == NT) amx_matmul_nt(c, a, b, p->M, p->N, p->K, p->acc);
        else if (p->layout == NN) amx_matmul_nn(c, a, b, p->M, p->N, p->K, p->acc);
        else amx_matmul_tn(c, a, b, p->M, p->N, p->K, p->acc);
        return;
    }
    if (bf16) {  // --precision bf16's matmuls: fp32 operands rounded to bf16 while packing
        if (p->layout == NT) avx512bf16_matmul_nt(c, a, b, p->M, p->N, p->K, p->acc);
        else if (p->layout == NN) avx512bf16_matmul_nn(c, a, b, p->M, p->N, p->K, p->acc);
        else avx512bf16_matmul_tn(c, a, b, p->M, p->N, p->K, p->acc);
        return;
    }
    if (p->layout == NT) avx512_matmul_nt(c, a, b, p->M, p->N, p->K, p->acc);
    else if (p->layout == NN) avx512_matmul_nn(c, a, b, p->M, p->N, p->K, p->acc);
    else avx512_matmul_tn(c, a, b, p->M, p->N, p->K, p->acc);
}

static double seconds_of(void (*fn)(const void *), const void *arg) {
    double t0 = now_seconds();
    fn(arg);
    return now_seconds() - t0;
}

typedef struct {
    const Product *p;
    float *c;
    const float *a, *b;
    int bf16;
} FrontierCall;

static void frontier_call(const void *x) {
    const FrontierCall *f = x;
    frontier_run(f->p, f->c, f->a, f->b, f->bf16);
}

static void dnnl_call(const void *x) { dnnl_run(x); }

static void dnnl_from_f32_call(const void *x) {
    const DnnlFromF32 *d = x;
    dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, d->fa}, {DNNL_ARG_TO, d->mm->a}};
    dnnl_exec_arg_t rb[2] = {{DNNL_ARG_FROM, d->fb}, {DNNL_ARG_TO, d->mm->b}};
    CHECK(dnnl_primitive_execute(d->ra, stream, 2, ra));
    CHECK(dnnl_primitive_execute(d->rb, stream, 2, rb));
    dnnl_run(d->mm);
}

// The fp32 peak for the threads in use: the all-thread figure, or per-core x threads when fewer.
static double peak_flops(const MachinePeak *p) {
    int t = omp_get_max_threads();
    return t >= p->threads ? p->fp32_all : p->fp32_core * t;
}

// One product's frontier / oneDNN median time ratios, indexed by RatioKind (0 where a side did not run).
typedef enum { RATIO_F32, RATIO_BF16, RATIO_CONV, N_RATIOS } RatioKind;  // fp32; bf16 against pre-converted
                                                                          // bf16 operands; bf16 from fp32 ones
typedef struct {
    double v[N_RATIOS];
} Ratios;

static Ratios bench_product(const char *preset, const Product *p, double seconds, const MachinePeak *peak) {
    size_t na = (size_t)p->M * p->K, nb = (size_t)p->N * p->K, nc = (size_t)p->M * p->N;
    float *a = xaligned_alloc(na * 4), *b = xaligned_alloc(nb * 4), *c = xaligned_alloc(nc * 4);
    uint16_t *a16 = xaligned_alloc(na * 2), *b16 = xaligned_alloc(nb * 2);
    for (size_t i = 0; i < na; i++) a[i] = (float)((i * 7919 % 1000) / 500.0 - 1), a16[i] = to_bf16(a[i]);
    for (size_t i = 0; i < nb; i++) b[i] = (float)((i * 104729 % 1000) / 500.0 - 1), b16[i] = to_bf16(b[i]);
    Dnnl f32 = dnnl_make(p, dnnl_f32, a, b, c), bf16 = dnnl_make(p, dnnl_bf16, a16, b16, c);
    DnnlFromF32 conv = dnnl_from_f32(&bf16, a, b);  // converts into a16, b16: the same values
    FrontierCall fc = {p, c, a, b, 0}, fc16 = {p, c, a, b, 1};
    int f16 = cpu_info()->avx512_bf16;
    // warm-up, and the number of interleaved rounds that fits the time
    double once = seconds_of(frontier_call, &fc) + (f32.ok ? seconds_of(dnnl_call, &f32) : 0) +
                  (bf16.ok ? seconds_of(dnnl_call, &bf16) : 0) + (conv.ok ? seconds_of(dnnl_from_f32_call, &conv) : 0) +
                  (f16 ? seconds_of(frontier_call, &fc16) : 0);
    int reps = once > 0 ? (int)(seconds / once) : 50;
    reps = reps < 3 ? 3 : reps > 50 ? 50 : reps;
    double *tf = xmalloc((size_t)reps * sizeof *tf), *td = xmalloc((size_t)reps * sizeof *td);
    double *tb = xmalloc((size_t)reps * sizeof *tb), *tf16 = xmalloc((size_t)reps * sizeof *tf16);
    double *tc = xmalloc((size_t)reps * sizeof *tc);
    for (int r = 0; r < reps; r++) {
        tf[r] = seconds_of(frontier_call, &fc);
        td[r] = f32.ok ? seconds_of(dnnl_call, &f32) : 0;
        tb[r] = bf16.ok ? seconds_of(dnnl_call, &bf16) : 0;
        tc[r] = conv.ok ? seconds_of(dnnl_from_f32_call, &conv) : 0;
        tf16[r] = f16 ? seconds_of(frontier_call, &fc16) : 0;
    }
    double fl = 2.0 * p->M * p->N * p->K, mf = median(tf, reps), md = median(td, reps), mb = median(tb, reps);
    double bf = tf[0], bd = td[0], pk = peak_flops(peak);  // sorted by median(): [0] is the fastest call
    double m16 = median(tf16, reps), mc = median(tc, reps);
    char bf16_cols[200] = "| - | - | - | - | - | - | - |";
    if (bf16.ok && conv.ok && f16)
        snprintf(bf16_cols, sizeof bf16_cols, "| %.3f | %.1f | %.3f | %.3f | %.1f | **%.2f** | **%.2f** |", 1e3 * mb,
                 fl / mb / 1e9, 1e3 * mc, 1e3 * m16, fl / m16 / 1e9, m16 / mb, m16 / mc);
    printf("| %s | %s | %s | %dx%dx%d%s | %.3f / %.3f | %.1f | %.0f%% | %.3f / %.3f | %.1f | %.0f%% | **%.2f** / %.2f "
           "%s %s, %s |\n",
           preset, p->what, LAYOUT[p->layout], p->M, p->N, p->K, p->acc ? " +=" : "", 1e3 * mf, 1e3 * bf,
           fl / mf / 1e9, 100 * fl / bf / pk, 1e3 * md, 1e3 * bd, fl / md / 1e9, 100 * fl / bd / pk, mf / md, bf / bd,
           bf16_cols, f32.ok ? f32.impl : "-", bf16.ok ? bf16.impl : "-");
    fflush(stdout);
    dnnl_from_f32_free(&conv);
    dnnl_free(&f32);
    dnnl_free(&bf16);
    free(a), free(b), free(c), free(a16), free(b16), free(tf), free(td), free(tb), free(tf16), free(tc);
    Ratios r = {{[RATIO_F32] = f32.ok ? mf / md : 0}};
    if (bf16.ok && conv.ok && f16) r.v[RATIO_BF16] = m16 / mb, r.v[RATIO_CONV] = m16 / mc;
    return r;
}

// The median of the non-zero values (the mean of the middle two for an even count), 0 if none.
static double median_of_ratios(const Ratios *r, int n, RatioKind kind) {
    double *v = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *v), med = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (r[i].v[kind] > 0) v[k++] = r[i].v[kind];
    if (k) {
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    }
    free(v);
    return med;
}

// One summary line: the median ratios over a set of products (the headline figures of docs/perf.md).
static void print_medians(const char *what, const Ratios *r, int n) {
    printf("- %s (%d products), median frontier/oneDNN time: fp32 **%.2f**", what, n,
           median_of_ratios(r, n, RATIO_F32));
    double b = median_of_ratios(r, n, RATIO_BF16), c = median_of_ratios(r, n, RATIO_CONV);
    if (b > 0) printf("; bf16 **%.2f** against bf16 operands, **%.2f** from the fp32 operands", b, c);
    printf("\n");
}

// The preset's products at N tokens: forward (nt), input gradient (nn), weight gradient (tn) of
// each of its 5 layer kinds.
enum { PRESET_PRODUCTS = 5 * 3 };
static int preset_products(const ModelConfig *m, int N, Product *out) {
    int C = m->n_embd, F = m->mlp_ratio * C, qd = m->n_head * m->head_dim, V = m->vocab_size, n = 0;
    struct {
        const char *what;
        int in, outf;
    } layers[] = {{"q proj", C, qd}, {"attn proj", qd, C}, {"mlp fc", C, F}, {"mlp proj", F, C}, {"lm_head", C, V}};
    for (int l = 0; l < 5; l++) {
        int in = layers[l].in, o = layers[l].outf;
        out[n++] = (Product){layers[l].what, NT, N, o, in, 0};
        out[n++] = (Product){layers[l].what, NN, N, in, o, 0};
        out[n++] = (Product){layers[l].what, TN, o, in, N, 1};
    }
    return n;
}

int main(int argc, char **argv) {
    const char *which = "all";
    int rows = 4096;
    double seconds = 0.5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--preset") && i + 1 < argc) which = argv[++i];
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) omp_set_num_threads(atoi(argv[++i]));
        else {
            fprintf(stderr, "usage: bench_gemm [--preset cpu|kit-d10|all] [--rows N] [--seconds S] [--threads N]\n");
            return 2;
        }
    }
    MachinePeak peak;
    if (machine_peak_get("cache", &peak)) {
        fprintf(stderr, "bench_gemm: %s\n", err_msg());
        return 1;
    }
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    const dnnl_version_t *v = dnnl_version();
    printf("frontier avx512 fp32 vs oneDNN %d.%d.%d matmul, %d threads, %d tokens; fp32 peak %.1f GFLOP/s for these "
           "threads (frontier info --peak). Times: median and fastest of interleaved calls, GFLOP/s at the median, "
           "%% of peak at the fastest (the undisturbed speed on shared cores). bf16: frontier's %s matmuls "
           "(--precision bf16) take the fp32 operands and round them while packing, as in training; oneDNN's bf16 "
           "matmul is timed on operands converted to bf16 beforehand (bf16 ms), and from the same fp32 operands "
           "(two oneDNN reorders to bf16, then the matmul: from fp32 ms).\n\n",
           v->major, v->minor, v->patch, omp_get_max_threads(), rows, peak_flops(&peak) / 1e9,
           use_amx() ? "AMX (tile)" : "AVX512_BF16");
    printf("| preset | layer | op | MxNxK | frontier ms median / min | GFLOP/s | %%peak (min) | oneDNN ms median / min | "
           "GFLOP/s | %%peak (min) | frontier/oneDNN median / min | oneDNN bf16 ms | GFLOP/s | oneDNN bf16 from fp32 ms | "
           "frontier bf16 ms | GFLOP/s | frontier/oneDNN bf16 median | frontier/oneDNN bf16 from fp32 median | "
           "oneDNN impl (f32, bf16) |\n");
    printf("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n");
    int n_known = 0, n_all = 0, n_presets = 0;
    while (MODEL_PRESETS[n_known]) n_known++;
    Ratios *all = xmalloc((size_t)n_known * PRESET_PRODUCTS * sizeof *all);
    int *first = xmalloc((size_t)n_known * sizeof *first), *count = xmalloc((size_t)n_known * sizeof *count);
    const char **names = xmalloc((size_t)n_known * sizeof *names);
    for (int pi = 0; MODEL_PRESETS[pi]; pi++) {
        const char *name = MODEL_PRESETS[pi];
        if (strcmp(which, "all") && strcmp(which, name)) continue;
        ModelConfig m;
        if (model_config_preset(name, &m)) continue;
        int N = rows / m.seq_len > 0 ? rows / m.seq_len * m.seq_len : m.seq_len;
        Product ps[PRESET_PRODUCTS];
        int n = preset_products(&m, N, ps);
        names[n_presets] = name, first[n_presets] = n_all, count[n_presets++] = n;
        for (int i = 0; i < n; i++) all[n_all++] = bench_product(name, &ps[i], seconds, &peak);
    }
    printf("\n");
    for (int i = 0; i < n_presets; i++) print_medians(names[i], all + first[i], count[i]);
    if (n_presets > 1) print_medians("all presets", all, n_all);
    free(all), free(first), free(count), free(names);
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return 0;
}
