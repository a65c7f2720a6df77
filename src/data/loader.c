// data/loader.c — BOS-aligned best-fit packing of llm.c shards (see loader.h).
#include "data/loader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/shard.h"
#include "util/error.h"
#include "util/rng.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// PRNG: splitmix64 (util/rng.h; Steele, Lea, Flood 2014): period 2^64, passes BigCrush, integer
// arithmetic only, so permutations are the same on every machine. mix64 is its finaliser, used
// here to derive each epoch's stream from (seed, epoch).
// ---------------------------------------------------------------------------------------------

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Uniform in [0, n), n > 0 (Lemire 2019, "Fast random integer generation in an interval").
static uint64_t uniform_below(uint64_t *s, uint64_t n) {
    unsigned __int128 m = (unsigned __int128)splitmix64(s) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t threshold = (0 - n) % n;  // 2^64 mod n
        while (lo < threshold) {
            m = (unsigned __int128)splitmix64(s) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

void loader_permutation(uint64_t seed, int64_t epoch, int32_t *perm, int64_t n) {
    for (int64_t i = 0; i < n; i++) perm[i] = (int32_t)i;
    uint64_t s = mix64(seed ^ mix64((uint64_t)epoch));
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)uniform_below(&s, (uint64_t)i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

// ---------------------------------------------------------------------------------------------
// Open / free
// ---------------------------------------------------------------------------------------------

LoaderConfig loader_defaults(void) {
    LoaderConfig c = {0};
    c.world = 1;
    c.shuffle = 1;
    c.buffer_docs = LOADER_BUFFER_DOCS;
    c.refill_docs = LOADER_REFILL_DOCS;
    return c;
}

static int check_config(const LoaderConfig *c, int bos_id) {
    if (c->B <= 0) return err_set("data loader: B (rows per batch) must be > 0, got %d", c->B);
    if (c->T <= 0) return err_set("data loader: T (sequence length) must be > 0, got %d", c->T);
    if (c->T == INT32_MAX) return err_set("data loader: T = %d is too large", c->T);
    if (c->world <= 0) return err_set("data loader: world size must be >= 1, got %d", c->world);
    if (c->rank < 0 || c->rank >= c->world)
        return err_set("data loader: rank %d is outside [0, world = %d)", c->rank, c->world);
    if (c->buffer_docs < 0)
        return err_set("data loader: buffer_docs must be >= 1 (0 = default %d), got %d", LOADER_BUFFER_DOCS,
                       c->buffer_docs);
    if (c->refill_docs < 0)
        return err_set("data loader: refill_docs must be >= 1 (0 = default %d), got %d", LOADER_REFILL_DOCS,
                       c->refill_docs);
    if (bos_id < 0 || bos_id > UINT16_MAX)
        return err_set("data loader: <|bos|> id %d does not fit a uint16 shard token", bos_id);
    if (c->vocab_size < 0 || (c->vocab_size > 0 && bos_id >= c->vocab_size))
        return err_set("data loader: vocab_size %d must be 0 (unchecked) or above the <|bos|> id %d", c->vocab_size,
                       bos_id);
    return 0;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void start_epoch(DataLoader *dl, LoaderStream *st, int64_t epoch) {
    st->epoch = epoch;
    st->cursor = dl->cfg.rank;
    if (dl->cfg.shuffle) loader_permutation(st->seed, dl->cfg.same_order ? 1 : epoch, st->perm, st->n_units);
}

void loader_reset(DataLoader *dl) {
    for (int s = 0; s < dl->n_src; s++) {
        start_epoch(dl, &dl->src[s], 1);
        dl->src[s].tokens_pulled = dl->src[s].tokens_used = 0;
    }
    dl->buf_n = 0;
    dl->rows = 0;
    dl->batches = dl->tokens_used = dl->tokens_cropped = 0;
}

// The checks every shard gets, then its tokens appended at dl->tokens + *at (room for them is
// there). Shards start with <|bos|> (checked), so a document never straddles two shards.
static int add_shard(DataLoader *dl, const uint16_t *t, size_t c, const char *origin, int64_t *at, int64_t *n_docs) {
    if (c > 0 && t[0] != dl->bos_id)
        return err_usage("data loader: %s: the first token is %u, not <|bos|> (%d); every document must start with "
                         "<|bos|>: is this a `frontier prepare` shard for this tokenizer?", origin, (unsigned)t[0],
                         dl->bos_id);
    if (shard_check_tokens(t, c, dl->cfg.vocab_size, origin) != 0) return err_prefix("data loader");
    for (size_t k = 0; k < c; k++) *n_docs += t[k] == dl->bos_id;
    memcpy(dl->tokens + *at, t, c * sizeof *t);
    *at += (int64_t)c;
    return 0;
}

// The max_tokens subset (loader.h): whole documents, at least one, adding up to at most
// max_tokens; the token data and the document index are compacted to them, in file order.
static void cut_subset(DataLoader *dl, int64_t *at, int64_t *n_docs) {
    const int64_t n = *n_docs, max = dl->cfg.max_tokens;
    int64_t *start = dl->doc_start;  // document i ends where i+1 starts
#define DOC_END(i) ((i) + 1 < n ? start[(i) + 1] : *at)
    if (dl->cfg.subset_first) {
        int64_t keep = 1;
        while (keep < n && DOC_END(keep) <= max) keep++;
        if (keep < n) *at = start[keep];
        *n_docs = keep;
        return;
    }
    unsigned char *take = xcalloc((size_t)n, 1);
    int32_t *perm = xmalloc((size_t)n * sizeof *perm);
    loader_permutation(LOADER_SUBSET_SEED, 1, perm, n);
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t len = DOC_END(perm[i]) - start[perm[i]];
        if (sum + len <= max) take[perm[i]] = 1, sum += len;
    }
    if (sum == 0) take[perm[0]] = 1;  // every document is longer than max_tokens
    // Compact forward: document d moves to w <= start[d], and start[j] is rewritten only for
    // j <= d, after d's bounds are read, while DOC_END reads start[d+1].
    int64_t w = 0, j = 0;
    for (int64_t d = 0; d < n; d++) {
        if (!take[d]) continue;
        int64_t s = start[d], len = DOC_END(d) - s;
        memmove(dl->tokens + w, dl->tokens + s, (size_t)len * sizeof *dl->tokens);
        start[j++] = w;
        w += len;
    }
#undef DOC_END
    *at = w, *n_docs = j;
    free(perm);
    free(take);
}

// A source's permutation seed (loader.h): the loader's own for source 0, so that one source is
// the stream of a loader without sources.
static uint64_t source_seed(uint64_t seed, int s) {
    return s == 0 ? seed : mix64(seed + (uint64_t)s * 0x9e3779b97f4a7c15ULL);
}

// The document index and the streams over dl->tokens[0, at); dl->src[s].tok_lo, n_tokens and
// n_docs are set (one source: it spans everything, set here). what names the data in errors.
// -1 + err (dl is then freed by the caller).
static int index_docs(DataLoader *dl, int64_t at, int64_t n_docs, const char *what) {
    const LoaderConfig *cfg = &dl->cfg;
    dl->n_tokens = at;
    if (n_docs == 0) return err_set("data loader: no documents in %s", what);
    if (n_docs > INT32_MAX)
        return err_set("data loader: %lld documents; at most %d are supported", (long long)n_docs, INT32_MAX);
    dl->n_docs = n_docs;
    dl->doc_start = xmalloc((size_t)n_docs * sizeof *dl->doc_start);
    dl->doc_len = xmalloc((size_t)n_docs * sizeof *dl->doc_len);
    int64_t d = 0;
    for (int64_t k = 0; k < at; k++)
        if (dl->tokens[k] == dl->bos_id) dl->doc_start[d++] = k;
    if (cfg->max_tokens > 0) {  // one source (loader_open_mix checks)
        cut_subset(dl, &at, &n_docs);
        dl->n_tokens = at, dl->n_docs = n_docs;
    }
    if (dl->n_src == 1) dl->src[0].tok_lo = 0, dl->src[0].n_tokens = at, dl->src[0].n_docs = n_docs;
    uint64_t h = fnv1a(0xcbf29ce484222325ULL, &n_docs, sizeof n_docs);
    for (int64_t i = 0; i < n_docs; i++) {
        int64_t end = i + 1 < n_docs ? dl->doc_start[i + 1] : at;
        if (end - dl->doc_start[i] > INT32_MAX)
            return err_usage("data loader: %s: document %lld has %lld tokens; at most %d are supported", what,
                             (long long)i, (long long)(end - dl->doc_start[i]), INT32_MAX);
        dl->doc_len[i] = (int32_t)(end - dl->doc_start[i]);
        h = fnv1a(h, &dl->doc_len[i], sizeof dl->doc_len[i]);
    }
    dl->data_hash = h;
    dl->n_units = dl->rank_docs = dl->weight_sum = 0;
    int natural = dl->src[0].weight == 0;
    int64_t doc_lo = 0;
    for (int s = 0; s < dl->n_src; s++) {
        LoaderStream *st = &dl->src[s];
        // one source keeps the loader's own wording; a mixture's errors name the source
        char named[1200];
        snprintf(named, sizeof named, "%s%s", dl->n_src > 1 ? "source " : "", dl->n_src > 1 ? st->name : what);
        if (st->n_docs == 0) return err_set("data loader: no documents in %s", named);
        st->doc_lo = doc_lo;
        doc_lo += st->n_docs;
        st->n_units = st->n_docs;
        if (cfg->fixed_rows) {
            st->n_units = (st->n_tokens - 1) / cfg->T;
            if (st->n_units > INT32_MAX)
                return err_set("data loader: %s: %lld rows of T+1 = %d tokens; at most %d are supported", named,
                               (long long)st->n_units, cfg->T + 1, INT32_MAX);
        }
        if (cfg->rank >= st->n_units)
            return err_set("data loader: rank %d of %d gets no %s: %s holds only %lld", cfg->rank, cfg->world,
                           cfg->fixed_rows ? "rows" : "documents", named, (long long)st->n_units);
        st->rank_units = (st->n_units - cfg->rank + cfg->world - 1) / cfg->world;
        st->seed = source_seed(cfg->seed, s);
        if (natural) st->weight = st->n_tokens;
        if (cfg->shuffle) st->perm = xmalloc((size_t)st->n_units * sizeof *st->perm);
        dl->n_units += st->n_units;
        dl->rank_docs += st->rank_units;
        dl->weight_sum += st->weight;
    }
    dl->buf_cap = (int64_t)cfg->buffer_docs + cfg->refill_docs;
    dl->buf = xmalloc((size_t)dl->buf_cap * sizeof *dl->buf);
    dl->buf_skip = xmalloc((size_t)dl->buf_cap * sizeof *dl->buf_skip);
    dl->row = xmalloc(((size_t)cfg->T + 1) * sizeof *dl->row);
    loader_reset(dl);
    return 0;
}

// The sources' checks that need no data: their count, mode and weights. 0, or -1 + err.
static int check_sources(const LoaderSource *src, int n, const LoaderConfig *c) {
    if (n <= 0 || n > LOADER_MAX_SOURCES)
        return err_set("data loader: %d sources; a mixture has 1 to %d", n, LOADER_MAX_SOURCES);
    if (n > 1 && !c->shuffle) return err_set("data loader: a mixture of %d sources is for training (shuffle), not validation", n);
    if (n > 1 && c->max_tokens > 0)
        return err_set("data loader: max_tokens (a fixed subset) takes one source, not a mixture of %d", n);
    int natural = src[0].weight == 0;
    for (int s = 0; s < n; s++) {
        const char *name = src[s].name ? src[s].name : "?";
        double w = src[s].weight;
        if (!src[s].tokens && (src[s].n_shards <= 0 || !src[s].shards))
            return err_set("data loader: %s%s: no shards given", n > 1 ? "source " : "", name);
        if (src[s].tokens && src[s].n_tokens > INT64_MAX / 2)
            return err_set("data loader: %s: too many tokens", name);
        if ((w == 0) != natural)
            return err_set("data loader: source %s has weight %g but source %s has %g: give every source a weight in "
                           "(0, 1], or none (0: natural shares)", name, w, src[0].name ? src[0].name : "?", src[0].weight);
        if (!natural && !(w > 0 && w <= 1))
            return err_set("data loader: source %s: weight %g is not in (0, 1]", name, w);
        if (!natural && llround(w * 0x1p40) < 1)
            return err_set("data loader: source %s: weight %g is too small (at least 2^-40)", name, w);
    }
    return 0;
}

DataLoader *loader_open_mix(const LoaderSource *src, int n, int bos_id, const LoaderConfig *cfg_in) {
    if (check_config(cfg_in, bos_id) != 0 || check_sources(src, n, cfg_in) != 0) return NULL;  // before anything is read
    LoaderConfig cfg = *cfg_in;
    if (cfg.buffer_docs == 0) cfg.buffer_docs = LOADER_BUFFER_DOCS;
    if (cfg.refill_docs == 0) cfg.refill_docs = LOADER_REFILL_DOCS;
    // Sizes first (headers are validated), so a bad shard fails before anything big is read.
    int64_t total = 0;
    for (int s = 0; s < n; s++) {
        if (src[s].tokens) total += (int64_t)src[s].n_tokens;
        for (int i = 0; !src[s].tokens && i < src[s].n_shards; i++) {
            size_t c;
            if (shard_count(src[s].shards[i], &c) != 0) { err_prefix("data loader"); return NULL; }
            total += (int64_t)c;
        }
    }
    DataLoader *dl = xcalloc(1, sizeof *dl);
    dl->cfg = cfg;
    dl->bos_id = bos_id;
    dl->tokens = xmalloc((size_t)(total ? total : 1) * sizeof *dl->tokens);
    dl->src = xcalloc((size_t)n, sizeof *dl->src);
    dl->n_src = n;
    int64_t at = 0, n_docs = 0;
    for (int s = 0; s < n; s++) {
        LoaderStream *st = &dl->src[s];
        st->name = xstrdup(src[s].name ? src[s].name : "?");
        st->weight = src[s].weight == 0 ? 0 : llround(src[s].weight * 0x1p40);
        st->tok_lo = at;
        int64_t docs_before = n_docs;
        if (src[s].tokens && add_shard(dl, src[s].tokens, src[s].n_tokens, st->name, &at, &n_docs) != 0) goto fail;
        for (int i = 0; !src[s].tokens && i < src[s].n_shards; i++) {
            const char *path = src[s].shards[i];
            uint16_t *t;
            size_t c;
            if (shard_read(path, &t, &c) != 0) { err_prefix("data loader"); goto fail; }
            int rc = at + (int64_t)c > total ? err_set("data loader: %s grew while being read", path)
                                             : add_shard(dl, t, c, path, &at, &n_docs);
            free(t);
            if (rc != 0) goto fail;
        }
        st->n_tokens = at - st->tok_lo;
        st->n_docs = n_docs - docs_before;
    }
    char what[1100];
    if (n > 1) snprintf(what, sizeof what, "the %d sources given", n);
    else if (src[0].tokens) snprintf(what, sizeof what, "%s", dl->src[0].name);
    else snprintf(what, sizeof what, "the %d shard(s) given (%s%s)", src[0].n_shards, src[0].shards[0],
                  src[0].n_shards > 1 ? ", ..." : "");
    if (index_docs(dl, at, n_docs, what) != 0) goto fail;
    return dl;
fail:
    loader_free(dl);
    return NULL;
}

DataLoader *loader_open(const char *const *shard_paths, int n, int bos_id, const LoaderConfig *cfg) {
    if (check_config(cfg, bos_id) != 0) return NULL;  // before anything is read
    if (n <= 0) { err_set("data loader: no shards given"); return NULL; }
    LoaderSource one = {.name = "train", .shards = shard_paths, .n_shards = n};
    return loader_open_mix(&one, 1, bos_id, cfg);
}

DataLoader *loader_open_tokens(const uint16_t *tokens, size_t n_tokens, const char *origin, int bos_id,
                               const LoaderConfig *cfg) {
    if (n_tokens > INT64_MAX / 2) { err_set("data loader: %s: too many tokens", origin); return NULL; }
    LoaderSource one = {.name = origin, .tokens = tokens ? tokens : (const uint16_t *)"", .n_tokens = n_tokens};
    return loader_open_mix(&one, 1, bos_id, cfg);
}

void loader_free(DataLoader *dl) {
    if (!dl) return;
    free(dl->tokens);
    free(dl->doc_start);
    free(dl->doc_len);
    for (int s = 0; s < dl->n_src; s++) free(dl->src[s].perm), free(dl->src[s].name);
    free(dl->src);
    free(dl->buf);
    free(dl->buf_skip);
    free(dl->row);
    free(dl);
}

// ---------------------------------------------------------------------------------------------
// Packing
// ---------------------------------------------------------------------------------------------

// The source furthest behind its share of the tokens counted (loader.h): the largest deficit
// W_s C - C_s W, C_s = its tokens pulled (placed = 0) or placed into rows (placed = 1), C = their
// sum, W = the sum of the weights; the lowest s on ties; sources in `skip` (bit s) are passed
// over; -1 when every source is. The weights are at most 2^40 each (or token counts held in
// memory) and the token counts stay far below 2^62: each product fits 128 bits.
static int largest_deficit(const DataLoader *dl, int placed, uint64_t skip) {
    int64_t total = 0;
    for (int s = 0; s < dl->n_src; s++) total += placed ? dl->src[s].tokens_used : dl->src[s].tokens_pulled;
    int best = -1;
    __int128 best_deficit = 0;
    for (int s = 0; s < dl->n_src; s++) {
        if (skip >> s & 1) continue;
        const LoaderStream *st = &dl->src[s];
        int64_t mine = placed ? st->tokens_used : st->tokens_pulled;
        __int128 deficit = (__int128)st->weight * total - (__int128)mine * dl->weight_sum;
        if (best < 0 || deficit > best_deficit) best = s, best_deficit = deficit;
    }
    return best;
}

// Next unit of this rank's stream: its source into *src and its id (a document id, or the window's
// index in its source with fixed_rows) into *id; 0 when validation data has run out.
static int pull_unit(DataLoader *dl, int *src, int32_t *id) {
    int s = dl->n_src == 1 ? 0 : largest_deficit(dl, 0, 0);
    LoaderStream *st = &dl->src[s];
    if (st->cursor >= st->n_units) {
        if (!dl->cfg.shuffle) return 0;
        start_epoch(dl, st, st->epoch + 1);  // rank < n_units, so the new epoch has a unit for us
    }
    int32_t u = dl->cfg.shuffle ? st->perm[st->cursor] : (int32_t)st->cursor;
    st->cursor += dl->cfg.world;
    if (dl->cfg.fixed_rows) {
        st->tokens_pulled += dl->cfg.T;
        *id = u;
    } else {
        *id = (int32_t)(st->doc_lo + u);
        st->tokens_pulled += dl->doc_len[*id];
    }
    *src = s;
    return 1;
}

// The source of document id (sources hold consecutive ids).
static int source_index(const DataLoader *dl, int32_t id) {
    int s = 0;
    while (s + 1 < dl->n_src && id >= dl->src[s + 1].doc_lo) s++;
    return s;
}

// Appends the stream's next refill_docs units to the buffer; 0 when validation data has run out.
static int buffer_more(DataLoader *dl) {
    for (int k = 0; k < dl->cfg.refill_docs; k++) {
        int32_t id;
        int src;
        if (!pull_unit(dl, &src, &id)) return 0;
        if (dl->buf_n == dl->buf_cap) {
            size_t cap = (size_t)dl->buf_cap, cap2 = cap;
            GROW(dl->buf, cap, (size_t)dl->buf_n + 1);
            GROW(dl->buf_skip, cap2, (size_t)dl->buf_n + 1);
            dl->buf_cap = (int64_t)cap;
        }
        dl->buf_skip[dl->buf_n] = 0;
        dl->buf[dl->buf_n++] = id;
    }
    return 1;
}

// nanochat: `while len(doc_buffer) < buffer_size: refill_buffer()`, a refill appending a batch.
static void refill(DataLoader *dl) {
    while (dl->buf_n < dl->cfg.buffer_docs)
        if (!buffer_more(dl)) return;
}

// With fixed_rows: the next window into dl->row; T+1, or 0 when validation data has run out.
// Counted as T tokens used: the window's first token is the last one's target.
static int64_t fill_window(DataLoader *dl) {
    int32_t k;
    int s;
    if (!pull_unit(dl, &s, &k)) return 0;
    const int64_t T = dl->cfg.T;
    const uint16_t *src = dl->tokens + dl->src[s].tok_lo + (int64_t)k * T;
    for (int64_t i = 0; i <= T; i++) dl->row[i] = src[i];
    dl->tokens_used += T;
    dl->src[s].tokens_used += T;
    return T + 1;
}

// Fill dl->row; returns the tokens placed: T+1, or fewer when validation data runs out.
static int64_t fill_row(DataLoader *dl) {
    if (dl->cfg.fixed_rows) return fill_window(dl);
    const int64_t cap = (int64_t)dl->cfg.T + 1;
    int64_t pos = 0;
    // A mixture fills the row from one source's buffered documents (loader.h): the one furthest
    // behind its share of the tokens placed; when it has nothing that may go into the row, the
    // next one. (The best fit over every source would place the sources with the shortest
    // documents first, for as long as the buffer holds them: far from the weights for millions of
    // tokens.) A row of a mixture starts with its source's cropped rests, if any: best fit alone
    // would take a longer whole document first every time, and the rests (which may only start a
    // row) would pile up in the buffer.
    int s = dl->n_src == 1 ? 0 : largest_deficit(dl, 1, 0);
    uint64_t tried = 0;
    while (pos < cap) {
        refill(dl);
        if (dl->buf_n == 0) break;
        int64_t remaining = cap - pos;
        // A kept remainder may only start a row: mid-row, its first token (already scored as the
        // end of an earlier row) would be scored again as the target of another document.
        int64_t best = -1, best_len = 0, shortest = -1, shortest_len = 0;
        for (int rests_only = pos == 0 && dl->n_src > 1; rests_only >= 0 && shortest < 0; rests_only--) {
            for (int64_t i = 0; i < dl->buf_n; i++) {
                if ((pos > 0 || rests_only) && (dl->buf_skip[i] > 0) != rests_only) continue;
                if (dl->n_src > 1 && source_index(dl, dl->buf[i]) != s) continue;
                int64_t len = dl->doc_len[dl->buf[i]] - dl->buf_skip[i];
                if (len <= remaining && len > best_len) { best = i; best_len = len; }
                if (shortest < 0 || len < shortest_len) { shortest = i; shortest_len = len; }
            }
        }
        if (shortest < 0) {  // only remainders are left (of this source): they wait for the next row
            if (dl->n_src == 1) break;
            if ((s = largest_deficit(dl, 1, tried |= 1ULL << s)) >= 0) continue;
            // Nothing of any source may go into the row (its rests wait for the next one): more
            // whole documents are drawn past buffer_docs (training never runs dry).
            buffer_more(dl);
            tried = 0;
            s = largest_deficit(dl, 1, 0);
            continue;
        }
        int64_t pick = best >= 0 ? best : shortest;
        int32_t doc = dl->buf[pick];
        int64_t skip = dl->buf_skip[pick], len = dl->doc_len[doc] - skip, take = len < remaining ? len : remaining;
        const uint16_t *src = dl->tokens + dl->doc_start[doc] + skip;
        for (int64_t k = 0; k < take; k++) dl->row[pos + k] = src[k];
        pos += take;
        dl->tokens_used += take;
        dl->src[s].tokens_used += take;
        // A cropped document keeps its rest buffered, from the last token placed (an input only
        // in the next row, as it was a target here), unless there is nothing left to predict.
        if (take < len && !dl->cfg.discard_crops && len - take + 1 >= 2) {
            dl->buf_skip[pick] = (int32_t)(skip + take - 1);
            continue;
        }
        dl->tokens_cropped += len - take;
        memmove(dl->buf + pick, dl->buf + pick + 1, (size_t)(dl->buf_n - pick - 1) * sizeof *dl->buf);
        memmove(dl->buf_skip + pick, dl->buf_skip + pick + 1, (size_t)(dl->buf_n - pick - 1) * sizeof *dl->buf_skip);
        dl->buf_n--;
    }
    return pos;
}

int loader_next(DataLoader *dl, int32_t *inputs, int32_t *targets) {
    if (!dl || !inputs || !targets) return err_set("loader_next: NULL argument");
    if (!dl->cfg.shuffle && dl->buf_n == 0 && dl->src[0].cursor >= dl->src[0].n_units) {
        dl->rows = 0;
        return 0;
    }
    const int64_t T = dl->cfg.T;
    int rows = 0;
    for (int b = 0; b < dl->cfg.B; b++) {
        int64_t filled = fill_row(dl);
        rows += filled > 0;
        int32_t *in = inputs + (int64_t)b * T, *tg = targets + (int64_t)b * T;
        for (int64_t i = 0; i < T; i++) {
            in[i] = i < filled ? dl->row[i] : dl->bos_id;
            tg[i] = i + 1 < filled ? dl->row[i + 1] : -1;
        }
    }
    dl->rows = rows;
    dl->batches++;
    return 1;
}

int64_t loader_epoch(const DataLoader *dl) { return dl->src[0].epoch; }

int64_t loader_tokens_consumed(const DataLoader *dl) { return dl->tokens_used + dl->tokens_cropped; }

LoaderSourceStats loader_source_stats(const DataLoader *dl, int s) {
    const LoaderStream *st = &dl->src[s];
    return (LoaderSourceStats){.name = st->name, .share = (double)st->weight / (double)dl->weight_sum,
                               .n_tokens = st->n_tokens, .n_docs = st->n_docs, .epoch = st->epoch,
                               .tokens_pulled = st->tokens_pulled, .tokens_used = st->tokens_used};
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

#define STATE_MAGIC 0x5453444c52544e46LL  // "FNTRLDST" as little-endian bytes
#define STATE_VERSION 4
// Counters (epoch, batches, tokens) beyond this are corrupt: no run gets near it, and the loader
// adds to them without overflowing.
#define COUNTER_MAX (1LL << 62)

enum {
    S_MAGIC, S_VERSION, S_WORLD, S_RANK, S_SEED, S_SHUFFLE, S_DATA_HASH, S_N_DOCS,
    S_EPOCH, S_CURSOR, S_BATCHES, S_TOKENS_USED, S_TOKENS_CROPPED, S_BUF_N,  // epoch, cursor: source 0's
    S_DISCARD,
    S_FIELDS_V2,  // version 2 ends here; version 3 adds the data order
    S_FIXED_ROWS = S_FIELDS_V2, S_SAME_ORDER, S_N_UNITS,
    S_FIELDS_V3,  // version 3 ends here (then the buffer); version 4 adds the sources
    S_N_SOURCES = S_FIELDS_V3,
    S_FIELDS  // then S_N_SOURCES blocks of SRC_FIELDS, then S_BUF_N (document id, tokens consumed) pairs
};
enum { SRC_N_DOCS, SRC_N_UNITS, SRC_WEIGHT, SRC_EPOCH, SRC_CURSOR, SRC_PULLED, SRC_USED, SRC_FIELDS };

static void put64(unsigned char *p, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(u >> (8 * i));
}

static int64_t get64(const unsigned char *p) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)p[i] << (8 * i);
    return (int64_t)u;
}

// The int64s before the buffer in a state of this loader.
static int64_t head_fields(const DataLoader *dl) { return S_FIELDS + (int64_t)SRC_FIELDS * dl->n_src; }

size_t loader_state_size(const DataLoader *dl) { return (size_t)(head_fields(dl) + 2 * dl->buf_n) * 8; }

size_t loader_save_state(const DataLoader *dl, void *buf) {
    unsigned char *p = buf;
    int64_t f[S_FIELDS] = {
        [S_MAGIC] = STATE_MAGIC, [S_VERSION] = STATE_VERSION, [S_WORLD] = dl->cfg.world, [S_RANK] = dl->cfg.rank,
        [S_SEED] = (int64_t)dl->cfg.seed, [S_SHUFFLE] = dl->cfg.shuffle, [S_DATA_HASH] = (int64_t)dl->data_hash,
        [S_N_DOCS] = dl->n_docs, [S_EPOCH] = dl->src[0].epoch, [S_CURSOR] = dl->src[0].cursor,
        [S_BATCHES] = dl->batches, [S_TOKENS_USED] = dl->tokens_used, [S_TOKENS_CROPPED] = dl->tokens_cropped,
        [S_BUF_N] = dl->buf_n, [S_DISCARD] = dl->cfg.discard_crops, [S_FIXED_ROWS] = dl->cfg.fixed_rows,
        [S_SAME_ORDER] = dl->cfg.same_order, [S_N_UNITS] = dl->n_units, [S_N_SOURCES] = dl->n_src,
    };
    for (int i = 0; i < S_FIELDS; i++) put64(p + 8 * i, f[i]);
    for (int s = 0; s < dl->n_src; s++) {
        const LoaderStream *st = &dl->src[s];
        int64_t g[SRC_FIELDS] = {
            [SRC_N_DOCS] = st->n_docs, [SRC_N_UNITS] = st->n_units, [SRC_WEIGHT] = st->weight,
            [SRC_EPOCH] = st->epoch, [SRC_CURSOR] = st->cursor, [SRC_PULLED] = st->tokens_pulled,
            [SRC_USED] = st->tokens_used,
        };
        for (int i = 0; i < SRC_FIELDS; i++) put64(p + 8 * (S_FIELDS + SRC_FIELDS * s + i), g[i]);
    }
    const int64_t head = head_fields(dl);
    for (int64_t i = 0; i < dl->buf_n; i++) {
        put64(p + 8 * (head + 2 * i), dl->buf[i]);
        put64(p + 8 * (head + 2 * i + 1), dl->buf_skip[i]);
    }
    return loader_state_size(dl);
}

// Whether a stream position is one this loader's stream st can be at: epoch >= 1 (1 in
// validation), cursor = rank + k*world for k in [0, rank_units] (rank_units: the end of the
// epoch's share).
static int position_ok(const DataLoader *dl, const LoaderStream *st, int64_t epoch, int64_t cur) {
    return epoch >= 1 && epoch <= COUNTER_MAX && (dl->cfg.shuffle || epoch == 1) && cur >= dl->cfg.rank &&
           (cur - dl->cfg.rank) % dl->cfg.world == 0 && (cur - dl->cfg.rank) / dl->cfg.world <= st->rank_units;
}

int loader_load_state(DataLoader *dl, const void *buf, size_t len) {
    const unsigned char *p = buf;
    if (len < (size_t)S_FIELDS_V2 * 8)
        return err_set("data loader state: %zu bytes, too short (the header alone is %d)", len, S_FIELDS_V2 * 8);
    int64_t f[S_FIELDS];
    for (int i = 0; i < S_FIELDS_V2; i++) f[i] = get64(p + 8 * i);
    if (f[S_MAGIC] != STATE_MAGIC) return err_set("data loader state: bad magic; not a data loader state");
    if (f[S_VERSION] < 2 || f[S_VERSION] > STATE_VERSION)
        return err_set("data loader state: version %lld, this build reads versions 2 to %d", (long long)f[S_VERSION],
                       STATE_VERSION);
    // Version 2 had no data order (documents, a new order each epoch); versions 2 and 3 had one
    // source, whose tokens pulled were not counted (a single source never reads them).
    const int version = (int)f[S_VERSION];
    const int fields = version == 2 ? S_FIELDS_V2 : version == 3 ? S_FIELDS_V3 : S_FIELDS;
    if (len < (size_t)fields * 8)
        return err_set("data loader state: %zu bytes, too short (the header alone is %d)", len, fields * 8);
    for (int i = S_FIELDS_V2; i < fields; i++) f[i] = get64(p + 8 * i);
    if (version == 2) f[S_FIXED_ROWS] = 0, f[S_SAME_ORDER] = 0, f[S_N_UNITS] = dl->n_docs;
    if (version < 4) f[S_N_SOURCES] = 1;
    if (f[S_N_SOURCES] != dl->n_src)
        return err_set("data loader state: saved by a loader of %lld source%s%s, this one mixes %d: a state resumes only "
                       "the same mixture of sources", (long long)f[S_N_SOURCES], f[S_N_SOURCES] == 1 ? "" : "s",
                       version < 4 ? " (a version 2 or 3 state, from before mixtures)" : "", dl->n_src);
    if (f[S_WORLD] != dl->cfg.world || f[S_RANK] != dl->cfg.rank)
        return err_set("data loader state: saved by rank %lld of %lld, this loader is rank %d of %d",
                       (long long)f[S_RANK], (long long)f[S_WORLD], dl->cfg.rank, dl->cfg.world);
    if (f[S_SHUFFLE] != dl->cfg.shuffle)
        return err_set("data loader state: saved in %s mode, this loader is in %s mode",
                       f[S_SHUFFLE] ? "training (shuffle)" : "validation", dl->cfg.shuffle ? "training (shuffle)" : "validation");
    if ((uint64_t)f[S_SEED] != dl->cfg.seed)
        return err_set("data loader state: saved with seed %llu, this loader has seed %llu",
                       (unsigned long long)f[S_SEED], (unsigned long long)dl->cfg.seed);
    if (f[S_N_DOCS] != dl->n_docs || (uint64_t)f[S_DATA_HASH] != dl->data_hash)
        return err_set("data loader state: saved for different data (%lld documents, hash %016llx; these shards: "
                       "%lld documents, hash %016llx)", (long long)f[S_N_DOCS], (unsigned long long)f[S_DATA_HASH],
                       (long long)dl->n_docs, (unsigned long long)dl->data_hash);
    const int64_t head = version < 4 ? fields : head_fields(dl);
    int64_t buf_n = f[S_BUF_N];
    if ((size_t)head * 8 > len || buf_n < 0 || buf_n > (int64_t)((len - (size_t)head * 8) / 16) ||
        len != (size_t)(head + 2 * buf_n) * 8)
        return err_set("data loader state: %zu bytes, which does not match its count of %lld buffered documents "
                       "(%lld bytes + 16 a document)", len, (long long)buf_n, (long long)head * 8);
    if (f[S_DISCARD] != dl->cfg.discard_crops)
        return err_set("data loader state: saved with discard_crops %lld, this loader has %d", (long long)f[S_DISCARD],
                       dl->cfg.discard_crops);
    if (f[S_FIXED_ROWS] != dl->cfg.fixed_rows || f[S_SAME_ORDER] != dl->cfg.same_order)
        return err_set("data loader state: saved with fixed_rows %lld, same_order %lld; this loader has %d, %d",
                       (long long)f[S_FIXED_ROWS], (long long)f[S_SAME_ORDER], dl->cfg.fixed_rows, dl->cfg.same_order);
    if (f[S_N_UNITS] != dl->n_units)
        return err_set("data loader state: saved with %lld rows per epoch, this loader cuts %lld (a different "
                       "sequence length?)", (long long)f[S_N_UNITS], (long long)dl->n_units);
    if (dl->cfg.fixed_rows && buf_n != 0)
        return err_set("data loader state: %lld buffered documents in a fixed-rows state", (long long)buf_n);
    if (!position_ok(dl, &dl->src[0], f[S_EPOCH], f[S_CURSOR]) || f[S_BATCHES] < 0 || f[S_TOKENS_USED] < 0 ||
        f[S_TOKENS_CROPPED] < 0 || f[S_BATCHES] > COUNTER_MAX || f[S_TOKENS_USED] > COUNTER_MAX ||
        f[S_TOKENS_CROPPED] > COUNTER_MAX)
        return err_set("data loader state: corrupt stream position (epoch %lld, cursor %lld)", (long long)f[S_EPOCH],
                       (long long)f[S_CURSOR]);
    // The sources: each the same as this loader's (documents, units, weight), at a position its
    // stream can be at. Versions 2 and 3: the one source, at the header's position.
    int64_t g[LOADER_MAX_SOURCES][SRC_FIELDS];
    double saved_sum = 0;  // of the saved weights, for the shares in messages
    for (int s = 0; s < dl->n_src; s++) {
        const LoaderStream *st = &dl->src[s];
        if (version < 4) {
            g[s][SRC_N_DOCS] = st->n_docs, g[s][SRC_N_UNITS] = st->n_units, g[s][SRC_WEIGHT] = st->weight;
            g[s][SRC_EPOCH] = f[S_EPOCH], g[s][SRC_CURSOR] = f[S_CURSOR];
            g[s][SRC_PULLED] = f[S_TOKENS_USED] + f[S_TOKENS_CROPPED], g[s][SRC_USED] = f[S_TOKENS_USED];
        } else {
            for (int i = 0; i < SRC_FIELDS; i++) g[s][i] = get64(p + 8 * (S_FIELDS + SRC_FIELDS * s + i));
        }
        saved_sum += (double)g[s][SRC_WEIGHT];
    }
    for (int s = 0; s < dl->n_src; s++) {
        const LoaderStream *st = &dl->src[s];
        if (g[s][SRC_N_DOCS] != st->n_docs || g[s][SRC_N_UNITS] != st->n_units || g[s][SRC_WEIGHT] != st->weight)
            return err_set("data loader state: saved for another mixture: its source %d had %lld documents (%lld units "
                           "an epoch) and a share of %.6g of the tokens; this loader's source %d (%s) has %lld (%lld) "
                           "and %.6g. A state resumes only the same sources with the same weights", s,
                           (long long)g[s][SRC_N_DOCS], (long long)g[s][SRC_N_UNITS],
                           saved_sum > 0 ? (double)g[s][SRC_WEIGHT] / saved_sum : 0.0, s, st->name,
                           (long long)st->n_docs, (long long)st->n_units, (double)st->weight / (double)dl->weight_sum);
        if (!position_ok(dl, st, g[s][SRC_EPOCH], g[s][SRC_CURSOR]) || g[s][SRC_PULLED] < 0 ||
            g[s][SRC_PULLED] > COUNTER_MAX || g[s][SRC_USED] < 0 || g[s][SRC_USED] > COUNTER_MAX ||
            (s == 0 && (g[s][SRC_EPOCH] != f[S_EPOCH] || g[s][SRC_CURSOR] != f[S_CURSOR])))
            return err_set("data loader state: corrupt stream position of source %d (epoch %lld, cursor %lld)", s,
                           (long long)g[s][SRC_EPOCH], (long long)g[s][SRC_CURSOR]);
    }
    for (int64_t i = 0; i < buf_n; i++) {
        int64_t id = get64(p + 8 * (head + 2 * i)), skip = get64(p + 8 * (head + 2 * i + 1));
        if (id < 0 || id >= dl->n_docs || skip < 0 || (skip > 0 && skip > dl->doc_len[id] - 2))
            return err_set("data loader state: corrupt buffer: document %lld of %lld documents", (long long)id,
                           (long long)dl->n_docs);
    }
    // Valid: apply.
    if (buf_n > dl->buf_cap) {
        dl->buf = xrealloc(dl->buf, (size_t)buf_n * sizeof *dl->buf);
        dl->buf_skip = xrealloc(dl->buf_skip, (size_t)buf_n * sizeof *dl->buf_skip);
        dl->buf_cap = buf_n;
    }
    for (int64_t i = 0; i < buf_n; i++) {
        dl->buf[i] = (int32_t)get64(p + 8 * (head + 2 * i));
        dl->buf_skip[i] = (int32_t)get64(p + 8 * (head + 2 * i + 1));
    }
    dl->buf_n = buf_n;
    for (int s = 0; s < dl->n_src; s++) {
        LoaderStream *st = &dl->src[s];
        start_epoch(dl, st, g[s][SRC_EPOCH]);
        st->cursor = g[s][SRC_CURSOR];
        st->tokens_pulled = g[s][SRC_PULLED];
        st->tokens_used = g[s][SRC_USED];
    }
    dl->batches = f[S_BATCHES];
    dl->tokens_used = f[S_TOKENS_USED];
    dl->tokens_cropped = f[S_TOKENS_CROPPED];
    dl->rows = 0;
    return 0;
}
