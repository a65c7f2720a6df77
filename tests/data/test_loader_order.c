// tests/data/test_loader_order.c — the data order of repeated epochs: fixed rows (row-level
// shuffling) against documents (document-level), a new order every epoch against the same one,
// each deterministic by seed, split over ranks, and resumed exactly from a saved state, including
// a version-2 state saved before the data order existed; and the --train-tokens subset.
//
// The token data is self-describing: token i of the stream is (i % 60000) + 1 except at document
// starts (<|bos|>), so any row names the stream offset it was cut from.
#include "test_util.h"

#include "data/loader.h"

#define BOS 65000

// n tokens in documents of lengths 7, 8, ..., 29, 7, ...: <|bos|> then i+1 at stream offset i.
static uint16_t *stream(int64_t n) {
    uint16_t *t = malloc((size_t)n * sizeof *t);
    int64_t next_bos = 0;
    int len = 7;
    for (int64_t i = 0; i < n; i++) {
        if (i == next_bos) {
            t[i] = BOS;
            next_bos += len;
            len = len == 29 ? 7 : len + 1;
        } else {
            t[i] = (uint16_t)(i % 60000 + 1);
        }
    }
    return t;
}

static LoaderConfig rows_config(int B, int T, int same_order) {
    LoaderConfig c = loader_defaults();
    c.B = B, c.T = T, c.seed = 99, c.fixed_rows = 1, c.same_order = same_order;
    return c;
}

static DataLoader *open_stream(const uint16_t *t, int64_t n, const LoaderConfig *c) {
    DataLoader *dl = loader_open_tokens(t, (size_t)n, "test stream", BOS, c);
    if (!dl) print_error("loader_open_tokens: %s\n", err_msg());
    assert_non_null(dl);
    return dl;
}

// The window a row was cut from (its first token's stream offset / T, found from its first
// token that is not <|bos|>), checked token by token against the data.
static int64_t window_of(const uint16_t *t, int64_t n, const int32_t *in, const int32_t *tg, int T) {
    int i = in[0] == BOS ? 1 : 0;  // documents are 7+ tokens: one of the first two is not <|bos|>
    int64_t off = in[i] - 1 - i;
    assert_true(off >= 0 && off % T == 0 && off + T < n);
    int64_t k = off / T;
    for (int j = 0; j < T; j++) {  // the whole window, and targets = inputs shifted by one
        assert_int_equal(in[j], t[k * T + j]);
        assert_int_equal(tg[j], t[k * T + j + 1]);
    }
    return k;
}

// Fixed rows: each epoch visits every window once (each token but the first a target exactly
// once), the order is the seed's and changes each epoch, and same_order repeats epoch 1's.
static void test_fixed_rows_epochs(void **state) {
    (void)state;
    enum { T = 16, N = 16 * 40 + 5, W = (N - 1) / T };  // 40 windows, 4 tokens never targets
    uint16_t *t = stream(N);
    int64_t order[3][W];
    for (int same = 0; same <= 1; same++) {
        LoaderConfig c = rows_config(1, T, same);
        DataLoader *dl = open_stream(t, N, &c);
        assert_int_equal(dl->n_units, W);
        int32_t in[T], tg[T];
        for (int e = 0; e < 3; e++) {
            int seen[W] = {0};
            for (int k = 0; k < W; k++) {
                assert_int_equal(loader_next(dl, in, tg), 1);
                assert_int_equal(loader_epoch(dl), e + 1);
                order[e][k] = window_of(t, N, in, tg, T);
                seen[order[e][k]]++;
            }
            for (int k = 0; k < W; k++) assert_int_equal(seen[k], 1);
        }
        assert_int_equal(loader_tokens_consumed(dl), 3LL * W * T);
        int differ12 = memcmp(order[0], order[1], sizeof order[0]) != 0;
        int differ23 = memcmp(order[1], order[2], sizeof order[0]) != 0;
        assert_int_equal(differ12, !same);
        assert_int_equal(differ23, !same);
        int identity = 1;
        for (int k = 0; k < W; k++) identity &= order[0][k] == k;
        assert_false(identity);  // shuffled, not file order
        loader_free(dl);
    }
    // the same seed gives the same stream; another seed another one
    LoaderConfig a = rows_config(4, T, 0), b = a;
    b.seed = 100;
    DataLoader *x = open_stream(t, N, &a), *y = open_stream(t, N, &a), *z = open_stream(t, N, &b);
    int32_t i1[4 * T], t1[4 * T], i2[4 * T], t2[4 * T], i3[4 * T], t3[4 * T];
    int same_seed_same = 1, other_seed_same = 1;
    for (int k = 0; k < 25; k++) {
        loader_next(x, i1, t1), loader_next(y, i2, t2), loader_next(z, i3, t3);
        same_seed_same &= !memcmp(i1, i2, sizeof i1) && !memcmp(t1, t2, sizeof t1);
        other_seed_same &= !memcmp(i1, i3, sizeof i1);
    }
    assert_true(same_seed_same);
    assert_false(other_seed_same);
    loader_free(x), loader_free(y), loader_free(z);
    free(t);
}

