// kernels/kernels.c — the variant registry and the active kernel table (see kernels.h).
#include "kernels/kernels.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention/attention_bf16.h"
#include "kernels/cpu/cpu.h"
#include "kernels/gemm/amx_matmul.h"
#include "kernels/gemm/gemm_driver.h"
#include "kernels/gemm/simd_matmul.h"
#include "kernels/head/head.h"
#include "kernels/ref/ref.h"
#include "kernels/rows/avx2_ops.h"
#include "kernels/rows/avx512_ops.h"
#include "util/error.h"

#define OP_NAME(op) #op,
const char *const KERNEL_OP_NAMES[KERNEL_OP_COUNT] = {KERNEL_OPS(OP_NAME)};
const char *const KERNEL_VARIANT_NAMES[KERNEL_VARIANT_COUNT] = {"ref", "avx2", "avx512", "amx"};

// ---------------------------------------------------------------------------------------------
// Ops as untyped slots: the registry copies function pointers between tables by op index.
// ---------------------------------------------------------------------------------------------

typedef void (*OpFn)(void);

#define OP_OFFSET(op) offsetof(Kernels, op),
static const size_t OP_OFFSETS[KERNEL_OP_COUNT] = {KERNEL_OPS(OP_OFFSET)};

#define OP_ONE(op) +1
_Static_assert(0 KERNEL_OPS(OP_ONE) == KERNEL_OP_COUNT, "KERNEL_OP_COUNT must match KERNEL_OPS");
_Static_assert(sizeof(Kernels) == sizeof(const char *) + KERNEL_OP_COUNT * sizeof(OpFn),
               "every Kernels field but the name must be an op listed in KERNEL_OPS");

static OpFn op_get(const Kernels *k, int op) {
    OpFn f;
    memcpy(&f, (const char *)k + OP_OFFSETS[op], sizeof f);
    return f;
}

static void op_set(Kernels *k, int op, OpFn f) { memcpy((char *)k + OP_OFFSETS[op], &f, sizeof f); }

int kernel_op_index(const char *name) {
    for (int i = 0; i < KERNEL_OP_COUNT; i++)
        if (!strcmp(name, KERNEL_OP_NAMES[i])) return i;
    return -1;
}

int kernel_variant_index(const char *name) {
    for (int i = 0; i < KERNEL_VARIANT_COUNT; i++)
        if (!strcmp(name, KERNEL_VARIANT_NAMES[i])) return i;
    return -1;
}

// ---------------------------------------------------------------------------------------------
// Each variant's own ops (NULL: taken from the variant below; ref has every op, ref/ref.h) and
// the complete tables
// ---------------------------------------------------------------------------------------------

const Kernels KERNELS_REF = {
    .name = "ref",
    .matmul_nt = ref_matmul_nt, .matmul_nn = ref_matmul_nn, .matmul_tn = ref_matmul_tn,
    .embedding_fwd = ref_embedding_fwd, .embedding_bwd = ref_embedding_bwd,
    .rmsnorm_fwd = ref_rmsnorm_fwd, .rmsnorm_bwd = ref_rmsnorm_bwd,
    .rope_fwd = ref_rope_fwd, .rope_bwd = ref_rope_bwd,
    .rope_rmsnorm_fwd = ref_rope_rmsnorm_fwd, .rope_rmsnorm_bwd = ref_rope_rmsnorm_bwd,
    .attention_fwd = ref_attention_fwd, .attention_bwd = ref_attention_bwd,
    .relu2_fwd = ref_relu2_fwd, .relu2_bwd = ref_relu2_bwd,
    .relu2_linear_fwd = ref_relu2_linear_fwd, .relu2_linear_bwd = ref_relu2_linear_bwd,
    .softcap_ce = ref_softcap_ce, .head_ce = ref_head_ce, .head_dw = ref_head_dw, .dropout = ref_dropout,
};

