// tests/data/test_data.c — corpus reading, llm.c shards, and `prepare` end to end on a small
// corpus: round trips, clear errors, and no partial output left behind.
#include "test_util.h"

#include <dirent.h>

#include "data/corpus.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "tokenizer/tokenizer.h"

// ---------------------------------------------------------------------------------------------
// Shards
// ---------------------------------------------------------------------------------------------

static void test_shard_roundtrip(void **state) {
    (void)state;
    char *dir = test_tmpdir("shard"), *path = path_join(dir, "s.bin");
    uint16_t toks[1000];
    for (int i = 0; i < 1000; i++) toks[i] = (uint16_t)(i * 65 + 7);
    ShardWriter w;
    assert_int_equal(shard_writer_open(&w, path), 0);
    assert_int_equal(shard_writer_append(&w, toks, 600), 0);
    assert_int_equal(shard_writer_append(&w, toks + 600, 400), 0);
    assert_false(path_exists(path));  // nothing at the final path until close
    assert_int_equal(shard_writer_close(&w), 0);
    uint16_t *back;
    size_t n;
    assert_int_equal(shard_read(path, &back, &n), 0);
    assert_int_equal(n, 1000);
    assert_memory_equal(back, toks, sizeof toks);
    free(back);
    // the header is llm.c's: magic, version, count
    size_t len;
    char *raw = read_file(path, &len);
    int32_t h[3];
    memcpy(h, raw, sizeof h);
    assert_int_equal(h[0], 20240520);
    assert_int_equal(h[1], 1);
    assert_int_equal(h[2], 1000);
    assert_int_equal(len, 1024 + 2000);
    // truncated
    test_write_file(path, raw, len - 2);
    assert_int_equal(shard_read(path, &back, &n), -1);
    assert_error_contains("truncated");
    // wrong magic
    raw[0] ^= 1;
    test_write_file(path, raw, len);
    assert_int_equal(shard_count(path, &n), -1);
    assert_error_contains("not a token shard");
    // too short for a header
    test_write_file(path, raw, 10);
    assert_int_equal(shard_read(path, &back, &n), -1);
    assert_error_contains("too short");
    free(raw);
    remove_tree(dir);
    free(dir);
    free(path);
}

static void test_shard_abort_leaves_nothing(void **state) {
    (void)state;
    char *dir = test_tmpdir("shardabort"), *path = path_join(dir, "s.bin");
    ShardWriter w;
    uint16_t t = 1;
    assert_int_equal(shard_writer_open(&w, path), 0);
    assert_int_equal(shard_writer_append(&w, &t, 1), 0);
    shard_writer_abort(&w);
    DIR *d = opendir(dir);
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));) entries += e->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 0);
    remove_tree(dir);
    free(dir);
    free(path);
}