// Ranks split each epoch's windows: together they see every window once.
static void test_fixed_rows_ranks(void **state) {
    (void)state;
    enum { T = 8, N = 8 * 30 + 1, W = 30, R = 3 };
    uint16_t *t = stream(N);
    int seen[W] = {0};
    for (int r = 0; r < R; r++) {
        LoaderConfig c = rows_config(1, T, 0);
        c.rank = r, c.world = R;
        DataLoader *dl = open_stream(t, N, &c);
        int32_t in[T], tg[T];
        for (int k = 0; k < W / R; k++) {
            assert_int_equal(loader_next(dl, in, tg), 1);
            seen[window_of(t, N, in, tg, T)]++;
        }
        assert_int_equal(loader_epoch(dl), 1);
        loader_next(dl, in, tg);
        assert_int_equal(loader_epoch(dl), 2);
        loader_free(dl);
    }
    for (int k = 0; k < W; k++) assert_int_equal(seen[k], 1);
    // validation mode: file order, one pass
    LoaderConfig v = rows_config(2, T, 0);
    v.shuffle = 0;
    DataLoader *dl = open_stream(t, N, &v);
    int32_t in[2 * T], tg[2 * T];
    for (int k = 0; k < W / 2; k++) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        assert_int_equal(window_of(t, N, in, tg, T), 2 * k);
        assert_int_equal(window_of(t, N, in + T, tg + T, T), 2 * k + 1);
    }
    assert_int_equal(loader_next(dl, in, tg), 0);
    loader_free(dl);
    free(t);
}

// Documents with same_order: epoch 2 takes the documents in epoch 1's order.
static void test_same_order_documents(void **state) {
    (void)state;
    enum { N = 2000 };
    uint16_t *t = stream(N);
    for (int same = 0; same <= 1; same++) {
        LoaderConfig c = loader_defaults();
        c.B = 1, c.T = 12, c.seed = 5, c.same_order = same, c.buffer_docs = 4, c.refill_docs = 2;
        DataLoader *dl = open_stream(t, N, &c);
        int32_t *p1 = malloc((size_t)dl->n_docs * sizeof *p1);
        memcpy(p1, dl->src[0].perm, (size_t)dl->n_docs * sizeof *p1);
        int32_t in[12], tg[12];
        while (loader_epoch(dl) < 2) loader_next(dl, in, tg);
        assert_int_equal(!memcmp(p1, dl->src[0].perm, (size_t)dl->n_docs * sizeof *p1), same);
        free(p1);
        loader_free(dl);
    }
    free(t);
}

// n batches of B*T into in/tg.
static void batches(DataLoader *dl, int n, int32_t *in, int32_t *tg, int BT) {
    for (int k = 0; k < n; k++) assert_int_equal(loader_next(dl, in + (size_t)k * BT, tg + (size_t)k * BT), 1);
}

