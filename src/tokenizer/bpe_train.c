// tokenizer/bpe_train.c — BPE training (see bpe_train.h).
#include "tokenizer/bpe_train.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/hash.h"
#include "util/mem.h"
#include "util/timer.h"

BpeTrainConfig bpe_train_defaults(void) {
    return (BpeTrainConfig){.vocab_size = 8192, .doc_cap = 10000, .max_chars = 2000000000LL, .threads = 0, .verbose = 0};
}

struct BpeTrainer {
    BpeTrainConfig cfg;
    char *pattern;
    Splitter *sp;
    int n_threads;
    BytesMap *counts;   // (n_threads) distinct chunk -> count, one map per thread
    SplitIter *iters;   // (n_threads)
    int64_t chars, docs;
    int full;           // max_chars reached
};

// ---------------------------------------------------------------------------------------------
// Phase 1: crop, split and count distinct chunks
// ---------------------------------------------------------------------------------------------

BpeTrainer *bpe_trainer_new(const char *pattern, const BpeTrainConfig *cfg) {
    if (cfg->vocab_size < 256 + TOKENIZER_N_SPECIAL || cfg->vocab_size > 65536) {
        err_set("--vocab-size %d is out of range: it must be at least %d (256 byte tokens + %d special tokens) "
                "and at most 65536", cfg->vocab_size, 256 + TOKENIZER_N_SPECIAL, TOKENIZER_N_SPECIAL);
        return NULL;
    }
    if (cfg->doc_cap <= 0 || cfg->max_chars <= 0) {
        err_set("--doc-cap and --max-chars must be positive");
        return NULL;
    }
    Splitter *sp = splitter_new(pattern);
    if (!sp) return NULL;
    BpeTrainer *t = xcalloc(1, sizeof *t);
    t->cfg = *cfg;
    t->pattern = xstrdup(pattern);
    t->sp = sp;
    t->n_threads = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();
    t->counts = xcalloc((size_t)t->n_threads, sizeof *t->counts);
    t->iters = xcalloc((size_t)t->n_threads, sizeof *t->iters);
    for (int i = 0; i < t->n_threads; i++) {
        bmap_init(&t->counts[i], 1 << 16);
        split_iter_init(&t->iters[i], sp);
    }
    return t;
}

void bpe_trainer_free(BpeTrainer *t) {
    if (!t) return;
    for (int i = 0; i < t->n_threads; i++) {
        bmap_free(&t->counts[i]);
        split_iter_free(&t->iters[i]);
    }
    free(t->counts);
    free(t->iters);
    splitter_free(t->sp);
    free(t->pattern);
    free(t);
}

int64_t bpe_trainer_chars(const BpeTrainer *t) { return t->chars; }
int64_t bpe_trainer_docs(const BpeTrainer *t) { return t->docs; }

// Byte length of the first `cap` code points of s (UTF-8); *n_chars gets the count kept.
static size_t crop_to_chars(const char *s, size_t len, int64_t cap, int64_t *n_chars) {
    int64_t seen = 0;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) == 0x80) continue;  // continuation byte
        if (seen == cap) { *n_chars = seen; return i; }
        seen++;
    }
    *n_chars = seen;
    return len;
}

