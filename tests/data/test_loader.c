// tests/data/test_loader.c — the BOS-aligned best-fit data loader: hand-worked packings, cropping,
// the input/target shift, seeds, ranks, validation's single pass, exact resume, config errors.
//
// Documents are synthetic and self-describing: document d of length L is <|bos|> followed by the
// tokens d*100+1, ..., d*100+L-1 (L <= 100, d < 600), so any row can be decoded back into
// (document, offset) segments.
#include "test_util.h"

#include "data/loader.h"
#include "data/shard.h"

#define BOS 65000

static uint16_t tok(int d, int j) { return j == 0 ? BOS : (uint16_t)(d * 100 + j); }

// Write documents first_id .. first_id+n-1 with the given lengths to dir/name; returns the path.
static char *write_docs(const char *dir, const char *name, const int *lens, int n, int first_id) {
    char *path = path_join(dir, name);
    ShardWriter w;
    assert_int_equal(shard_writer_open(&w, path), 0);
    for (int i = 0; i < n; i++) {
        uint16_t t[100];
        assert_true(lens[i] >= 1 && lens[i] <= 100);
        for (int j = 0; j < lens[i]; j++) t[j] = tok(first_id + i, j);
        assert_int_equal(shard_writer_append(&w, t, (size_t)lens[i]), 0);
    }
    assert_int_equal(shard_writer_close(&w), 0);
    return path;
}

static LoaderConfig config(int B, int T, int shuffle, int buffer_docs, int refill_docs) {
    LoaderConfig c = loader_defaults();
    c.B = B;
    c.T = T;
    c.shuffle = shuffle;
    c.seed = 1234;
    c.buffer_docs = buffer_docs;
    c.refill_docs = refill_docs;
    c.discard_crops = 1;  // the hand-worked cases follow nanochat exactly; keep mode is tested below
    return c;
}

static DataLoader *open1(const char *path, const LoaderConfig *c) {
    const char *paths[] = {path};
    DataLoader *dl = loader_open(paths, 1, BOS, c);
    if (!dl) print_error("loader_open: %s\n", err_msg());
    assert_non_null(dl);
    return dl;
}

// Deterministic document lengths in [lo, hi].
static void some_lengths(int *lens, int n, int lo, int hi, uint32_t seed) {
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        lens[i] = lo + (int)((seed >> 8) % (uint32_t)(hi - lo + 1));
    }
}

static void assert_row(const int32_t *in, const int32_t *tg, const int32_t *want_in, const int32_t *want_tg, int T) {
    assert_memory_equal(in, want_in, (size_t)T * sizeof *in);
    assert_memory_equal(tg, want_tg, (size_t)T * sizeof *tg);
}

// Decode the real part of one row (T+1 tokens from inputs and targets, up to the first -1
// target) and check it is a sequence of whole documents, the last of which may be cropped:
// every segment starts with <|bos|>, continues with its document's tokens in order, and is the
// whole document unless it reaches the end of the row. Each document id seen is passed to
// seen(), in order; a segment of a lone <|bos|> has no id and counts in *anonymous.
typedef struct {
    int *ids;        // documents identified, in order
    int n_ids, cap;
    int bos;         // segments (= documents started)
    int anonymous;   // segments too short to identify (a cropped lone <|bos|>)
} Seen;

static void seen_add(Seen *s, int id) {
    if (s->n_ids == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->ids = realloc(s->ids, (size_t)s->cap * sizeof *s->ids);
    }
    s->ids[s->n_ids++] = id;
}

