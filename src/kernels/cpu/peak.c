// kernels/cpu/peak.c — measuring this machine's peaks, and their cache (see peak.h).
#include "kernels/cpu/peak.h"

#include <cjson/cJSON.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/cpu.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/timer.h"
#include "util/json_file.h"

static double thread_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// ---------------------------------------------------------------------------------------------
// Compute chains. Inline assembly, so that the compiler can neither drop nor reorder them and
// the build's -march does not matter: 24 instructions per iteration over 12 accumulators
// (registers 4-15), sources in registers 0 and 1.
// ---------------------------------------------------------------------------------------------

typedef enum { CHAIN_ZMM_FMA, CHAIN_YMM_FMA, CHAIN_BF16, CHAIN_AMX } Chain;

#define OP12(op, r)                                                                                        \
    op " %%" r "0, %%" r "1, %%" r "4\n\t" op " %%" r "0, %%" r "1, %%" r "5\n\t" op " %%" r "0, %%" r "1, %%" r \
       "6\n\t" op " %%" r "0, %%" r "1, %%" r "7\n\t" op " %%" r "0, %%" r "1, %%" r "8\n\t" op " %%" r "0, %%" r \
       "1, %%" r "9\n\t" op " %%" r "0, %%" r "1, %%" r "10\n\t" op " %%" r "0, %%" r "1, %%" r "11\n\t" op       \
       " %%" r "0, %%" r "1, %%" r "12\n\t" op " %%" r "0, %%" r "1, %%" r "13\n\t" op " %%" r "0, %%" r "1, %%"   \
       r "14\n\t" op " %%" r "0, %%" r "1, %%" r "15\n\t"
#define VCLOBBER "xmm0", "xmm1", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
                 "xmm13", "xmm14", "xmm15", "cc"

// 64-byte AMX tile configuration: palette 1, tiles 0-7 of 16 rows x 64 bytes.
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} TileConfig;

static void run_amx(long iters) {
    TileConfig cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    __asm__ volatile(
        "ldtilecfg %1\n\t"
        "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3\n\t"
        "tilezero %%tmm4\n\ttilezero %%tmm5\n\ttilezero %%tmm6\n\ttilezero %%tmm7\n\t"
        "1:\n\t"
        "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\ttdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
        "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\ttdpbf16ps %%tmm7, %%tmm5, %%tmm3\n\t"
        "dec %0\n\tjnz 1b\n\t"
        "tilerelease"
        : "+r"(iters)
        : "m"(cfg)
        : "cc", "memory");
}

// Run `iters` iterations of the chain; returns FLOPs done.
static double run_chain(Chain c, long iters) {
    double n = (double)iters;
    switch (c) {
    case CHAIN_ZMM_FMA:
        __asm__ volatile("vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1\n\t1:\n\t" OP12(
                             "vfmadd231ps", "zmm") OP12("vfmadd231ps", "zmm") "dec %0\n\tjnz 1b"
                         : "+r"(iters)::VCLOBBER);
        return n * 24 * 32;
    case CHAIN_YMM_FMA:
        __asm__ volatile("vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1\n\t1:\n\t" OP12(
                             "vfmadd231ps", "ymm") OP12("vfmadd231ps", "ymm") "dec %0\n\tjnz 1b"
                         : "+r"(iters)::VCLOBBER);
        __asm__ volatile("vzeroupper" ::: "memory");
        return n * 24 * 16;
    case CHAIN_BF16:  // 16 lanes x 2 products
        __asm__ volatile("vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1\n\t1:\n\t" OP12(
                             "vdpbf16ps", "zmm") OP12("vdpbf16ps", "zmm") "dec %0\n\tjnz 1b"
                         : "+r"(iters)::VCLOBBER);
        return n * 24 * 64;
    case CHAIN_AMX:  // 16 x 16 outputs x 32 products, 4 per iteration
        run_amx(iters);
        return n * 4 * 16 * 16 * 32 * 2;
    }
    return 0;
}

// Best rate (FLOP/s of thread CPU time) over `trials` runs on the calling thread.
static double chain_rate(Chain c, long iters, int trials) {
    double best = 0;
    for (int t = 0; t < trials; t++) {
        double t0 = thread_cpu_seconds(), flops = run_chain(c, iters), dt = thread_cpu_seconds() - t0;
        if (dt > 0 && flops / dt > best) best = flops / dt;
    }
    return best;
}

// Sum over all OpenMP threads of each one's rate, all running at once.
static double chain_rate_all(Chain c, long iters, int trials) {
    double total = 0;
#pragma omp parallel reduction(+ : total)
    total += chain_rate(c, iters, trials);
    return total;
}

