// tests/data/test_loader_mix.c — a loader over a mixture of sources (loader_open_mix): the token
// shares follow the weights (of the tokens pulled and of those placed into rows), each source's
// documents are each pulled once per epoch of that source and its epochs advance at the rate its
// share and size give, one source is exactly the stream of the loader before mixtures (pinned),
// ranks take disjoint documents, a saved state resumes the identical batches (mid-stream and
// across a source's epoch boundary, documents and fixed rows), a version-3 state loads into one
// source, a state of another mixture is refused, and fixed rows are cut per source.
//
// The token data is self-describing: a content token of source s at offset i of that source's
// tokens is s * SPAN + i + 1; <|bos|> starts every document. Any token then names its source and
// place, so every row can be traced back to the documents (or windows) it came from.
#include <math.h>

#include "test_util.h"

#include "data/loader.h"
#include "data/shard.h"

#define BOS 65000
#define SPAN 20000  // content tokens of one source: offsets below SPAN - 1

typedef struct {
    uint16_t *t;
    int64_t n;
} Data;

// ---- pinned: BEGIN (the code that computed the pinned hashes, on the loader before mixtures) ----
static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

// Source s: n tokens in documents of lo..hi tokens (the last one shorter), self-describing.
static Data make_source(int s, int64_t n, int lo, int hi, uint64_t seed) {
    Data d = {malloc((size_t)n * sizeof(uint16_t)), n};
    int64_t next_bos = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == next_bos) {
            d.t[i] = BOS;
            next_bos += lo + (int64_t)(lcg(&seed) % (uint64_t)(hi - lo + 1));
        } else {
            d.t[i] = (uint16_t)(s * SPAN + i + 1);
        }
    }
    return d;
}

// FNV-1a of the next `batches` batches' inputs and targets.
static uint64_t stream_hash(DataLoader *dl, int batches) {
    const int n = dl->cfg.B * dl->cfg.T;
    int32_t *in = malloc((size_t)n * sizeof *in), *tg = malloc((size_t)n * sizeof *tg);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int b = 0; b < batches; b++) {
        if (loader_next(dl, in, tg) != 1) abort();
        const unsigned char *p = (const unsigned char *)in, *q = (const unsigned char *)tg;
        for (size_t k = 0; k < (size_t)n * sizeof *in; k++) h = (h ^ p[k]) * 0x100000001b3ULL;
        for (size_t k = 0; k < (size_t)n * sizeof *tg; k++) h = (h ^ q[k]) * 0x100000001b3ULL;
    }
    free(in), free(tg);
    return h;
}

// The configs whose streams are pinned: documents (keep), same order with crops discarded, fixed
// rows, and rank 1 of 3.
static LoaderConfig pinned_config(int which) {
    LoaderConfig c = loader_defaults();
    c.B = 2, c.T = 24, c.seed = 11, c.buffer_docs = 16, c.refill_docs = 4;
    if (which == 1) c.same_order = 1, c.discard_crops = 1, c.buffer_docs = 8, c.refill_docs = 3;
    if (which == 2) c.fixed_rows = 1;
    if (which == 3) c.rank = 1, c.world = 3;
    return c;
}
// ---- pinned: END ----

static DataLoader *open_mix(const Data *d, const double *w, int n, const LoaderConfig *c) {
    LoaderSource src[8];
    char names[8][24];
    for (int s = 0; s < n; s++) {
        snprintf(names[s], sizeof names[s], "source%d", s);
        src[s] = (LoaderSource){.name = names[s], .tokens = d[s].t, .n_tokens = (size_t)d[s].n, .weight = w ? w[s] : 0};
    }
    DataLoader *dl = loader_open_mix(src, n, BOS, c);
    if (!dl) print_error("loader_open_mix: %s\n", err_msg());
    assert_non_null(dl);
    return dl;
}

static LoaderConfig mix_config(int B, int T) {
    LoaderConfig c = loader_defaults();
    c.B = B, c.T = T, c.seed = 77, c.buffer_docs = 64, c.refill_docs = 16;
    return c;
}

// The three sources most cases mix: medium documents, short ones, long ones.
static void three_sources(Data *d) {
    d[0] = make_source(0, 6000, 20, 120, 1);
    d[1] = make_source(1, 3000, 3, 15, 2);
    d[2] = make_source(2, 9000, 100, 400, 3);
}

