// tests/tokenizer/test_encode.c — encoding, decoding, saving and loading a tokenizer.
//
// A tokenizer (vocab 4096) is trained once on two training files; the fast encoder is checked
// against a plain reference implementation of tiktoken's algorithm on the whole validation
// set, and encode -> decode must give back the input on everything we can think of.
#include "test_util.h"

#include "data/corpus.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/tokenizer.h"
#include "util/hash.h"

static Tokenizer *g_tok;
static DocList g_val[2];

static int setup(void **state) {
    (void)state;
    BpeTrainConfig cfg = bpe_train_defaults();
    cfg.vocab_size = 4096;
    BpeTrainer *t = bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, &cfg);
    const char *files[] = {"text/train/openstax_000.jsonl", "text/train/standardebooks_000.jsonl"};
    for (int f = 0; f < 2; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", test_data_root(), files[f]);
        DocList d = {0};
        if (corpus_read_file(path, &d) != 0) { fprintf(stderr, "%s\n", err_msg()); return -1; }
        const char **texts = malloc((size_t)d.n * sizeof *texts);
        for (int i = 0; i < d.n; i++) texts[i] = doc_text(&d, i);
        bpe_trainer_feed(t, texts, d.len, d.n);
        free(texts);
        doclist_free(&d);
    }
    g_tok = bpe_trainer_finish(t);
    bpe_trainer_free(t);
    const char *val[] = {"text/val/val_openstax_000.jsonl", "text/val/val_standardebooks_000.jsonl"};
    for (int f = 0; f < 2; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", test_data_root(), val[f]);
        if (corpus_read_file(path, &g_val[f]) != 0) return -1;
    }
    return g_tok ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tokenizer_free(g_tok);
    doclist_free(&g_val[0]);
    doclist_free(&g_val[1]);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Reference: tiktoken's algorithm written as plainly as possible (whole-chunk lookup, then
// merge the leftmost lowest-rank adjacent pair until none is a token).
// ---------------------------------------------------------------------------------------------
static int64_t ref_rank(const Tokenizer *tok, const uint8_t *p, size_t n) {
    const uint64_t *v = bmap_find(&tok->ranks, p, n, hash_bytes(p, n));
    return v ? (int64_t)*v : -1;
}

static void ref_encode(const Tokenizer *tok, const uint8_t *text, size_t len, IdVec *out) {
    SplitIter it;
    split_iter_init(&it, tok->splitter);
    split_iter_reset(&it, text, len);
    size_t s, e;
    size_t *bounds = malloc((len + 2) * sizeof *bounds);
    while (split_next(&it, &s, &e) == 1) {
        const uint8_t *piece = text + s;
        size_t n = e - s;
        int64_t whole = ref_rank(tok, piece, n);
        if (whole >= 0) { idvec_push(out, (uint32_t)whole); continue; }
        size_t m = n + 1;  // part k = piece[bounds[k] .. bounds[k+1])
        for (size_t k = 0; k <= n; k++) bounds[k] = k;
        for (;;) {
            int64_t best = -1;
            size_t bk = 0;
            for (size_t k = 0; k + 2 < m; k++) {
                int64_t r = ref_rank(tok, piece + bounds[k], bounds[k + 2] - bounds[k]);
                if (r >= 0 && (best < 0 || r < best)) { best = r; bk = k; }
            }
            if (best < 0) break;
            memmove(bounds + bk + 1, bounds + bk + 2, (m - bk - 2) * sizeof *bounds);
            m--;
        }
        for (size_t k = 0; k + 1 < m; k++)
            idvec_push(out, (uint32_t)ref_rank(tok, piece + bounds[k], bounds[k + 1] - bounds[k]));
    }
    free(bounds);
    split_iter_free(&it);
}

static void assert_roundtrip(Encoder *enc, const uint8_t *text, size_t len) {
    IdVec ids = {0};
    assert_int_equal(encoder_encode(enc, text, len, &ids), 0);
    uint8_t *out = NULL;
    size_t out_len = 0, cap = 0;
    assert_int_equal(tokenizer_decode(g_tok, ids.data, ids.len, &out, &out_len, &cap), 0);
    assert_int_equal(out_len, len);
    assert_true(len == 0 || memcmp(out, text, len) == 0);
    free(out);
    idvec_free(&ids);
}

