// tests/tokenizer/test_bpe_train.c — BPE training semantics, checkable by hand.
#include "test_util.h"

#include "data/corpus.h"
#include "tokenizer/bpe_train.h"

// Feed `count` copies of each word as separate documents (each document is one chunk).
static BpeTrainer *trainer_with_words(int vocab, const char *const *words, const int *counts, int n) {
    BpeTrainConfig cfg = bpe_train_defaults();
    cfg.vocab_size = vocab;
    cfg.threads = 2;
    BpeTrainer *t = bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, &cfg);
    assert_non_null(t);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < counts[i]; k++) {
            size_t len = strlen(words[i]);
            assert_int_equal(bpe_trainer_feed(t, &words[i], &len, 1), 0);
        }
    return t;
}

static void assert_token(const Tokenizer *tok, int id, const char *bytes) {
    size_t n = strlen(bytes);
    if (tok->tok_len[id] != n || memcmp(tok->bytes + tok->tok_off[id], bytes, n) != 0) {
        print_error("token %d is \"%.*s\", expected \"%s\"\n", id, (int)tok->tok_len[id],
                    (const char *)tok->bytes + tok->tok_off[id], bytes);
        fail();
    }
}

// hug x10, pug x5, pun x12, bun x4, hugs x5. Pair counts: ug 20, un 16, pu 17, hu 15 ...
// Merge 1: (u,g) 20. Then (u,n) 16, (h,ug) 15, (p,un) 12; then a tie at 5 between (p,ug) and
// (hug,s): the smaller pair wins, p=112 < hug=258. Then (hug,s) 5, (b,un) 4. Nothing is left.
static const char *const WORDS[] = {"hug", "pug", "pun", "bun", "hugs"};
static const int COUNTS[] = {10, 5, 12, 4, 5};

static void test_first_merges_by_hand(void **state) {
    (void)state;
    BpeTrainer *t = trainer_with_words(256 + 7 + 9, WORDS, COUNTS, 5);
    Tokenizer *tok = bpe_trainer_finish(t);
    bpe_trainer_free(t);
    assert_non_null(tok);
    const char *want[] = {"ug", "un", "hug", "pun", "pug", "hugs", "bun"};
    for (int i = 0; i < 7; i++) assert_token(tok, 256 + i, want[i]);
    assert_int_equal(tok->vocab_size, 272);
    assert_int_equal(tok->bos_id, 263);
    assert_int_equal(tok->token_bytes[263], 0);
    assert_int_equal(tok->token_bytes[258], 3);
    tokenizer_free(tok);
}

static void test_too_few_pairs_is_an_error(void **state) {
    (void)state;
    BpeTrainer *t = trainer_with_words(256 + 8 + 9, WORDS, COUNTS, 5);
    assert_null(bpe_trainer_finish(t));
    bpe_trainer_free(t);
    assert_error_contains("only enough distinct pairs for 7 merges");
}

static void test_overlapping_pairs(void **state) {
    (void)state;
    // "aaaa" x3: (a,a) counted 3 per word; merging gives [aa, aa], then (aa,aa) -> "aaaa".
    const char *w[] = {"aaaa"};
    const int c[] = {3};
    BpeTrainer *t = trainer_with_words(256 + 2 + 9, w, c, 1);
    Tokenizer *tok = bpe_trainer_finish(t);
    bpe_trainer_free(t);
    assert_non_null(tok);
    assert_token(tok, 256, "aa");
    assert_token(tok, 257, "aaaa");
    tokenizer_free(tok);
}

static void test_doc_cap_and_max_chars(void **state) {
    (void)state;
    BpeTrainConfig cfg = bpe_train_defaults();
    cfg.vocab_size = 300;
    cfg.doc_cap = 3;     // "héllo" -> "hél" (3 characters, 4 bytes)
    cfg.max_chars = 5;   // the second document crosses it and is still used; the third is not
    BpeTrainer *t = bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, &cfg);
    const char *docs[] = {"h\xc3\xa9llo", "abcdef", "zzz"};
    size_t lens[] = {6, 6, 3};
    assert_int_equal(bpe_trainer_feed(t, docs, lens, 3), 1);
    assert_int_equal(bpe_trainer_chars(t), 6);
    assert_int_equal(bpe_trainer_docs(t), 2);
    bpe_trainer_free(t);
}

static void test_bad_vocab_sizes(void **state) {
    (void)state;
    BpeTrainConfig cfg = bpe_train_defaults();
    cfg.vocab_size = 264;
    assert_null(bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, &cfg));
    assert_error_contains("at least 265");
    cfg.vocab_size = 70000;
    assert_null(bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, &cfg));
    assert_error_contains("at most 65536");
}

static Tokenizer *train_on_file(const char *path, int vocab, int threads) {
    DocList docs = {0};
    assert_int_equal(corpus_read_file(path, &docs), 0);
    const char **texts = malloc((size_t)docs.n * sizeof *texts);
    for (int i = 0; i < docs.n; i++) texts[i] = doc_text(&docs, i);
    BpeTrainConfig cfg = bpe_train_defaults();
    cfg.vocab_size = vocab;
    cfg.threads = threads;
    BpeTrainer *t = bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, &cfg);
    assert_int_equal(bpe_trainer_feed(t, texts, docs.len, docs.n), 0);
    Tokenizer *tok = bpe_trainer_finish(t);
    bpe_trainer_free(t);
    free(texts);
    doclist_free(&docs);
    assert_non_null(tok);
    return tok;
}

static void test_deterministic_across_thread_counts(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/text/val/val_openstax_000.jsonl", test_data_root());
    Tokenizer *a = train_on_file(path, 2048, 1), *b = train_on_file(path, 2048, 2);
    assert_string_equal(a->id, b->id);
    tokenizer_free(a);
    tokenizer_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_merges_by_hand),
        cmocka_unit_test(test_too_few_pairs_is_an_error),
        cmocka_unit_test(test_overlapping_pairs),
        cmocka_unit_test(test_doc_cap_and_max_chars),
        cmocka_unit_test(test_bad_vocab_sizes),
        cmocka_unit_test(test_deterministic_across_thread_counts),
    };
    return cmocka_run_group_tests_name("tokenizer/bpe_train", tests, NULL, NULL);
}