int bpe_trainer_feed(BpeTrainer *t, const char *const *docs, const size_t *lens, int n_docs) {
    if (t->full) return 1;
    size_t *cropped = xmalloc((size_t)(n_docs ? n_docs : 1) * sizeof *cropped);
    int take = 0;
    // Sequential: which documents count, as nanochat's iterator decides (the doc that crosses
    // max_chars is still used).
    while (take < n_docs && !t->full) {
        int64_t nc;
        cropped[take] = crop_to_chars(docs[take], lens[take], t->cfg.doc_cap, &nc);
        t->chars += nc;
        t->docs++;
        take++;
        if (t->chars > t->cfg.max_chars) t->full = 1;
    }
    int failed = 0;
#pragma omp parallel num_threads(t->n_threads)
    {
        int tid = omp_get_thread_num();
        SplitIter *it = &t->iters[tid];
        BytesMap *m = &t->counts[tid];
#pragma omp for schedule(dynamic, 1)
        for (int d = 0; d < take; d++) {
            split_iter_reset(it, (const uint8_t *)docs[d], cropped[d]);
            size_t s, e;
            int rc;
            while ((rc = split_next(it, &s, &e)) == 1) {
                const char *c = docs[d] + s;
                (*bmap_upsert(m, c, e - s, hash_bytes(c, e - s), 0, NULL))++;
            }
            if (rc < 0) {
#pragma omp atomic write
                failed = 1;
            }
        }
    }
    free(cropped);
    if (failed) return err_set("tokenizer training: the pre-splitter failed on a document");
    return t->full;
}

// ---------------------------------------------------------------------------------------------
// Phase 2: words and pair statistics
// ---------------------------------------------------------------------------------------------

typedef struct {
    uint32_t *ids;    // all words' token ids back to back (words shrink in place)
    uint64_t *off;    // (n) start of each word in ids
    uint32_t *len;    // (n) current length
    int64_t *count;   // (n) how often the chunk occurs
    size_t n;
} Words;

typedef struct {
    int64_t count;    // current total count (weighted by word counts)
    uint32_t *pos;    // words that may contain the pair
    uint32_t npos, cap;
} PairInfo;

typedef struct {
    int64_t count;
    uint32_t a, b;
} HeapEntry;

typedef struct {
    U64Map index;     // (a << 32 | b) -> index into info
    PairInfo *info;
    size_t n, cap;
    HeapEntry *heap;  // max-heap: count desc, then (a, b) asc
    size_t hn, hcap;
    uint64_t *fresh;  // keys of the pairs created by the current merge
    size_t nfresh, fresh_cap;
} Pairs;

static inline uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t)a << 32 | b; }

static PairInfo *pair_get(Pairs *P, uint32_t a, uint32_t b) {
    int inserted;
    uint64_t *slot = u64map_upsert(&P->index, pair_key(a, b), P->n, &inserted);
    if (inserted) {
        GROW(P->info, P->cap, P->n + 1);
        memset(&P->info[P->n], 0, sizeof *P->info);
        P->n++;
    }
    return &P->info[*slot];
}

static void pos_add(PairInfo *pi, uint32_t w) {
    if (pi->npos && pi->pos[pi->npos - 1] == w) return;  // the same word adds itself in a row
    if (pi->npos == pi->cap) {
        pi->cap = pi->cap ? pi->cap * 2 : 4;
        pi->pos = xrealloc(pi->pos, pi->cap * sizeof *pi->pos);
    }
    pi->pos[pi->npos++] = w;
}

static inline int heap_above(const HeapEntry *x, const HeapEntry *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static void heap_push(Pairs *P, HeapEntry e) {
    GROW(P->heap, P->hcap, P->hn + 1);
    size_t i = P->hn++;
    while (i > 0 && heap_above(&e, &P->heap[(i - 1) / 2])) {
        P->heap[i] = P->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    P->heap[i] = e;
}

static HeapEntry heap_pop(Pairs *P) {
    HeapEntry top = P->heap[0], last = P->heap[--P->hn];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= P->hn) break;
        if (c + 1 < P->hn && heap_above(&P->heap[c + 1], &P->heap[c])) c++;
        if (!heap_above(&P->heap[c], &last)) break;
        P->heap[i] = P->heap[c];
        i = c;
    }
    P->heap[i] = last;
    return top;
}