static void check_row(const int32_t *in, const int32_t *tg, int T, const int *lens, Seen *s) {
    int32_t row[512];
    assert_true(T + 1 <= 512);
    row[0] = in[0];
    int n = 1;
    for (int i = 0; i < T && tg[i] != -1; i++) {
        if (i + 1 < T) assert_int_equal(in[i + 1], tg[i]);  // targets are inputs shifted by one
        row[n++] = tg[i];
    }
    for (int i = n - 1; i < T; i++) assert_int_equal(tg[i], -1);  // -1 only as a tail
    assert_int_equal(row[0], BOS);  // every row starts a document
    int p = 0;
    while (p < n) {
        assert_int_equal(row[p], BOS);
        s->bos++;
        if (p + 1 == n) { s->anonymous++; break; }
        int d = row[p + 1] / 100, len = 1;
        assert_true(d >= 0 && d < 600);
        while (p + len < n && row[p + len] != BOS) {
            assert_int_equal(row[p + len], tok(d, len));
            len++;
        }
        assert_true(len <= lens[d]);
        if (p + len < n || n < T + 1) assert_int_equal(len, lens[d]);  // cropped only at a full row's end
        seen_add(s, d);
        p += len;
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-worked packings (validation mode: file order, so the buffer contents are known)
// ---------------------------------------------------------------------------------------------

static void test_bestfit_by_hand(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    // Row capacity T+1 = 8. All five documents sit in the buffer from the start.
    int lens[] = {5, 3, 7, 2, 4};
    char *path = write_docs(dir, "val.bin", lens, 5, 0);
    LoaderConfig c = config(1, 7, 0, 5, 1);
    DataLoader *dl = open1(path, &c);
    int32_t in[7], tg[7];
    // row 0: largest that fits 8 is d2 (7); 1 slot left, nothing fits: crop the shortest, d3 (2), to 1
    assert_int_equal(loader_next(dl, in, tg), 1);
    assert_int_equal(dl->rows, 1);
    assert_row(in, tg, (int32_t[]){BOS, 201, 202, 203, 204, 205, 206}, (int32_t[]){201, 202, 203, 204, 205, 206, BOS}, 7);
    // row 1: buffer [d0:5, d1:3, d4:4]: d0 (5), then 3 left: d1 (3) fits exactly
    assert_int_equal(loader_next(dl, in, tg), 1);
    assert_row(in, tg, (int32_t[]){BOS, 1, 2, 3, 4, BOS, 101}, (int32_t[]){1, 2, 3, 4, BOS, 101, 102}, 7);
    // row 2: d4 (4), then the data runs out: the rest of the targets are ignored
    assert_int_equal(loader_next(dl, in, tg), 1);
    assert_int_equal(dl->rows, 1);
    assert_row(in, tg, (int32_t[]){BOS, 401, 402, 403, BOS, BOS, BOS}, (int32_t[]){401, 402, 403, -1, -1, -1, -1}, 7);
    assert_int_equal(loader_next(dl, in, tg), 0);
    assert_int_equal(loader_next(dl, in, tg), 0);
    assert_int_equal(dl->tokens_used, 8 + 8 + 4);
    assert_int_equal(dl->tokens_cropped, 1);  // d3's second token
    assert_int_equal(loader_tokens_consumed(dl), 21);
    assert_int_equal(loader_epoch(dl), 1);
    loader_free(dl);
    remove_tree(dir);
    free(path);
    free(dir);
}

static void test_bestfit_ties_refill_and_short_batch(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    // Capacity 8, a buffer of 4 topped up one document at a time before every pick, B = 2.
    int lens[] = {3, 5, 2, 5, 9, 4, 6};
    char *path = write_docs(dir, "val.bin", lens, 7, 0);
    LoaderConfig c = config(2, 7, 0, 4, 1);
    DataLoader *dl = open1(path, &c);
    int32_t in[14], tg[14];
    assert_int_equal(loader_next(dl, in, tg), 1);
    assert_int_equal(dl->rows, 2);
    // row 0: buffer [d0:3 d1:5 d2:2 d3:5]: d1 and d3 tie at 5, the first (d1) wins;
    //        refill -> [d0 d2 d3 d4:9]: 3 left, d0 (3) fits exactly
    assert_row(in, tg, (int32_t[]){BOS, 101, 102, 103, 104, BOS, 1}, (int32_t[]){101, 102, 103, 104, BOS, 1, 2}, 7);
    // row 1: refill -> [d2 d3 d4 d5:4]: d3 (5); refill -> [d2 d4 d5 d6:6]: 3 left: d2 (2);
    //        data exhausted, [d4 d5 d6], 1 left: nothing fits, crop the shortest, d5, to 1 token
    assert_row(in + 7, tg + 7, (int32_t[]){BOS, 301, 302, 303, 304, BOS, 201}, (int32_t[]){301, 302, 303, 304, BOS, 201, BOS}, 7);
    assert_int_equal(loader_next(dl, in, tg), 1);
    assert_int_equal(dl->rows, 1);
    // row 2: [d4:9 d6:6]: d6 (6); 2 left: crop d4 to 2. Row 3: no data, all ignored.
    assert_row(in, tg, (int32_t[]){BOS, 601, 602, 603, 604, 605, BOS}, (int32_t[]){601, 602, 603, 604, 605, BOS, 401}, 7);
    assert_row(in + 7, tg + 7, (int32_t[]){BOS, BOS, BOS, BOS, BOS, BOS, BOS}, (int32_t[]){-1, -1, -1, -1, -1, -1, -1}, 7);
    assert_int_equal(loader_next(dl, in, tg), 0);
    assert_int_equal(dl->tokens_used, 24);
    assert_int_equal(dl->tokens_cropped, 3 + 7);
    assert_int_equal(dl->batches, 2);
    // loader_reset: the identical stream again (evaluating twice)
    loader_reset(dl);
    assert_int_equal(loader_next(dl, in, tg), 1);
    assert_row(in, tg, (int32_t[]){BOS, 101, 102, 103, 104, BOS, 1}, (int32_t[]){101, 102, 103, 104, BOS, 1, 2}, 7);
    loader_free(dl);
    remove_tree(dir);
    free(path);
    free(dir);
}

static void test_crop_when_nothing_fits(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    int lens[] = {20, 12, 15};  // all longer than the row (8)
    char *path = write_docs(dir, "val.bin", lens, 3, 0);
    LoaderConfig c = config(1, 7, 0, 3, 1);
    DataLoader *dl = open1(path, &c);
    int32_t in[7], tg[7];
    int order[] = {1, 2, 0};  // shortest first
    for (int r = 0; r < 3; r++) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        int d = order[r];
        int32_t wi[7], wt[7];
        for (int i = 0; i < 7; i++) {
            wi[i] = tok(d, i);
            wt[i] = tok(d, i + 1);
        }
        assert_row(in, tg, wi, wt, 7);
    }
    assert_int_equal(loader_next(dl, in, tg), 0);
    assert_int_equal(dl->tokens_cropped, 12 + 4 + 7);
    assert_int_equal(loader_tokens_consumed(dl), 47);
    loader_free(dl);
    remove_tree(dir);
    free(path);
    free(dir);
}

// ---------------------------------------------------------------------------------------------
// Training mode
// ---------------------------------------------------------------------------------------------

static void test_train_rows_are_packed_documents(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    int lens[200];
    some_lengths(lens, 200, 2, 60, 7);
    int64_t total = 0;
    for (int i = 0; i < 200; i++) total += lens[i];
    char *path = write_docs(dir, "train.bin", lens, 200, 0);
    LoaderConfig c = config(4, 31, 1, 16, 4);
    DataLoader *dl = open1(path, &c);
    assert_int_equal(dl->n_docs, 200);
    assert_int_equal(dl->n_tokens, total);
    int32_t in[4 * 31], tg[4 * 31];
    Seen s = {0};
    for (int b = 0; b < 60; b++) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        assert_int_equal(dl->rows, 4);
        for (int r = 0; r < 4; r++) {
            assert_int_equal(in[r * 31], BOS);
            assert_int_not_equal(tg[r * 31 + 30], -1);  // training rows are always full
            check_row(in + r * 31, tg + r * 31, 31, lens, &s);
        }
    }
    assert_int_equal(dl->tokens_used, 60 * 4 * 32);
    assert_true(loader_epoch(dl) >= 2);  // wrapped into a new epoch
    assert_true(loader_tokens_consumed(dl) > total);
    free(s.ids);
    loader_free(dl);
    remove_tree(dir);
    free(path);
    free(dir);
}