static void free_data(Data *d, int n) {
    for (int s = 0; s < n; s++) free(d[s].t);
}

// One source is the stream of the loader before mixtures: its hashes, computed with that loader
// (pinned), for loader_open_tokens, loader_open_mix of one source (any weight) and loader_open of
// the same tokens in a shard.
static void test_one_source_is_todays_stream(void **state) {
    (void)state;
    static const uint64_t PINNED[4] = {0x7ff4bf6aeb34f233ULL, 0x301cbce963902cd7ULL, 0xd6b45c57b3d49a9dULL,
                                       0xfa9717566178542dULL};
    Data d = make_source(0, 3000, 3, 60, 5);
    char *dir = test_tmpdir("loader-mix");
    char *path = path_join(dir, "train_000000.bin");
    ShardWriter w;
    assert_int_equal(shard_writer_open(&w, path), 0);
    assert_int_equal(shard_writer_append(&w, d.t, (size_t)d.n), 0);
    assert_int_equal(shard_writer_close(&w), 0);
    for (int which = 0; which < 4; which++) {
        LoaderConfig c = pinned_config(which);
        DataLoader *a = loader_open_tokens(d.t, (size_t)d.n, "pinned", BOS, &c);
        const double one = 0.25;  // a lone source's weight changes nothing
        DataLoader *b = open_mix(&d, &one, 1, &c);
        const char *paths[] = {path};
        DataLoader *f = loader_open(paths, 1, BOS, &c);
        assert_non_null(a), assert_non_null(f);
        uint64_t ha = stream_hash(a, 60), hb = stream_hash(b, 60), hf = stream_hash(f, 60);
        if (ha != PINNED[which]) print_error("config %d: hash %016llx, pinned %016llx\n", which, (unsigned long long)ha,
                                             (unsigned long long)PINNED[which]);
        assert_true(ha == PINNED[which]);
        assert_true(hb == ha && hf == ha);
        loader_free(a), loader_free(b), loader_free(f);
    }
    unlink(path);
    rmdir(dir);
    free(path), free(dir);
    free(d.t);
}

// The source and offset of a content token.
static int source_of_token(int32_t v) { return (v - 1) / SPAN; }
static int64_t offset_of_token(int32_t v) { return (v - 1) % SPAN; }

// The document (global id) whose <|bos|> is at offset `at` of source s.
static int64_t doc_at(const DataLoader *dl, int s, int64_t at) {
    int64_t g = dl->src[s].tok_lo + at, lo = 0, hi = dl->n_docs - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (dl->doc_start[mid] < g) lo = mid + 1;
        else hi = mid;
    }
    assert_int_equal(dl->doc_start[lo], g);
    return lo;
}

// Adds each input token's source to counts (a <|bos|> is its document's: the target after it).
static void count_sources(const int32_t *in, const int32_t *tg, int n, int64_t *counts) {
    for (int i = 0; i < n; i++) counts[source_of_token(in[i] == BOS ? tg[i] : in[i])]++;
}

// Counts, per document, the times it was started in a batch's inputs (its <|bos|> at an input
// position: the target there is its first content token).
static void count_starts(const DataLoader *dl, const int32_t *in, const int32_t *tg, int n, int *starts) {
    for (int i = 0; i < n; i++)
        if (in[i] == BOS) {
            int s = source_of_token(tg[i]);
            assert_true(s >= 0 && s < dl->n_src);
            starts[doc_at(dl, s, offset_of_token(tg[i]) - 1)]++;
        }
}