// Sum the per-thread chunk counts and turn each distinct chunk of 2+ bytes into a word.
static void build_words(BpeTrainer *t, Words *W) {
    BytesMap *all = &t->counts[0];
    for (int k = 1; k < t->n_threads; k++) {
        BytesMap *m = &t->counts[k];
        for (size_t i = 0; i < m->cap; i++)
            if (m->hash[i]) *bmap_upsert(all, bmap_key(m, i), m->key_len[i], m->hash[i], 0, NULL) += m->val[i];
        bmap_clear(m);
    }
    size_t n = 0, total = 0;
    for (size_t i = 0; i < all->cap; i++)
        if (all->hash[i] && all->key_len[i] >= 2) { n++; total += all->key_len[i]; }
    W->ids = xmalloc((total ? total : 1) * sizeof *W->ids);
    W->off = xmalloc((n ? n : 1) * sizeof *W->off);
    W->len = xmalloc((n ? n : 1) * sizeof *W->len);
    W->count = xmalloc((n ? n : 1) * sizeof *W->count);
    W->n = 0;
    size_t o = 0;
    // Word order follows hash slots and may differ with the thread count; the merges do not depend
    // on it (they depend only on counts, with ties broken by pair order).
    for (size_t i = 0; i < all->cap; i++) {
        if (!all->hash[i] || all->key_len[i] < 2) continue;
        const uint8_t *k = (const uint8_t *)bmap_key(all, i);
        W->off[W->n] = o;
        W->len[W->n] = all->key_len[i];
        W->count[W->n] = (int64_t)all->val[i];
        for (uint32_t j = 0; j < all->key_len[i]; j++) W->ids[o++] = k[j];
        W->n++;
    }
}

