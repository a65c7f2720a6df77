// tests/eval/test_core_tasks.c — CORE task loading and nanochat-exact prompt rendering.
//
// On the real bundle (<data>/core): 22 labels in core.yaml order, 21 available, coqa unavailable;
// baselines equal eval_meta_data.csv's percentages / 100; row counts equal data/README.md's table;
// every case of tests/fixtures/core_prompts.json (made by gen_core_prompts.py, which re-implements
// nanochat's Jinja templates and was cross-checked against jinja2) renders byte for byte. Error
// paths: a badly indented core.yaml and a JSONL with a bad line name file:line; a missing data file
// leaves its task unavailable. Python str.strip() semantics on Unicode whitespace; row permutation.
#include "test_util.h"

#include <cjson/cJSON.h>

#include "eval/core_tasks.h"

static CoreSuite *g_suite;

#define assert_near(a, b, tol)                                                         \
    do {                                                                               \
        double a_ = (a), b_ = (b);                                                     \
        if (!(a_ - b_ <= (tol) && b_ - a_ <= (tol))) fail_msg("%.17g != %.17g", a_, b_); \
    } while (0)

static char *core_dir(void) { return path_join(test_data_root(), "core"); }

static int setup(void **state) {
    (void)state;
    char *d = core_dir();
    g_suite = core_load(d);
    if (!g_suite) fprintf(stderr, "core_load(%s): %s\n", d, err_msg());
    free(d);
    return g_suite ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    core_free(g_suite);
    return 0;
}

static const CoreTask *task(const char *label) {
    const CoreTask *t = core_find(g_suite, label);
    if (!t) fail_msg("task %s not loaded", label);
    return t;
}

static void test_labels_and_availability(void **state) {
    (void)state;
    assert_int_equal(g_suite->n_tasks, 22);
    assert_string_equal(g_suite->tasks[0].label, "hellaswag_zeroshot");
    assert_string_equal(g_suite->tasks[21].label, "bigbench_language_identification");
    int avail = 0;
    for (int i = 0; i < g_suite->n_tasks; i++) avail += g_suite->tasks[i].available;
    assert_int_equal(avail, 21);
    const CoreTask *coqa = task("coqa");
    assert_int_equal(coqa->available, 0);
    assert_int_equal(coqa->n_rows, 0);
    assert_int_equal(coqa->type, CORE_LM);
    CorePrompts p = {0};
    assert_int_equal(core_render(coqa, 0, NULL, 0, &p), -1);
    assert_error_contains("unavailable");
    assert_int_equal(p.n, 0);
}

static void test_config(void **state) {
    (void)state;
    const CoreTask *t = task("jeopardy");
    assert_int_equal(t->type, CORE_LM);
    assert_int_equal(t->num_fewshot, 10);
    assert_string_equal(t->delimiter, "\nAnswer: ");
    t = task("agi_eval_lsat_ar");
    assert_int_equal(t->type, CORE_MC);
    assert_int_equal(t->num_fewshot, 3);
    assert_string_equal(t->delimiter, " ");
    t = task("winogrande");
    assert_int_equal(t->type, CORE_SCHEMA);
    assert_int_equal(t->num_fewshot, 0);
    assert_string_equal(core_type_name(t->type), "schema");
    assert_string_equal(task("boolq")->delimiter, "\nAnswer: ");
    assert_int_equal(task("hellaswag")->num_fewshot, 10);
    assert_int_equal(task("hellaswag_zeroshot")->num_fewshot, 0);
}