// Every token id is checked against the vocab as a shard is loaded: an id past it would index
// past the embedding and the loss rows (SIGSEGV, a heap overflow or a silently wrong val_bpb).
static void test_shard_ids_checked_against_the_vocab(void **state) {
    (void)state;
    char *dir = test_tmpdir("shardvocab"), *path = path_join(dir, "val_000000.bin");
    enum { N = 200000, BOS = 300, V = 309 };
    uint16_t *toks = malloc(N * sizeof *toks);
    for (int i = 0; i < N; i++) toks[i] = i % 1000 == 0 ? BOS : (uint16_t)(i % 299);
    toks[123457] = 9000;  // past the vocab, in the second 64k block
    toks[150001] = 65535;
    ShardWriter w;
    assert_int_equal(shard_writer_open(&w, path), 0);
    assert_int_equal(shard_writer_append(&w, toks, N), 0);
    assert_int_equal(shard_writer_close(&w), 0);
    // the check itself: the first bad token, its offset in the file, the id, the vocab
    assert_int_equal(shard_check_tokens(toks, N, V, "s.bin"), -1);
    assert_error_contains("s.bin: token 123457 (byte offset 247938) is id 9000, outside the tokenizer's vocabulary of 309");
    assert_int_equal(err_exit_code(), 2);
    assert_int_equal(shard_check_tokens(toks, 123457, V, "s.bin"), 0);
    assert_int_equal(shard_check_tokens(toks, N, 65536, "s.bin"), 0);  // every uint16 fits
    assert_int_equal(shard_check_tokens(toks, N, 0, "s.bin"), 0);      // 0: unchecked
    toks[0] = V;  // the first token past the vocab, and the vocab's own size
    assert_int_equal(shard_check_tokens(toks, N, V, "s.bin"), -1);
    assert_error_contains("token 0 (byte offset 1024) is id 309");
    toks[0] = BOS;
    // through the loader, as training and evaluation open shards
    LoaderConfig c = loader_defaults();
    c.B = 2, c.T = 16, c.shuffle = 0, c.vocab_size = V;
    const char *paths[] = {path};
    assert_null(loader_open(paths, 1, BOS, &c));
    assert_error_contains(path);
    assert_error_contains("token 123457 (byte offset 247938) is id 9000");
    assert_int_equal(err_exit_code(), 2);
    c.vocab_size = 0;  // unchecked: loads
    DataLoader *dl = loader_open(paths, 1, BOS, &c);
    assert_non_null(dl);
    loader_free(dl);
    c.vocab_size = BOS;  // the <|bos|> id must be in the vocab too
    assert_null(loader_open(paths, 1, BOS, &c));
    assert_error_contains("vocab_size 300 must be 0 (unchecked) or above the <|bos|> id 300");
    // the same check from memory
    c.vocab_size = V;
    assert_null(loader_open_tokens(toks, N, "mem", BOS, &c));
    assert_error_contains("mem: token 123457");
    toks[123457] = toks[150001] = 1;
    dl = loader_open_tokens(toks, N, "mem", BOS, &c);
    assert_non_null(dl);
    assert_int_equal(dl->n_docs, N / 1000);
    loader_free(dl);
    free(toks);
    remove_tree(dir);
    free(dir);
    free(path);
}