static const Kernels OWN_AVX2 = {
    .name = "avx2",
    .matmul_nt = avx2_matmul_nt, .matmul_nn = avx2_matmul_nn, .matmul_tn = avx2_matmul_tn,
    .embedding_bwd = avx2_embedding_bwd,  // embedding_fwd: the reference's memcpy rows are the best copy
    .rmsnorm_fwd = avx2_rmsnorm_fwd, .rmsnorm_bwd = avx2_rmsnorm_bwd,
    .rope_fwd = avx2_rope_fwd, .rope_bwd = avx2_rope_bwd,
    .rope_rmsnorm_fwd = avx2_rope_rmsnorm_fwd, .rope_rmsnorm_bwd = avx2_rope_rmsnorm_bwd,
    .relu2_fwd = avx2_relu2_fwd, .relu2_bwd = avx2_relu2_bwd,
    .relu2_linear_fwd = avx2_relu2_linear_fwd, .relu2_linear_bwd = avx2_relu2_linear_bwd,
    .attention_fwd = avx2_attention_fwd, .attention_bwd = avx2_attention_bwd,
    .softcap_ce = avx2_softcap_ce, .head_ce = avx2_head_ce, .head_dw = avx2_head_dw, .dropout = avx2_dropout,
};

static const Kernels OWN_AVX512 = {
    .name = "avx512",
    .matmul_nt = avx512_matmul_nt, .matmul_nn = avx512_matmul_nn, .matmul_tn = avx512_matmul_tn,
    .embedding_fwd = avx512_embedding_fwd, .embedding_bwd = avx512_embedding_bwd,
    .rmsnorm_fwd = avx512_rmsnorm_fwd, .rmsnorm_bwd = avx512_rmsnorm_bwd,
    .rope_fwd = avx512_rope_fwd, .rope_bwd = avx512_rope_bwd,
    .rope_rmsnorm_fwd = avx512_rope_rmsnorm_fwd, .rope_rmsnorm_bwd = avx512_rope_rmsnorm_bwd,
    .attention_fwd = avx512_attention_fwd, .attention_bwd = avx512_attention_bwd,
    .relu2_fwd = avx512_relu2_fwd, .relu2_bwd = avx512_relu2_bwd,
    .relu2_linear_fwd = avx512_relu2_linear_fwd, .relu2_linear_bwd = avx512_relu2_linear_bwd,
    .softcap_ce = avx512_softcap_ce, .head_ce = avx512_head_ce, .head_dw = avx512_head_dw,
    .dropout = avx512_dropout,
};

// AMX has no fp32 op of its own (its tiles multiply bf16): its table is avx512's, and with
// --precision bf16 its GEMMs are the AMX ones (amx_matmul.h; see apply_precision).
static const Kernels OWN_AMX = {.name = "amx"};

static const Kernels *const OWN[KERNEL_VARIANT_COUNT] = {&KERNELS_REF, &OWN_AVX2, &OWN_AVX512, &OWN_AMX};

static Kernels complete[KERNEL_VARIANT_COUNT];
static pthread_once_t complete_once = PTHREAD_ONCE_INIT;

static void build_complete(void) {
    for (int v = 0; v < KERNEL_VARIANT_COUNT; v++) {
        complete[v] = KERNELS_REF;
        complete[v].name = KERNEL_VARIANT_NAMES[v];
        for (int op = 0; op < KERNEL_OP_COUNT; op++)
            for (int u = v; u >= 0; u--)
                if (op_get(OWN[u], op)) {
                    op_set(&complete[v], op, op_get(OWN[u], op));
                    break;
                }
    }
}

static int avx512_cpu(const CpuInfo *c) { return c->avx2 && c->fma && c->avx512f && c->avx512bw && c->avx512vl; }

int kernels_amx_emulated(void) {
    const CpuInfo *c = cpu_info();
    const char *e = getenv("FRONTIER_AMX_EMULATE");
    return e && *e && strcmp(e, "0") && !(c->amx_tile && c->amx_bf16) && avx512_cpu(c) && c->avx512_bf16;
}

int kernels_amx_real(void) { return kernels_variant_available(KV_AMX, NULL) && !kernels_amx_emulated(); }

