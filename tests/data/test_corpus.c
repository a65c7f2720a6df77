// tests/data/test_corpus.c — corpus input (data/corpus.h): a document holding a NUL byte is
// refused naming file:line, byte offset and column, never cut short; NUL escapes elsewhere in a
// line (another field, a nested value) and an escaped backslash before "u0000" are not NULs of the
// document and pass.
#include "test_util.h"

#include "data/corpus.h"

static char *g_dir;

static int setup(void **state) {
    (void)state;
    g_dir = test_tmpdir("corpus");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    remove_tree(g_dir);
    free(g_dir);
    return 0;
}

// Write `len` bytes to g_dir/name and read it as a corpus file.
static int read_text(const char *name, const char *data, size_t len, DocList *d) {
    char *path = path_join(g_dir, name);
    test_write_file(path, data, len);
    err_clear();
    int rc = corpus_read_file(path, d);
    free(path);
    return rc;
}

static void expect_docs(const char *name, const char *jsonl, int n, const char *const *want) {
    DocList d = {0};
    if (read_text(name, jsonl, strlen(jsonl), &d) != 0) fail_msg("%s: %s", name, err_msg());
    assert_int_equal(d.n, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(d.len[i], strlen(want[i]));
        assert_memory_equal(doc_text(&d, i), want[i], d.len[i]);
    }
    doclist_free(&d);
}

static void expect_refused(const char *name, const char *data, size_t len, const char *needle) {
    DocList d = {0};
    assert_int_equal(read_text(name, data, len, &d), -1);
    assert_error_contains(needle);
    assert_error_contains("documents may not contain NUL");
    assert_int_equal(err_exit_code(), FRONTIER_EXIT_USAGE);
    doclist_free(&d);
}

static void test_nul_outside_the_document_passes(void **state) {
    (void)state;
    const char *want[] = {"fine", "ok", "x", "a\\u0000", "b\\"};
    expect_docs("ok.jsonl",
                "{\"meta\": {\"text\": \"\\u0000\"}, \"text\": \"fine\"}\n"   // nested, another member
                "{\"a\": [\"x\", \"\\u0000\"], \"title\": \"t\\u0000\", \"text\": \"ok\"}\n"
                "{\"text\": \"x\", \"text\": \"\\u0000\"}\n"                // cJSON takes the first "text"
                "{\"text\": \"a\\\\u0000\"}\r\n"                              // a backslash, then u0000
                "{\"text\": \"b\\\\\", \"x\": \"\\u0000\"}\n",
                5, want);
}

static void test_nul_in_the_document_is_refused(void **state) {
    (void)state;
    const char esc[] = "{\"text\": \"ok\"}\n{\"id\": 7, \"text\": \"cut\\u0000here\"}\n";
    // line 2 starts at byte 15; the backslash is its 23rd byte
    expect_refused("esc.jsonl", esc, sizeof esc - 1, "esc.jsonl:2: a \\u0000 escape in \"text\" at byte offset 37 (column 23)");
    const char esc2[] = "{\"text\": \"a\\\\\\u0000\"}\n";  // an escaped backslash, then a real \u0000
    expect_refused("esc2.jsonl", esc2, sizeof esc2 - 1, "esc2.jsonl:1: a \\u0000 escape");
    const char dup[] = "{\"text\": \"\\u0000\", \"text\": \"x\"}\n";
    expect_refused("dup.jsonl", dup, sizeof dup - 1, "dup.jsonl:1:");
    const char raw[] = "{\"text\": \"ok\"}\n\n{\"text\": \"a\0b\"}\n";
    expect_refused("raw.jsonl", raw, sizeof raw - 1, "raw.jsonl:3: a raw NUL byte at byte offset 27 (column 12)");
    const char raw_other[] = "{\"title\": \"\0\", \"text\": \"ok\"}\n";  // raw NUL anywhere: not JSON text
    expect_refused("raw2.jsonl", raw_other, sizeof raw_other - 1, "raw2.jsonl:1: a raw NUL byte");
    const char txt[] = "first line\nsecond\nab\0cd\n";
    expect_refused("doc.txt", txt, sizeof txt - 1, "doc.txt:3: a NUL byte at byte offset 20 (column 3)");
}

static void test_txt_keeps_every_byte(void **state) {
    (void)state;
    const char txt[] = "line one\r\n\ttab \xc3\xbc\n";
    DocList d = {0};
    assert_int_equal(read_text("keep.txt", txt, sizeof txt - 1, &d), 0);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.len[0], sizeof txt - 1);
    assert_memory_equal(doc_text(&d, 0), txt, sizeof txt - 1);
    doclist_free(&d);
}

static void test_malformed_lines_are_bad_input(void **state) {
    (void)state;
    DocList d = {0};
    const char bad[] = "{\"text\": \"ok\"}\n{\"text\": oops}\n";
    assert_int_equal(read_text("bad.jsonl", bad, sizeof bad - 1, &d), -1);
    assert_error_contains("bad.jsonl:2: not valid JSON");
    assert_int_equal(err_exit_code(), FRONTIER_EXIT_USAGE);
    const char notext[] = "{\"body\": \"ok\"}\n";
    assert_int_equal(read_text("nt.jsonl", notext, sizeof notext - 1, &d), -1);
    assert_error_contains("nt.jsonl:1: no string field \"text\"");
    assert_int_equal(err_exit_code(), FRONTIER_EXIT_USAGE);
    doclist_free(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nul_outside_the_document_passes),
        cmocka_unit_test(test_nul_in_the_document_is_refused),
        cmocka_unit_test(test_txt_keeps_every_byte),
        cmocka_unit_test(test_malformed_lines_are_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