// shard_parse is the header check of shard_read, on bytes in memory; a bad header is bad input.
static void test_shard_parse_from_memory(void **state) {
    (void)state;
    unsigned char buf[1024 + 6] = {0};
    int32_t h[3] = {20240520, 1, 3};
    memcpy(buf, h, sizeof h);
    uint16_t t[3] = {7, 8, 9};
    memcpy(buf + 1024, t, sizeof t);
    const uint16_t *tok;
    size_t n;
    assert_int_equal(shard_parse(buf, sizeof buf, "m.bin", &tok, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(tok[2], 9);
    assert_int_equal(shard_parse(buf, sizeof buf - 1, "m.bin", &tok, &n), -1);
    assert_error_contains("m.bin: truncated: the header says 3 tokens (1030 bytes) but the file has 1029 bytes");
    assert_int_equal(err_exit_code(), 2);
    assert_int_equal(shard_parse(buf, 1000, "m.bin", &tok, &n), -1);
    assert_error_contains("too short for a token shard (1000 bytes");
    h[2] = -1;
    memcpy(buf, h, sizeof h);
    assert_int_equal(shard_parse(buf, sizeof buf, "m.bin", &tok, &n), -1);
    assert_error_contains("negative token count -1");
    h[1] = 2;
    memcpy(buf, h, sizeof h);
    assert_int_equal(shard_parse(buf, sizeof buf, "m.bin", &tok, &n), -1);
    assert_error_contains("unsupported shard version 2");
    assert_int_equal(err_exit_code(), 2);
}

// ---------------------------------------------------------------------------------------------
// Corpus
// ---------------------------------------------------------------------------------------------

static void test_corpus_formats_and_errors(void **state) {
    (void)state;
    char *dir = test_tmpdir("corpus"), *jl = path_join(dir, "a.jsonl"), *txt = path_join(dir, "b.txt");
    const char *good = "{\"text\": \"first \\u00e9\"}\n\n{\"text\": \"second\", \"id\": 2}\n";
    test_write_file(jl, good, strlen(good));
    test_write_file(txt, "whole file\nis one doc\n", 22);
    DocList d = {0};
    assert_int_equal(corpus_read_file(jl, &d), 0);
    assert_int_equal(d.n, 2);
    assert_string_equal(doc_text(&d, 0), "first \xc3\xa9");
    assert_string_equal(doc_text(&d, 1), "second");
    assert_int_equal(corpus_read_file(txt, &d), 0);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.len[0], 22);
    const char *bad = "{\"text\": \"ok\"}\n{\"text\": \"ok\"}\n{\"text\": \"unterminated}\n";
    test_write_file(jl, bad, strlen(bad));
    assert_int_equal(corpus_read_file(jl, &d), -1);
    assert_error_contains("a.jsonl:3: not valid JSON");
    const char *notext = "{\"body\": \"x\"}\n";
    test_write_file(jl, notext, strlen(notext));
    assert_int_equal(corpus_read_file(jl, &d), -1);
    assert_error_contains("a.jsonl:1: no string field \"text\"");
    char *missing = path_join(dir, "missing.jsonl");
    assert_int_equal(corpus_read_file(missing, &d), -1);
    assert_error_contains("missing.jsonl");
    doclist_free(&d);
    remove_tree(dir);
    free(dir);
    free(jl);
    free(txt);
    free(missing);
}

// ---------------------------------------------------------------------------------------------
// prepare, end to end on a small corpus
// ---------------------------------------------------------------------------------------------

typedef struct {
    char *root, *train, *val, *cache;
} Corpus;

static Corpus make_corpus(void) {
    Corpus c;
    c.root = test_tmpdir("prepare");
    c.train = path_join(c.root, "train");
    c.val = path_join(c.root, "val");
    c.cache = path_join(c.root, "cache");
    mkdir_p(c.train);
    mkdir_p(c.val);
    char *f1 = path_join(c.train, "t1.jsonl"), *f2 = path_join(c.train, "t2.txt"), *f3 = path_join(c.val, "v.jsonl");
    char buf[8192];
    size_t k = 0;
    for (int i = 0; i < 40; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "{\"text\": \"Document %d: the cat sat on the mat, "
                              "and the dog didn't.\"}\n", i);
    test_write_file(f1, buf, k);
    const char *story = "Once upon a time there were three little pigs.\nThe end.\n";
    test_write_file(f2, story, strlen(story));
    const char *v = "{\"text\": \"The cat and the dog.\"}\n{\"text\": \"A mat.\"}\n";
    test_write_file(f3, v, strlen(v));
    free(f1);
    free(f2);
    free(f3);
    return c;
}

static void free_corpus(Corpus *c) {
    remove_tree(c->root);
    free(c->root);
    free(c->train);
    free(c->val);
    free(c->cache);
}

static PrepareConfig small_config(const Corpus *c, const char **train, const char **val) {
    PrepareConfig cfg = prepare_defaults();
    train[0] = c->train;
    val[0] = c->val;
    cfg.train = train;
    cfg.n_train = 1;
    cfg.val = val;
    cfg.n_val = 1;
    cfg.cache_dir = c->cache;
    cfg.bpe.vocab_size = 300;
    cfg.shard_tokens = 200;  // force several train shards
    cfg.quiet = 1;
    return cfg;
}

// Decode every document of a split's shards back to text.
static void check_split(const PrepareResult *r, const Tokenizer *tok, const char *prefix, int shards,
                        const char *const *want, int n_want) {
    int doc = -1;
    uint8_t *text = NULL;
    size_t len = 0, cap = 0;
    for (int s = 0; s < shards; s++) {
        char name[64];
        snprintf(name, sizeof name, "%s_%06d.bin", prefix, s);
        char *path = path_join(r->data_dir, name);
        uint16_t *t;
        size_t n;
        assert_int_equal(shard_read(path, &t, &n), 0);
        assert_true(n > 0);
        assert_int_equal(t[0], tok->bos_id);  // documents never straddle shards
        for (size_t i = 0; i < n; i++) {
            if (t[i] == tok->bos_id) {
                if (doc >= 0) {
                    assert_int_equal(len, strlen(want[doc]));
                    assert_memory_equal(text, want[doc], len);
                }
                doc++;
                len = 0;
                continue;
            }
            uint32_t id = t[i];
            assert_int_equal(tokenizer_decode(tok, &id, 1, &text, &len, &cap), 0);
        }
        free(t);
        free(path);
    }
    assert_int_equal(doc + 1, n_want);
    assert_int_equal(len, strlen(want[doc]));
    assert_memory_equal(text, want[doc], len);
    free(text);
}

static void test_prepare_end_to_end_and_cached(void **state) {
    (void)state;
    Corpus c = make_corpus();
    const char *train[1], *val[1];
    PrepareConfig cfg = small_config(&c, train, val);
    PrepareResult r;
    assert_int_equal(prepare_run(&cfg, &r), 0);
    assert_false(r.cached);
    assert_int_equal(r.train.docs, 41);
    assert_int_equal(r.val.docs, 2);
    assert_true(r.train.shards > 1);
    assert_int_equal(r.val.shards, 1);
    Tokenizer *tok = tokenizer_load(r.tokenizer_dir);
    assert_non_null(tok);
    assert_int_equal(tok->vocab_size, 300);
    const char *val_docs[] = {"The cat and the dog.", "A mat."};
    check_split(&r, tok, "val", r.val.shards, val_docs, 2);
    char *train_docs[41];
    for (int i = 0; i < 40; i++) {
        train_docs[i] = malloc(128);
        snprintf(train_docs[i], 128, "Document %d: the cat sat on the mat, and the dog didn't.", i);
    }
    train_docs[40] = "Once upon a time there were three little pigs.\nThe end.\n";
    check_split(&r, tok, "train", r.train.shards, (const char *const *)train_docs, 41);
    for (int i = 0; i < 40; i++) free(train_docs[i]);
    // second run: nothing to do, same numbers
    PrepareResult r2;
    assert_int_equal(prepare_run(&cfg, &r2), 0);
    assert_true(r2.cached);
    assert_string_equal(r2.data_dir, r.data_dir);
    assert_int_equal(r2.train.tokens, r.train.tokens);
    assert_int_equal(r2.val.tokens, r.val.tokens);
    // with the tokenizer given explicitly: same data folder
    cfg.tokenizer_dir = r.tokenizer_dir;
    assert_int_equal(prepare_run(&cfg, &r2), 0);
    assert_true(r2.cached);
    assert_string_equal(r2.data_dir, r.data_dir);
    tokenizer_free(tok);
    free_corpus(&c);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_prepare_bad_input_leaves_nothing(void **state) {
    (void)state;
    Corpus c = make_corpus();
    const char *train[1], *val[1];
    PrepareConfig cfg = small_config(&c, train, val);
    char *v2 = path_join(c.val, "w.jsonl");
    test_write_file(v2, "{\"text\": \"fine\"}\nnot json\n", 26);
    PrepareResult r;
    assert_int_equal(prepare_run(&cfg, &r), -1);
    assert_error_contains("w.jsonl:2: not valid JSON");
    char *shards = path_join(c.cache, "shards");
    assert_int_equal(count_entries(shards), 0);  // no shard folder, no temp folder
    // vocabulary too small
    unlink(v2);
    cfg.bpe.vocab_size = 200;
    assert_int_equal(prepare_run(&cfg, &r), -1);
    assert_error_contains("at least 265");
    // unreadable / missing input
    const char *nowhere[] = {"/nonexistent/frontier/train"};
    cfg.bpe.vocab_size = 300;
    cfg.train = nowhere;
    assert_int_equal(prepare_run(&cfg, &r), -1);
    assert_error_contains("--train");
    assert_error_contains("/nonexistent/frontier/train");
    // a folder without corpus files
    char *empty = path_join(c.root, "empty");
    mkdir_p(empty);
    const char *e1[] = {empty};
    cfg.train = e1;
    assert_int_equal(prepare_run(&cfg, &r), -1);
    assert_error_contains("no input files");
    assert_int_equal(count_entries(shards), 0);
    free(empty);
    free(shards);
    free(v2);
    free_corpus(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_roundtrip),
        cmocka_unit_test(test_shard_abort_leaves_nothing),
        cmocka_unit_test(test_shard_ids_checked_against_the_vocab),
        cmocka_unit_test(test_shard_parse_from_memory),
        cmocka_unit_test(test_corpus_formats_and_errors),
        cmocka_unit_test(test_prepare_end_to_end_and_cached),
        cmocka_unit_test(test_prepare_bad_input_leaves_nothing),
    };
    return cmocka_run_group_tests_name("data", tests, NULL, NULL);
}