int kernels_variant_available(KernelVariant v, const char **why_not) {
    const CpuInfo *c = cpu_info();
    const char *why = NULL;
    int avx2 = c->avx2 && c->fma, avx512 = avx512_cpu(c);
    switch (v) {
    case KV_REF: break;
    case KV_AVX2: if (!avx2) why = "needs AVX2 and FMA"; break;
    case KV_AVX512: if (!avx512) why = "needs AVX-512 F, BW and VL"; break;
    case KV_AMX:
        if (kernels_amx_emulated()) break;
        if (!c->amx_tile || !c->amx_bf16) why = "needs AMX-TILE and AMX-BF16, which this CPU lacks";
        else if (!c->amx_permitted) why = "needs the AMX tile state, which the OS refused (arch_prctl XTILEDATA)";
        else if (!avx512) why = "needs AVX-512 F, BW and VL for its fallback ops";
        break;
    default: why = "is not a kernel variant";
    }
    if (why_not) *why_not = why;
    return why == NULL;
}

const Kernels *kernels_variant(KernelVariant v) {
    if ((int)v < 0 || v >= KERNEL_VARIANT_COUNT || !kernels_variant_available(v, NULL)) return NULL;
    pthread_once(&complete_once, build_complete);
    return &complete[v];
}

KernelVariant kernels_best_variant(void) {
    int v = KERNEL_VARIANT_COUNT - 1;
    while (v > 0 && (!kernels_variant_available((KernelVariant)v, NULL) || (v == KV_AMX && kernels_amx_emulated()))) v--;
    return (KernelVariant)v;
}

static const char *bf16_source(OpFn f);

const char *kernels_op_source(const Kernels *k, int op) {
    OpFn f = op_get(k, op);
    const char *b = bf16_source(f);
    if (b) return b;
    for (int v = KERNEL_VARIANT_COUNT - 1; v >= 0; v--)
        if (op_get(OWN[v], op) == f) return KERNEL_VARIANT_NAMES[v];
    return k->name && !strcmp(k->name, "profiled") ? "profiled" : "custom";
}

// ---------------------------------------------------------------------------------------------
// FRONTIER_KERNELS: "[base][,op=variant]..."
// ---------------------------------------------------------------------------------------------

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    for (size_t n = strlen(s); n && (s[n - 1] == ' ' || s[n - 1] == '\t');) s[--n] = 0;
    return s;
}

static int bad_variant(const char *name) {
    return err_set("FRONTIER_KERNELS: unknown kernel variant '%s' (have: auto, ref, avx2, avx512, amx)", name);
}

static int bad_op(const char *name) {
    char list[400] = "";
    for (int i = 0; i < KERNEL_OP_COUNT; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", KERNEL_OP_NAMES[i]);
    return err_set("FRONTIER_KERNELS: unknown op '%s' (have: %s)", name, list);
}

// The variant actually used for `v`: the best available one at or below it; notes a fallback.
static int effective(int v, KernelSelection *out) {
    const char *why;
    if (kernels_variant_available((KernelVariant)v, &why)) return v;
    int u = v;
    while (!kernels_variant_available((KernelVariant)u, NULL)) u--;
    if (!strstr(out->note, KERNEL_VARIANT_NAMES[v]))
        snprintf(out->note + strlen(out->note), sizeof out->note - strlen(out->note), "%s%s %s; using %s",
                 out->note[0] ? ". " : "", KERNEL_VARIANT_NAMES[v], why, KERNEL_VARIANT_NAMES[u]);
    return u;
}

static void append(char *dst, size_t cap, const char *a, const char *b, const char *c) {
    snprintf(dst + strlen(dst), cap - strlen(dst), "%s%s%s", a, b, c);
}

// One item: the base variant (first item only) or op=variant.
static int parse_item(char *item, int first, int *base, int over[KERNEL_OP_COUNT]) {
    char *eq = strchr(item, '=');
    if (!eq) {
        if (!first)
            return err_set("FRONTIER_KERNELS: '%s' should be op=variant (only the first item names the base "
                           "variant), e.g. avx512,matmul_nt=ref", item);
        if (strcmp(item, "auto") && (*base = kernel_variant_index(item)) < 0) return bad_variant(item);
        return 0;
    }
    *eq = 0;
    char *op_name = trim(item), *v_name = trim(eq + 1);
    int op = kernel_op_index(op_name), v = kernel_variant_index(v_name);
    if (op < 0) return bad_op(op_name);
    if (v < 0) return bad_variant(v_name);
    if (over[op] >= 0) return err_set("FRONTIER_KERNELS: op '%s' is given twice", op_name);
    over[op] = v;
    return 0;
}

// fn(item, index, ctx) for each comma-separated item of spec, the value of environment variable
// `var`, trimmed; an empty spec has none. An empty item, a spec too long, or fn's -1 (+ err_set)
// stop it with -1.
typedef int (*ItemFn)(char *item, int index, void *ctx);
static int for_each_item(const char *var, const char *spec, ItemFn fn, void *ctx) {
    char buf[512];
    if (strlen(spec) >= sizeof buf) return err_set("%s is too long (%zu characters)", var, strlen(spec));
    strcpy(buf, spec);
    if (!*trim(buf)) return 0;
    char *p = buf;
    for (int index = 0;; index++) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        char *item = trim(p);
        if (!*item) return err_set("%s: empty item in '%s'", var, spec);
        if (fn(item, index, ctx)) return -1;
        if (!comma) return 0;
        p = comma + 1;
    }
}