static void assert_same_ids(const IdVec *a, const IdVec *b, const char *what, int doc) {
    if (a->len == b->len && memcmp(a->data, b->data, a->len * sizeof *a->data) == 0) return;
    size_t k = 0;
    while (k < a->len && k < b->len && a->data[k] == b->data[k]) k++;
    print_error("%s: document %d differs at token %zu (lengths %zu vs %zu)\n", what, doc, k, a->len, b->len);
    fail();
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

static void test_matches_reference_on_validation_set(void **state) {
    (void)state;
    Encoder *fast = encoder_new(g_tok), *heap = encoder_new(g_tok);
    encoder_force_heap_merge(heap, 1);
    int docs = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < g_val[f].n; i++, docs++) {
            const uint8_t *t = (const uint8_t *)doc_text(&g_val[f], i);
            size_t n = g_val[f].len[i];
            IdVec a = {0}, b = {0}, r = {0};
            assert_int_equal(encoder_encode(fast, t, n, &a), 0);
            assert_int_equal(encoder_encode(heap, t, n, &b), 0);
            ref_encode(g_tok, t, n, &r);
            assert_same_ids(&a, &r, "fast vs reference", docs);
            assert_same_ids(&b, &r, "heap merge vs reference", docs);
            idvec_free(&a);
            idvec_free(&b);
            idvec_free(&r);
        }
    assert_int_equal(docs, 143);
    encoder_free(fast);
    encoder_free(heap);
}

static void test_roundtrip_validation_set(void **state) {
    (void)state;
    Encoder *enc = encoder_new(g_tok);
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < g_val[f].n; i++)
            assert_roundtrip(enc, (const uint8_t *)doc_text(&g_val[f], i), g_val[f].len[i]);
    encoder_free(enc);
}

static void test_roundtrip_random_bytes(void **state) {
    (void)state;
    Encoder *enc = encoder_new(g_tok);
    uint64_t x = 0x243f6a8885a308d3ULL;
    for (int round = 0; round < 50; round++) {
        size_t n = 1 + (size_t)(round * 997) % 20000;
        uint8_t *buf = malloc(n);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            // half the rounds: arbitrary bytes; the others: mostly ASCII with stray high bytes
            buf[i] = round % 2 ? (uint8_t)x : (uint8_t)((x % 11) ? 32 + x % 95 : 128 + x % 128);
        }
        assert_roundtrip(enc, buf, n);
        free(buf);
    }
    encoder_free(enc);
}

static void test_roundtrip_edge_cases(void **state) {
    (void)state;
    Encoder *enc = encoder_new(g_tok);
    IdVec ids = {0};
    assert_int_equal(encoder_encode(enc, (const uint8_t *)"", 0, &ids), 0);
    assert_int_equal(ids.len, 0);
    const char rep[] = {'a', ' ', '7', '\n', '.'};
    size_t n = 1 << 20;
    uint8_t *big = malloc(n);
    for (size_t k = 0; k < sizeof rep; k++) {  // 1 MB of one character: one huge chunk for letters
        memset(big, rep[k], n);
        assert_roundtrip(enc, big, n);
    }
    const char *mb = "\xc3\xa9";  // 1 MB of a two-byte character
    for (size_t i = 0; i < n; i++) big[i] = (uint8_t)mb[i % 2];
    assert_roundtrip(enc, big, n);
    free(big);
    idvec_free(&ids);
    encoder_free(enc);
}

static void test_special_tokens_not_parsed(void **state) {
    (void)state;
    Encoder *enc = encoder_new(g_tok);
    IdVec ids = {0};
    const char *s = "<|bos|>";
    assert_int_equal(encoder_encode(enc, (const uint8_t *)s, strlen(s), &ids), 0);
    for (size_t i = 0; i < ids.len; i++) assert_true(ids.data[i] < (uint32_t)g_tok->n_ranks);
    uint32_t bos = (uint32_t)g_tok->bos_id;
    uint8_t *out = NULL;
    size_t len = 0, cap = 0;
    assert_int_equal(tokenizer_decode(g_tok, &bos, 1, &out, &len, &cap), 0);
    assert_int_equal(len, 7);
    assert_memory_equal(out, s, 7);
    uint32_t bad = (uint32_t)g_tok->vocab_size;
    assert_int_equal(tokenizer_decode(g_tok, &bad, 1, &out, &len, &cap), -1);
    assert_error_contains("outside the vocabulary");
    free(out);
    idvec_free(&ids);
    encoder_free(enc);
}

