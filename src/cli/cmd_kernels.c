// cli/cmd_kernels.c — `frontier kernels check|bench`: the kernel lab (kernels/lab/lab.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"
#include "kernels/lab/lab.h"
#include "kernels/cpu/peak.h"
#include "kernels/ref/ref.h"
#include "model/config.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/timer.h"

// ---------------------------------------------------------------------------------------------
// Which tables: --variant (repeatable; "all"), else FRONTIER_KERNELS' table if set, else every
// variant this CPU runs. "avx512_bf16" names the bf16 twins (matmuls, head, attention: a lab-only
// table of those ops only).
// ---------------------------------------------------------------------------------------------

#define MAX_TABLES 8
#define BF16_LABEL "avx512_bf16"

typedef struct {
    const Kernels *k[MAX_TABLES];
    const char *label[MAX_TABLES];
    int n, bf16, ref16;  // bf16: also the AVX512_BF16 matmuls; ref16: also the reference bf16 ones
    int amx16, amx_emu;  // AMX's bf16 ops: on the tiles (check, bench), on the emulator (check only)
} Tables;

static void add_table(Tables *t, const Kernels *k, const char *label) {
    for (int i = 0; i < t->n; i++)
        if (t->k[i] == k) return;
    if (t->n < MAX_TABLES) t->k[t->n] = k, t->label[t->n++] = label;
}

static void add_variant(Tables *t, int v) {
    const char *why;
    if (!kernels_variant_available((KernelVariant)v, &why))
        printf("%s: skipped: %s\n", KERNEL_VARIANT_NAMES[v], why);
    else add_table(t, kernels_variant((KernelVariant)v), KERNEL_VARIANT_NAMES[v]);
}

// AMX's bf16 ops: the tiles where this CPU has them, else the emulator, which needs
// AVX512_BF16 for its packing; `asked` (--variant amx_bf16) says so when neither runs.
static void add_amx(Tables *t, int asked) {
    const char *why = NULL;
    if (kernels_amx_real() && cpu_info()->avx512_bf16) t->amx16 = 1;
    else if (cpu_info()->avx512_bf16) t->amx_emu = 1;
    else if (asked && !kernels_variant_available(KV_AMX, &why))
        printf("amx_bf16: skipped: %s; its emulator needs AVX512_BF16\n", why);
    else if (asked) printf("amx_bf16: skipped: needs AVX512_BF16\n");
}

static void add_all(Tables *t) {
    for (int v = 0; v < KERNEL_VARIANT_COUNT; v++)
        if (kernels_variant_available((KernelVariant)v, NULL)) add_table(t, kernels_variant((KernelVariant)v), KERNEL_VARIANT_NAMES[v]);
    t->bf16 = cpu_info()->avx512_bf16;
    t->ref16 = 1;  // --precision bf16 with FRONTIER_KERNELS=ref runs them on any CPU
    add_amx(t, 0);
}

// 0, or -1 after printing a usage error.
static int pick_tables(const StringList *variants, Tables *t) {
    memset(t, 0, sizeof *t);
    if (kernels_init()) return report_error(), -1;
    for (int i = 0; i < variants->n; i++) {
        const char *name = variants->items[i];
        int v = kernel_variant_index(name);
        if (!strcmp(name, "all")) add_all(t);
        else if (!strcmp(name, "amx_bf16")) add_amx(t, 1);
        else if (!strcmp(name, BF16_LABEL)) {
            t->ref16 = 1;
            if (cpu_info()->avx512_bf16) t->bf16 = 1;
            else printf("%s: skipped: needs AVX512_BF16\n", BF16_LABEL);
        } else if (v >= 0) add_variant(t, v);
        else {
            fprintf(stderr, "frontier kernels: --variant: unknown variant '%s' (have: ref, avx2, avx512, amx, %s, amx_bf16, all)\n",
                    name, BF16_LABEL);
            return -1;
        }
    }
    if (variants->n) return 0;
    const char *env = getenv("FRONTIER_KERNELS");
    if (env && *env) add_table(t, kernels(), kernels()->name);
    else add_all(t);
    return 0;
}

// "1,2,3" -> {1, 2, 3}. 0, or -1 after printing a usage error.
static int parse_threads(const char *s, int *out, int *n) {
    *n = 0;
    for (const char *p = s; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1024 || *n == 8 || (*end && *end != ',')) {
            fprintf(stderr, "frontier kernels check: --threads expects a list like 1,2,3 (1-1024, at most 8), got '%s'\n", s);
            return -1;
        }
        out[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) fprintf(stderr, "frontier kernels check: --threads expects a list like 1,2,3, got '%s'\n", s);
    return *n ? 0 : -1;
}

// ---------------------------------------------------------------------------------------------
// check
// ---------------------------------------------------------------------------------------------

typedef struct {
    int op;
    const char *source;
} Checked;

static int already_checked(const Checked *done, int n, int op, const char *source) {
    for (int i = 0; i < n; i++)
        if (done[i].op == op && !strcmp(done[i].source, source)) return 1;
    return 0;
}