static void test_seed_determinism(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    int lens[100];
    some_lengths(lens, 100, 2, 40, 3);
    char *path = write_docs(dir, "train.bin", lens, 100, 0);
    LoaderConfig c = config(2, 15, 1, 8, 2);
    DataLoader *a = open1(path, &c), *b = open1(path, &c);
    c.seed++;
    DataLoader *o = open1(path, &c);
    int32_t ia[30], ta[30], ib[30], tb[30];
    int differs = 0;
    for (int k = 0; k < 20; k++) {
        assert_int_equal(loader_next(a, ia, ta), 1);
        assert_int_equal(loader_next(b, ib, tb), 1);
        assert_memory_equal(ia, ib, sizeof ia);
        assert_memory_equal(ta, tb, sizeof ta);
        assert_int_equal(loader_next(o, ib, tb), 1);
        differs |= memcmp(ia, ib, sizeof ia) != 0;
    }
    assert_true(differs);
    loader_free(a);
    loader_free(b);
    loader_free(o);
    remove_tree(dir);
    free(path);
    free(dir);
}

// The permutation is part of the data format: the same on every machine and build. These values
// pin it (cross-checked against an independent Python rendering of the algorithm in loader.h);
// if they change, old runs' data order (and saved states) no longer reproduce.
static void test_permutation_pinned(void **state) {
    (void)state;
    int32_t p[10], q[10];
    loader_permutation(42, 1, p, 10);
    int32_t want[10] = {6, 5, 2, 0, 4, 7, 8, 9, 3, 1};
    assert_memory_equal(p, want, sizeof p);
    int seen[10] = {0};
    for (int i = 0; i < 10; i++) seen[p[i]]++;
    for (int i = 0; i < 10; i++) assert_int_equal(seen[i], 1);
    loader_permutation(42, 2, q, 10);
    assert_memory_not_equal(p, q, sizeof p);  // a new order every epoch
    loader_permutation(43, 1, q, 10);
    assert_memory_not_equal(p, q, sizeof p);
    int32_t one;
    loader_permutation(42, 1, &one, 1);
    assert_int_equal(one, 0);
}

