// tests/util/test_csv.c — RFC 4180 CSV (util/csv.h): fields with commas, quotes, CR, LF and
// edge spaces survive a write + read round trip with the right line numbers; malformed CSV is an
// error naming path:line.
#include "test_util.h"

#include "util/csv.h"

typedef struct {
    char *fields[16][8];
    int n_fields[16], line[16];
    int n;
} Got;

static int collect(char **fields, int n, int line, void *ctx) {
    Got *g = ctx;
    assert_true(g->n < 16 && n <= 8);
    for (int i = 0; i < n; i++) g->fields[g->n][i] = strdup(fields[i]);
    g->n_fields[g->n] = n;
    g->line[g->n++] = line;
    return 0;
}

static void got_free(Got *g) {
    for (int r = 0; r < g->n; r++)
        for (int i = 0; i < g->n_fields[r]; i++) free(g->fields[r][i]);
}

// Records written with csv_put_field, one per row of `rows` (NULL ends a row), into a string.
static char *write_records(const char *const rows[][8], int n_rows, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    assert_non_null(f);
    for (int r = 0; r < n_rows; r++) {
        for (int i = 0; rows[r][i]; i++) {
            if (i) fputc(',', f);
            assert_int_equal(csv_put_field(f, rows[r][i]), 0);
        }
        fputc('\n', f);
    }
    fclose(f);
    return buf;
}

static void test_round_trip(void **state) {
    (void)state;
    static const char *const rows[][8] = {
        {"op", "calls", "note", NULL},
        {"(step, unattributed)", "2", "plain", NULL},
        {"say \"hi\"", "\"", "\"\"", NULL},
        {"two\nlines", "cr\ronly", "crlf\r\nend", NULL},
        {" lead", "trail ", "\tboth\t", NULL},
        {"", "x", "", NULL},
        {"日本語, ümlaut", "a,b,c", "end", NULL},
    };
    int n_rows = (int)(sizeof rows / sizeof *rows);
    size_t len;
    char *text = write_records(rows, n_rows, &len);
    // Only the fields that need it are quoted.
    assert_non_null(strstr(text, "\"(step, unattributed)\",2,plain\n"));
    assert_non_null(strstr(text, "\"say \"\"hi\"\"\",\"\"\"\",\"\"\"\"\"\"\n"));
    assert_non_null(strstr(text, ",x,\n"));
    Got g = {0};
    assert_int_equal(csv_read("mem.csv", text, len, collect, &g), 0);
    assert_int_equal(g.n, n_rows);
    for (int r = 0; r < n_rows; r++) {
        int n = 0;
        while (rows[r][n]) n++;
        assert_int_equal(g.n_fields[r], n);
        for (int i = 0; i < n; i++) assert_string_equal(g.fields[r][i], rows[r][i]);
    }
    // Lines: the record after the one with two line breaks inside starts two lines further on.
    static const int want_line[] = {1, 2, 3, 4, 7, 8, 9};
    for (int r = 0; r < n_rows; r++) assert_int_equal(g.line[r], want_line[r]);
    got_free(&g);
    free(text);
}

static void test_blank_lines_crlf_and_no_final_newline(void **state) {
    (void)state;
    const char text[] = "a,b\r\n\r\n\n\"c\nd\",e\r\nf,g";
    Got g = {0};
    assert_int_equal(csv_read("x.csv", text, sizeof text - 1, collect, &g), 0);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.fields[0][1], "b");
    assert_int_equal(g.line[0], 1);
    assert_string_equal(g.fields[1][0], "c\nd");
    assert_int_equal(g.line[1], 4);
    assert_string_equal(g.fields[2][0], "f");
    assert_string_equal(g.fields[2][1], "g");
    assert_int_equal(g.line[2], 6);
    got_free(&g);
}

static void expect_error(const char *text, const char *needle) {
    Got g = {0};
    err_clear();
    assert_int_equal(csv_read("bad.csv", text, strlen(text), collect, &g), -1);
    assert_error_contains(needle);
    assert_int_equal(err_exit_code(), FRONTIER_EXIT_USAGE);  // a bad input file
    got_free(&g);
}

static void test_malformed(void **state) {
    (void)state;
    expect_error("a,b\nc,d\"e\n", "bad.csv:2: not valid CSV");        // a quote inside an unquoted field
    expect_error("a,b\n\"c\"d,e\n", "bad.csv:2: not valid CSV");      // text after a closing quote
    expect_error("a,b\n\"open,\nstill open\n", "ends inside a quoted field");
}

static int stop_at_second(char **fields, int n, int line, void *ctx) {
    (void)fields, (void)n;
    int *seen = ctx;
    if (++*seen == 2) return err_usage("stopped at line %d", line);
    return 0;
}

static void test_callback_error_stops(void **state) {
    (void)state;
    int seen = 0;
    const char text[] = "a\nb\nc\nd\n";
    assert_int_equal(csv_read("x.csv", text, sizeof text - 1, stop_at_second, &seen), -1);
    assert_int_equal(seen, 2);
    assert_error_contains("stopped at line 2");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_blank_lines_crlf_and_no_final_newline),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_callback_error_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
