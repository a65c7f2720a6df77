// kernels/gemm/gemm_pins.c — pinned operands of the GEMM driver (gemm_pin and friends in
// gemm_driver.h).
//
// A weight that is an NT product's B ((N, K): the forward, x Wᵀ) or an NN
// product's B ((K, N): the backward's dx = dy W), packed once, in the exact micro-panels
// gemm_block would pack per call: k block p (depth [p*kcb, ...)) holds all ceil(N/NR) panels,
// panel j at j * panel_bytes(kc). Blocks are laid out in order, every full block the same size.
// Packed lazily, per implementation (fp32 and bf16 panels differ), on the first product that
// reads the pin; same packing and same kernel calls, so the same bits as an unpinned product.
// When the weights change (training's optimizer step), gemm_pins_stale marks every copy stale
// and the next product that reads one packs it again into the same memory (freed and allocated
// again, kit-d10's ~200 MB of copies would be faulted in at ~10 us per 4 KiB page every step).
// gemm_repack_pins packs one b's stale copies at once instead: the optimizer calls it right after
// updating that weight, while it is in cache, on the thread that updated it.
#include "kernels/gemm/gemm_args.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/mem.h"

#define MAX_PINS 1024  // 12 per layer in training (6 weights, 2 layouts)
#define MAX_IMPLS 4

typedef struct {
    const float *b;
    GemmLayout layout;  // GEMM_NT: b is (N, K); GEMM_NN: b is (K, N)
    int N, K;
    const GemmImpl *impl[MAX_IMPLS];
    char *data[MAX_IMPLS];
    int stale[MAX_IMPLS];  // b changed since data[s] was packed (PACKING: gemm_repack_pins is at it)
} Pin;

enum { FRESH = 0, STALE = 1, PACKING = 2 };

static Pin pins[MAX_PINS];
static int n_pins;
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;







// Pack p's b for impl g into data (all threads share the panels, unless already inside a
// parallel region: evaluation's rows per thread).
static void pack_pinned(const GemmImpl *g, const Pin *p, char *data) {
    if (gemm_poisoning()) memset(data, 0xff, packed_bytes(g, p->N, p->K));
    GemmArgs x = {.g = g, .layout = p->layout, .b = p->b, .M = 0, .N = p->N, .K = p->K};
    fill_strides(&x);
#pragma omp parallel if (!omp_in_parallel())
    gemm_pack_b_share(&x, data, omp_get_thread_num(), omp_get_num_threads());
}

// Pack copy s of p again (its own row in `frontier profile`: read W, write the panels).
static void repack(const Pin *p, int s) {
    prof_begin("weight_repack", "op", -1);
    pack_pinned(p->impl[s], p, p->data[s]);
    prof_end(0, (double)p->N * p->K * sizeof(float) + (double)packed_bytes(p->impl[s], p->N, p->K));
}

// The packed panels of b for impl g if b is pinned for this layout and shape (packing them now if
// this is the first product of g to read them since they were pinned or went stale), else NULL;
// NULL too for an empty (M, N, K) product.
const char *gemm_pinned_panels(const GemmImpl *g, const float *b, GemmLayout layout, int M, int N, int K) {
    if (!n_pins || M <= 0 || N <= 0 || K <= 0 || (gemm_ablation() & GEMM_ABLATE_PINS)) return NULL;
    const char *found = NULL;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins && !found; i++) {
        Pin *p = &pins[i];
        if (p->b != b || p->layout != layout || p->N != N || p->K != K) continue;
        for (int s = 0; s < MAX_IMPLS && !found; s++) {
            if (!p->impl[s]) p->impl[s] = g, p->data[s] = xaligned_alloc(packed_bytes(g, N, K)), p->stale[s] = STALE;
            if (p->impl[s] != g) continue;
            if (p->stale[s] == PACKING) break;  // being repacked by another thread (b changing): pack per call
            if (p->stale[s] == STALE) repack(p, s), p->stale[s] = FRESH;
            found = p->data[s];
        }
        break;
    }
    pthread_mutex_unlock(&pin_lock);
    return found;
}

int gemm_pin(const float *b, GemmLayout layout, int N, int K) {
    if (layout != GEMM_NT && layout != GEMM_NN) abort();  // internal misuse: only NT and NN products read pins
    pthread_mutex_lock(&pin_lock);
    int rc = 0;
    int i = 0;
    while (i < n_pins && !(pins[i].b == b && pins[i].layout == layout && pins[i].N == N && pins[i].K == K)) i++;
    if (i == n_pins) {
        if (n_pins == MAX_PINS) rc = -1;
        else pins[n_pins++] = (Pin){.b = b, .layout = layout, .N = N, .K = K};
    }
    pthread_mutex_unlock(&pin_lock);
    return rc;
}

void gemm_pins_stale(void) {
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins; i++)
        for (int s = 0; s < MAX_IMPLS; s++) pins[i].stale[s] = STALE;
    pthread_mutex_unlock(&pin_lock);
}

// Claims b's stale copies under the lock, packs them outside it (threads updating different
// weights side by side repack at the same time), then marks them fresh. A product reading b
// meanwhile packs per call (b is changing: the caller broke the contract, but gets no torn panels).
void gemm_repack_pins(const float *b) {
    if (!n_pins) return;
    enum { MAX_CLAIMS = 2 * MAX_IMPLS };  // a weight has at most two pins (NT and NN)
    int claim_pin[MAX_CLAIMS], claim_slot[MAX_CLAIMS], n = 0;
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins; i++) {
        if (pins[i].b != b) continue;
        for (int s = 0; s < MAX_IMPLS; s++)
            if (pins[i].impl[s] && pins[i].stale[s] == STALE && n < MAX_CLAIMS)
                pins[i].stale[s] = PACKING, claim_pin[n] = i, claim_slot[n++] = s;
    }
    pthread_mutex_unlock(&pin_lock);
    for (int c = 0; c < n; c++) repack(&pins[claim_pin[c]], claim_slot[c]);
    pthread_mutex_lock(&pin_lock);
    for (int c = 0; c < n; c++) pins[claim_pin[c]].stale[claim_slot[c]] = FRESH;
    pthread_mutex_unlock(&pin_lock);
}

void gemm_unpin_all(void) {
    pthread_mutex_lock(&pin_lock);
    for (int i = 0; i < n_pins; i++)
        for (int s = 0; s < MAX_IMPLS; s++) free(pins[i].data[s]);
    memset(pins, 0, sizeof pins);
    n_pins = 0;
    pthread_mutex_unlock(&pin_lock);
}