// Which ops of a table check_table checks: all, or the bf16 twin tables' ops with products.
typedef enum { OPS_ALL, OPS_BF16 } OpSet;

static int in_set(int op, OpSet set) { return set == OPS_ALL || kernel_op_has_precision(op); }

// Check every op of one table not checked before. Returns the number of failed ops.
static int check_table(const Kernels *k, const char *label, OpSet set, int op_filter, const LabCheckOpts *o,
                       Checked *done, int *n_done) {
    int matmuls_only = set != OPS_ALL;
    printf("%s\n", label);
    int failed = 0, skipped = 0;
    for (int op = 0; op < KERNEL_OP_COUNT; op++) {
        if ((op_filter >= 0 && op != op_filter) || !in_set(op, set)) continue;
        const char *src = matmuls_only ? label : kernels_op_source(k, op);
        if (already_checked(done, *n_done, op, src)) {
            skipped++;
            continue;
        }
        LabCheckOpts oo = *o;
        oo.bf16_operands = matmuls_only;  // the bf16 tables: judged against bf16-rounded operands
        LabOpResult r;
        failed += lab_check_op(k, op, &oo, &r);
        lab_print_result(stdout, KERNEL_OP_NAMES[op], src, &r);
        fflush(stdout);
        done[(*n_done)++] = (Checked){op, src};
    }
    if (skipped) printf("  (%d op%s shared with a table above, checked there)\n", skipped, skipped > 1 ? "s" : "");
    return failed;
}