typedef struct {
    int *base, *over;
} Overrides;

static int kernels_item(char *item, int index, void *ctx) {
    Overrides *o = ctx;
    return parse_item(item, index == 0, o->base, o->over);
}

// Split spec into the base variant (-1: auto) and per-op overrides (-1: none).
static int parse_items(const char *spec, int *base, int over[KERNEL_OP_COUNT]) {
    *base = -1;
    for (int i = 0; i < KERNEL_OP_COUNT; i++) over[i] = -1;
    return for_each_item("FRONTIER_KERNELS", spec, kernels_item, &(Overrides){base, over});
}

int kernels_parse(const char *spec, KernelSelection *out) {
    memset(out, 0, sizeof *out);
    int base, over[KERNEL_OP_COUNT];
    if (parse_items(spec ? spec : "", &base, over)) return -1;
    int b = base < 0 ? (int)kernels_best_variant() : effective(base, out);
    out->table = *kernels_variant((KernelVariant)b);
    strcpy(out->name, KERNEL_VARIANT_NAMES[b]);
    for (int op = 0; op < KERNEL_OP_COUNT; op++) out->variant[op] = (unsigned char)b;
    for (int op = 0; op < KERNEL_OP_COUNT; op++) {
        if (over[op] < 0) continue;
        int v = effective(over[op], out);
        out->variant[op] = (unsigned char)v;
        op_set(&out->table, op, op_get(kernels_variant((KernelVariant)v), op));
        append(out->name, sizeof out->name, ",", KERNEL_OP_NAMES[op], "=");
        append(out->name, sizeof out->name, KERNEL_VARIANT_NAMES[v], "", "");
    }
    out->table.name = out->name;
    int amx = 0;
    for (int op = 0; op < KERNEL_OP_COUNT; op++) amx |= out->variant[op] == KV_AMX;
    if (amx && kernels_amx_emulated())  // a test aid, never a silent 1000x slowdown
        snprintf(out->note + strlen(out->note), sizeof out->note - strlen(out->note), "%samx's bf16 products run on "
                 "the emulator of the tile instructions (FRONTIER_AMX_EMULATE), ~1000x slower: for testing only",
                 out->note[0] ? ". " : "");
    return 0;
}

// ---------------------------------------------------------------------------------------------
// The selected tables (one per precision)
// ---------------------------------------------------------------------------------------------

static KernelSelection selected;   // as FRONTIER_KERNELS chose it (fp32)
static Kernels tables[2];          // by KernelPrecision: selected, and selected with its bf16 twins
static char bf16_name[sizeof selected.name + 8];
static char bf16_why[512];         // why tables[KP_BF16] could not be built ("" when it was)
static int resolved, profiling;

static void build_bf16_table(void);