// Doc ids of this loader's stream: with buffer_docs = 1 and documents of 4 tokens in rows of 8,
// rows are exactly the stream's documents in order, two per row.
static void stream_ids(DataLoader *dl, int *ids, int n) {
    int32_t in[7], tg[7];
    for (int k = 0; k < n; k += 2) {
        assert_int_equal(loader_next(dl, in, tg), 1);
        assert_int_equal(in[0], BOS);
        assert_int_equal(in[4], BOS);
        ids[k] = in[1] / 100;
        if (k + 1 < n) ids[k + 1] = in[5] / 100;
    }
}

static void test_ranks_split_each_epoch(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    enum { N = 41 };  // odd: rank 0 gets 21, rank 1 gets 20
    int lens[N];
    for (int i = 0; i < N; i++) lens[i] = 4;
    char *path = write_docs(dir, "train.bin", lens, N, 0);
    LoaderConfig c = config(1, 7, 1, 1, 1);
    c.world = 2;
    int32_t perm1[N], perm2[N];
    loader_permutation(c.seed, 1, perm1, N);
    loader_permutation(c.seed, 2, perm2, N);
    int count[N] = {0};
    for (int r = 0; r < 2; r++) {
        c.rank = r;
        DataLoader *dl = open1(path, &c);
        int share = r == 0 ? 21 : 20;
        assert_int_equal(dl->rank_docs, share);
        // the epoch-1 share, then (a 22nd for rank 0 comes from epoch 2) the epoch-2 share
        int ids[2 * 21 + 2];
        stream_ids(dl, ids, 2 * share);
        for (int k = 0; k < share; k++) {
            assert_int_equal(ids[k], perm1[r + 2 * k]);
            assert_int_equal(ids[share + k], perm2[r + 2 * k]);
            count[ids[k]]++;
        }
        assert_int_equal(loader_epoch(dl), 2);
        loader_free(dl);
    }
    for (int i = 0; i < N; i++) assert_int_equal(count[i], 1);  // disjoint, and together the epoch
    remove_tree(dir);
    free(path);
    free(dir);
}

// ---------------------------------------------------------------------------------------------
// Validation mode
// ---------------------------------------------------------------------------------------------

// Run a validation loader to its end; returns the batches. Checks the rows, the -1 tail of the
// last batch, and that nothing follows the end.
static int run_val(DataLoader *dl, const int *lens, Seen *s) {
    int B = dl->cfg.B, T = dl->cfg.T, batches = 0, last_rows = 0, last_has_ignored = 0;
    int32_t *in = malloc((size_t)B * T * sizeof *in), *tg = malloc((size_t)B * T * sizeof *tg);
    int rc;
    while ((rc = loader_next(dl, in, tg)) == 1) {
        assert_true(last_rows == 0 || last_rows == B);  // only the last batch may be short
        batches++;
        last_rows = dl->rows;
        assert_true(dl->rows >= 1 && dl->rows <= B);
        last_has_ignored = 0;
        for (int r = 0; r < B; r++) {
            if (r < dl->rows) check_row(in + r * T, tg + r * T, T, lens, s);
            for (int i = 0; i < T; i++) {
                if (r >= dl->rows) assert_int_equal(tg[r * T + i], -1);
                last_has_ignored |= tg[r * T + i] == -1;
            }
        }
        if (last_has_ignored) assert_true(dl->buf_n == 0);  // -1 only once the data ran out
    }
    assert_int_equal(rc, 0);
    // The pass often ends in a full row (the last pick is a crop); the test data are chosen so
    // that it ends partly filled.
    assert_true(last_has_ignored);
    assert_int_equal(loader_next(dl, in, tg), 0);
    free(in);
    free(tg);
    return batches;
}

