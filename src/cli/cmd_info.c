// cli/cmd_info.c — `frontier info`: the CPU, what frontier can use on it, which kernel variant
// each op runs, and (--peak) the measured peaks.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "planner/session.h"
#include "train/summary.h"
#include "dist/dist.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"
#include "kernels/cpu/peak.h"
#include "util/error.h"
#include "util/fileio.h"

static void print_cpu(void) {
    const CpuInfo *c = cpu_info();
    const char *yn[] = {"no", "yes"};
    char *commit = train_git_commit();
    printf("build:          %s\n", commit);  // the commit this binary was built from (summary.json's git_commit)
    free(commit);
    printf("cpu:            %s\n", c->model);
    printf("logical cpus:   %d (OpenMP threads: %d)\n", c->logical_cpus, omp_get_max_threads());
    printf("avx2:           %s\n", yn[c->avx2]);
    printf("fma:            %s\n", yn[c->fma]);
    printf("avx512f:        %s\n", yn[c->avx512f]);
    printf("avx512bw/vl:    %s/%s\n", yn[c->avx512bw], yn[c->avx512vl]);
    printf("avx512_vnni:    %s\n", yn[c->avx512_vnni]);
    printf("avx512_bf16:    %s\n", yn[c->avx512_bf16]);
    if (c->avx512_emulated) printf("                (AVX-512 and AVX512_BF16 emulated by SIMDe: an emulation build)\n");
    printf("amx-tile:       %s\n", yn[c->amx_tile]);
    printf("amx-bf16:       %s\n", yn[c->amx_bf16]);
    printf("amx-int8:       %s\n", yn[c->amx_int8]);
    printf("amx permission: %s\n", c->amx_tile ? (c->amx_permitted ? "granted" : "refused by the kernel")
                                               : "n/a (no AMX)");
}

static void print_kernels(void) {
    printf("mpi:            %s (%d rank%s now)\n", dist_backend(), dist_world(), dist_world() == 1 ? "" : "s");
    printf("kernel variants:");
    for (int v = 0; v < KERNEL_VARIANT_COUNT; v++) {
        const char *why;
        int ok = kernels_variant_available((KernelVariant)v, &why);
        printf("%s %s%s%s%s", v ? "," : "", KERNEL_VARIANT_NAMES[v], ok ? "" : " (no: ", ok ? "" : why, ok ? "" : ")");
        if (v == KV_AMX && ok && kernels_amx_emulated()) printf(" (emulated: FRONTIER_AMX_EMULATE)");
    }
    const Kernels *k = kernels();
    const char *env = getenv("FRONTIER_KERNELS");
    printf("\nkernels:        %s (%s)\n", k->name, env && *env ? "FRONTIER_KERNELS" : "the best this CPU runs");
    char ablated[128];
    if (*kernels_ablation_name(ablated, sizeof ablated)) printf("ablated:        %s (FRONTIER_ABLATE)\n", ablated);
    // The ops with products take a bf16 twin in bf16 training: name it next to the fp32 op.
    const char *twin[KERNEL_OP_COUNT] = {0};
    KernelPrecision p = kernels_precision_auto();
    if (p == KP_BF16 && kernels_precision_check(KP_BF16) == 0) {
        for (int op = 0; op < KERNEL_OP_COUNT; op++)
            if (kernel_op_has_precision(op)) twin[op] = kernels_op_source(kernels_for(KP_BF16), op);
    }
    for (int op = 0; op < KERNEL_OP_COUNT; op++) {
        printf("  %-16s %s", KERNEL_OP_NAMES[op], kernels_op_source(k, op));
        if (twin[op]) printf("  (bf16 training: %s)", twin[op]);
        printf("\n");
    }
    printf("precision:      %s by default in training (--precision auto: %s); evaluation fp32\n",
           kernels_precision_name(p), p == KP_BF16 ? "bf16 mixed precision, this CPU has AVX512_BF16"
                                                   : "fp32, this CPU has no AVX512_BF16 matmuls");
    // the key `frontier plan` caches this machine's throughput model under (one process, all cores,
    // the default precision): a throughput.json measured on one node serves its twins under it
    PlanRequest rq = {.ranks = 1, .precision = p};
    char key[160];
    plan_layout_key(&rq, key, sizeof key);
    printf("plan layout:    %s\n", key);
}

static void print_peak(const MachinePeak *p, const char *how) {
    char fp32[32];
    snprintf(fp32, sizeof fp32, "fp32 FMA (%s):", p->fp32_isa);
    printf("peak (%s):\n", how);
    printf("  %-19s %7.1f GFLOP/s per core, %7.1f GFLOP/s with %d threads\n", fp32, p->fp32_core / 1e9,
           p->fp32_all / 1e9, p->threads);
    if (p->bf16_all > 0)
        printf("  bf16 vdpbf16ps:     %7.1f GFLOP/s per core, %7.1f GFLOP/s with %d threads\n", p->bf16_core / 1e9,
               p->bf16_all / 1e9, p->threads);
    else printf("  bf16 vdpbf16ps:     n/a (no AVX512_BF16)\n");
    if (p->amx_all > 0)
        printf("  AMX bf16:           %7.1f GFLOP/s per core, %7.1f GFLOP/s with %d threads\n", p->amx_core / 1e9,
               p->amx_all / 1e9, p->threads);
    else printf("  AMX bf16:           n/a (no AMX, or not permitted)\n");
    printf("  memory:             triad %.1f GB/s, read %.1f GB/s (%d threads)\n", p->triad_bw / 1e9,
           p->read_bw / 1e9, p->threads);
}

int cmd_info(int argc, char **argv) {
    int peak = 0, remeasure = 0;
    const char *cache = "cache";
    Option opts[] = {
        {"peak", OPT_FLAG, &peak, NULL, "also show the measured peaks (cached in CACHE/peak.json; ~2 s to measure)", 0, 0, 0, 0, NULL},
        {"remeasure", OPT_FLAG, &remeasure, NULL, "with --peak: measure again and update the cache", 0, 0, 0, 0, NULL},
        {"cache", OPT_STRING, &cache, "DIR", "cache folder", 0, 0, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier info [options]",
                        "Show the CPU model, core count, the SIMD/matrix features detected at run time (cpuid + "
                        "XCR0), whether the kernel granted AMX tile permission to this process, and the kernel "
                        "variant each op runs (FRONTIER_KERNELS overrides it, e.g. avx512,matmul_nt=ref). With "
                        "--peak: the fp32 FMA, bf16 and AMX compute peaks per core and over all threads, and the "
                        "memory bandwidth, as used for MFU.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : 2;
    if (!*cache || (path_exists(cache) && !is_dir(cache))) {
        err_usage("--cache %s: %s", cache, *cache ? "not a folder (it is a file)" : "empty: give a folder");
        return report_error();
    }
    if (remeasure && !peak) {
        err_usage("--remeasure goes with --peak (it measures the peaks again): add --peak");
        return report_error();
    }
    if (kernels_init()) {
        report_error();
        return 2;
    }
    print_cpu();
    print_kernels();
    if (!peak) return 0;
    MachinePeak p;
    int cached = !remeasure && machine_peak_load(cache, &p) == 0;
    if (!cached) {
        if (machine_peak_measure(&p)) return report_error();
        if (machine_peak_save(cache, &p)) return report_error();
    }
    char how[300];
    snprintf(how, sizeof how, "%s %s/peak.json", cached ? "cached in" : "measured now, saved to", cache);
    print_peak(&p, how);
    return 0;
}
