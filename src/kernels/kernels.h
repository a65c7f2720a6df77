// kernels/kernels.h — the one place every compute op goes through: choosing the table.
//
// The ops' contracts (the Kernels table, KernelPrecision) are in ops.h, included here; this
// header is the selection above them: the variants, FRONTIER_KERNELS, the precision's twins,
// pinned weights and ablations (README.md, Layout: the files below it include only ops.h).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "kernels/ops.h"

extern const Kernels KERNELS_REF;  // the reference ops (ref/ref.h), one per field

// The selected table (default: the best variant this CPU runs; FRONTIER_KERNELS overrides it,
// see kernels_select) with fp32 products. Resolved on first use; a bad FRONTIER_KERNELS is
// reported on stderr and the default is used — call kernels_init() first to treat it as an
// error instead.
const Kernels *kernels(void);
// The same table with the products of precision p (KernelPrecision, ops.h): there is no global
// precision mode; whoever runs ops carries its precision (Model.precision, Optimizer.precision)
// and asks for its table. KP_BF16 needs kernels_precision_check(KP_BF16) == 0 first (it aborts
// otherwise).
const Kernels *kernels_for(KernelPrecision p);
// Route every op through the profiler (profile/profile.h) or back; results are unchanged.
void kernels_set_profiling(int on);
// The wrapper table around `base`, one per precision p.
const Kernels *kernels_profiled(KernelPrecision p, const Kernels *base);

// ---------------------------------------------------------------------------------------------
// Variants. Each needs the CPU features of the one before it plus its own; an op a variant does
// not implement comes from the best variant below it, so every table is complete.
//   ref     plain C, any x86-64
//   avx2    AVX2 + FMA: the BLIS-style matmuls (simd_matmul.h), the softcapped cross-entropy, the
//           fused head and flash attention (avx2_ops.h); the other ops from ref
//   avx512  AVX-512 F/BW/VL: the matmuls and the fused ops of avx512_ops.h
//   amx     AMX-TILE + AMX-BF16 with the kernel's permission: no op of its own yet (every op
//           comes from avx512). Asked for on a CPU without AMX, it falls back to the best
//           available variant with a note on stderr (a config shared across machines still
//           runs); so does any other variant this CPU lacks.
// ---------------------------------------------------------------------------------------------

typedef enum { KV_REF, KV_AVX2, KV_AVX512, KV_AMX, KERNEL_VARIANT_COUNT } KernelVariant;

extern const char *const KERNEL_OP_NAMES[KERNEL_OP_COUNT];  // "matmul_nt", ...
extern const char *const KERNEL_VARIANT_NAMES[KERNEL_VARIANT_COUNT];  // "ref", "avx2", "avx512", "amx"

int kernel_op_index(const char *name);       // -1 if unknown
int kernel_variant_index(const char *name);  // -1 if unknown
// 1 if this CPU (and OS) runs the variant. If not and why_not is non-NULL, *why_not says what
// is missing, e.g. "needs AMX-TILE and AMX-BF16, which this CPU lacks".
int kernels_variant_available(KernelVariant v, const char **why_not);
// FRONTIER_AMX_EMULATE=1 on a CPU without AMX (but with AVX-512 and AVX512_BF16): the amx variant
// is available, and its bf16 twins run on the emulator of the tile instructions (amx_matmul.h,
// ~1000x slower), so that the whole AMX path — training included — can be tested anywhere. Never
// chosen by default (kernels_best_variant skips it); where AMX exists the variable does nothing.
// 1 when the amx variant is that emulator.
int kernels_amx_emulated(void);
// 1 when the amx variant runs on the tile instructions themselves (available, not emulated).
int kernels_amx_real(void);
// The complete table of a variant (its ops plus the fallbacks), or NULL if this CPU lacks it.
const Kernels *kernels_variant(KernelVariant v);
// The best variant this CPU runs (never the emulated amx).
KernelVariant kernels_best_variant(void);
// Which variant provides op `op` of table k ("ref", "avx512", ...), for any table built from
// this registry; "profiled" for the profiler's wrapper; "custom" for a function it does not know.
const char *kernels_op_source(const Kernels *k, int op);

// A table chosen by a spec in FRONTIER_KERNELS' syntax: a base variant (or "auto", the best
// available; omitted = auto) then comma-separated per-op overrides op=variant, e.g.
// "avx512,matmul_nt=ref,softcap_ce=ref". Unavailable variants fall back as above and are noted
// in `note` (empty when none). Unknown variant or op names, or an empty item, are errors naming
// the item and listing the valid names: -1 + err_set.
typedef struct {
    Kernels table;        // table.name points at name[]
    unsigned char variant[KERNEL_OP_COUNT];  // the KernelVariant chosen for each op (after fallbacks):
                                             // amx's fp32 ops are avx512's, its bf16 GEMMs its own
    char name[160];       // the spec as resolved, e.g. "avx512,matmul_nt=ref"
    char note[256];       // fallbacks taken
} KernelSelection;
int kernels_parse(const char *spec, KernelSelection *out);

// Make `spec` (NULL or "" = auto) the selected table, as kernels() would from FRONTIER_KERNELS;
// prints any fallback note on stderr. Not thread-safe: call before the work starts.
int kernels_select(const char *spec);
// kernels_select(getenv("FRONTIER_KERNELS")) and kernels_set_ablation(getenv("FRONTIER_ABLATE"));
// commands call it early so that a bad value is a usage error (exit 2) rather than a warning.
int kernels_init(void);