static void test_val_single_pass_covers_everything(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    enum { N = 60 };
    int lens[N];
    some_lengths(lens, N, 2, 40, 6);  // lengths whose passes end in a partly filled row
    int64_t total = 0;
    for (int i = 0; i < N; i++) total += lens[i];
    // two shards: documents 0..24 and 25..59
    char *p0 = write_docs(dir, "val_000000.bin", lens, 25, 0), *p1 = write_docs(dir, "val_000001.bin", lens + 25, 35, 25);
    const char *paths[] = {p0, p1};
    LoaderConfig c = config(3, 15, 0, 8, 3);
    for (int world = 1; world <= 2; world++) {
        int count[N] = {0}, bos = 0, anonymous = 0;
        int64_t consumed = 0;
        c.world = world;
        for (int r = 0; r < world; r++) {
            c.rank = r;
            DataLoader *dl = loader_open(paths, 2, BOS, &c);
            assert_non_null(dl);
            assert_int_equal(dl->n_docs, N);
            Seen s = {0};
            int batches = run_val(dl, lens, &s);
            assert_true(batches > 0);
            assert_int_equal(s.bos, dl->rank_docs);  // every document of the share started once
            for (int k = 0; k < s.n_ids; k++) {
                assert_int_equal(s.ids[k] % world, r);  // rank r reads documents r, r+W, ...
                count[s.ids[k]]++;
            }
            bos += s.bos;
            anonymous += s.anonymous;
            int64_t share_tokens = 0;
            for (int i = r; i < N; i += world) share_tokens += lens[i];
            assert_int_equal(loader_tokens_consumed(dl), share_tokens);
            consumed += loader_tokens_consumed(dl);
            // again after a reset: the same pass
            loader_reset(dl);
            Seen s2 = {0};
            assert_int_equal(run_val(dl, lens, &s2), batches);
            assert_int_equal(s2.n_ids, s.n_ids);
            assert_memory_equal(s2.ids, s.ids, (size_t)s.n_ids * sizeof *s.ids);
            free(s.ids);
            free(s2.ids);
            loader_free(dl);
        }
        assert_int_equal(bos, N);
        assert_int_equal(consumed, total);  // every token used or cropped, once
        int identified = 0;
        for (int i = 0; i < N; i++) {
            assert_true(count[i] <= 1);  // never twice
            identified += count[i];
        }
        assert_int_equal(identified + anonymous, N);  // every document exactly once
    }
    remove_tree(dir);
    free(p0);
    free(p1);
    free(dir);
}

// ---------------------------------------------------------------------------------------------
// Exact resume
// ---------------------------------------------------------------------------------------------

// n batches into in/tg, each `stride` elements after the previous (0: all into the same place).
static void next_n(DataLoader *dl, int n, int32_t *in, int32_t *tg, size_t stride) {
    for (int k = 0; k < n; k++) assert_int_equal(loader_next(dl, in + k * stride, tg + k * stride), 1);
}