static void test_baselines(void **state) {
    (void)state;
    struct { const char *label; double b; } cases[] = {
        {"hellaswag", 0.25}, {"commonsense_qa", 0.20}, {"bigbench_language_identification", 0.091},
        {"boolq", 0.62}, {"copa", 0.50}, {"jeopardy", 0.0}, {"agi_eval_lsat_ar", 0.20}, {"coqa", 0.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_near(task(cases[i].label)->baseline, cases[i].b, 1e-12);
}

static void test_row_counts(void **state) {
    (void)state;
    struct { const char *label; size_t n; } cases[] = {
        {"hellaswag_zeroshot", 10042}, {"hellaswag", 10042}, {"jeopardy", 2117}, {"bigbench_qa_wikidata", 20321},
        {"arc_challenge", 1172}, {"copa", 100}, {"winograd", 273}, {"winogrande", 1267}, {"lambada_openai", 5153},
        {"bigbench_repeat_copy_logic", 32}, {"squad", 10570}, {"boolq", 3270},
        {"bigbench_language_identification", 10000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const CoreTask *t = task(cases[i].label);
        if (t->n_rows != cases[i].n) fail_msg("%s: %zu rows, expected %zu", cases[i].label, t->n_rows, cases[i].n);
    }
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static void test_fixture_prompts(void **state) {
    (void)state;
    size_t len;
    char *buf = read_file("tests/fixtures/core_prompts.json", &len);
    assert_non_null(buf);
    cJSON *root = cJSON_ParseWithLength(buf, len);
    assert_non_null(root);
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(root, "tasks"), *jt;
    assert_int_equal(cJSON_GetArraySize(tasks), 21);
    int n_pairs = 0;
    CorePrompts p = {0};
    cJSON_ArrayForEach(jt, tasks) {
        const CoreTask *t = task(jstr(jt, "label"));
        assert_true(t->available);
        assert_string_equal(core_type_name(t->type), jstr(jt, "type"));
        assert_string_equal(t->delimiter, jstr(jt, "delimiter"));
        assert_int_equal(t->num_fewshot, cJSON_GetObjectItemCaseSensitive(jt, "num_fewshot")->valueint);
        assert_int_equal(t->n_rows, (size_t)cJSON_GetObjectItemCaseSensitive(jt, "n_rows")->valuedouble);
        const cJSON *jc;
        cJSON_ArrayForEach(jc, cJSON_GetObjectItemCaseSensitive(jt, "cases")) {
            size_t row = (size_t)cJSON_GetObjectItemCaseSensitive(jc, "row")->valuedouble;
            const cJSON *jf = cJSON_GetObjectItemCaseSensitive(jc, "fewshot"), *e;
            size_t few[64];
            int k = 0;
            cJSON_ArrayForEach(e, jf) few[k++] = (size_t)e->valuedouble;
            assert_int_equal(k, t->num_fewshot);
            if (core_render(t, row, few, k, &p)) fail_msg("%s row %zu: %s", t->label, row, err_msg());
            const cJSON *jp = cJSON_GetObjectItemCaseSensitive(jc, "prompts");
            assert_int_equal(p.n, cJSON_GetArraySize(jp));
            int i = 0;
            cJSON_ArrayForEach(e, jp) {
                const char *names[3] = {"prefix", "continuation", "full"};
                const char *got[3] = {p.pairs[i].prefix, p.pairs[i].continuation, p.pairs[i].full};
                for (int f = 0; f < 3; f++)
                    if (strcmp(got[f], jstr(e, names[f])) != 0)
                        fail_msg("%s row %zu pair %d: %s differs from the fixture\n got: [%s]\nwant: [%s]",
                                 t->label, row, i, names[f], got[f], jstr(e, names[f]));
                i++;
                n_pairs++;
            }
        }
    }
    core_prompts_free(&p);
    assert_true(n_pairs > 63);
    cJSON_Delete(root);
    free(buf);
}

// A hand-checked rendering of each type, independent of the fixture generator.
static void test_render_by_hand(void **state) {
    (void)state;
    CoreRow mc[3] = {
        {.text = "Q1", .options = (char *[]){"a", "b"}, .n_options = 2, .gold = 1},
        {.text = "Q2", .options = (char *[]){"c", "d"}, .n_options = 2, .gold = 0},
        {.text = "Q3", .options = (char *[]){"X", "Y"}, .n_options = 2, .gold = 0},
    };
    CoreTask t = {.label = "mc", .type = CORE_MC, .delimiter = "\nAnswer: ", .available = 1, .rows = mc,
                  .n_rows = 3};
    CorePrompts p = {0};
    size_t few[2] = {0, 1};
    assert_int_equal(core_render(&t, 2, few, 2, &p), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.pairs[0].full, "Q1\nAnswer: b\n\nQ2\nAnswer: c\n\nQ3\nAnswer: X");
    assert_string_equal(p.pairs[1].prefix, "Q1\nAnswer: b\n\nQ2\nAnswer: c\n\nQ3\nAnswer: ");
    assert_string_equal(p.pairs[1].continuation, "Y");

    CoreRow sc[2] = {
        {.continuation = "ends.", .options = (char *[]){"A", "B"}, .n_options = 2, .gold = 1},
        {.continuation = "goes.", .options = (char *[]){"C", "D"}, .n_options = 2, .gold = 0},
    };
    t = (CoreTask){.label = "sc", .type = CORE_SCHEMA, .delimiter = " ", .available = 1, .rows = sc, .n_rows = 2};
    assert_int_equal(core_render(&t, 1, few, 1, &p), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.pairs[0].full, "B ends.\n\nC goes.");
    assert_string_equal(p.pairs[1].full, "B ends.\n\nD goes.");
    assert_string_equal(p.pairs[1].prefix, "B ends.\n\nD ");
    assert_string_equal(p.pairs[1].continuation, "goes.");

    CoreRow lm[2] = {{.text = "  C1\n", .continuation = "A1", .gold = -1},
                     {.text = "\tC2 ", .continuation = "A2", .gold = -1}};
    t = (CoreTask){.label = "lm", .type = CORE_LM, .delimiter = "\nAnswer: ", .available = 1, .rows = lm,
                   .n_rows = 2};
    assert_int_equal(core_render(&t, 1, few, 1, &p), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.pairs[0].prefix, "C1\nAnswer: A1\n\nC2\nAnswer:");
    assert_string_equal(p.pairs[0].continuation, " A2");
    assert_string_equal(p.pairs[0].full, "C1\nAnswer: A1\n\nC2\nAnswer: A2");
    // Out-of-range few-shot index.
    size_t bad = 5;
    assert_int_equal(core_render(&t, 1, &bad, 1, &p), -1);
    assert_error_contains("out of range");
    core_prompts_free(&p);
}

static void test_py_strip(void **state) {
    (void)state;
    // U+3000, U+00A0, U+2029, \x1f are Python whitespace; U+200B (zero-width space) is not.
    const char *s = "\xe3\x80\x80 \x1f" "a b" "\xc2\xa0\n\xe2\x80\xa9";
    size_t a, n;
    core_py_strip(s, strlen(s), &a, &n);
    assert_int_equal(a, 5);
    assert_int_equal(n, 3);
    const char *z = "\xe2\x80\x8bx\xe2\x80\x8b";
    core_py_strip(z, strlen(z), &a, &n);
    assert_int_equal(a, 0);
    assert_int_equal(n, strlen(z));
    core_py_strip(" \t\n", 3, &a, &n);
    assert_int_equal(n, 0);
}

static void test_permute(void **state) {
    (void)state;
    char *d = test_tmpdir("core-perm");
    char *ed = path_join(d, "eval_data");
    assert_int_equal(mkdir_p(ed), 0);
    const char *yaml = "icl_tasks:\n-\n  label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [1]\n"
                       "  icl_task_type: language_modeling\n";
    const char *csv = "Eval Task,Random baseline\nt,0\n";
    const char *rows = "{\"context\": \"c0\", \"continuation\": \"a0\"}\n{\"context\": \"c1\", \"continuation\": \"a1\"}\n"
                       "\n{\"context\": \"c2\", \"continuation\": \"a2\"}\n";
    char *p1 = path_join(d, "core.yaml"), *p2 = path_join(d, "eval_meta_data.csv"), *p3 = path_join(ed, "t.jsonl");
    test_write_file(p1, yaml, strlen(yaml));
    test_write_file(p2, csv, strlen(csv));
    test_write_file(p3, rows, strlen(rows));
    CoreSuite *s = core_load(d);
    if (!s) fail_msg("%s", err_msg());
    CoreTask *t = &s->tasks[0];
    assert_int_equal(t->n_rows, 3);  // the blank line is skipped
    size_t perm[2] = {2, 0};
    assert_int_equal(core_task_permute(t, perm, 2), 0);
    assert_int_equal(t->n_rows, 2);
    assert_string_equal(t->rows[0].text, "c2");
    assert_string_equal(t->rows[1].text, "c0");
    size_t dup[2] = {1, 1};
    assert_int_equal(core_task_permute(t, dup, 2), -1);
    core_free(s);
    assert_int_equal(remove_tree(d), 0);
    free(p1), free(p2), free(p3), free(ed), free(d);
}

// The readers core_load runs, on text in memory (not NUL-terminated: only len bytes are read).
static void test_parse_from_memory(void **state) {
    (void)state;
    CoreSuite *s = calloc(1, sizeof *s);
    const char *yaml = "icl_tasks:\n- {label: t, dataset_uri: t.jsonl, num_fewshot: [1], icl_task_type: language_modeling}\n";
    assert_int_equal(core_parse_tasks(s, yaml, strlen(yaml), "c.yaml"), 0);
    assert_int_equal(s->n_tasks, 1);
    CoreTask *t = &s->tasks[0];
    assert_int_equal(t->type, CORE_LM);
    const char *csv = "Eval Task,Random baseline\nt,12.5\n\"unterminated,1\n";
    assert_int_equal(core_parse_baselines(s, csv, strlen(csv) - 16, "m.csv"), 0);  // up to "12.5\n"
    assert_near(t->baseline, 0.125, 1e-12);
    assert_int_equal(core_parse_baselines(s, csv, strlen(csv), "m.csv"), -1);
    assert_error_contains("m.csv:3: unterminated quoted field");  // the line the record starts on
    assert_int_equal(err_exit_code(), 2);
    const char *rows = "{\"context\": \"a\", \"continuation\": \"b\"}\n\n{\"context\": \"c\", \"continuation\": \"d\"}";
    assert_int_equal(core_parse_rows(t, rows, strlen(rows), "m.jsonl"), 0);
    assert_int_equal(t->n_rows, 2);
    assert_int_equal(core_parse_rows(t, rows, strlen(rows) - 1, "m.jsonl"), -1);  // the last '}' cut off
    assert_error_contains("m.jsonl:3: invalid JSON");
    assert_int_equal(err_exit_code(), 2);
    // gold outside int's range is refused before any conversion (which would be undefined behaviour)
    t->type = CORE_MC;
    const char *mc[] = {"{\"query\": \"q\", \"choices\": [\"a\"], \"gold\": 1e300}\n",
                        "{\"query\": \"q\", \"choices\": [\"a\"], \"gold\": -4294967296}\n",
                        "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 0.5}\n",
                        "{\"query\": \"q\", \"choices\": [\"a\"], \"gold\": \"0\"}\n"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(core_parse_rows(t, mc[i], strlen(mc[i]), "mc.jsonl"), -1);
        assert_error_contains("mc.jsonl:1: field \"gold\" must be an integer index into \"choices\"");
    }
    core_free(s);
}

static void test_errors(void **state) {
    (void)state;
    char *d = test_tmpdir("core-err");
    char *ed = path_join(d, "eval_data");
    assert_int_equal(mkdir_p(ed), 0);
    char *py = path_join(d, "core.yaml"), *pc = path_join(d, "eval_meta_data.csv");
    char *pj = path_join(ed, "t.jsonl");

    // Bad indent on line 5: libyaml reports the mark's line.
    const char *bad_yaml = "icl_tasks:\n-\n  label: t\n  dataset_uri: t.jsonl\n    num_fewshot: [1]\n"
                           "  icl_task_type: multiple_choice\n";
    test_write_file(py, bad_yaml, strlen(bad_yaml));
    assert_null(core_load(d));
    assert_error_contains("core.yaml:5:");
    assert_error_contains("YAML");

    const char *yaml = "icl_tasks:\n-\n  label: t\n  dataset_uri: t.jsonl\n  num_fewshot: [1]\n"
                       "  icl_task_type: multiple_choice\n-\n  label: gone\n  dataset_uri: gone.jsonl\n"
                       "  num_fewshot: [0]\n  icl_task_type: schema\n";
    test_write_file(py, yaml, strlen(yaml));
    const char *csv = "Eval Task,Note,Random baseline\nt,\"a, \"\"quoted\"\"\nnote\",25\ngone,x,50\n";
    test_write_file(pc, csv, strlen(csv));

    // Line 3 is not JSON.
    const char *rows = "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 0}\n"
                       "{\"query\": \"r\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n"
                       "{\"query\": \"s\", \"choices\": [\"a\", \"b\"], \"gold\": 1\n";
    test_write_file(pj, rows, strlen(rows));
    assert_null(core_load(d));
    assert_error_contains("t.jsonl:3:");

    // Line 2's gold out of range.
    const char *rows2 = "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 0}\n"
                        "{\"query\": \"r\", \"choices\": [\"a\", \"b\"], \"gold\": 2}\n";
    test_write_file(pj, rows2, strlen(rows2));
    assert_null(core_load(d));
    assert_error_contains("t.jsonl:2:");
    assert_error_contains("gold");
    assert_int_equal(err_exit_code(), 2);  // a bad input file

    // Valid rows: loads; the task with the missing file is unavailable; quoted CSV parsed.
    const char *rows3 = "{\"query\": \"q\", \"choices\": [\"a\", \"b\"], \"gold\": 0}\n"
                        "{\"query\": \"r\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n";
    test_write_file(pj, rows3, strlen(rows3));
    CoreSuite *s = core_load(d);
    if (!s) fail_msg("%s", err_msg());
    assert_int_equal(s->n_tasks, 2);
    assert_int_equal(s->tasks[0].available, 1);
    assert_int_equal(s->tasks[0].n_rows, 2);
    assert_near(s->tasks[0].baseline, 0.25, 1e-12);
    assert_int_equal(s->tasks[1].available, 0);
    assert_near(s->tasks[1].baseline, 0.5, 1e-12);
    core_free(s);

    // A task without a CSV row is an error naming the CSV.
    const char *csv2 = "Eval Task,Random baseline\nt,25\n";
    test_write_file(pc, csv2, strlen(csv2));
    assert_null(core_load(d));
    assert_error_contains("eval_meta_data.csv");
    assert_error_contains("gone");

    // A missing key names the entry's line.
    const char *yaml2 = "icl_tasks:\n-\n  label: t\n  num_fewshot: [1]\n  icl_task_type: multiple_choice\n";
    test_write_file(py, yaml2, strlen(yaml2));
    assert_null(core_load(d));
    assert_error_contains("core.yaml:3:");
    assert_error_contains("dataset_uri");

    assert_int_equal(remove_tree(d), 0);
    free(py), free(pc), free(pj), free(ed), free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels_and_availability),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_baselines),
        cmocka_unit_test(test_row_counts),
        cmocka_unit_test(test_fixture_prompts),
        cmocka_unit_test(test_render_by_hand),
        cmocka_unit_test(test_py_strip),
        cmocka_unit_test(test_permute),
        cmocka_unit_test(test_parse_from_memory),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