// Each source's documents were pulled exactly as its epoch and cursor say: those at this rank's
// positions of the current epoch before the cursor once more than the others, which were pulled
// (epoch - 1) times; pulled = started in a row, or waiting whole in the buffer. And its tokens
// pulled are exactly those documents' lengths. Returns the documents this rank pulled.
static void check_pulls(const DataLoader *dl, const int *starts, int *pulled_out) {
    int *pulled = calloc((size_t)dl->n_docs, sizeof *pulled), *want = calloc((size_t)dl->n_docs, sizeof *want);
    for (int64_t d = 0; d < dl->n_docs; d++) pulled[d] = starts[d];
    for (int64_t i = 0; i < dl->buf_n; i++)
        if (dl->buf_skip[i] == 0) pulled[dl->buf[i]]++;
    for (int s = 0; s < dl->n_src; s++) {
        const LoaderStream *st = &dl->src[s];
        LoaderSourceStats ss = loader_source_stats(dl, s);
        assert_int_equal(ss.epoch, st->epoch);
        int64_t tokens = 0, rank = dl->cfg.rank, W = dl->cfg.world;
        for (int64_t p = rank; p < st->n_units; p += W) want[st->doc_lo + st->perm[p]] += (int)st->epoch - 1;
        for (int64_t p = rank; p < st->cursor; p += W) want[st->doc_lo + st->perm[p]]++;
        for (int64_t d = st->doc_lo; d < st->doc_lo + st->n_docs; d++) {
            if (pulled[d] != want[d])
                print_error("source %d, document %lld: pulled %d times, its epoch %lld and cursor say %d\n", s,
                            (long long)(d - st->doc_lo), pulled[d], (long long)st->epoch, want[d]);
            assert_int_equal(pulled[d], want[d]);
            tokens += (int64_t)want[d] * dl->doc_len[d];
        }
        assert_int_equal(ss.tokens_pulled, tokens);
    }
    if (pulled_out) memcpy(pulled_out, pulled, (size_t)dl->n_docs * sizeof *pulled);
    free(pulled), free(want);
}

// Many batches: the shares of the tokens pulled stay within the deficit bound (-L .. (S-1) L of
// w_s P, L the longest document) at every batch and end within 0.5% of the weights; the shares
// of the tokens placed into rows end within 1% too; each document was pulled once per epoch of
// its source, and each source's epochs advanced at the rate w_s P / its tokens.
static void test_shares_and_epochs(void **state) {
    (void)state;
    enum { B = 4, T = 32, BATCHES = 3000 };
    Data d[3];
    three_sources(d);
    const double w[3] = {0.5, 0.3, 0.2};
    LoaderConfig c = mix_config(B, T);
    DataLoader *dl = open_mix(d, w, 3, &c);
    int *starts = calloc((size_t)dl->n_docs, sizeof *starts);
    int32_t in[B * T], tg[B * T];
    int64_t L = 0;
    for (int64_t k = 0; k < dl->n_docs; k++) L = dl->doc_len[k] > L ? dl->doc_len[k] : L;
    int64_t max_buf = 0, in_rows[3] = {0};
    for (int b = 0; b < BATCHES; b++) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        count_starts(dl, in, tg, B * T, starts);
        count_sources(in, tg, B * T, in_rows);
        if (b == 19)  // the rows' tokens follow the weights from the start: within a row or two of each
            for (int s = 0; s < 3; s++) assert_true(fabs((double)in_rows[s] / (20 * B * T) - w[s]) < 2.0 * (T + 1) / (20 * B * T));
        for (int i = 0; i < B * T; i++) assert_true(tg[i] >= 0);  // every row full
        max_buf = dl->buf_n > max_buf ? dl->buf_n : max_buf;
        int64_t P = 0;
        for (int s = 0; s < 3; s++) P += dl->src[s].tokens_pulled;
        for (int s = 0; s < 3; s++) {
            double deficit = (double)dl->src[s].weight / (double)dl->weight_sum * (double)P - (double)dl->src[s].tokens_pulled;
            if (!(deficit >= -L - 1e-6 && deficit <= 2 * L + 1e-6))
                print_error("batch %d, source %d: deficit %.1f tokens, outside [-%lld, %lld]\n", b, s, deficit,
                            (long long)L, (long long)(2 * L));
            assert_true(deficit >= -L - 1e-6 && deficit <= 2 * L + 1e-6);
        }
    }
    // a row of a mixture starts with its source's rests: they do not pile up in the buffer
    print_message("buffer: at most %lld documents (buffer_docs %d)\n", (long long)max_buf, c.buffer_docs);
    assert_true(max_buf < 2 * c.buffer_docs);
    int64_t P = 0, U = 0;
    for (int s = 0; s < 3; s++) P += dl->src[s].tokens_pulled, U += dl->src[s].tokens_used;
    assert_int_equal(U, dl->tokens_used);
    for (int s = 0; s < 3; s++) {
        LoaderSourceStats ss = loader_source_stats(dl, s);
        double pulled = (double)ss.tokens_pulled / P, placed = (double)ss.tokens_used / U;
        double rows = (double)in_rows[s] / ((double)BATCHES * B * T);  // read from the rows themselves
        print_message("source %d: weight %.2f, pulled %.4f, placed %.4f (in the rows %.4f), epoch %lld (%lld tokens)\n", s,
                      w[s], pulled, placed, rows, (long long)ss.epoch, (long long)ss.n_tokens);
        assert_true(fabs(rows - w[s]) < 0.002);
        assert_true(fabs(ss.share - w[s]) < 1e-9);
        assert_true(fabs(pulled - w[s]) < 0.005);
        assert_true(fabs(placed - w[s]) < 0.01);
        // its epoch: the one w_s P / n_s tokens reach (the exact count is check_pulls')
        double e = w[s] * (double)P / (double)ss.n_tokens;
        assert_true(ss.epoch >= 3 && fabs((double)ss.epoch - e) < 1.5);
    }
    check_pulls(dl, starts, NULL);
    free(starts);
    loader_free(dl);

    // a buffer of one document: a row whose source has nothing that fits goes on from the others,
    // or from documents drawn past the buffer's size, and is never left short
    LoaderConfig tiny = c;
    tiny.buffer_docs = 1, tiny.refill_docs = 1;
    dl = open_mix(d, w, 3, &tiny);
    for (int b = 0; b < BATCHES / 3; b++) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        for (int i = 0; i < B * T; i++) assert_true(tg[i] >= 0);
    }
    assert_true(dl->buf_n < 8);
    loader_free(dl);

    // natural shares: each source in proportion to its tokens
    dl = open_mix(d, NULL, 3, &c);
    for (int b = 0; b < BATCHES / 3; b++) assert_int_equal(loader_next(dl, in, tg), 1);
    P = 0, U = 0;
    for (int s = 0; s < 3; s++) P += dl->src[s].tokens_pulled, U += dl->src[s].tokens_used;
    for (int s = 0; s < 3; s++) {
        double natural = (double)d[s].n / 18000.0;
        assert_true(fabs(loader_source_stats(dl, s).share - natural) < 1e-12);
        assert_true(fabs((double)dl->src[s].tokens_pulled / P - natural) < 0.01);
        assert_true(fabs((double)dl->src[s].tokens_used / U - natural) < 0.02);
    }
    loader_free(dl);
    free_data(d, 3);
}

