// tokenizer/encode.c — encoding text to ids with tiktoken's semantics (see tokenizer.h).
//
// Per chunk from the splitter:
//   1. the whole chunk is a token            -> that token (tiktoken checks this first too);
//   2. the chunk is in this thread's cache   -> the cached ids;
//   3. otherwise BPE: repeatedly merge the adjacent pair whose concatenated bytes have the lowest
//      rank, leftmost first. Short chunks use tiktoken's O(n·m) array scan; long ones (a 1 MB run
//      of one letter is one chunk) a heap with lazy invalidation, O(n log n). Both give the same
//      ids: the heap orders by (rank, start offset), i.e. lowest rank, then leftmost.
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mem.h"

#define RANK_NONE UINT32_MAX
#define HEAP_MERGE_MIN_LEN 256   // chunks at least this long use the heap merge
#define CACHE_MAX_CHUNK_LEN 128  // longer chunks are rare and not worth caching
#define CACHE_MAX_ENTRIES (1u << 18)
#define CACHE_COUNT_BITS 20

struct Encoder {
    const Tokenizer *tok;
    SplitIter it;
    uint32_t *pair2;      // (65536) rank of the 2-byte token (b0, b1), or RANK_NONE
    BytesMap cache;       // chunk bytes -> offset into cache_ids << CACHE_COUNT_BITS | count
    IdVec cache_ids;      // ids of all cached chunks back to back
    // scratch, grown as needed
    size_t *start;        // (n+1) part start offsets
    uint32_t *rank;       // (n+1) rank of the pair starting at each part
    uint32_t *ids;        // (n+1) token of each part
    size_t *next, *prev;  // (n) heap merge: linked list of parts
    uint64_t *heap;       // (2n) heap merge: rank << 32 | start
    size_t scratch_cap;
    int force_heap;
};

static inline uint32_t rank_of(const Encoder *enc, const uint8_t *p, size_t len) {
    if (len == 2) return enc->pair2[p[0] << 8 | p[1]];
    const uint64_t *v = bmap_find(&enc->tok->ranks, p, len, hash_bytes(p, len));
    return v ? (uint32_t)*v : RANK_NONE;
}

Encoder *encoder_new(const Tokenizer *tok) {
    Encoder *enc = xcalloc(1, sizeof *enc);
    enc->tok = tok;
    split_iter_init(&enc->it, tok->splitter);
    enc->pair2 = xmalloc(65536 * sizeof *enc->pair2);
    for (int i = 0; i < 65536; i++) {
        uint8_t b[2] = {(uint8_t)(i >> 8), (uint8_t)i};
        const uint64_t *v = bmap_find(&tok->ranks, b, 2, hash_bytes(b, 2));
        enc->pair2[i] = v ? (uint32_t)*v : RANK_NONE;
    }
    bmap_init(&enc->cache, 1 << 16);
    return enc;
}

void encoder_free(Encoder *enc) {
    if (!enc) return;
    split_iter_free(&enc->it);
    bmap_free(&enc->cache);
    idvec_free(&enc->cache_ids);
    free(enc->pair2);
    free(enc->start);
    free(enc->rank);
    free(enc->ids);
    free(enc->next);
    free(enc->prev);
    free(enc->heap);
    free(enc);
}

void encoder_force_heap_merge(Encoder *enc, int on) { enc->force_heap = on; }

static void ensure_scratch(Encoder *enc, size_t n) {
    if (n + 1 <= enc->scratch_cap) return;
    size_t c = enc->scratch_cap ? enc->scratch_cap : 256;
    while (c < n + 1) c *= 2;
    enc->start = xrealloc(enc->start, c * sizeof *enc->start);
    enc->rank = xrealloc(enc->rank, c * sizeof *enc->rank);
    enc->ids = xrealloc(enc->ids, c * sizeof *enc->ids);
    enc->next = xrealloc(enc->next, c * sizeof *enc->next);
    enc->prev = xrealloc(enc->prev, c * sizeof *enc->prev);
    enc->heap = xrealloc(enc->heap, 2 * c * sizeof *enc->heap);
    enc->scratch_cap = c;
}