// Saved mid-epoch and across an epoch's end, each order resumes the identical stream; a state
// of one order is refused by a loader of another, and fixed rows refuse another T.
static void test_resume_each_order(void **state) {
    (void)state;
    enum { T = 10, B = 3, BT = B * T, N = 10 * 50 + 1, AFTER = 12 };
    uint16_t *t = stream(N);
    for (int mode = 0; mode < 4; mode++) {
        LoaderConfig c = loader_defaults();
        c.B = B, c.T = T, c.seed = 7, c.fixed_rows = mode & 1, c.same_order = mode >> 1;
        c.buffer_docs = 6, c.refill_docs = 3;
        for (int at = 5; at <= 30; at += 25) {  // mid-epoch 1, and in epoch 2 or 3
            DataLoader *dl = open_stream(t, N, &c);
            int32_t in[AFTER * BT], tg[AFTER * BT], in2[AFTER * BT], tg2[AFTER * BT];
            batches(dl, at, in, tg, 0);
            size_t len = loader_state_size(dl);
            unsigned char *st = malloc(len);
            assert_int_equal(loader_save_state(dl, st), len);
            batches(dl, AFTER, in, tg, BT);
            DataLoader *back = open_stream(t, N, &c);
            assert_int_equal(loader_load_state(back, st, len), 0);
            batches(back, AFTER, in2, tg2, BT);
            assert_memory_equal(in, in2, sizeof in);
            assert_memory_equal(tg, tg2, sizeof tg);
            assert_int_equal(loader_tokens_consumed(dl), loader_tokens_consumed(back));
            // another order refuses the state
            LoaderConfig o = c;
            o.fixed_rows = !c.fixed_rows;
            DataLoader *other = open_stream(t, N, &o);
            assert_int_equal(loader_load_state(other, st, len), -1);
            assert_non_null(strstr(err_msg(), "fixed_rows"));
            loader_free(other);
            o = c, o.same_order = !c.same_order;
            other = open_stream(t, N, &o);
            assert_int_equal(loader_load_state(other, st, len), -1);
            loader_free(other);
            if (c.fixed_rows) {  // windows of another T are other rows
                o = c, o.T = T + 1;
                other = open_stream(t, N, &o);
                assert_int_equal(loader_load_state(other, st, len), -1);
                assert_non_null(strstr(err_msg(), "rows per epoch"));
                loader_free(other);
            }
            free(st);
            loader_free(dl), loader_free(back);
        }
    }
    free(t);
}

// Version-2 and version-3 states (saved before the data order, and before mixtures: the version 4
// header without its last four fields, and without the per-source block that follows it) resume
// a one-source loader exactly, v2 as documents in a new order each epoch; a v2 state given to fixed
// rows is refused.
static void test_version2_state_resumes(void **state) {
    (void)state;
    enum { T = 10, B = 2, BT = B * T, N = 1200, V4_HEAD = 19 + 7, V3_FIELDS = 18, V2_FIELDS = 15 };
    uint16_t *t = stream(N);
    LoaderConfig c = loader_defaults();
    c.B = B, c.T = T, c.seed = 3, c.buffer_docs = 5, c.refill_docs = 2;
    DataLoader *dl = open_stream(t, N, &c);
    int32_t in[8 * BT], tg[8 * BT], in2[8 * BT], tg2[8 * BT];
    batches(dl, 40, in, tg, 0);
    size_t len = loader_state_size(dl);
    unsigned char *st = malloc(len);
    loader_save_state(dl, st);
    assert_int_equal(len, (size_t)(V4_HEAD + 2 * dl->buf_n) * 8);
    // v3: version field 3, the source count and the source's block cut out
    size_t len3 = len - (V4_HEAD - V3_FIELDS) * 8;
    unsigned char *v3 = malloc(len3);
    memcpy(v3, st, V3_FIELDS * 8);
    memcpy(v3 + V3_FIELDS * 8, st + V4_HEAD * 8, len - V4_HEAD * 8);
    v3[8] = 3;  // version (little-endian int64 at field 1)
    // v2: version field 2, fields 15..17 cut out too
    size_t len2 = len3 - 3 * 8;
    unsigned char *v2 = malloc(len2);
    memcpy(v2, v3, V2_FIELDS * 8);
    memcpy(v2 + V2_FIELDS * 8, v3 + V3_FIELDS * 8, len3 - V3_FIELDS * 8);
    v2[8] = 2;
    batches(dl, 8, in, tg, BT);
    for (int v = 2; v <= 3; v++) {
        DataLoader *back = open_stream(t, N, &c);
        assert_int_equal(loader_load_state(back, v == 2 ? v2 : v3, v == 2 ? len2 : len3), 0);
        batches(back, 8, in2, tg2, BT);
        assert_memory_equal(in, in2, sizeof in);
        assert_memory_equal(tg, tg2, sizeof tg);
        loader_free(back);
    }
    DataLoader *back = open_stream(t, N, &c);
    LoaderConfig r = c;
    r.fixed_rows = 1;
    DataLoader *rows = open_stream(t, N, &r);
    assert_int_equal(loader_load_state(rows, v2, len2), -1);
    v2[8] = 1;  // an unknown version
    assert_int_equal(loader_load_state(back, v2, len2), -1);
    assert_non_null(strstr(err_msg(), "version 1"));
    free(st), free(v2), free(v3);
    loader_free(dl), loader_free(back), loader_free(rows);
    free(t);
}