static int kernels_check_cmd(int argc, char **argv) {
    StringList variants = {0};
    const char *op = NULL, *threads = NULL;
    int quick = 0;
    Option opts[] = {
        {"variant", OPT_LIST, &variants, "V", "check this table (ref, avx2, avx512, amx, " BF16_LABEL ", amx_bf16 (its emulator where AMX is absent), all); repeatable", 0, 0, 0, 0, NULL},
        {"op", OPT_STRING, &op, "OP", "only this op (e.g. matmul_nt)", 0, 0, 0, 0, NULL},
        {"quick", OPT_FLAG, &quick, NULL, "a smaller grid of shapes (a few seconds)", 0, 0, 0, 0, NULL},
        {"threads", OPT_STRING, &threads, "LIST", "OpenMP thread counts whose results must be identical (default 1,2,3; quick 1,2)", 0, 0, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier kernels check [options]",
                        "Check kernel tables against the reference on a grid of shapes (ragged ones included): "
                        "outputs pre-filled with NaN inside canary bytes, inputs against an inaccessible page, "
                        "error vs a float64 matmul or the ref kernel within each op's tolerance, and bitwise "
                        "identical results for every thread count. Default: FRONTIER_KERNELS' table if set, else "
                        "every variant this CPU runs. Exits 1 on any failure.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) return string_list_free(&variants), rc == ARGS_HELP ? 0 : 2;
    Tables t;
    int th[8], n_th = 0, op_filter = op ? kernel_op_index(op) : -1;
    if (op && op_filter < 0) {
        fprintf(stderr, "frontier kernels check: --op: unknown op '%s' (e.g. matmul_nt, attention_bwd)\n", op);
        return string_list_free(&variants), 2;
    }
    if ((threads && parse_threads(threads, th, &n_th)) || pick_tables(&variants, &t)) return string_list_free(&variants), 2;
    string_list_free(&variants);
    LabCheckOpts o = {.quick = quick, .threads = n_th ? th : NULL, .n_threads = n_th};
    Checked done[KERNEL_OP_COUNT * (MAX_TABLES + 1)];
    int n_done = 0, failed = 0;
    double t0 = now_seconds();
    for (int i = 0; i < t.n; i++) failed += check_table(t.k[i], t.label[i], OPS_ALL, op_filter, &o, done, &n_done);
    int precision_ops = op_filter < 0 || kernel_op_has_precision(op_filter);
    if (t.ref16 && precision_ops) failed += check_table(kernels_bf16_matmuls(0), "ref_bf16", OPS_BF16, op_filter, &o, done, &n_done);
    if (t.bf16 && precision_ops) failed += check_table(kernels_bf16_matmuls(1), BF16_LABEL, OPS_BF16, op_filter, &o, done, &n_done);
    if (t.amx16 && precision_ops) failed += check_table(kernels_bf16_amx(0), "amx_bf16", OPS_BF16, op_filter, &o, done, &n_done);
    if (t.amx_emu && precision_ops) failed += check_table(kernels_bf16_amx(1), "amx_emu", OPS_BF16, op_filter, &o, done, &n_done);
    printf("%s: %d op check%s, %d failed (%.1f s)\n", failed ? "FAIL" : "PASS", n_done, n_done == 1 ? "" : "s", failed,
           now_seconds() - t0);
    return failed ? FRONTIER_EXIT_ERROR : 0;
}

// ---------------------------------------------------------------------------------------------
// bench
// ---------------------------------------------------------------------------------------------

static int kernels_bench_cmd(int argc, char **argv) {
    StringList variants = {0};
    const char *preset = "cpu", *op = NULL, *cache = "cache";
    int rows = 4096, no_bf16 = 0, cold = 0;
    double seconds = 0.3;
    Option opts[] = {
        {"preset", OPT_STRING, &preset, "NAME", "model preset whose shapes are timed (cpu, kit-d10)", 0, 0, 0, 0, NULL},
        {"rows", OPT_INT, &rows, "N", "tokens per step B*T (rounded down to whole sequences, at least one)", 1, 1 << 24, 0, 0, NULL},
        {"variant", OPT_LIST, &variants, "V", "time this table (ref, avx2, avx512, amx, " BF16_LABEL ", amx_bf16, all); repeatable", 0, 0, 0, 0, NULL},
        {"op", OPT_STRING, &op, "OP", "only this op", 0, 0, 0, 0, NULL},
        {"seconds", OPT_DOUBLE, &seconds, "S", "time per shape and variant (above 0, at most 3600)", 0, 3600, 0, 0, NULL},
        {"no-bf16", OPT_FLAG, &no_bf16, NULL, "leave out the bf16 matmuls", 0, 0, 0, 0, NULL},
        {"cold", OPT_FLAG, &cold, NULL, "evict the caches before every timed call (96 MiB written), so operands come from memory as in training", 0, 0, 0, 0, NULL},
        {"cache", OPT_STRING, &cache, "DIR", "where the measured peak is cached (peak.json)", 0, 0, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier kernels bench [options]",
                        "Time every op of each kernel table on the shapes a model preset runs: median, p10 and p90 "
                        "of the wall-clock time per call, GFLOP/s and GB/s from the analytic costs, and their share "
                        "of this machine's measured fp32 FMA peak and triad bandwidth (`frontier info --peak`).",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) return string_list_free(&variants), rc == ARGS_HELP ? 0 : 2;
    if (!(seconds > 0)) {
        fprintf(stderr, "frontier kernels bench: --seconds must be positive, got %g\n", seconds);
        return string_list_free(&variants), 2;
    }
    ModelConfig m;
    if (model_config_preset(preset, &m)) {
        fprintf(stderr, "frontier kernels bench: %s\n", err_msg());
        return string_list_free(&variants), 2;
    }
    if (!*cache || (path_exists(cache) && !is_dir(cache))) {
        fprintf(stderr, "frontier kernels bench: --cache %s: %s\n", cache,
                *cache ? "not a folder (it is a file)" : "empty: give a folder");
        return string_list_free(&variants), 2;
    }
    if (op && kernel_op_index(op) < 0) {
        fprintf(stderr, "frontier kernels bench: --op: unknown op '%s' (e.g. matmul_nt, attention_bwd)\n", op);
        return string_list_free(&variants), 2;
    }
    Tables t;
    int bad = pick_tables(&variants, &t), named = variants.n;
    string_list_free(&variants);
    if (bad) return 2;
    MachinePeak peak;
    if (machine_peak_get(cache, &peak)) return report_error();
    LabShape shape = {.n_embd = m.n_embd, .mlp_ratio = m.mlp_ratio, .n_head = m.n_head, .n_kv_head = m.n_kv_head,
                      .head_dim = m.head_dim, .seq_len = m.seq_len, .vocab_size = m.vocab_size,
                      .window = model_config_default_window(m.seq_len)};
    LabBenchOpts o = {.preset = preset, .shape = shape, .rows = rows, .op = op, .seconds = seconds, .bf16 = t.bf16 && !no_bf16,
                      .amx = t.amx16 && !no_bf16, .cold = cold, .peak = &peak};
    if (t.amx_emu && named) printf("amx_bf16: not timed: this CPU has no AMX (its emulator is for checks only)\n");
    printf("peak: fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s, triad %.1f GB/s (%d threads; %s/peak.json)\n",
           peak.fp32_all / 1e9, peak.bf16_all / 1e9, peak.triad_bw / 1e9, peak.threads, cache);
    return lab_bench(t.k, t.label, t.n, &o, stdout) ? report_error() : 0;
}

int cmd_kernels(int argc, char **argv) {
    static const char *help =
        "usage: frontier kernels <check|bench> [options]\n\n"
        "  check    every kernel variant against the reference: ragged shapes, guard bytes, thread invariance\n"
        "  bench    time every op and variant on a model preset's shapes; GFLOP/s, GB/s, % of peak\n\n"
        "Variants: ref, avx2, avx512, amx (FRONTIER_KERNELS=avx512,matmul_nt=ref,... picks per op).\n"
        "Run `frontier kernels <command> --help` for its options.\n";
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        fputs(help, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (!strcmp(argv[0], "check")) return kernels_check_cmd(argc - 1, argv + 1);
    if (!strcmp(argv[0], "bench")) return kernels_bench_cmd(argc - 1, argv + 1);
    fprintf(stderr, "frontier kernels: unknown command '%s'\n\n%s", argv[0], help);
    return 2;
}