static void count_pairs(const Words *W, Pairs *P) {
    for (size_t w = 0; w < W->n; w++) {
        const uint32_t *ids = W->ids + W->off[w];
        for (uint32_t i = 0; i + 1 < W->len[w]; i++) {
            PairInfo *pi = pair_get(P, ids[i], ids[i + 1]);
            pi->count += W->count[w];
            pos_add(pi, (uint32_t)w);
        }
    }
    for (size_t i = 0; i < P->index.cap; i++) {
        if (!P->index.key[i]) continue;
        uint64_t key = P->index.key[i] - 1;
        const PairInfo *pi = &P->info[P->index.val[i]];
        if (pi->count > 0) heap_push(P, (HeapEntry){pi->count, (uint32_t)(key >> 32), (uint32_t)key});
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 3: merges
// ---------------------------------------------------------------------------------------------

// Apply a count change to pair (x, y) caused by word w; new pairs remember w and are queued.
static void pair_delta(Pairs *P, uint32_t x, uint32_t y, int64_t delta, uint32_t w) {
    PairInfo *pi = pair_get(P, x, y);
    pi->count += delta;
    if (delta <= 0) return;
    if (pi->npos == 0) {  // first time this merge touches the pair (it contains the new id)
        GROW(P->fresh, P->fresh_cap, P->nfresh + 1);
        P->fresh[P->nfresh++] = pair_key(x, y);
    }
    pos_add(pi, w);
}

// Replace every non-overlapping (a, b) in word w, left to right, by `new_id`, updating the pair
// counts exactly as rustbpe's Word::merge_pair deltas do.
static void merge_word(Words *W, uint32_t w, uint32_t a, uint32_t b, uint32_t new_id, Pairs *P) {
    uint32_t *ids = W->ids + W->off[w], n = W->len[w], k = 0;
    int64_t c = W->count[w];
    for (uint32_t i = 0; i < n;) {
        if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
            if (k > 0) {
                pair_delta(P, ids[k - 1], a, -c, w);
                pair_delta(P, ids[k - 1], new_id, c, w);
            }
            pair_delta(P, a, b, -c, w);
            if (i + 2 < n) {
                pair_delta(P, b, ids[i + 2], -c, w);
                pair_delta(P, new_id, ids[i + 2], c, w);
            }
            ids[k++] = new_id;
            i += 2;
        } else {
            ids[k++] = ids[i++];
        }
    }
    W->len[w] = k;
}

static void free_words_pairs(Words *W, Pairs *P) {
    free(W->ids);
    free(W->off);
    free(W->len);
    free(W->count);
    for (size_t i = 0; i < P->n; i++) free(P->info[i].pos);
    free(P->info);
    free(P->heap);
    free(P->fresh);
    u64map_free(&P->index);
}

Tokenizer *bpe_trainer_finish(BpeTrainer *t) {
    double t0 = now_seconds();
    int n_merges = t->cfg.vocab_size - TOKENIZER_N_SPECIAL - 256, n_ranks = 256 + n_merges;
    Words W = {0};
    build_words(t, &W);
    Pairs P = {0};
    u64map_init(&P.index, 1 << 16);
    count_pairs(&W, &P);
    if (t->cfg.verbose)
        fprintf(stderr, "tokenizer: %zu distinct chunks of 2+ bytes, %zu distinct pairs (%.2f s); merging...\n", W.n,
                P.n, now_seconds() - t0);

    uint8_t **tokens = xmalloc((size_t)n_ranks * sizeof *tokens);  // token i's bytes
    uint32_t *lens = xmalloc((size_t)n_ranks * sizeof *lens);
    for (int b = 0; b < 256; b++) {
        tokens[b] = xmalloc(1);
        tokens[b][0] = (uint8_t)b;
        lens[b] = 1;
    }
    int done = 0;
    while (done < n_merges && P.hn) {
        HeapEntry top = heap_pop(&P);
        PairInfo *pi = &P.info[*u64map_find(&P.index, pair_key(top.a, top.b))];
        if (top.count != pi->count) {  // stale entry: re-queue with the current count
            if (pi->count > 0) heap_push(&P, (HeapEntry){pi->count, top.a, top.b});
            continue;
        }
        if (top.count <= 0) break;
        uint32_t new_id = 256 + (uint32_t)done;
        lens[new_id] = lens[top.a] + lens[top.b];
        tokens[new_id] = xmalloc(lens[new_id]);
        memcpy(tokens[new_id], tokens[top.a], lens[top.a]);
        memcpy(tokens[new_id] + lens[top.a], tokens[top.b], lens[top.b]);
        // Take the word list out of the pair first: merging may reallocate P.info. The pair
        // never reappears (new adjacencies always involve the new id).
        uint32_t *pos = pi->pos, npos = pi->npos;
        pi->pos = NULL;
        pi->npos = pi->cap = 0;
        P.nfresh = 0;
        for (uint32_t k = 0; k < npos; k++) merge_word(&W, pos[k], top.a, top.b, new_id, &P);
        free(pos);
        for (size_t k = 0; k < P.nfresh; k++) {  // queue the pairs this merge created
            uint64_t key = P.fresh[k];
            const PairInfo *f = &P.info[*u64map_find(&P.index, key)];
            if (f->count > 0) heap_push(&P, (HeapEntry){f->count, (uint32_t)(key >> 32), (uint32_t)key});
        }
        done++;
        if (t->cfg.verbose && (done % 1000 == 0 || done == n_merges))
            fprintf(stderr, "tokenizer: merge %d/%d (pair count %lld, %.2f s)\n", done, n_merges, (long long)top.count,
                    now_seconds() - t0);
    }
    free_words_pairs(&W, &P);
    Tokenizer *tok = NULL;
    if (done < n_merges) {
        err_set("the training text has only enough distinct pairs for %d merges, but --vocab-size %d needs %d: "
                "give more text or a smaller --vocab-size (at most %d)", done, t->cfg.vocab_size, n_merges,
                256 + done + TOKENIZER_N_SPECIAL);
    } else {
        tok = tokenizer_build((const uint8_t *const *)tokens, lens, n_ranks, t->pattern);
        if (tok) {
            tok->doc_cap = t->cfg.doc_cap;
            tok->max_chars = t->cfg.max_chars;
            tok->train_chars = t->chars;
            tok->train_docs = t->docs;
        }
    }
    for (int i = 0; i < 256 + done; i++) free(tokens[i]);
    free(tokens);
    free(lens);
    return tok;
}