// The same seed gives the same mixture stream, another seed another; each source has an order of
// its own (two sources of the same data are not shuffled alike).
static void test_determinism_and_source_seeds(void **state) {
    (void)state;
    Data d[3];
    three_sources(d);
    const double w[3] = {0.4, 0.4, 0.2};
    LoaderConfig c = mix_config(2, 16), c2 = c;
    c2.seed++;
    DataLoader *a = open_mix(d, w, 3, &c), *b = open_mix(d, w, 3, &c), *x = open_mix(d, w, 3, &c2);
    assert_true(stream_hash(a, 200) == stream_hash(b, 200));
    loader_reset(a);
    assert_true(stream_hash(a, 200) != stream_hash(x, 200));
    loader_free(a), loader_free(b), loader_free(x);
    Data same[2] = {d[0], d[0]};
    DataLoader *dl = open_mix(same, NULL, 2, &c);
    assert_int_equal(dl->src[0].seed, c.seed);
    assert_true(memcmp(dl->src[0].perm, dl->src[1].perm, (size_t)dl->src[0].n_units * sizeof(int32_t)) != 0);
    loader_free(dl);
    free_data(d, 3);
}

// Ranks: each takes the positions rank, rank+W, ... of every source's epoch; within each source's
// first epoch no document goes to two ranks.
static void test_ranks_disjoint(void **state) {
    (void)state;
    enum { R = 3, B = 2, T = 32, BATCHES = 40 };
    Data d[3];
    three_sources(d);
    const double w[3] = {0.5, 0.3, 0.2};
    int *owner = NULL;
    int64_t n_docs = 0;
    for (int r = 0; r < R; r++) {
        LoaderConfig c = mix_config(B, T);
        c.rank = r, c.world = R, c.buffer_docs = 8, c.refill_docs = 4;
        DataLoader *dl = open_mix(d, w, 3, &c);
        if (!owner) n_docs = dl->n_docs, owner = malloc((size_t)n_docs * sizeof *owner), memset(owner, 0xff, (size_t)n_docs * sizeof *owner);
        int *starts = calloc((size_t)n_docs, sizeof *starts), *pulled = calloc((size_t)n_docs, sizeof *pulled);
        int32_t in[B * T], tg[B * T];
        for (int b = 0; b < BATCHES; b++) {
            assert_int_equal(loader_next(dl, in, tg), 1);
            count_starts(dl, in, tg, B * T, starts);
        }
        for (int s = 0; s < 3; s++) assert_int_equal(dl->src[s].epoch, 1);  // still the first epoch of each
        check_pulls(dl, starts, pulled);
        int took = 0;
        for (int64_t k = 0; k < n_docs; k++) {
            if (!pulled[k]) continue;
            assert_int_equal(pulled[k], 1);
            if (owner[k] >= 0) print_error("document %lld pulled by ranks %d and %d\n", (long long)k, owner[k], r);
            assert_int_equal(owner[k], -1);
            owner[k] = r, took++;
        }
        assert_true(took > 10);
        free(starts), free(pulled);
        loader_free(dl);
    }
    free(owner);
    free_data(d, 3);
}