int kernels_select(const char *spec) {
    KernelSelection s;
    if (kernels_parse(spec, &s)) return -1;
    if (s.note[0]) fprintf(stderr, "frontier: kernels: %s\n", s.note);
    selected = s;
    selected.table.name = selected.name;
    tables[KP_FP32] = selected.table;
    build_bf16_table();
    resolved = 1;
    return 0;
}

int kernels_init(void) {
    if (kernels_select(getenv("FRONTIER_KERNELS"))) return -1;
    return kernels_set_ablation(getenv("FRONTIER_ABLATE"));
}

// ---------------------------------------------------------------------------------------------
// FRONTIER_ABLATE: "name[,name]..."
// ---------------------------------------------------------------------------------------------

static const struct {
    const char *name;
    unsigned bit;
} ABLATIONS[] = {{"direct_a", GEMM_ABLATE_DIRECT_A},
                 {"rows16_a", GEMM_ABLATE_ROWS16_A},
                 {"causal_rows16", GEMM_ABLATE_CAUSAL_ROWS16},
                 {"tn_pairs", GEMM_ABLATE_TN_PAIRS},
                 {"pinned_weights", GEMM_ABLATE_PINS},
                 {"c_prefetch", GEMM_ABLATE_C_PREFETCH}};
enum { N_ABLATIONS = sizeof ABLATIONS / sizeof *ABLATIONS };

static int bad_ablation(const char *name, const char *why) {
    char list[200] = "";
    for (int i = 0; i < N_ABLATIONS; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", ABLATIONS[i].name);
    return err_set("FRONTIER_ABLATE: %s '%s' (have: %s, or none)", why, name, list);
}

static int ablation_item(char *item, int index, void *ctx) {
    (void)index;
    unsigned *bits = ctx;
    int i = 0;
    while (i < N_ABLATIONS && strcmp(item, ABLATIONS[i].name)) i++;
    if (i == N_ABLATIONS) return bad_ablation(item, "unknown name");
    if (*bits & ABLATIONS[i].bit) return bad_ablation(item, "repeated name");
    *bits |= ABLATIONS[i].bit;
    return 0;
}

int kernels_set_ablation(const char *spec) {
    char whole[512];
    snprintf(whole, sizeof whole, "%s", spec ? spec : "");
    unsigned bits = 0;
    if (strcmp(trim(whole), "none") && for_each_item("FRONTIER_ABLATE", spec ? spec : "", ablation_item, &bits)) return -1;
    gemm_set_ablation(bits);
    return 0;
}

const char *kernels_description(KernelPrecision p, char *buf, size_t cap) {
    char names[128];
    kernels();  // resolve the table first
    kernels_ablation_name(names, sizeof names);
    snprintf(buf, cap, "%s%s%s", tables[p].name, names[0] ? " ablated=" : "", names);
    return buf;
}

const char *kernels_ablation_name(char *buf, size_t cap) {
    unsigned bits = gemm_ablation();
    buf[0] = 0;
    for (int i = 0; i < N_ABLATIONS; i++)
        if (bits & ABLATIONS[i].bit)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? "," : "", ABLATIONS[i].name);
    return buf;
}

// ---------------------------------------------------------------------------------------------
// Matmul precision
// ---------------------------------------------------------------------------------------------

KernelPrecision kernels_precision_auto(void) {
    return cpu_info()->avx512_bf16 && kernels_variant_available(KV_AVX512, NULL) ? KP_BF16 : KP_FP32;
}

int kernels_precision_parse(const char *s, KernelPrecision *p) {
    if (!strcmp(s, "auto")) *p = kernels_precision_auto();
    else if (!strcmp(s, "fp32")) *p = KP_FP32;
    else if (!strcmp(s, "bf16")) *p = KP_BF16;
    else return err_set("--precision must be auto, fp32 or bf16, got '%s'", s);
    return 0;
}

const char *kernels_precision_name(KernelPrecision p) { return p == KP_AUTO ? "auto" : p == KP_BF16 ? "bf16" : "fp32"; }