// ---------------------------------------------------------------------------------------------
// Memory bandwidth: STREAM triad a = b + s c and a read-only sum, arrays of 64 MiB each
// ---------------------------------------------------------------------------------------------

#define BW_FLOATS (16L << 20)
#define BW_TRIALS 4

static double triad_seconds(float *a, const float *b, const float *c) {
    double t0 = now_seconds();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < BW_FLOATS; i++) a[i] = b[i] + 0.5f * c[i];
    return now_seconds() - t0;
}

// 16 partial sums per thread: independent lanes the compiler vectorises without reassociating.
static double read_seconds(const float *b, float *sink) {
    double t0 = now_seconds();
    float s = 0;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long blk = 0; blk < BW_FLOATS / 4096; blk++) {
        float acc[16] = {0};
        for (long i = blk * 4096; i < (blk + 1) * 4096; i += 16)
            for (int j = 0; j < 16; j++) acc[j] += b[i + j];
        for (int j = 0; j < 16; j++) s += acc[j];
    }
    *sink += s;
    return now_seconds() - t0;
}

static int measure_bandwidth(MachinePeak *p) {
    float *a = aligned_alloc(64, BW_FLOATS * sizeof(float)), *b = aligned_alloc(64, BW_FLOATS * sizeof(float)),
          *c = aligned_alloc(64, BW_FLOATS * sizeof(float));
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return err_set("peak: cannot allocate 3 x %ld MiB for the bandwidth test", BW_FLOATS * 4 >> 20);
    }
#pragma omp parallel for schedule(static)  // first touch by the threads that stream them
    for (long i = 0; i < BW_FLOATS; i++) a[i] = 0, b[i] = 1, c[i] = 2;
    double triad = 1e30, rd = 1e30;
    float sink = 0;
    for (int t = 0; t < BW_TRIALS; t++) {
        double x = triad_seconds(a, b, c), y = read_seconds(b, &sink);
        triad = x < triad ? x : triad;
        rd = y < rd ? y : rd;
    }
    p->triad_bw = 3.0 * 4 * BW_FLOATS / triad;
    p->read_bw = 4.0 * BW_FLOATS / rd + 0 * sink;
    free(a), free(b), free(c);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

#define CHAIN_ITERS 2000000L  // ~15-30 ms per run at ~1 instruction per cycle
#define CHAIN_TRIALS 3

int machine_peak_measure(MachinePeak *p) {
    const CpuInfo *ci = cpu_info();
    memset(p, 0, sizeof *p);
    snprintf(p->cpu, sizeof p->cpu, "%s", ci->model);
    p->threads = omp_get_max_threads();
    // The hardware's peak, also in the AVX-512 emulation build (whose AVX-512 flags are SIMDe's).
    int zmm = ci->avx512f && !ci->avx512_emulated;
    Chain fma = zmm ? CHAIN_ZMM_FMA : CHAIN_YMM_FMA;
    snprintf(p->fp32_isa, sizeof p->fp32_isa, "%s", zmm ? "avx512" : ci->avx2 && ci->fma ? "avx2" : "scalar");
    if (zmm || (ci->avx2 && ci->fma)) {
        p->fp32_core = chain_rate(fma, CHAIN_ITERS, CHAIN_TRIALS);
        p->fp32_all = chain_rate_all(fma, CHAIN_ITERS, CHAIN_TRIALS);
    } else {  // no FMA: the SSE estimate (2 x 4-lane multiply + add per cycle at 3 GHz)
        p->fp32_core = 16 * 3e9;
        p->fp32_all = p->fp32_core * ci->logical_cpus;
    }
    if (ci->avx512_bf16 && !ci->avx512_emulated) {
        p->bf16_core = chain_rate(CHAIN_BF16, CHAIN_ITERS, CHAIN_TRIALS);
        p->bf16_all = chain_rate_all(CHAIN_BF16, CHAIN_ITERS, CHAIN_TRIALS);
    }
    if (ci->amx_bf16 && ci->amx_permitted) {
        p->amx_core = chain_rate(CHAIN_AMX, CHAIN_ITERS / 4, CHAIN_TRIALS);
        p->amx_all = chain_rate_all(CHAIN_AMX, CHAIN_ITERS / 4, CHAIN_TRIALS);
    }
    return measure_bandwidth(p);
}

// ---------------------------------------------------------------------------------------------
// The cache: <dir>/peak.json = {"machines": [{"cpu": ..., "threads": ..., figures...}, ...]}
// ---------------------------------------------------------------------------------------------