// The batch at which source s first reaches epoch e, running from a fresh loader.
static int batch_reaching_epoch(const Data *d, const double *w, int n, const LoaderConfig *c, int s, int64_t e) {
    DataLoader *dl = open_mix(d, w, n, c);
    int32_t *in = malloc((size_t)c->B * c->T * sizeof *in), *tg = malloc((size_t)c->B * c->T * sizeof *tg);
    int b = 0;
    while (dl->src[s].epoch < e) assert_int_equal(loader_next(dl, in, tg), 1), b++;
    free(in), free(tg);
    loader_free(dl);
    return b;
}

// Saved mid-stream, just before a source's epoch ends and just after, for documents and fixed rows:
// a loader opened afresh and given the state produces the identical batches and counters.
static void test_save_load_resumes(void **state) {
    (void)state;
    enum { B = 3, T = 20, AFTER = 12 };
    Data d[3];
    three_sources(d);
    const double w[3] = {0.5, 0.3, 0.2};
    for (int rows = 0; rows <= 1; rows++) {
        LoaderConfig c = mix_config(B, T);
        c.fixed_rows = rows;
        int edge = batch_reaching_epoch(d, w, 3, &c, 1, 2);  // source 1 starts its second epoch here
        const int at[] = {7, edge - 3, edge, edge + 2};
        int crossed = 0;
        for (int k = 0; k < 4; k++) {
            DataLoader *dl = open_mix(d, w, 3, &c);
            int32_t in[AFTER * B * T], tg[AFTER * B * T], in2[AFTER * B * T], tg2[AFTER * B * T];
            for (int b = 0; b < at[k]; b++) assert_int_equal(loader_next(dl, in, tg), 1);
            size_t len = loader_state_size(dl);
            unsigned char *st = malloc(len);
            assert_int_equal(loader_save_state(dl, st), len);
            int64_t e0 = dl->src[1].epoch;
            for (int b = 0; b < AFTER; b++) assert_int_equal(loader_next(dl, in + b * B * T, tg + b * B * T), 1);
            crossed += dl->src[1].epoch != e0;
            DataLoader *back = open_mix(d, w, 3, &c);
            assert_int_equal(loader_load_state(back, st, len), 0);
            for (int b = 0; b < AFTER; b++) assert_int_equal(loader_next(back, in2 + b * B * T, tg2 + b * B * T), 1);
            assert_memory_equal(in, in2, sizeof in);
            assert_memory_equal(tg, tg2, sizeof tg);
            for (int s = 0; s < 3; s++) {
                LoaderSourceStats x = loader_source_stats(dl, s), y = loader_source_stats(back, s);
                assert_int_equal(x.epoch, y.epoch);
                assert_int_equal(x.tokens_pulled, y.tokens_pulled);
                assert_int_equal(x.tokens_used, y.tokens_used);
            }
            assert_int_equal(loader_tokens_consumed(dl), loader_tokens_consumed(back));
            free(st);
            loader_free(dl), loader_free(back);
        }
        assert_true(crossed >= 1);  // at least one resume ran across source 1's epoch boundary
    }
    free_data(d, 3);
}