// ---------------------------------------------------------------------------------------------
// Short chunks: tiktoken's byte_pair_merge. parts[i] covers piece[start[i] .. start[i+1]);
// rank[i] is the rank of parts i and i+1 joined. Returns the number of parts; ids in enc->ids.
// ---------------------------------------------------------------------------------------------
static size_t merge_scan(Encoder *enc, const uint8_t *piece, size_t n) {
    size_t *start = enc->start;
    uint32_t *rank = enc->rank, *ids = enc->ids;
    size_t m = n + 1;  // parts incl. the end sentinel
    for (size_t i = 0; i < n; i++) {
        start[i] = i;
        ids[i] = piece[i];
        rank[i] = i + 1 < n ? enc->pair2[piece[i] << 8 | piece[i + 1]] : RANK_NONE;
    }
    start[n] = n;
    rank[n] = RANK_NONE;
    for (;;) {
        uint32_t best = RANK_NONE;
        size_t bi = 0;
        for (size_t i = 0; i + 1 < m; i++)
            if (rank[i] < best) { best = rank[i]; bi = i; }
        if (best == RANK_NONE) break;
        ids[bi] = best;
        // Part bi absorbs bi+1: recompute the pairs that now end or start at bi.
        if (bi > 0) rank[bi - 1] = bi + 2 < m ? rank_of(enc, piece + start[bi - 1], start[bi + 2] - start[bi - 1]) : RANK_NONE;
        rank[bi] = bi + 3 < m ? rank_of(enc, piece + start[bi], start[bi + 3] - start[bi]) : RANK_NONE;
        memmove(start + bi + 1, start + bi + 2, (m - bi - 2) * sizeof *start);
        memmove(rank + bi + 1, rank + bi + 2, (m - bi - 2) * sizeof *rank);
        memmove(ids + bi + 1, ids + bi + 2, (m - bi - 2) * sizeof *ids);
        m--;
    }
    return m - 1;
}

// ---------------------------------------------------------------------------------------------
// Long chunks: the same merges in O(n log n) with a binary min-heap keyed (rank, start).
// A popped entry is acted on only if it still describes a live pair (lazy invalidation); equal
// rank means equal bytes, so (rank, start) identifies the pair exactly.
// ---------------------------------------------------------------------------------------------
static void heap_push(uint64_t *h, size_t *n, uint64_t key) {
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > key) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
    h[i] = key;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= last) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

// rank of part i joined with its successor, given the linked list (n = end sentinel)
static uint32_t pair_rank(const Encoder *enc, const uint8_t *piece, size_t i, size_t n) {
    size_t j = enc->next[i];
    if (j >= n) return RANK_NONE;
    size_t end = enc->next[j];
    return rank_of(enc, piece + i, end - i);
}

static size_t merge_heap(Encoder *enc, const uint8_t *piece, size_t n) {
    size_t *next = enc->next, *prev = enc->prev;
    uint32_t *rank = enc->rank, *ids = enc->ids;
    uint64_t *heap = enc->heap;
    size_t hn = 0;
    for (size_t i = 0; i < n; i++) {  // part i starts at byte i; next == n marks the end
        next[i] = i + 1;
        prev[i] = i ? i - 1 : SIZE_MAX;
        ids[i] = piece[i];
    }
    for (size_t i = 0; i < n; i++) {
        rank[i] = i + 1 < n ? enc->pair2[piece[i] << 8 | piece[i + 1]] : RANK_NONE;
        if (rank[i] != RANK_NONE) heap_push(heap, &hn, (uint64_t)rank[i] << 32 | i);
    }
    while (hn) {
        uint64_t key = heap_pop(heap, &hn);
        uint32_t r = (uint32_t)(key >> 32);
        size_t i = (size_t)(key & 0xffffffffu);
        if (rank[i] != r) continue;  // stale: part i was absorbed or its pair changed
        size_t j = next[i];
        ids[i] = r;
        next[i] = next[j];
        if (next[j] < n) prev[next[j]] = i;
        rank[j] = RANK_NONE;  // j is gone
        rank[i] = pair_rank(enc, piece, i, n);
        if (rank[i] != RANK_NONE) heap_push(heap, &hn, (uint64_t)rank[i] << 32 | i);
        if (prev[i] != SIZE_MAX) {
            size_t p = prev[i];
            rank[p] = pair_rank(enc, piece, p, n);
            if (rank[p] != RANK_NONE) heap_push(heap, &hn, (uint64_t)rank[p] << 32 | p);
        }
    }
    size_t m = 0;  // compact the surviving parts' ids to the front
    for (size_t i = 0; i < n; i = next[i]) ids[m++] = ids[i];
    return m;
}