// The ops whose products take the precision: the three matmuls, ReLU²'s linear layer, the head's
// two and attention. Their bf16 twins, in this order, in each twin set: the reference ones,
// AVX512_BF16's, AMX's and the AMX emulator's (for the lab and FRONTIER_AMX_EMULATE).
#define OP_ENUM(op) OP_##op,
enum { KERNEL_OPS(OP_ENUM) };
#define TWINS 9
static const int TWIN_OPS[TWINS] = {OP_matmul_nt,        OP_matmul_nn,        OP_matmul_tn,
                                    OP_relu2_linear_fwd, OP_relu2_linear_bwd, OP_head_ce,
                                    OP_head_dw,          OP_attention_fwd,    OP_attention_bwd};
typedef enum { TW_REF, TW_AVX512, TW_AMX, TW_AMX_EMU, TWIN_SETS } TwinSet;
static const char *const TWIN_SET_NAMES[TWIN_SETS] = {"ref_bf16", "avx512_bf16", "amx_bf16", "amx_emu"};

static OpFn twin(TwinSet set, int i) {
    static const OpFn f[TWIN_SETS][TWINS] = {
        {(OpFn)ref_bf16_matmul_nt, (OpFn)ref_bf16_matmul_nn, (OpFn)ref_bf16_matmul_tn,
         (OpFn)ref_bf16_relu2_linear_fwd, (OpFn)ref_bf16_relu2_linear_bwd, (OpFn)ref_bf16_head_ce,
         (OpFn)ref_bf16_head_dw, (OpFn)ref_bf16_attention_fwd, (OpFn)ref_bf16_attention_bwd},
        {(OpFn)avx512bf16_matmul_nt, (OpFn)avx512bf16_matmul_nn, (OpFn)avx512bf16_matmul_tn,
         (OpFn)avx512bf16_relu2_linear_fwd, (OpFn)avx512bf16_relu2_linear_bwd, (OpFn)avx512bf16_head_ce,
         (OpFn)avx512bf16_head_dw, (OpFn)avx512bf16_attention_fwd, (OpFn)avx512bf16_attention_bwd},
        {(OpFn)amx_matmul_nt, (OpFn)amx_matmul_nn, (OpFn)amx_matmul_tn, (OpFn)amx_relu2_linear_fwd,
         (OpFn)amx_relu2_linear_bwd, (OpFn)amx_head_ce, (OpFn)amx_head_dw, (OpFn)amx_attention_fwd,
         (OpFn)amx_attention_bwd},
        {(OpFn)amx_emu_matmul_nt, (OpFn)amx_emu_matmul_nn, (OpFn)amx_emu_matmul_tn, (OpFn)amx_emu_relu2_linear_fwd,
         (OpFn)amx_emu_relu2_linear_bwd, (OpFn)amx_emu_head_ce, (OpFn)amx_emu_head_dw, (OpFn)amx_emu_attention_fwd,
         (OpFn)amx_emu_attention_bwd},
    };
    return f[set][i];
}

int kernel_op_has_precision(int op) {
    for (int i = 0; i < TWINS; i++)
        if (TWIN_OPS[i] == op) return 1;
    return 0;
}

static Kernels bf16_tables[TWIN_SETS];  // ref's ops with each set of twins
static pthread_once_t bf16_tables_once = PTHREAD_ONCE_INIT;

static void build_bf16_tables(void) {
    for (int v = 0; v < TWIN_SETS; v++) {
        bf16_tables[v] = KERNELS_REF;
        bf16_tables[v].name = TWIN_SET_NAMES[v];
        for (int i = 0; i < TWINS; i++) op_set(&bf16_tables[v], TWIN_OPS[i], twin((TwinSet)v, i));
    }
}

const Kernels *kernels_bf16_matmuls(int fast) {
    pthread_once(&bf16_tables_once, build_bf16_tables);
    return &bf16_tables[fast ? TW_AVX512 : TW_REF];
}

const Kernels *kernels_bf16_amx(int emulated) {
    pthread_once(&bf16_tables_once, build_bf16_tables);
    return &bf16_tables[emulated ? TW_AMX_EMU : TW_AMX];
}

// The twin set a function belongs to, by name (for kernels_op_source), or NULL.
static const char *bf16_source(OpFn f) {
    for (int v = 0; v < TWIN_SETS; v++)
        for (int i = 0; i < TWINS; i++)
            if (f == twin((TwinSet)v, i)) return TWIN_SET_NAMES[v];
    return NULL;
}

