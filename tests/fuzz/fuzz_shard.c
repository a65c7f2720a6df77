// tests/fuzz/fuzz_shard.c — the token shard reader (llm.c format) and the data loader on it.
//
// Input: the bytes of a shard file. shard_parse validates the header and size; the token check
// must agree with a plain scan; then loader_open_tokens packs the tokens under a few configs
// (validation order, shuffled training with 2 ranks, nanochat's discarding crops) and every batch
// must hold ids inside the vocabulary (targets may be -1), validation must end, and a saved state
// loaded into a fresh loader must continue with the identical batches.
#include "fuzz_util.h"

#include "data/loader.h"
#include "data/shard.h"

// The seeds are real shards (tests/fuzz/gen_seeds.sh): vocab 8192, <|bos|> = 8183.
enum { VOCAB = 8192, BOS = 8183 };

static void check_batch(const DataLoader *dl, const int32_t *in, const int32_t *tg, int vocab) {
    const int n = dl->cfg.B * dl->cfg.T;
    int limit = vocab > 0 ? vocab : 65536;
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(in[i] >= 0 && in[i] < limit, "input %d is id %d (vocab %d)", i, in[i], limit);
        FUZZ_CHECK(tg[i] >= -1 && tg[i] < limit, "target %d is id %d (vocab %d)", i, tg[i], limit);
    }
    FUZZ_CHECK(dl->rows >= 0 && dl->rows <= dl->cfg.B, "rows %d of B %d", dl->rows, dl->cfg.B);
}

static void run_loader(const uint16_t *tok, size_t n, LoaderConfig c, int max_batches) {
    DataLoader *dl = loader_open_tokens(tok, n, "fuzz.bin", BOS, &c);
    if (!dl) { fuzz_expect_message(); return; }
    const size_t bt = (size_t)c.B * c.T;
    int32_t *in = malloc(bt * sizeof *in), *tg = malloc(bt * sizeof *tg);
    int32_t *in2 = malloc(bt * sizeof *in2), *tg2 = malloc(bt * sizeof *tg2);
    int rc = 0, b = 0;
    int64_t used = loader_tokens_consumed(dl);
    for (; b < max_batches && (rc = loader_next(dl, in, tg)) == 1; b++) {
        check_batch(dl, in, tg, c.vocab_size);
        FUZZ_CHECK(loader_tokens_consumed(dl) > used, "batch %d took no tokens", b);
        used = loader_tokens_consumed(dl);
        if (b == 2) {  // resume from here must give the same next batch
            size_t len = loader_state_size(dl);
            unsigned char *st = malloc(len);
            FUZZ_CHECK(loader_save_state(dl, st) == len, "state size");
            DataLoader *d2 = loader_open_tokens(tok, n, "fuzz.bin", BOS, &c);
            FUZZ_CHECK(d2, "reopen failed: %s", err_msg());
            FUZZ_CHECK(loader_load_state(d2, st, len) == 0, "own state refused: %s", err_msg());
            int r1 = loader_next(dl, in, tg), r2 = loader_next(d2, in2, tg2);
            FUZZ_CHECK(r1 == r2, "resumed loader returned %d, the original %d", r2, r1);
            if (r1 == 1) {
                FUZZ_CHECK(!memcmp(in, in2, bt * sizeof *in) && !memcmp(tg, tg2, bt * sizeof *tg),
                           "resumed loader gave another batch");
                FUZZ_CHECK(dl->rows == d2->rows, "resumed rows differ");
                check_batch(dl, in, tg, c.vocab_size);
            }
            loader_free(d2);
            free(st);
            if (r1 != 1) { rc = r1; break; }
        }
    }
    FUZZ_CHECK(rc >= 0, "loader_next failed: %s", err_msg());
    // Validation is one pass: it must end (every batch places at least one token).
    if (!c.shuffle) FUZZ_CHECK(b < max_batches, "validation did not end after %d batches", b);
    free(in), free(tg), free(in2), free(tg2);
    loader_free(dl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // The tokens start at byte 1024 of the file: copy so that they are 2-byte aligned as in a read.
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    const uint16_t *tok;
    size_t n;
    if (shard_parse(copy, size, "fuzz.bin", &tok, &n) != 0) {
        fuzz_expect_message();
        free(copy);
        return 0;
    }
    FUZZ_CHECK(size == 1024 + 2 * n, "shard of %zu bytes parsed as %zu tokens", size, n);
    size_t first_bad = n;
    for (size_t i = 0; i < n && first_bad == n; i++)
        if (tok[i] >= VOCAB) first_bad = i;
    int rc = shard_check_tokens(tok, n, VOCAB, "fuzz.bin");
    FUZZ_CHECK((rc != 0) == (first_bad < n), "token check says %d, a plain scan finds %zu of %zu", rc, first_bad, n);
    if (rc != 0) {
        char want[64];
        snprintf(want, sizeof want, "token %zu ", first_bad);
        FUZZ_CHECK(strstr(err_msg(), want) && err_exit_code() == 2, "message: %s", err_msg());
        err_clear();
    }
    // validation: file order, one pass, the vocab checked
    LoaderConfig v = loader_defaults();
    v.B = 2, v.T = 7, v.shuffle = 0, v.buffer_docs = 4, v.refill_docs = 2, v.vocab_size = VOCAB;
    run_loader(tok, n, v, (int)n + 10);  // every batch takes at least one token
    // training, rank 1 of 2, unchecked ids, nanochat's discarded crops
    LoaderConfig t = loader_defaults();
    t.B = 3, t.T = 5, t.rank = 1, t.world = 2, t.seed = 7, t.buffer_docs = 3, t.refill_docs = 1, t.discard_crops = 1;
    run_loader(tok, n, t, 12);
    // training at nanochat's buffer sizes
    LoaderConfig d = loader_defaults();
    d.B = 1, d.T = 33, d.vocab_size = VOCAB;
    run_loader(tok, n, d, 6);
    free(copy);
    return 0;
}
