// kernels/kernels.h — the one place every compute op goes through.
//
// A Kernels table holds one function pointer per op. `ref` is the plain, obviously-correct
// implementation (fp32, OpenMP over independent outputs, deterministic whatever the thread
// count: every output element is reduced by one thread in a fixed order). Faster variants are
// further tables (see "Variants" below), checked against `ref` on many shapes by `frontier
// kernels check`; every variant keeps the determinism promise (same bits whatever the thread
// count), not bitwise equality with ref.
//
// Matrix layout: row-major. "nt" means the second operand is used transposed, as nn.Linear
// stores its weight (out, in): y (M,N) = x (M,K) @ W(N,K)^T.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *name;
    // c (M,N) (+)= a (M,K) @ b (N,K)^T
    void (*matmul_nt)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // c (M,N) (+)= a (M,K) @ b (K,N)
    void (*matmul_nn)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // c (M,N) (+)= a (K,M)^T @ b (K,N)
    void (*matmul_tn)(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
    // (The SIMD GEMMs compute X·Xᵀ — matmul_nt or matmul_tn with b == a, M == N, no
    // accumulate — as its upper triangle mirrored: the same bits as the full product, half the work.)

    // Token embedding. fwd: out (N,C) = wte[idx[n]]. bwd: dwte[idx[n]] += dout[n], summed in
    // position order for each vocabulary row (deterministic).
    void (*embedding_fwd)(float *out, const int32_t *idx, const float *wte, int N, int C);
    void (*embedding_bwd)(float *dwte, const float *dout, const int32_t *idx, int N, int C);

    // Parameter-free RMSNorm over rows of C: out = x * rstd, rstd (N) = 1/sqrt(mean(x²) + eps).
    // bwd: dx (+)= rstd * (dout - out * mean(dout * out)), out recomputed from x and rstd.
    void (*rmsnorm_fwd)(float *out, float *rstd, const float *x, int N, int C);
    void (*rmsnorm_bwd)(float *dx, const float *dout, const float *x, const float *rstd, int N, int C, int accumulate);

    // Rotary embedding in place on x (B,T,nh,D), half-split: (x1,x2) -> (x1 c + x2 s, -x1 s + x2 c)
    // with c,s = cos,sin (T, D/2) at the row's position t. bwd applies the inverse rotation to dx.
    void (*rope_fwd)(float *x, const float *cos, const float *sin, int B, int T, int nh, int D);
    void (*rope_bwd)(float *dx, const float *cos, const float *sin, int B, int T, int nh, int D);

    // RoPE then QK-norm in one pass over the rows of x (B,T,nh,D): x is rotated in place as by
    // rope_fwd (and kept: backward reads it), then out (B,T,nh,D) and rstd (B*T*nh) are
    // rmsnorm_fwd of its B*T*nh head rows of D. bwd: dx = rope_bwd of rmsnorm_bwd(dout, x, rstd)
    // (not accumulated); dx may alias dout. Each row is rotated and normalised while in L1.
    void (*rope_rmsnorm_fwd)(float *out, float *rstd, float *x, const float *cos, const float *sin, int B, int T,
                             int nh, int D);
    void (*rope_rmsnorm_bwd)(float *dx, const float *dout, const float *x, const float *rstd, const float *cos,
                             const float *sin, int B, int T, int nh, int D);

    // Causal softmax attention, scale 1/sqrt(D). q (B,T,H,D); k, v (B,T,Hkv,D) with Hkv | H
    // (q head h reads kv head h / (H/Hkv)). out (B,T,H,D); lse (B,H,T) = log-sum-exp of each
    // query's scaled scores, kept for backward instead of the (B,H,T,T) probabilities.
    // window: query t sees keys t-window .. t (a sliding window: FlashAttention's
    // window_size=(window, 0), nanochat's "S" layers); 0 = all keys 0 .. t.
    void (*attention_fwd)(float *out, float *lse, const float *q, const float *k, const float *v, int B, int T, int H,
                          int Hkv, int D, int window);
    // dq, dk, dv are overwritten. Recomputes probabilities from q, k and lse.
    void (*attention_bwd)(float *dq, float *dk, float *dv, const float *dout, const float *out, const float *lse,
                          const float *q, const float *k, const float *v, int B, int T, int H, int Hkv, int D,
                          int window);

    // ReLU²: out = max(x,0)². bwd: dx = dout * 2 max(x,0).
    void (*relu2_fwd)(float *out, const float *x, size_t n);
    void (*relu2_bwd)(float *dx, const float *dout, const float *x, size_t n);

    // ReLU² fused into the linear layer that reads it (the MLP's c_proj): act = relu²(fc) is
    // formed while the product packs its operand and never stored; backward forms it again.
    // fwd: c (M,N) (+)= relu²(fc (M,K)) @ w (N,K)ᵀ — as relu2_fwd then matmul_nt (in the table's
    // precision). bwd: dw (N,K) += dc (M,N)ᵀ @ relu²(fc) as matmul_tn, and dfc (M,K) =
    // relu2_bwd(dc @ w, fc) as matmul_nn then relu2_bwd. No output may alias an input.
    void (*relu2_linear_fwd)(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
    void (*relu2_linear_bwd)(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                             int K);

    // Softcapped cross-entropy over rows of V logits: c = cap*tanh(z/cap) (cap 0 = no cap),
    // losses[n] = logsumexp(c) - c[target] in nats (0 where target < 0). If dlogits is non-NULL
    // it receives dscale * d(loss_n)/dz (0 rows for ignored targets); it may alias logits.
    void (*softcap_ce)(float *losses, float *dlogits, const float *logits, const int32_t *targets, int N, int V,
                       float cap, float dscale);

    // The head's forward, loss and dx fused: logits (N,V) = x (N,C) @ w (V,C)ᵀ as by this table's
    // matmul_nt (in its precision), then softcap_ce on them as above (dlogits NULL: losses only),
    // then with dlogits and dx (N,C) non-NULL dx = dlogits @ w as by matmul_nn. The (N, V) logits
    // are never stored: each strip of rows goes through the loss and the dx product while in
    // cache (head.h). dlogits (N,V) are fp32, or bf16 (uint16, rounded to nearest even) in a
    // table whose products are bf16, laid out in row pairs (head.h: rows 2p, 2p+1 interleaved,
    // head_dl16_elems(N, V) elements) — the format its head_dw reads; no output may alias an input.
    void (*head_ce)(float *losses, void *dlogits, float *dx, const float *x, const float *w, const int32_t *targets,
                    int N, int V, int C, float cap, float dscale);
    // The head's weight gradient from head_ce's dlogits (the same table's format): dw (V,C) +=
    // dlogitsᵀ @ x — as matmul_tn on the fp32 values.
    void (*head_dw)(float *dw, const void *dlogits, const float *x, int N, int V, int C);
} Kernels;

extern const Kernels KERNELS_REF;

// The first key query (or key position) t sees under attention's window (0 = none): t - window,
// never before 0. Every attention variant and the evaluation's cached-prefix attention use it.
static inline int attention_first_key(int t, int window) { return window > 0 && t > window ? t - window : 0; }

// The precision of the products (the matmuls, ReLU²'s linear layer, the head, attention).
// KP_AUTO is a setting's value only (--precision auto): kernels_precision_auto() turns it into one
// of the others before anything computes.
typedef enum { KP_FP32, KP_BF16, KP_AUTO } KernelPrecision;

// The selected table (default: the best variant this CPU runs; FRONTIER_KERNELS overrides it,
// see kernels_select) with fp32 products. Resolved on first use; a bad FRONTIER_KERNELS is
// reported on stderr and the default is used — call kernels_init() first to treat it as an
// error instead.
const Kernels *kernels(void);
// The same table with the products of precision p (KernelPrecision, below): there is no global
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

// The ops, in Kernels field order: X(name) for each.
#define KERNEL_OPS(X)                                                                         \
    X(matmul_nt) X(matmul_nn) X(matmul_tn) X(embedding_fwd) X(embedding_bwd) X(rmsnorm_fwd) \
    X(rmsnorm_bwd) X(rope_fwd) X(rope_bwd) X(rope_rmsnorm_fwd) X(rope_rmsnorm_bwd)          \
    X(attention_fwd) X(attention_bwd) X(relu2_fwd) X(relu2_bwd) X(relu2_linear_fwd) X(relu2_linear_bwd)     \
    X(softcap_ce) X(head_ce) X(head_dw)

enum { KERNEL_OP_COUNT = 20 };
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
// of avx2/avx512/amx ops, the plain reference ones (ref_bf16_*) in place of ref ops (so
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
// For the lab: ref's ops with AMX's bf16 twins (amx_matmul.h: matmuls, head, attention) — the
// tile instructions (emulated = 0, "amx_bf16"; check kernels_variant_available(KV_AMX)
// first) or the emulator running the same code (emulated = 1, "amx_emu"; needs AVX512_BF16 for
// its packing).
const Kernels *kernels_bf16_amx(int emulated);

// The reference bf16 matmuls: operands rounded to bf16 (round to nearest even, as vcvtneps2bf16),
// then ref_matmul_*'s fp32 products and sums (ref_matmul.c).
void ref_bf16_matmul_nt(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_bf16_matmul_nn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
void ref_bf16_matmul_tn(float *c, const float *a, const float *b, int M, int N, int K, int accumulate);
// relu2_linear_fwd/bwd with those products (ReLU² itself in fp32, as in every table).
void ref_bf16_relu2_linear_fwd(float *c, const float *fc, const float *w, int M, int N, int K, int accumulate);
void ref_bf16_relu2_linear_bwd(float *dw, float *dfc, const float *dc, const float *w, const float *fc, int M, int N,
                               int K);