static void test_save_load_resumes_exactly(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    int lens[80];
    some_lengths(lens, 80, 2, 50, 5);
    char *path = write_docs(dir, "train.bin", lens, 80, 0);
    char *other = write_docs(dir, "other.bin", lens, 79, 0);
    LoaderConfig c = config(2, 15, 1, 16, 4);
    enum { BT = 2 * 15 };
    int32_t in[5 * BT], tg[5 * BT], in2[5 * BT], tg2[5 * BT];
    DataLoader *dl = open1(path, &c);
    next_n(dl, 37, in, tg, 0);  // far enough to be in epoch 2
    assert_true(loader_epoch(dl) >= 2);
    size_t len = loader_state_size(dl);
    unsigned char *st = malloc(len);
    assert_int_equal(loader_save_state(dl, st), len);
    int64_t consumed = loader_tokens_consumed(dl), epoch = loader_epoch(dl);
    next_n(dl, 5, in, tg, BT);
    // reopen, load, same 5 batches
    DataLoader *re = open1(path, &c);
    assert_int_equal(loader_load_state(re, st, len), 0);
    assert_int_equal(loader_tokens_consumed(re), consumed);
    assert_int_equal(loader_epoch(re), epoch);
    assert_int_equal(re->batches, 37);
    next_n(re, 5, in2, tg2, BT);
    assert_memory_equal(in, in2, sizeof in);
    assert_memory_equal(tg, tg2, sizeof tg);
    assert_int_equal(loader_tokens_consumed(re), loader_tokens_consumed(dl));
    // loading into the loader that went on rewinds it
    assert_int_equal(loader_load_state(dl, st, len), 0);
    next_n(dl, 5, in2, tg2, BT);
    assert_memory_equal(in, in2, sizeof in);

    // mismatches: clear errors, and the loader is left as it was
    size_t len0 = loader_state_size(re);
    unsigned char *before = malloc(len0), *after = malloc(len0);
    loader_save_state(re, before);
    assert_int_equal(loader_load_state(re, st, len - 8), -1);
    assert_error_contains("bytes");
    assert_int_equal(loader_load_state(re, st, 16), -1);
    assert_error_contains("too short");
    unsigned char *bad = malloc(len);
    memcpy(bad, st, len);
    bad[0] ^= 1;
    assert_int_equal(loader_load_state(re, bad, len), -1);
    assert_error_contains("magic");
    memcpy(bad, st, len);
    bad[8] = 99;  // version
    assert_int_equal(loader_load_state(re, bad, len), -1);
    assert_error_contains("version 99");
    memcpy(bad, st, len);
    memset(bad + len - 8, 0x7f, 8);  // a buffered document id out of range
    assert_int_equal(loader_load_state(re, bad, len), -1);
    assert_error_contains("corrupt");
    // a buffered-document count near 2^63 must not overflow the message's size arithmetic
    // (tests/fuzz/corpus/ckpt/loader_state_huge_buf_n.safetensors); counters near 2^63 would
    // overflow the loader's later additions
    memcpy(bad, st, len);
    for (int i = 0; i < 8; i++) bad[13 * 8 + i] = (unsigned char)(0x5844000000000015ULL >> (8 * i));  // S_BUF_N
    assert_int_equal(loader_load_state(re, bad, len), -1);
    assert_error_contains("does not match its count of 6360208573753982997 buffered documents");
    for (int field = 8; field <= 12; field++) {  // epoch, cursor, batches, tokens used, tokens cropped
        memcpy(bad, st, len);
        memset(bad + field * 8, 0xff, 7), bad[field * 8 + 7] = 0x7f;  // INT64_MAX
        assert_int_equal(loader_load_state(re, bad, len), -1);
        assert_error_contains("corrupt stream position");
    }
    memcpy(bad, st, len);
    memset(bad + 10 * 8, 0, 8), bad[10 * 8 + 7] = 0x40;  // batches 2^62: still a possible count
    assert_int_equal(loader_load_state(re, bad, len), 0);
    assert_int_equal(loader_load_state(re, before, len0), 0);
    assert_int_equal(loader_state_size(re), len0);
    loader_save_state(re, after);
    assert_memory_equal(before, after, len0);
    LoaderConfig c2 = c;
    c2.seed++;
    DataLoader *x = open1(path, &c2);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("seed");
    loader_free(x);
    c2 = c;
    c2.world = 2;
    x = open1(path, &c2);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("rank 0 of 1");
    loader_free(x);
    c2 = c;
    c2.shuffle = 0;
    x = open1(path, &c2);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("mode");
    loader_free(x);
    x = open1(other, &c);
    assert_int_equal(loader_load_state(x, st, len), -1);
    assert_error_contains("different data");
    loader_free(x);
    free(bad);
    free(before);
    free(after);
    free(st);
    loader_free(re);
    loader_free(dl);

    // validation mode: resume mid-pass and finish identically
    c = config(2, 15, 0, 8, 2);
    dl = open1(path, &c);
    next_n(dl, 3, in, tg, 0);
    len = loader_state_size(dl);
    st = malloc(len);
    loader_save_state(dl, st);
    re = open1(path, &c);
    assert_int_equal(loader_load_state(re, st, len), 0);
    int rc1, rc2, n = 0;
    do {
        rc1 = loader_next(dl, in, tg);
        rc2 = loader_next(re, in2, tg2);
        assert_int_equal(rc1, rc2);
        assert_int_equal(dl->rows, re->rows);
        assert_memory_equal(in, in2, BT * sizeof *in);
        assert_memory_equal(tg, tg2, BT * sizeof *tg);
        n++;
    } while (rc1 == 1);
    assert_true(n > 2);
    free(st);
    loader_free(re);
    loader_free(dl);
    remove_tree(dir);
    free(path);
    free(other);
    free(dir);
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

static void expect_open_error(const char *const *paths, int n, int bos, const LoaderConfig *c, const char *needle) {
    err_clear();
    DataLoader *dl = loader_open(paths, n, bos, c);
    assert_null(dl);
    assert_error_contains(needle);
}

static void test_bad_config_and_shards(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    int lens[] = {4, 5, 6};
    char *good = write_docs(dir, "good.bin", lens, 3, 0);
    const char *p[] = {good};
    LoaderConfig c = config(2, 8, 1, 0, 0);
    DataLoader *dl = loader_open(p, 1, BOS, &c);  // 0 = defaults
    assert_non_null(dl);
    assert_int_equal(dl->cfg.buffer_docs, LOADER_BUFFER_DOCS);
    assert_int_equal(dl->cfg.refill_docs, LOADER_REFILL_DOCS);
    loader_free(dl);
    LoaderConfig b = c;
    b.B = 0;
    expect_open_error(p, 1, BOS, &b, "B (rows per batch) must be > 0");
    b = c;
    b.T = -3;
    expect_open_error(p, 1, BOS, &b, "T (sequence length) must be > 0, got -3");
    b = c;
    b.world = 2;
    b.rank = 2;
    expect_open_error(p, 1, BOS, &b, "rank 2 is outside [0, world = 2)");
    b.rank = -1;
    expect_open_error(p, 1, BOS, &b, "rank -1 is outside");
    b = c;
    b.world = 0;
    expect_open_error(p, 1, BOS, &b, "world size must be >= 1");
    b = c;
    b.buffer_docs = -1;
    expect_open_error(p, 1, BOS, &b, "buffer_docs");
    b = c;
    b.world = 8;
    b.rank = 5;  // 3 documents: rank 5 has none
    expect_open_error(p, 1, BOS, &b, "rank 5 of 8 gets no documents");
    expect_open_error(p, 0, BOS, &c, "no shards");
    expect_open_error(p, 1, 70000, &c, "does not fit a uint16");
    // a missing shard, a bad shard
    char *missing = path_join(dir, "missing.bin");
    const char *pm[] = {good, missing};
    expect_open_error(pm, 2, BOS, &c, "missing.bin");
    char *junk = path_join(dir, "junk.bin");
    char zeros[2048] = {0};
    test_write_file(junk, zeros, sizeof zeros);
    const char *pj[] = {junk};
    expect_open_error(pj, 1, BOS, &c, "not a token shard");
    // a shard without documents
    char *empty = write_docs(dir, "empty.bin", lens, 0, 0);
    const char *pe[] = {empty};
    expect_open_error(pe, 1, BOS, &c, "no documents");
    // the wrong <|bos|> id: the shard does not start with it
    expect_open_error(p, 1, 7, &c, "not <|bos|> (7)");
    free(missing);
    free(junk);
    free(empty);
    free(good);
    remove_tree(dir);
    free(dir);
}

// Keep mode (the default): a cropped document continues in a later row from its last placed token,
// so in one validation pass every within-document transition (token j-1 -> token j) is an
// (input, target) pair exactly once, with nothing discarded; and resume still works.
static void test_keep_mode_scores_every_token_once(void **state) {
    (void)state;
    char *dir = test_tmpdir("loader");
    // By hand, T = 7 (rows of 8): row 1 = doc 0 (6) + 2 cropped tokens of doc 1, whose rest (3
    // tokens, from its 2nd) is kept; row 2 = doc 2 (6), then the rest must NOT follow mid-row
    // (its first token was already scored), so row 2 ends; row 3 = the rest of doc 1.
    int small[] = {6, 4, 6};
    char *p3 = write_docs(dir, "small.bin", small, 3, 0);
    LoaderConfig c3 = config(1, 7, 0, 3, 3);
    c3.discard_crops = 0;
    DataLoader *d3 = open1(p3, &c3);
    int32_t i3[7], t3[7];
    int32_t r1i[7] = {tok(0, 0), tok(0, 1), tok(0, 2), tok(0, 3), tok(0, 4), tok(0, 5), tok(1, 0)};
    int32_t r1t[7] = {tok(0, 1), tok(0, 2), tok(0, 3), tok(0, 4), tok(0, 5), tok(1, 0), tok(1, 1)};
    int32_t r2i[7] = {tok(2, 0), tok(2, 1), tok(2, 2), tok(2, 3), tok(2, 4), tok(2, 5), BOS};
    int32_t r2t[7] = {tok(2, 1), tok(2, 2), tok(2, 3), tok(2, 4), tok(2, 5), -1, -1};
    int32_t r3i[7] = {tok(1, 1), tok(1, 2), tok(1, 3), BOS, BOS, BOS, BOS};
    int32_t r3t[7] = {tok(1, 2), tok(1, 3), -1, -1, -1, -1, -1};
    assert_int_equal(loader_next(d3, i3, t3), 1);
    assert_row(i3, t3, r1i, r1t, 7);
    assert_int_equal(loader_next(d3, i3, t3), 1);
    assert_row(i3, t3, r2i, r2t, 7);
    assert_int_equal(loader_next(d3, i3, t3), 1);
    assert_row(i3, t3, r3i, r3t, 7);
    assert_int_equal(loader_next(d3, i3, t3), 0);
    loader_free(d3);
    free(p3);
    int lens[40];
    some_lengths(lens, 40, 1, 100, 11);
    char *path = write_docs(dir, "val.bin", lens, 40, 0);
    for (int T = 3; T <= 40; T += 37) {
        LoaderConfig c = config(3, T, 0, 8, 3);
        c.discard_crops = 0;
        DataLoader *dl = open1(path, &c);
        int seen[40][100] = {{0}};
        int32_t in[3 * 40], tg[3 * 40];
        int total = 0;
        while (loader_next(dl, in, tg) == 1)
            for (int i = 0; i < 3 * T; i++) {
                if (tg[i] < 0 || tg[i] == BOS) continue;
                total++;
                int d = tg[i] / 100, j = tg[i] % 100;
                assert_int_equal(in[i], tok(d, j - 1));  // its real predecessor
                seen[d][j]++;
            }
        for (int d = 0; d < 40; d++)
            for (int j = 1; j < lens[d]; j++) {
                if (seen[d][j] != 1) print_error("T=%d: token %d of document %d scored %d times\n", T, j, d, seen[d][j]);
                assert_int_equal(seen[d][j], 1);
            }
        int want = 0;
        for (int d = 0; d < 40; d++) want += lens[d] - 1;
        assert_int_equal(total, want);  // no token scored twice, even across documents
        assert_int_equal(dl->tokens_cropped, 0);
        loader_free(dl);
    }
    // resume in keep mode (the buffer holds partly consumed documents)
    LoaderConfig c = config(2, 5, 1, 6, 2);
    c.discard_crops = 0;
    DataLoader *a = open1(path, &c), *b = open1(path, &c);
    int32_t in[10], tg[10], in2[10], tg2[10];
    for (int k = 0; k < 7; k++) assert_int_equal(loader_next(a, in, tg), 1);
    unsigned char *st = malloc(loader_state_size(a));
    size_t n = loader_save_state(a, st);
    assert_int_equal(loader_load_state(b, st, n), 0);
    for (int k = 0; k < 5; k++) {
        assert_int_equal(loader_next(a, in, tg), 1);
        assert_int_equal(loader_next(b, in2, tg2), 1);
        assert_memory_equal(in, in2, sizeof in);
        assert_memory_equal(tg, tg2, sizeof tg);
    }
    free(st);
    loader_free(a);
    loader_free(b);
    remove_tree(dir);
    free(path);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bestfit_by_hand),
        cmocka_unit_test(test_bestfit_ties_refill_and_short_batch),
        cmocka_unit_test(test_crop_when_nothing_fits),
        cmocka_unit_test(test_train_rows_are_packed_documents),
        cmocka_unit_test(test_seed_determinism),
        cmocka_unit_test(test_permutation_pinned),
        cmocka_unit_test(test_ranks_split_each_epoch),
        cmocka_unit_test(test_val_single_pass_covers_everything),
        cmocka_unit_test(test_save_load_resumes_exactly),
        cmocka_unit_test(test_keep_mode_scores_every_token_once),
        cmocka_unit_test(test_bad_config_and_shards),
    };
    return cmocka_run_group_tests_name("loader", tests, NULL, NULL);
}