static void test_token_bytes(void **state) {
    (void)state;
    for (int i = 0; i < g_tok->vocab_size; i++)
        assert_int_equal(g_tok->token_bytes[i], i < g_tok->n_ranks ? (int32_t)g_tok->tok_len[i] : 0);
}

static void test_save_load_roundtrip(void **state) {
    (void)state;
    char *dir = test_tmpdir("tok");
    assert_int_equal(tokenizer_save(g_tok, dir), 0);
    Tokenizer *back = tokenizer_load(dir);
    assert_non_null(back);
    assert_string_equal(back->id, g_tok->id);
    assert_int_equal(back->vocab_size, g_tok->vocab_size);
    for (int i = 0; i < g_tok->vocab_size; i++) {
        assert_int_equal(back->tok_len[i], g_tok->tok_len[i]);
        assert_memory_equal(back->bytes + back->tok_off[i], g_tok->bytes + g_tok->tok_off[i], g_tok->tok_len[i]);
    }
    tokenizer_free(back);
    remove_tree(dir);
    free(dir);
}

static void test_load_errors(void **state) {
    (void)state;
    char *dir = test_tmpdir("tokbad");
    assert_null(tokenizer_load(dir));  // nothing there
    assert_error_contains("tokenizer.json");
    assert_int_equal(tokenizer_save(g_tok, dir), 0);
    char *ranks = path_join(dir, "tokenizer.tiktoken");
    size_t len;
    char *text = read_file(ranks, &len);
    // rank 1 must be byte 0x01 (ids 0..255 are the raw bytes, no permutation)
    char *p = strstr(text, "\n") + 1;  // line 2 = byte 0x01, "AQ== 1"
    p[0] = 'A', p[1] = 'g';            // now "Ag== 1" = byte 0x02
    test_write_file(ranks, text, len);
    assert_null(tokenizer_load(dir));
    assert_error_contains("rank 1 must be the single byte 0x01");
    // a malformed line names file:line
    char *q = strstr(text, "\n") + 1;
    memcpy(q, "!!!!", 4);
    test_write_file(ranks, text, len);
    assert_null(tokenizer_load(dir));
    assert_error_contains("tokenizer.tiktoken:2:");
    // two merged tokens swapped: still a valid ranks file, but not the one tokenizer.json names
    free(text);
    assert_int_equal(tokenizer_save(g_tok, dir), 0);
    text = read_file(ranks, &len);
    char *l300 = strstr(text, " 299\n") + 5, *l301 = strstr(l300, "\n") + 1, *l302 = strstr(l301, "\n") + 1;
    size_t n300 = (size_t)(l301 - l300), n301 = (size_t)(l302 - l301);
    char *swapped = malloc(len);
    size_t head = (size_t)(l300 - text);
    memcpy(swapped, text, head);
    memcpy(swapped + head, l301, n301 - 5);         // token of rank 301 ...
    memcpy(swapped + head + n301 - 5, " 300\n", 5); // ... given rank 300
    memcpy(swapped + head + n301, l300, n300 - 5);
    memcpy(swapped + head + n301 + n300 - 5, " 301\n", 5);
    memcpy(swapped + head + n300 + n301, l302, len - head - n300 - n301);
    test_write_file(ranks, swapped, len);
    free(swapped);
    assert_null(tokenizer_load(dir));
    assert_error_contains("id does not match");
    // truncated file (cut at a line end): fewer ranks than tokenizer.json says
    free(text);
    assert_int_equal(tokenizer_save(g_tok, dir), 0);
    text = read_file(ranks, &len);
    size_t cut = len / 2;
    while (text[cut - 1] != '\n') cut--;
    test_write_file(ranks, text, cut);
    assert_null(tokenizer_load(dir));
    assert_error_contains("vocab_size does not match");
    free(text);
    free(ranks);
    remove_tree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_reference_on_validation_set),
        cmocka_unit_test(test_roundtrip_validation_set),
        cmocka_unit_test(test_roundtrip_random_bytes),
        cmocka_unit_test(test_roundtrip_edge_cases),
        cmocka_unit_test(test_special_tokens_not_parsed),
        cmocka_unit_test(test_token_bytes),
        cmocka_unit_test(test_save_load_roundtrip),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests_name("tokenizer/encode", tests, setup, teardown);
}