// Ablation: FRONTIER_ABLATE="name[,name]..." switches off strategies of the GEMM driver that are
// kept because they measured faster, each giving the same bits as the path it replaces — so
// `bench/ab_profile.sh --env-b FRONTIER_ABLATE=tn_pairs . .` measures what one is worth on this
// machine, and a machine where one loses can be told so. Names (gemm_driver.h): direct_a,
// rows16_a, causal_rows16, tn_pairs, pinned_weights, c_prefetch; "" or "none" = none. An unknown or repeated
// name is an error listing the valid ones: -1 + err_set, and nothing changes.
int kernels_set_ablation(const char *spec);
// The names in effect, comma-separated ("" when none) into buf.
const char *kernels_ablation_name(char *buf, size_t cap);
// The name of the table of precision p, then " ablated=<names>" when FRONTIER_ABLATE is in
// effect, into buf: what a run's summary and log record as its kernels ("avx512+bf16
// ablated=tn_pairs").
const char *kernels_description(KernelPrecision p, char *buf, size_t cap);

// ---------------------------------------------------------------------------------------------
// Pinned weights. matmul_nt(c, a, w, M, N, K, acc) packs w into the GEMM's micro-panels on every
// call, and so does matmul_nn(c, a, w, ...) in its layout; with many tokens per call that is
// noise, but evaluation runs short prompts through weights that do not change (kit-d10 CORE:
// B-panel packing was 16% of the time), and training with G micro-batches per step multiplies
// by the same weights 2G times between updates. A pinned w is packed once per matmul
// implementation, on the first product that reads it, and every later product with b == w, the
// same layout and the same shape reads the packed copy: the same bits, less work. The caller
// promises w does not change while pinned, or calls kernels_weights_changed after changing it
// (training's optimizer step): each copy is then packed again, into the same memory, by the next
// product that reads it. Tables whose products are not SIMD GEMMs (ref) ignore pins. Not
// thread-safe against concurrent products: pin, unpin and mark changed between them.
// ---------------------------------------------------------------------------------------------

// w (N, K) as matmul_nt's b (c = a wᵀ; linear()'s forward). 0, or -1 + err when too many
// matrices are pinned (1024; that w is then packed per call as usual).
int kernels_pin_weight(const float *w, int N, int K);
// w (K, N) as matmul_nn's b (c = a w; the backward's dx = dy W, W (out, in) with K = out); the
// fused head's dx product and relu2_linear_bwd's read it too.
int kernels_pin_weight_nn(const float *w, int K, int N);
void kernels_weights_changed(void);  // every pinned w changed: pack each copy again before its next use
// w has changed since kernels_weights_changed: pack its copies now, on this thread (on all threads
// outside a parallel region), not in the next product that reads them. The optimizer calls it
// after updating each weight, while w is still in cache (the repack is part of the update). No-op
// for a w that is not pinned or whose copies are fresh.
void kernels_repack_weight(const float *w);
void kernels_unpin_weights(void);  // forget every pin and free the packed copies

// ---------------------------------------------------------------------------------------------
// Matmul precision: mixed-precision training (`frontier train --precision bf16`)
//
// fp32 (default): the table's own ops. bf16: the ops with products — the three matmuls, head_ce
// and head_dw, attention_fwd and attention_bwd — are swapped for bf16 twins that round each
// product's operands to bf16 (nearest even) and accumulate in fp32, written as fp32: what
// PyTorch's bf16 autocast does to a Linear and to attention's matmuls. Everything else stays
// fp32: master weights, gradients, optimizer state, norms, the softmax and its lse, the loss.
// Which twin: AVX512_BF16's vdpbf16ps kernels (simd_matmul.h, head.h, attention_bf16.h) in place
// of avx2/avx512/amx ops, the plain reference ones (ref_bf16_*, ref/ref.h) in place of ref ops (so
// FRONTIER_KERNELS=ref --precision bf16 runs anywhere, slowly). A fast table on a CPU without
// AVX512_BF16 is an error that says so (no silent 10x slowdown).
// Error: products of bf16 values are exact in fp32, so only the operand rounding (relative
// 2^-9 each) and the fp32 summation remain: |bf16 - exact| <~ 4e-3 * sum_k |a_ik||b_kj|.
// The table keeps its name with "+bf16" appended (e.g. "avx512+bf16").
// ---------------------------------------------------------------------------------------------


// "fp32" / "bf16" -> *p; "auto" -> kernels_precision_auto(); -1 + err naming the value otherwise.
int kernels_precision_parse(const char *s, KernelPrecision *p);
// The default: bf16 where this CPU has bf16 matmul hardware (AVX512_BF16 with AVX-512), fp32
// elsewhere. One-hour research on the cpu preset found bf16 the better recipe where it is fast
// (docs/research.md); where it would only be emulated, fp32 is.
KernelPrecision kernels_precision_auto(void);
const char *kernels_precision_name(KernelPrecision p);
// 0 when the selected table has products of precision p, else -1 + err saying what is missing
// (KP_BF16 without AVX512_BF16 for a fast op).
int kernels_precision_check(KernelPrecision p);
// 1 for the ops whose products take the precision (the matmuls, head_ce, head_dw, attention).
int kernel_op_has_precision(int op);
// For the lab: a table of ref's ops with the bf16 twins (matmuls, head, attention) — the reference ones
// (fast = 0, named "ref_bf16") or AVX512_BF16's (fast = 1, "avx512_bf16"; check
// cpu_info()->avx512_bf16 first).
const Kernels *kernels_bf16_matmuls(int fast);
// For the lab: ref's ops with AMX's bf16 twins (amx_matmul.h, amx_head.c, amx_attention.c) — the
// tile instructions (emulated = 0, "amx_bf16"; check kernels_variant_available(KV_AMX)
// first) or the emulator running the same code (emulated = 1, "amx_emu"; needs AVX512_BF16 for
// its packing).
const Kernels *kernels_bf16_amx(int emulated);