// Version 3 (one source, before mixtures): loads into a loader of one source and resumes it; a
// mixture refuses it. A state of another mixture is refused: other weights, another number of
// sources, another source's data, the sources in another order.
static void test_state_versions_and_mismatches(void **state) {
    (void)state;
    enum { B = 2, T = 16, V4_HEAD = 19 + 7, V3_FIELDS = 18 };
    Data d[3];
    three_sources(d);
    LoaderConfig c = mix_config(B, T);
    int32_t in[8 * B * T], tg[8 * B * T], in2[8 * B * T], tg2[8 * B * T];
    // v3 from a one-source v4 state: the source count and block cut out, version 3
    DataLoader *one = open_mix(d, NULL, 1, &c);
    for (int b = 0; b < 30; b++) assert_int_equal(loader_next(one, in, tg), 1);
    size_t len = loader_state_size(one);
    assert_int_equal(len, (size_t)(V4_HEAD + 2 * one->buf_n) * 8);
    unsigned char *st = malloc(len);
    loader_save_state(one, st);
    size_t len3 = len - (V4_HEAD - V3_FIELDS) * 8;
    unsigned char *v3 = malloc(len3);
    memcpy(v3, st, V3_FIELDS * 8);
    memcpy(v3 + V3_FIELDS * 8, st + V4_HEAD * 8, len - V4_HEAD * 8);
    v3[8] = 3;
    for (int b = 0; b < 8; b++) assert_int_equal(loader_next(one, in + b * B * T, tg + b * B * T), 1);
    DataLoader *back = open_mix(d, NULL, 1, &c);
    assert_int_equal(loader_load_state(back, v3, len3), 0);
    for (int b = 0; b < 8; b++) assert_int_equal(loader_next(back, in2 + b * B * T, tg2 + b * B * T), 1);
    assert_memory_equal(in, in2, sizeof in);
    assert_memory_equal(tg, tg2, sizeof tg);
    loader_free(back);
    const double w2[2] = {0.5, 0.5};
    DataLoader *two = open_mix(d, w2, 2, &c);
    assert_int_equal(loader_load_state(two, v3, len3), -1);
    assert_error_contains("a version 2 or 3 state");
    loader_free(two);
    loader_free(one);
    free(st), free(v3);

    // a mixture's state against other mixtures
    const double w[3] = {0.5, 0.3, 0.2}, other_w[3] = {0.4, 0.4, 0.2};
    DataLoader *dl = open_mix(d, w, 3, &c);
    for (int b = 0; b < 50; b++) assert_int_equal(loader_next(dl, in, tg), 1);
    len = loader_state_size(dl);
    assert_int_equal(len, (size_t)(19 + 3 * 7 + 2 * dl->buf_n) * 8);
    st = malloc(len);
    loader_save_state(dl, st);
    DataLoader *x = open_mix(d, other_w, 3, &c);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("another mixture");
    assert_error_contains("source 0 (source0)");
    loader_free(x);
    x = open_mix(d, w2, 2, &c);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("saved by a loader of 3 sources, this one mixes 2");
    loader_free(x);
    Data changed[3] = {d[0], make_source(1, 3000, 3, 16, 9), d[2]};
    x = open_mix(changed, w, 3, &c);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("different data");
    loader_free(x);
    free(changed[1].t);
    Data swapped[3] = {d[1], d[0], d[2]};
    const double sw[3] = {0.3, 0.5, 0.2};
    x = open_mix(swapped, sw, 3, &c);
    assert_int_equal(loader_load_state(x, st, len), -1);
    loader_free(x);
    // a corrupt source position is refused, and the loader left as it was
    unsigned char *bad = malloc(len);
    memcpy(bad, st, len);
    bad[(19 + 7 + 4) * 8 + 6] = 0x10;  // source 1's cursor, past its epoch's end
    size_t len0 = loader_state_size(dl);
    unsigned char *before = malloc(len0), *after = malloc(len0);
    loader_save_state(dl, before);
    assert_int_equal(loader_load_state(dl, bad, len), -1);
    assert_error_contains("corrupt stream position of source 1");
    loader_save_state(dl, after);
    assert_memory_equal(before, after, len0);
    free(bad), free(before), free(after), free(st);
    loader_free(dl);
    free_data(d, 3);
}

