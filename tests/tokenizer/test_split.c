// tests/tokenizer/test_split.c — the PCRE2 pre-splitter against Python's `regex` module.
//
// tests/fixtures/split_cases.json holds tricky inputs and the chunks Python's `regex` produced
// with the same pattern (generator: tests/fixtures/gen_split_cases.py). Every case must match
// chunk for chunk. Also: invalid UTF-8 is never lost (gaps become chunks of their own).
#include "test_util.h"

#include <cjson/cJSON.h>

#include "tokenizer/split.h"

static cJSON *load_cases(void) {
    size_t len;
    char *text = read_file("tests/fixtures/split_cases.json", &len);
    assert_non_null(text);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    assert_non_null(root);
    return root;
}

static void test_fixture_pattern_is_ours(void **state) {
    (void)state;
    cJSON *root = load_cases();
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(root, "pattern");
    assert_string_equal(pat->valuestring, NANOCHAT_SPLIT_PATTERN);
    cJSON_Delete(root);
}

static void test_agrees_with_python_regex(void **state) {
    (void)state;
    cJSON *root = load_cases();
    Splitter *sp = splitter_new(NANOCHAT_SPLIT_PATTERN);
    assert_non_null(sp);
    SplitIter it;
    split_iter_init(&it, sp);
    const cJSON *c;
    int n_cases = 0, bad = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "cases")) {
        const char *text = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "chunks");
        split_iter_reset(&it, (const uint8_t *)text, strlen(text));
        size_t s, e;
        int k = 0, n_want = cJSON_GetArraySize(want);
        while (split_next(&it, &s, &e) == 1) {
            const char *w = k < n_want ? cJSON_GetArrayItem(want, k)->valuestring : NULL;
            if (!w || strlen(w) != e - s || memcmp(w, text + s, e - s) != 0) {
                print_error("case %d (%s): chunk %d is \"%.*s\", python says \"%s\"\n", n_cases, text, k,
                            (int)(e - s), text + s, w ? w : "(none)");
                bad++;
                break;
            }
            k++;
        }
        if (k != n_want && !bad) {
            print_error("case %d: %d chunks, python says %d\n", n_cases, k, n_want);
            bad++;
        }
        n_cases++;
    }
    assert_true(n_cases >= 30);
    assert_int_equal(bad, 0);
    split_iter_free(&it);
    splitter_free(sp);
    cJSON_Delete(root);
}

static void test_invalid_utf8_covers_every_byte(void **state) {
    (void)state;
    Splitter *sp = splitter_new(NANOCHAT_SPLIT_PATTERN);
    SplitIter it;
    split_iter_init(&it, sp);
    const uint8_t text[] = "ok \xff\xfe bad \xc3 trunc \xe2\x82 end\x80";
    size_t len = sizeof text - 1, s, e, pos = 0;
    split_iter_reset(&it, text, len);
    int n = 0;
    while (split_next(&it, &s, &e) == 1) {
        assert_int_equal(s, pos);  // contiguous: nothing skipped
        assert_true(e > s);
        pos = e;
        n++;
    }
    assert_int_equal(pos, len);
    assert_true(n > 5);
    split_iter_free(&it);
    splitter_free(sp);
}

static void test_bad_pattern_is_an_error(void **state) {
    (void)state;
    assert_null(splitter_new("(unclosed"));
    assert_error_contains("bad split pattern");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_pattern_is_ours),
        cmocka_unit_test(test_agrees_with_python_regex),
        cmocka_unit_test(test_invalid_utf8_covers_every_byte),
        cmocka_unit_test(test_bad_pattern_is_an_error),
    };
    return cmocka_run_group_tests_name("tokenizer/split", tests, NULL, NULL);
}