#define PEAK_FIELDS(X)                                                                                         \
    X(fp32_core, 1e9, "fp32_core_gflops") X(fp32_all, 1e9, "fp32_all_gflops") X(bf16_core, 1e9, "bf16_core_gflops") \
        X(bf16_all, 1e9, "bf16_all_gflops") X(amx_core, 1e9, "amx_core_gflops") X(amx_all, 1e9, "amx_all_gflops")   \
            X(triad_bw, 1e9, "triad_gbs") X(read_bw, 1e9, "read_gbs")

static char *cache_path(const char *dir) { return path_join(dir ? dir : "cache", "peak.json"); }

static int same_machine(const cJSON *m, const char *cpu, int threads) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "cpu"), *t = cJSON_GetObjectItemCaseSensitive(m, "threads");
    return cJSON_IsString(c) && !strcmp(c->valuestring, cpu) && cJSON_IsNumber(t) && t->valueint == threads;
}

// The cache file's machine list (an empty one if the file is absent or unreadable).
static cJSON *load_doc(const char *path) {
    char *text = path_exists(path) ? read_file(path, NULL) : NULL;
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!doc || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "machines"))) {
        cJSON_Delete(doc);
        doc = cJSON_CreateObject();
        cJSON_AddItemToObject(doc, "machines", cJSON_CreateArray());
    }
    return doc;
}

int machine_peak_load(const char *cache_dir, MachinePeak *out) {
    char *path = cache_path(cache_dir);
    cJSON *doc = load_doc(path), *m;
    const CpuInfo *ci = cpu_info();
    int threads = omp_get_max_threads(), rc = -1;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "machines")) {
        if (!same_machine(m, ci->model, threads)) continue;
        memset(out, 0, sizeof *out);
        snprintf(out->cpu, sizeof out->cpu, "%s", ci->model);
        out->threads = threads;
        const cJSON *isa = cJSON_GetObjectItemCaseSensitive(m, "fp32_isa");
        snprintf(out->fp32_isa, sizeof out->fp32_isa, "%s", cJSON_IsString(isa) ? isa->valuestring : "?");
#define GET(f, unit, key)                                          \
    {                                                                 \
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);   \
        out->f = cJSON_IsNumber(v) ? v->valuedouble * (unit) : 0;   \
    }
        PEAK_FIELDS(GET)
#undef GET
        rc = out->fp32_all > 0 ? 0 : -1;
        break;
    }
    if (rc) err_set("%s has no peak figures for %s with %d threads", path, ci->model, threads);
    cJSON_Delete(doc);
    free(path);
    return rc;
}

int machine_peak_save(const char *cache_dir, const MachinePeak *p) {
    if (mkdir_p(cache_dir ? cache_dir : "cache")) return -1;
    char *path = cache_path(cache_dir);
    cJSON *doc = load_doc(path), *list = cJSON_GetObjectItemCaseSensitive(doc, "machines");
    for (int i = cJSON_GetArraySize(list) - 1; i >= 0; i--)
        if (same_machine(cJSON_GetArrayItem(list, i), p->cpu, p->threads)) cJSON_DeleteItemFromArray(list, i);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "cpu", p->cpu);
    cJSON_AddNumberToObject(m, "threads", p->threads);
    cJSON_AddStringToObject(m, "fp32_isa", p->fp32_isa);
#define PUT(f, unit, key) cJSON_AddNumberToObject(m, key, p->f / (unit));
    PEAK_FIELDS(PUT)
#undef PUT
    cJSON_AddNumberToObject(m, "measured_unix", (double)time(NULL));
    cJSON_AddItemToArray(list, m);
    int rc = json_write_atomic(path, doc);
    cJSON_Delete(doc);
    free(path);
    return rc;
}

int machine_peak_get(const char *cache_dir, MachinePeak *out) {
    if (machine_peak_load(cache_dir, out) == 0) return 0;
    if (machine_peak_measure(out)) return -1;
    if (machine_peak_save(cache_dir, out)) err_clear();  // a read-only cache only costs a re-measure
    return 0;
}

double machine_peak_fp32_flops(const char *cache_dir) {
    static double cached;
    if (cached > 0) return cached;
    MachinePeak p;
    if (machine_peak_get(cache_dir, &p) == 0 && p.fp32_all > 0) return cached = p.fp32_all;
    err_clear();
    const CpuInfo *ci = cpu_info();
    double per_cycle = ci->avx512f && !ci->avx512_emulated ? 64.0 : ci->avx2 && ci->fma ? 32.0 : 8.0;
    return cached = per_cycle * 3.0e9 * ci->logical_cpus;
}