// ---------------------------------------------------------------------------------------------
// One chunk, and whole texts
// ---------------------------------------------------------------------------------------------
static void encode_chunk(Encoder *enc, const uint8_t *piece, size_t n, IdVec *out) {
    if (n == 1) { idvec_push(out, piece[0]); return; }
    uint64_t h = hash_bytes(piece, n);
    const uint64_t *whole = bmap_find(&enc->tok->ranks, piece, n, h);
    if (whole) { idvec_push(out, (uint32_t)*whole); return; }
    int cacheable = n <= CACHE_MAX_CHUNK_LEN;
    if (cacheable) {
        const uint64_t *c = bmap_find(&enc->cache, piece, n, h);
        if (c) {
            size_t off = *c >> CACHE_COUNT_BITS, cnt = *c & ((1u << CACHE_COUNT_BITS) - 1);
            GROW(out->data, out->cap, out->len + cnt);
            memcpy(out->data + out->len, enc->cache_ids.data + off, cnt * sizeof *out->data);
            out->len += cnt;
            return;
        }
    }
    ensure_scratch(enc, n);
    size_t m = (n >= HEAP_MERGE_MIN_LEN || enc->force_heap) ? merge_heap(enc, piece, n) : merge_scan(enc, piece, n);
    GROW(out->data, out->cap, out->len + m);
    memcpy(out->data + out->len, enc->ids, m * sizeof *out->data);
    out->len += m;
    if (!cacheable) return;
    if (enc->cache.count >= CACHE_MAX_ENTRIES) {  // bounded memory: start afresh
        bmap_clear(&enc->cache);
        enc->cache_ids.len = 0;
    }
    uint64_t val = (uint64_t)enc->cache_ids.len << CACHE_COUNT_BITS | m;
    GROW(enc->cache_ids.data, enc->cache_ids.cap, enc->cache_ids.len + m);
    memcpy(enc->cache_ids.data + enc->cache_ids.len, enc->ids, m * sizeof *enc->ids);
    enc->cache_ids.len += m;
    bmap_upsert(&enc->cache, piece, n, h, val, NULL);
}

int encoder_encode(Encoder *enc, const uint8_t *text, size_t len, IdVec *out) {
    split_iter_reset(&enc->it, text, len);
    size_t s, e;
    int rc;
    while ((rc = split_next(&enc->it, &s, &e)) == 1) encode_chunk(enc, text + s, e - s, out);
    return rc;
}

int encode_batch(Encoder *const *enc, int n_threads, const char *const *texts, const size_t *lens, int n, IdVec *out) {
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(n_threads)
    for (int d = 0; d < n; d++) {
        // Encode into a copy of out[d] and store it once: out[] packs 24-byte IdVecs, so
        // neighbouring documents, encoded by different threads, share cache lines, and updating
        // out[d].len on every token bounced those lines between the cores. 2 threads encoded no
        // faster than 1 (52 -> 58 MB/s on bench_encode's 10.5 MB).
        IdVec v = out[d];
        v.len = 0;
        int rc = encoder_encode(enc[omp_get_thread_num()], (const uint8_t *)texts[d], lens[d], &v);
        out[d] = v;
        if (rc != 0) {
#pragma omp atomic write
            failed = d + 1;
        }
    }
    return failed ? err_set("encoding document %d failed", failed - 1) : 0;
}
