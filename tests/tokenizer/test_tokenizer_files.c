// tests/tokenizer/test_tokenizer_files.c — loading tokenizer folders: tokenizer_load reads the two
// files and tokenizer_parse checks them; a malformed file is a bad-input error (exit 2) naming
// file:line or the key, a missing one a runtime error (exit 1).
#include "test_util.h"

#include "tokenizer/tokenizer.h"

static Tokenizer *bytes_tokenizer(void) {
    uint8_t b[258];
    const uint8_t *t[258];
    uint32_t l[258];
    for (int i = 0; i < 256; i++) b[i] = (uint8_t)i, t[i] = &b[i], l[i] = 1;
    static const uint8_t ab[] = "ab", abc[] = "abc";
    t[256] = ab, l[256] = 2, t[257] = abc, l[257] = 3;
    Tokenizer *tok = tokenizer_build(t, l, 258, "[a-z]+|[^a-z]+");
    assert_non_null(tok);
    return tok;
}

typedef struct {
    char *meta, *ranks;
    size_t meta_len, ranks_len;
} Files;

static Files saved(const Tokenizer *tok, const char *dir) {
    assert_int_equal(tokenizer_save(tok, dir), 0);
    char *mp = path_join(dir, "tokenizer.json"), *rp = path_join(dir, "tokenizer.tiktoken");
    Files f;
    f.meta = read_file(mp, &f.meta_len);
    f.ranks = read_file(rp, &f.ranks_len);
    assert_non_null(f.meta);
    assert_non_null(f.ranks);
    free(mp), free(rp);
    return f;
}

// tokenizer_parse on meta and on ranks with `from` replaced by `to` (once); expects an error.
static void expect_bad(const Files *f, int in_ranks, const char *from, const char *to, const char *needle) {
    const char *src = in_ranks ? f->ranks : f->meta;
    const char *at = strstr(src, from);
    assert_non_null(at);
    size_t n = strlen(src) + strlen(to) + 1;
    char *edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
    Tokenizer *tok = in_ranks ? tokenizer_parse(f->meta, f->meta_len, "t.json", edited, strlen(edited), "t.tiktoken")
                              : tokenizer_parse(edited, strlen(edited), "t.json", f->ranks, f->ranks_len, "t.tiktoken");
    if (tok) fail_msg("accepted %s -> %s", from, to);
    assert_error_contains(needle);
    assert_int_equal(err_exit_code(), 2);
    free(edited);
}

static void test_load_and_parse(void **state) {
    (void)state;
    char *dir = test_tmpdir("tokfiles");
    Tokenizer *tok = bytes_tokenizer();
    tok->train_docs = 12, tok->train_chars = 3456;
    Files f = saved(tok, dir);
    Tokenizer *a = tokenizer_load(dir);
    assert_non_null(a);
    assert_string_equal(a->id, tok->id);
    assert_int_equal(a->train_docs, 12);
    // from memory, not NUL-terminated: only the given lengths are read
    Tokenizer *b = tokenizer_parse(f.meta, f.meta_len, "m", f.ranks, f.ranks_len - 1, "r");  // "...257" without "\n"
    assert_non_null(b);
    assert_int_equal(b->vocab_size, 258 + TOKENIZER_N_SPECIAL);
    tokenizer_free(a), tokenizer_free(b);
    // a missing file is a runtime error
    char *empty = test_tmpdir("tokempty");
    assert_null(tokenizer_load(empty));
    assert_error_contains("tokenizer.json");
    assert_int_equal(err_exit_code(), 1);
    remove_tree(empty);
    free(empty);
    // malformed: bad input, naming file:line or the key
    expect_bad(&f, 1, "YWJj 257", "YWJj +257", "t.tiktoken:258: expected `base64 rank`");
    expect_bad(&f, 1, "YWJj 257", "YWJj  257", "t.tiktoken:258: expected `base64 rank`");
    expect_bad(&f, 1, "YWJj 257", "YWJj 0257x", "t.tiktoken:258: expected `base64 rank`");
    expect_bad(&f, 1, "YWJj 257", "YWJj 258", "t.tiktoken:258: rank 258 out of order (expected 257");
    expect_bad(&f, 1, "YWJj 257", "YW=j 257", "t.tiktoken:258: expected `base64 rank`");
    expect_bad(&f, 1, "YWI= 256", "YWJj 256", "repeats the bytes of an earlier token");
    expect_bad(&f, 0, "\"pattern\"", "\"patter\"", "t.json: missing string field \"pattern\"");
    expect_bad(&f, 0, "{", "[", "t.json: not a JSON object");
    expect_bad(&f, 0, "[a-z]+|", "([a-z]+|", "t.tiktoken");  // a pattern PCRE2 refuses
    expect_bad(&f, 0, "\"vocab_size\":\t267", "\"vocab_size\":\t267.5", "t.json: vocab_size does not match");
    // a count outside int64_t's range is refused before any conversion (undefined behaviour);
    // tests/fuzz/corpus/tokenizer/huge_training_count
    expect_bad(&f, 0, "\"docs_used\":\t12", "\"docs_used\":\t1e300", "t.json: training.docs_used must be a whole number");
    expect_bad(&f, 0, "\"docs_used\":\t12", "\"docs_used\":\t-1", "training.docs_used");
    expect_bad(&f, 0, "\"chars_used\":\t3456", "\"chars_used\":\t\"x\"", "training.chars_used");
    free(f.meta), free(f.ranks);
    tokenizer_free(tok);
    remove_tree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_and_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