// Too little data for one row, and more ranks than rows, are clear errors.
static void test_fixed_rows_errors(void **state) {
    (void)state;
    uint16_t *t = stream(40);
    LoaderConfig c = rows_config(1, 64, 0);
    assert_null(loader_open_tokens(t, 40, "tiny", BOS, &c));
    assert_non_null(strstr(err_msg(), "gets no rows"));
    c = rows_config(1, 8, 0);
    c.rank = 5, c.world = 6;  // 39 / 8 = 4 windows for 6 ranks
    assert_null(loader_open_tokens(t, 40, "tiny", BOS, &c));
    assert_non_null(strstr(err_msg(), "only 4"));
    free(t);
}

// The --train-tokens subset: whole documents copied unchanged, in file order, adding up to at
// most max_tokens. `first` is the prefix; the sample (the default) spans the data, fills the
// budget to within one shortest document, is the same for every seed, and differs from the
// prefix. Its fixed rows are cut from the subset alone.
static void test_subset(void **state) {
    (void)state;
    enum { N = 50000, MAX = 2000 };  // N < 60000: every token but <|bos|> names its offset
    uint16_t *t = stream(N);
    for (int first = 1; first >= 0; first--) {
        int64_t n_tokens = -1;
        uint64_t hash = 0;
        for (uint64_t seed = 1; seed <= 2; seed++) {
            LoaderConfig c = loader_defaults();
            c.B = 1, c.T = 16, c.seed = seed, c.max_tokens = MAX, c.subset_first = first;
            DataLoader *dl = open_stream(t, N, &c);
            assert_true(dl->n_tokens <= MAX && dl->n_tokens > MAX - 29);
            if (!first) assert_true(dl->n_tokens > MAX - 7);  // a 7-token document is always left over
            int64_t prev = -1, last = 0;
            for (int64_t d = 0; d < dl->n_docs; d++) {
                int64_t s = dl->doc_start[d], len = dl->doc_len[d];
                int64_t o = dl->tokens[s + 1] - 2;  // the document's offset in the stream
                assert_true(o > prev);               // file order, each document once
                assert_int_equal(t[o], BOS);
                assert_memory_equal(dl->tokens + s, t + o, (size_t)len * sizeof *t);
                assert_true(o + len == N || t[o + len] == BOS);  // the whole document
                if (first) assert_int_equal(o, s);
                prev = o, last = o + len;
            }
            if (!first) assert_true(last > 20 * MAX);  // spread over the stream, not a prefix
            if (n_tokens >= 0) assert_true(dl->n_tokens == n_tokens && dl->data_hash == hash);  // seed-independent
            n_tokens = dl->n_tokens, hash = dl->data_hash;
            loader_free(dl);
        }
    }
    LoaderConfig c = rows_config(1, 16, 0);
    c.max_tokens = MAX;
    DataLoader *dl = open_stream(t, N, &c);
    assert_int_equal(dl->n_units, (dl->n_tokens - 1) / 16);
    loader_free(dl);
    c = loader_defaults();
    c.B = 1, c.T = 16, c.max_tokens = 5;  // shorter than any document: one whole document
    dl = open_stream(t, N, &c);
    assert_int_equal(dl->n_docs, 1);
    assert_true(dl->n_tokens >= 7);
    loader_free(dl);
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_rows_epochs),
        cmocka_unit_test(test_fixed_rows_ranks),
        cmocka_unit_test(test_same_order_documents),
        cmocka_unit_test(test_resume_each_order),
        cmocka_unit_test(test_version2_state_resumes),
        cmocka_unit_test(test_fixed_rows_errors),
        cmocka_unit_test(test_subset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