// The bf16 twin of selected's op TWIN_OPS[i]: a ref op's (also one a variant takes from ref, as
// avx2 does attention) is ref_bf16; an op chosen as amx is AMX's (amx's ops are avx512's
// functions, so only the chosen variant tells); any other fast one is AVX512_BF16's (every AMX
// CPU has AVX512_BF16, which AMX's packing and the head's loss use).
static int bf16_twin(int i, OpFn *out) {
    int op = TWIN_OPS[i];
    if (!strcmp(kernels_op_source(&selected.table, op), "ref")) { *out = twin(TW_REF, i); return 0; }
    const CpuInfo *c = cpu_info();
    if (!(c->avx512_bf16 && kernels_variant_available(KV_AVX512, NULL)))
        return err_set("--precision bf16 needs AVX512_BF16 for the %s %s kernel (this CPU lacks it); use "
                       "--precision fp32, or FRONTIER_KERNELS=ref for the slow reference bf16 matmuls",
                       kernels_op_source(&selected.table, op), KERNEL_OP_NAMES[op]);
    *out = twin(selected.variant[op] != KV_AMX ? TW_AVX512 : kernels_amx_emulated() ? TW_AMX_EMU : TW_AMX, i);
    return 0;
}

// selected with each twin op replaced by its bf16 twin; where one is missing (no AVX512_BF16),
// bf16_why keeps the reason and kernels_precision_check reports it.
static void build_bf16_table(void) {
    Kernels t = selected.table;
    bf16_why[0] = 0;
    for (int i = 0; i < TWINS; i++) {
        OpFn f = NULL;
        if (bf16_twin(i, &f)) {
            snprintf(bf16_why, sizeof bf16_why, "%s", err_msg());
            err_clear();
            t = selected.table;
            break;
        }
        op_set(&t, TWIN_OPS[i], f);
    }
    snprintf(bf16_name, sizeof bf16_name, "%s+bf16", selected.name);
    t.name = bf16_name;
    tables[KP_BF16] = t;
}

int kernels_precision_check(KernelPrecision p) {
    kernels();  // resolve the table first
    if (p == KP_BF16 && bf16_why[0]) return err_set("%s", bf16_why);
    return 0;
}

void kernels_set_profiling(int on) {
    kernels();  // resolve the table first
    profiling = on;
}

// The first resolution, once even when several threads ask at the same time (see cpu_info()).
// A table chosen before (kernels_select, kernels_init) is kept.
static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

static void resolve_default(void) {
    if (!resolved && kernels_init()) {
        fprintf(stderr, "frontier: %s; using the default kernels\n", err_msg());
        kernels_select(NULL);
    }
}

const Kernels *kernels_for(KernelPrecision p) {
    pthread_once(&resolve_once, resolve_default);
    if (p == KP_BF16 && bf16_why[0]) {  // a caller that skipped kernels_precision_check
        fprintf(stderr, "frontier: kernels: %s\n", bf16_why);
        abort();
    }
    return profiling ? kernels_profiled(p, &tables[p]) : &tables[p];
}

const Kernels *kernels(void) { return kernels_for(KP_FP32); }

// ---------------------------------------------------------------------------------------------
// Pinned weights (the SIMD GEMM driver keeps the packed copies)
// ---------------------------------------------------------------------------------------------

int kernels_pin_weight(const float *w, int N, int K) {
    if (gemm_pin(w, GEMM_NT, N, K) != 0) return err_set("kernels_pin_weight: too many pinned matrices");
    return 0;
}

int kernels_pin_weight_nn(const float *w, int K, int N) {
    if (gemm_pin(w, GEMM_NN, N, K) != 0) return err_set("kernels_pin_weight_nn: too many pinned matrices");
    return 0;
}

void kernels_weights_changed(void) { gemm_pins_stale(); }

void kernels_repack_weight(const float *w) { gemm_repack_pins(w); }

void kernels_unpin_weights(void) { gemm_unpin_all(); }