// Fixed rows are cut per source: every row is a window of T+1 consecutive tokens of one source
// (never spanning two), each window of a source is visited once per epoch of that source, and
// the shares of the tokens follow the weights.
static void test_fixed_rows_per_source(void **state) {
    (void)state;
    enum { T = 16, BATCHES = 2000 };
    Data d[3];
    three_sources(d);
    const double w[3] = {0.2, 0.5, 0.3};
    LoaderConfig c = mix_config(1, T);
    c.fixed_rows = 1;
    DataLoader *dl = open_mix(d, w, 3, &c);
    int *seen[3];
    for (int s = 0; s < 3; s++) {
        assert_int_equal(dl->src[s].n_units, (d[s].n - 1) / T);
        seen[s] = calloc((size_t)dl->src[s].n_units, sizeof *seen[s]);
    }
    int32_t in[T], tg[T];
    for (int b = 0; b < BATCHES; b++) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        int j = in[0] == BOS ? 1 : 0;  // documents are 3+ tokens: one of the first two is content
        int s = source_of_token(in[j]);
        int64_t off = offset_of_token(in[j]) - j;
        assert_true(s >= 0 && s < 3 && off % T == 0);
        const uint16_t *want = dl->tokens + dl->src[s].tok_lo + off;
        for (int i = 0; i < T; i++) assert_int_equal(in[i], want[i]), assert_int_equal(tg[i], want[i + 1]);
        seen[s][off / T]++;
    }
    for (int s = 0; s < 3; s++) {
        const LoaderStream *st = &dl->src[s];
        for (int64_t k = 0; k < st->n_units; k++) {  // as check_pulls, for windows
            int want = (int)st->epoch - 1;
            for (int64_t p = 0; p < st->cursor; p++) want += st->perm[p] == k;
            assert_int_equal(seen[s][k], want);
        }
        double share = (double)st->tokens_pulled / (BATCHES * T);
        assert_int_equal(st->tokens_pulled, st->tokens_used);
        assert_true(fabs(share - w[s]) < 0.005);
        assert_true(st->epoch >= 2);
        free(seen[s]);
    }
    loader_free(dl);
    free_data(d, 3);
}

// What a mixture refuses: weights on some sources only, a weight out of range, --train-tokens'
// subset, validation mode, a source without documents or too short for a window (named).
static void test_mixture_errors(void **state) {
    (void)state;
    Data d[3];
    three_sources(d);
    LoaderConfig c = mix_config(2, 16);
    LoaderSource src[3];
    for (int s = 0; s < 3; s++) src[s] = (LoaderSource){.name = s == 1 ? "short" : "other", .tokens = d[s].t, .n_tokens = (size_t)d[s].n, .weight = 0.3};
    src[1].weight = 0;
    assert_null(loader_open_mix(src, 3, BOS, &c));
    assert_error_contains("or none");
    src[1].weight = 1.5;
    assert_null(loader_open_mix(src, 3, BOS, &c));
    assert_error_contains("not in (0, 1]");
    src[1].weight = 0.4;
    LoaderConfig s = c;
    s.max_tokens = 1000;
    assert_null(loader_open_mix(src, 3, BOS, &s));
    assert_error_contains("max_tokens");
    s = c, s.shuffle = 0;
    assert_null(loader_open_mix(src, 3, BOS, &s));
    assert_error_contains("validation");
    assert_null(loader_open_mix(src, 0, BOS, &c));
    src[1].n_tokens = 0;
    assert_null(loader_open_mix(src, 3, BOS, &c));
    assert_error_contains("no documents in source short");
    src[1].n_tokens = 10;
    s = c, s.fixed_rows = 1;
    assert_null(loader_open_mix(src, 3, BOS, &s));
    assert_error_contains("short holds only 0");
    free_data(d, 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_source_is_todays_stream),
        cmocka_unit_test(test_shares_and_epochs),
        cmocka_unit_test(test_determinism_and_source_seeds),
        cmocka_unit_test(test_ranks_disjoint),
        cmocka_unit_test(test_save_load_resumes),
        cmocka_unit_test(test_state_versions_and_mismatches),
        cmocka_unit_test(test_fixed_rows_per_source),
        cmocka_unit_test(test_mixture_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
