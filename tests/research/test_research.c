// tests/research/test_research.c — the pieces of `frontier research` that need no training: the
// search space (parsing, errors with key paths, derive, constraints, agent-change validation),
// proposals (always feasible, within the space, deterministic for a seed), the ledger (format,
// parse, torn rows, corruption, impossible numbers), the lock on the research folder, the process
// runner (exit codes, signals, hang limits that kill the whole process group), launcher templates
// and the proposer (output parsing, running it). The planner is tested in test_research_plan.c.
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>

#include "test_util.h"

#include "research/ledger.h"
#include "research/plan.h"
#include "research/proc.h"
#include "research/proposer.h"
#include "research/research.h"
#include "research/space.h"
#include "research/trial.h"

#include "research_test_util.h"

static int parse_fails_with(const char *json, const char *needle) {
    Space s;
    int rc = space_parse(&s, json, "space.json");
    space_free(&s);
    if (rc == 0) {
        print_error("space parsed but should fail: %s\n", json);
        return 0;
    }
    if (!strstr(err_msg(), needle)) {
        print_error("error \"%s\" lacks \"%s\"\n", err_msg(), needle);
        return 0;
    }
    return 1;
}

static double num(const cJSON *c, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, key);
    assert_non_null(v);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble;
}

// ---------------------------------------------------------------------------------------------
// Space
// ---------------------------------------------------------------------------------------------

static void test_space_default_parses(void **state) {
    (void)state;
    cJSON *base = base_config();
    Space s;
    load_default_space(&s, base);
    assert_true(s.n_params >= 15);
    assert_non_null(space_find(&s, "matrix-lr"));
    assert_true(space_find(&s, "matrix-lr")->log);
    assert_int_equal(space_find(&s, "normuon")->type, PARAM_BOOL);
    assert_int_equal(space_find(&s, "normuon")->bool_as_json_bool, 0);  // the trainer's 0|1 toggle
    assert_true(s.n_derive >= 2 && s.n_cons >= 3);
    space_free(&s);
    cJSON_Delete(base);
}

static void test_space_errors_name_the_key_path(void **state) {
    (void)state;
    assert_true(parse_fails_with("{\n\"params\": {\n  \"depth\": {\"type\": \"int\",, }}}", "space.json:3: not valid JSON"));
    assert_true(parse_fails_with("[1]", "must be a JSON object"));
    assert_true(parse_fails_with("{\"parms\": {}}", "unknown field \"parms\""));
    assert_true(parse_fails_with("{\"params\": {}}", "params: must be a non-empty object"));
    assert_true(parse_fails_with("{\"params\": {\"depth\": 3}}", "params.depth: must be an object"));
    assert_true(parse_fails_with("{\"params\": {\"depth\": {\"min\": 1}}}", "params.depth.type: missing"));
    assert_true(parse_fails_with("{\"params\": {\"depth\": {\"type\": \"integer\"}}}", "params.depth.type: unknown type \"integer\""));
    assert_true(parse_fails_with("{\"params\": {\"depth\": {\"type\": \"int\", \"min\": 5, \"max\": 1}}}",
                                 "params.depth: min 5 is greater than max 1"));
    assert_true(parse_fails_with("{\"params\": {\"depth\": {\"type\": \"int\", \"max\": 1}}}", "params.depth: missing \"min\""));
    assert_true(parse_fails_with("{\"params\": {\"depth\": {\"type\": \"int\", \"min\": \"1\", \"max\": 4}}}",
                                 "params.depth.min: must be a number"));
    assert_true(parse_fails_with("{\"params\": {\"depth\": {\"type\": \"int\", \"min\": 1.5, \"max\": 4}}}",
                                 "params.depth: an int param needs integer"));
    assert_true(parse_fails_with("{\"params\": {\"lr\": {\"type\": \"float\", \"min\": 0, \"max\": 1, \"log\": true}}}",
                                 "params.lr: a log scale needs min > 0"));
    assert_true(parse_fails_with("{\"params\": {\"lr\": {\"type\": \"float\", \"min\": 0, \"max\": 1, \"lgo\": true}}}",
                                 "params.lr: unknown field \"lgo\""));
    assert_true(parse_fails_with("{\"params\": {\"T\": {\"type\": \"choice\", \"values\": []}}}", "params.T.values: must be a non-empty list"));
    assert_true(parse_fails_with("{\"params\": {\"T\": {\"type\": \"choice\", \"values\": [64, 128, 64]}}}",
                                 "params.T.values[2]: repeats values[0]"));
    assert_true(parse_fails_with("{\"params\": {\"T\": {\"type\": \"choice\", \"values\": [[1]]}}}", "params.T.values[0]: must be a number"));
    assert_true(parse_fails_with("{\"params\": {\"x\": {\"type\": \"bool\", \"min\": 0}}}", "params.x: unknown field \"min\""));
    assert_true(parse_fails_with("{\"params\": {\"x\": {\"type\": \"bool\"}}, \"derive\": {\"n-head\": {\"divide\": [1, 2]}}}",
                                 "derive.n-head: expected a number, a setting name"));
    assert_true(parse_fails_with("{\"params\": {\"x\": {\"type\": \"bool\"}}, \"derive\": {\"n-head\": {\"div\": [\"a\", {\"mul\": [1]}]}}}",
                                 "derive.n-head.div[1]"));
    assert_true(parse_fails_with("{\"params\": {\"x\": {\"type\": \"bool\"}}, \"derive\": {\"a\": {\"mul\": [\"a\", 2]}}}", "derive.a: reads itself"));
    assert_true(parse_fails_with("{\"params\": {\"x\": {\"type\": \"bool\"}}, \"constraints\": [{\"divides\": [\"a\", \"b\"]}, {\"lt\": [1, 2]}]}",
                                 "constraints[1]: expected {\"divides\""));
    assert_true(parse_fails_with("{\"params\": {\"x\": {\"type\": \"bool\"}}, \"derive\": {\"a\": \"b\", \"b\": \"c\"}}",
                                 "derive.b: must come before derive.a"));
}

static void test_space_checked_against_the_base(void **state) {
    (void)state;
    cJSON *base = base_config();
    Space s;
    assert_int_equal(space_parse(&s, "{\"params\": {\"matrx-lr\": {\"type\": \"float\", \"min\": 0.01, \"max\": 0.1}}}", "sp.json"), 0);
    assert_int_equal(space_check_base(&s, base), -1);
    assert_error_contains("sp.json: params.matrx-lr: not a setting of frontier train");
    space_free(&s);
    assert_int_equal(space_parse(&s, "{\"params\": {\"ortho\": {\"type\": \"choice\", \"values\": [1, 2]}}}", "sp.json"), 0);
    assert_int_equal(space_check_base(&s, base), -1);
    assert_error_contains("params.ortho.values[0]: the setting is a string");
    space_free(&s);
    assert_int_equal(space_parse(&s, "{\"params\": {\"quiet\": {\"type\": \"bool\"}}, \"constraints\": [{\"le\": [\"depth\", \"dept\"]}]}", "sp.json"), 0);
    assert_int_equal(space_check_base(&s, base), -1);
    assert_error_contains("constraints[0]: \"dept\" is not a setting");
    space_free(&s);
    assert_int_equal(space_parse(&s, "{\"params\": {\"quiet\": {\"type\": \"bool\"}}}", "sp.json"), 0);
    assert_int_equal(space_check_base(&s, base), 0);
    assert_int_equal(s.params[0].bool_as_json_bool, 1);  // a JSON bool setting stays a JSON bool
    space_free(&s);
    cJSON_Delete(base);
}

static void test_space_apply_derives_and_checks(void **state) {
    (void)state;
    cJSON *base = base_config(), *child, *diff;
    Space s;
    load_default_space(&s, base);
    // width 256 with head-dim 128: n-head follows (2), and n-kv-head follows n-head
    cJSON *ch = cJSON_Parse("{\"n-embd\": 256}");
    assert_int_equal(space_apply(&s, base, ch, &child, &diff), 0);
    assert_int_equal((int)num(child, "n-head"), 2);
    assert_int_equal((int)num(child, "n-kv-head"), 2);
    char *d = cJSON_PrintUnformatted(diff);
    assert_string_equal(d, "{\"n-embd\":256,\"n-head\":2,\"n-kv-head\":2}");
    free(d);
    // from there, GQA: n-kv-head set explicitly is not overridden
    cJSON *ch2 = cJSON_Parse("{\"n-kv-head\": 1}"), *child2, *diff2;
    assert_int_equal(space_apply(&s, child, ch2, &child2, &diff2), 0);
    assert_int_equal((int)num(child2, "n-kv-head"), 1);
    assert_int_equal((int)num(child2, "n-head"), 2);
    cJSON_Delete(ch2), cJSON_Delete(child2), cJSON_Delete(diff2);
    cJSON_Delete(ch), cJSON_Delete(child), cJSON_Delete(diff);
    // 192 is not a multiple of head-dim 128: infeasible, and the message says why
    ch = cJSON_Parse("{\"n-embd\": 192}");
    assert_int_equal(space_apply(&s, base, ch, &child, &diff), -1);
    assert_error_contains("n-embd/head-dim");
    cJSON_Delete(ch);
    // longer sequences: the micro-batch shrinks so it still divides the batch
    ch = cJSON_Parse("{\"seq-len\": 512}");
    assert_int_equal(space_apply(&s, base, ch, &child, &diff), 0);
    assert_int_equal((int)num(child, "device-batch"), 8);
    cJSON_Delete(ch), cJSON_Delete(child), cJSON_Delete(diff);
    // values outside the space are refused with the param's name
    ch = cJSON_Parse("{\"matrix-lr\": 0.5}");
    assert_int_equal(space_apply(&s, base, ch, &child, &diff), -1);
    assert_error_contains("matrix-lr: 0.5 is above the maximum 0.08");
    cJSON_Delete(ch);
    space_free(&s);
    cJSON_Delete(base);
}

static void test_space_validate_agent_change(void **state) {
    (void)state;
    cJSON *base = base_config();
    Space s;
    load_default_space(&s, base);
    struct {
        const char *json, *error;
    } cases[] = {
        {"{\"matrix-lr\": 0.03, \"normuon\": true}", NULL},
        {"{\"warmdown\": 0.7}", NULL},
        {"{}", "non-empty JSON object"},
        {"[1]", "non-empty JSON object"},
        {"{\"matrx-lr\": 0.03}", "\"matrx-lr\" is not a param of the space"},
        {"{\"n-head\": 2}", "\"n-head\" is derived by the space"},
        {"{\"matrix-lr\": 0.001}", "matrix-lr: 0.001 is below the minimum 0.005"},
        {"{\"matrix-lr\": \"0.03\"}", "matrix-lr: 0.03 is not a number"},
        {"{\"depth\": 2.5}", "depth: 2.5 is not an integer"},
        {"{\"warmdown\": 0.33}", "warmdown: 0.33 is not on the grid 0.2 + k*0.05"},
        {"{\"seq-len\": 300}", "seq-len: 300 is not one of the choices [128,256,512]"},
        {"{\"normuon\": 2}", "normuon: 2 is not a toggle"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *c = cJSON_Parse(cases[i].json);
        int rc = space_validate_change(&s, c);
        if (!cases[i].error && rc != 0) fail_msg("%s: %s", cases[i].json, err_msg());
        if (cases[i].error) {
            if (rc == 0) fail_msg("%s was accepted", cases[i].json);
            if (!strstr(err_msg(), cases[i].error)) fail_msg("%s: \"%s\" lacks \"%s\"", cases[i].json, err_msg(), cases[i].error);
        }
        cJSON_Delete(c);
    }
    space_free(&s);
    cJSON_Delete(base);
}

// Every proposal that space_apply accepts satisfies the model's and the loader's rules.
static void check_feasible(const Space *s, const cJSON *c, const cJSON *base) {
    int C = (int)num(c, "n-embd"), D = (int)num(c, "head-dim"), H = (int)num(c, "n-head"), K = (int)num(c, "n-kv-head");
    int T = (int)num(c, "seq-len"), B = (int)num(c, "device-batch"), N = (int)num(c, "batch-tokens");
    assert_int_equal(C % D, 0);
    assert_int_equal(H, C / D);
    assert_int_equal(H % K, 0);
    assert_int_equal(N % (B * T), 0);
    assert_true(num(c, "depth") * C * C <= 4 * 256 * 256);  // research/space.json's size cap
    for (int i = 0; i < s->n_params; i++)
        if (strcmp(s->params[i].name, "n-kv-head") &&  // derived from n-head unless set: any divisor
            space_check_value(&s->params[i], cJSON_GetObjectItemCaseSensitive(c, s->params[i].name)) != 0) {
            // a param the proposal did not touch keeps the base's value, which may lie outside
            const cJSON *bv = cJSON_GetObjectItemCaseSensitive(base, s->params[i].name);
            if (!cJSON_Compare(bv, cJSON_GetObjectItemCaseSensitive(c, s->params[i].name), 1)) fail_msg("%s", err_msg());
        }
}

static void test_proposals_respect_the_space(void **state) {
    (void)state;
    cJSON *base = base_config();
    Space s;
    load_default_space(&s, base);
    Rng r;
    rng_seed(&r, 7);
    int ok_mut = 0, ok_sample = 0;
    cJSON *cur = cJSON_Duplicate(base, 1);
    for (int i = 0; i < 400; i++) {
        cJSON *ch = space_mutate(&s, &r, cur), *child, *diff;
        assert_int_equal(cJSON_GetArraySize(ch), 1);  // greedy moves one setting
        if (space_apply(&s, cur, ch, &child, &diff) == 0) {
            check_feasible(&s, child, base);
            ok_mut++;
            cJSON_Delete(cur), cur = child;  // walk on, so later moves start from varied configs
            cJSON_Delete(diff);
        }
        cJSON_Delete(ch);
        ch = space_sample(&s, &r);
        assert_int_equal(cJSON_GetArraySize(ch), s.n_params);
        if (space_apply(&s, base, ch, &child, &diff) == 0) {
            check_feasible(&s, child, base);
            ok_sample++;
            cJSON_Delete(child), cJSON_Delete(diff);
        }
        cJSON_Delete(ch);
    }
    assert_true(ok_mut > 200);
    assert_true(ok_sample > 20);
    cJSON_Delete(cur);
    space_free(&s);
    cJSON_Delete(base);
}

// ---------------------------------------------------------------------------------------------
// Ledger
// ---------------------------------------------------------------------------------------------

static LedgerRow row(int trial, int parent, const char *kind, const char *change, double val, const char *status) {
    LedgerRow r;
    memset(&r, 0, sizeof r);
    r.trial = trial, r.parent = parent, r.budget_s = 120, r.val_bpb = val;
    r.tokens = r.tok_per_s = r.mfu = r.peak_mb = NAN, r.wall_s = 200;
    r.seed = 42, r.paired = NAN, r.z = NAN;
    snprintf(r.kind, sizeof r.kind, "%s", kind);
    snprintf(r.status, sizeof r.status, "%s", status);
    r.change = (char *)change;
    r.description = (char *)"what; verdict";
    return r;
}

static void test_ledger_roundtrip_and_append(void **state) {
    (void)state;
    char *dir = test_tmpdir("ledger");
    char *path = path_join(dir, "results.tsv");
    LedgerRow a = row(1, 0, "baseline", "{}", 2.1131, "keep");
    a.tokens = 933888, a.tok_per_s = 3097.3, a.mfu = 0.0761, a.peak_mb = 583.8;
    a.description = (char *)"tabs\tand\nnewlines become spaces";
    LedgerRow b = row(2, 1, "greedy", "{\"matrix-lr\":0.03}", NAN, "crash");
    LedgerRow c = row(3, 1, "seed", "{\"seed\":43}", 2.1, "pending");
    c.seed = 43, c.paired = 2.12, c.z = -0.75;  // z has either sign
    assert_int_equal(ledger_append(path, &a), 0);
    assert_int_equal(ledger_append(path, &b), 0);
    assert_int_equal(ledger_append(path, &c), 0);
    LedgerRow *rows;
    int n;
    size_t valid;
    assert_int_equal(ledger_load(path, &rows, &n, &valid), 0);
    assert_int_equal(n, 3);
    assert_true(rows[2].seed == 43 && fabs(rows[2].paired - 2.12) < 1e-9 && fabs(rows[2].z + 0.75) < 1e-9);
    assert_true(isnan(rows[0].paired) && isnan(rows[0].z) && rows[0].seed == 42);
    int64_t size;
    file_stat(path, &size, NULL);
    assert_int_equal((int64_t)valid, size);
    assert_int_equal(rows[0].trial, 1);
    assert_int_equal(rows[0].parent, 0);
    assert_string_equal(rows[0].kind, "baseline");
    assert_true(fabs(rows[0].val_bpb - 2.1131) < 1e-9);
    assert_true(fabs(rows[0].tokens - 933888) < 1e-9);
    assert_string_equal(rows[0].description, "tabs and newlines become spaces");
    assert_int_equal(rows[1].parent, 1);
    assert_true(isnan(rows[1].val_bpb));
    assert_string_equal(rows[1].change, "{\"matrix-lr\":0.03}");
    assert_string_equal(rows[1].status, "crash");
    ledger_free(rows, n);
    char *text = read_file(path, NULL);
    assert_true(!strncmp(text, LEDGER_HEADER, strlen(LEDGER_HEADER)));
    free(text);
    remove_tree(dir);
    free(path);
    free(dir);
}

// The batch column: written and read back; a bad one refused with file:line. A ledger from before
// the column (16 fields) still loads, its twins and the rows after them taken as batches of two,
// and rows appended to it keep its format (a file never mixes the two).
static void test_ledger_batches_and_the_16_column_format(void **state) {
    (void)state;
    LedgerRow a = row(1, 0, "baseline", "{}", 2.5, "keep"), b = row(2, 1, "twin", "{\"seed\":42}", 2.4, "replicate");
    LedgerRow c = row(3, 1, "greedy", "{\"depth\":3}", 2.3, "pending"), d = row(4, 1, "twin", "{\"seed\":43}", 2.4, "replicate");
    LedgerRow e = row(5, 3, "seed", "{\"seed\":43}", 2.3, "discard");
    b.batch = c.batch = d.batch = e.batch = 2;
    char *la = ledger_format_row(&a), *lb = ledger_format_row(&b), *lc = ledger_format_row(&c), *ld = ledger_format_row(&d),
         *le = ledger_format_row(&e);
    assert_true(strstr(la, "\t-\n") && strstr(le, "\t2\n"));
    char text[8192];
    snprintf(text, sizeof text, "%s%s%s%s%s%s", LEDGER_HEADER, la, lb, lc, ld, le);
    LedgerRow *rows;
    int n;
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, NULL), 0);
    assert_int_equal(n, 5);
    assert_true(rows[0].batch == 0 && rows[1].batch == 2 && rows[4].batch == 2);
    assert_true(fabs(plan_machine_s(rows, n) - 400) < 1e-9);  // the baseline, then one batch of four
    ledger_free(rows, n);
    le[strlen(le) - 2] = '9';  // a batch that begins after its row
    snprintf(text, sizeof text, "%s%s%s%s%s%s", LEDGER_HEADER, la, lb, lc, ld, le);
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, NULL), -1);
    assert_error_contains("r.tsv:6: batch \"9\" must be");
    assert_int_equal(err_exit_code(), 2);
    // the 16-column ledger: rows without the batch field
    char *v16 = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&v16, &len);
    fputs("trial\tparent\tkind\tbudget_s\tseed\tchange\tval_bpb\tpaired\tz\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\t"
          "status\tdescription\n", f);
    char *lines[] = {la, lb, lc, ld, le};
    for (int i = 0; i < 5; i++) fprintf(f, "%.*s\n", (int)(strrchr(lines[i], '\t') - lines[i]), lines[i]);
    fclose(f);
    assert_int_equal(ledger_parse(v16, len, "old.tsv", &rows, &n, NULL), 0);
    assert_int_equal(n, 5);
    assert_true(rows[0].batch == 0 && rows[1].batch == 2 && rows[2].batch == 2 && rows[3].batch == 4 && rows[4].batch == 4);
    assert_true(fabs(plan_machine_s(rows, n) - 600) < 1e-9);  // the baseline, then two pairs
    ledger_free(rows, n);
    char *dir = test_tmpdir("ledger16"), *path = path_join(dir, "results.tsv");
    assert_int_equal(write_file_atomic(path, v16, len), 0);
    LedgerRow g = row(6, 3, "seed", "{\"seed\":44}", 2.3, "pending");
    g.batch = 6;
    assert_int_equal(ledger_append(path, &g), 0);
    assert_int_equal(ledger_load(path, &rows, &n, NULL), 0);
    assert_int_equal(n, 6);
    assert_int_equal(rows[5].batch, 0);  // the old format has no place for it
    ledger_free(rows, n);
    remove_tree(dir);
    free(path), free(dir), free(v16);
    free(la), free(lb), free(lc), free(ld), free(le);
}

static void test_ledger_torn_and_corrupt_rows(void **state) {
    (void)state;
    LedgerRow a = row(1, 0, "baseline", "{}", 2.5, "keep"), b = row(2, 1, "greedy", "{\"depth\":3}", 2.4, "keep");
    char *la = ledger_format_row(&a), *lb = ledger_format_row(&b);
    char text[4096];
    // a torn last row (killed mid-write): dropped, and valid_len says where the good part ends
    int good = snprintf(text, sizeof text, "%s%s", LEDGER_HEADER, la);
    snprintf(text + good, sizeof text - good, "%.20s", lb);
    LedgerRow *rows;
    int n;
    size_t valid;
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), 0);
    assert_int_equal(n, 1);
    assert_int_equal((int)valid, good);
    ledger_free(rows, n);
    // a row in the middle that is wrong: an error naming the line
    snprintf(text, sizeof text, "%s%s2\t1\tgreedy\n%s", LEDGER_HEADER, la, lb);
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), -1);
    assert_error_contains("r.tsv:3: expected 17 tab-separated fields, got 3");
    // duplicated or missing trial numbers
    snprintf(text, sizeof text, "%s%s%s", LEDGER_HEADER, la, la);
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), -1);
    assert_error_contains("r.tsv:3: trial \"1\", expected 2");
    snprintf(text, sizeof text, "%s%s", LEDGER_HEADER, lb);
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), -1);
    assert_error_contains("expected 1");
    snprintf(text, sizeof text, "trial\tval_bpb\n%s", la);
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), -1);
    assert_error_contains("r.tsv:1: not a frontier research ledger");
    // the ledger of the earlier threshold rule: refused with what to do
    snprintf(text, sizeof text, "trial\tparent\tkind\tbudget_s\tchange\tval_bpb\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\t"
                                "status\tdescription\n");
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), -1);
    assert_error_contains("r.tsv:1: a ledger of the threshold keep rule");
    // a finished status without a val_bpb
    LedgerRow c = row(1, 0, "baseline", "{}", NAN, "keep");
    char *lc = ledger_format_row(&c);
    snprintf(text, sizeof text, "%s%s", LEDGER_HEADER, lc);
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, &valid), -1);
    assert_error_contains("status keep needs a val_bpb");
    assert_int_equal(err_exit_code(), 2);  // a bad input file
    free(la), free(lb), free(lc);
}

// Numbers a trial cannot produce are refused with file:line (exit 2), not taken into the search:
// a negative val_bpb would have become the best trial.
static void test_ledger_refuses_impossible_numbers(void **state) {
    (void)state;
    LedgerRow a = row(1, 0, "baseline", "{}", 2.5, "keep");
    char *la = ledger_format_row(&a);
    struct { const char *from, *to, *needle; } cases[] = {
        {"2.500000", "-5", "r.tsv:2: val_bpb -5 is not a bits-per-byte (it must be > 0)"},
        {"2.500000", "0", "r.tsv:2: val_bpb 0 is not a bits-per-byte"},
        {"2.500000", "inf", "r.tsv:2: val_bpb \"inf\" is not a finite number"},
        {"2.500000", "nan", "r.tsv:2: val_bpb \"nan\" is not a finite number"},
        {"2.500000", "2.5x", "r.tsv:2: val_bpb \"2.5x\" is not a finite number"},
        {"2.500000", "", "r.tsv:2: val_bpb \"\" is not a finite number"},
        {"\t120\t", "\t-120\t", "r.tsv:2: budget_s -120 is not a count, seed or time (it must be >= 0)"},
        {"\t200.0\t", "\t-1\t", "r.tsv:2: wall_s -1 is not a count, seed or time"},
        {"\t200.0\t", "\tabc\t", "r.tsv:2: wall_s \"abc\" is not a finite number"},
        {"\tkeep\t", "\tkeep\textra\t", "r.tsv:2: expected 17 tab-separated fields, got 18"},
        {"\tkeep\t", "\t", "r.tsv:2: expected 17 tab-separated fields, got 16"},
        {"\t42\t", "\t-3\t", "r.tsv:2: seed -3 is not a count, seed or time"},
        {"\t{}\t", "\t[]\t", "r.tsv:2: change \"[]\" is not a JSON object"},
    };
    char text[4096];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *at = strstr(la, cases[i].from);
        assert_non_null(at);
        snprintf(text, sizeof text, "%s%.*s%s%s", LEDGER_HEADER, (int)(at - la), la, cases[i].to, at + strlen(cases[i].from));
        LedgerRow *rows;
        int n;
        if (ledger_parse(text, strlen(text), "r.tsv", &rows, &n, NULL) == 0) fail_msg("accepted: %s", text);
        assert_error_contains(cases[i].needle);
        assert_int_equal(err_exit_code(), 2);
    }
    // "-" (none) stays fine where the status allows it, and 0 is a possible count
    LedgerRow b = row(1, 0, "baseline", "{}", NAN, "crash");
    b.tokens = 0, b.wall_s = 0;
    char *lb = ledger_format_row(&b);
    snprintf(text, sizeof text, "%s%s", LEDGER_HEADER, lb);
    LedgerRow *rows;
    int n;
    assert_int_equal(ledger_parse(text, strlen(text), "r.tsv", &rows, &n, NULL), 0);
    assert_int_equal(n, 1);
    ledger_free(rows, n);
    free(la), free(lb);
}

// The research holds DIR's lock (dir_lock) from start to end: a second research into a folder in
// use fails at once (exit 1), naming the holder's pid.
static void test_research_refuses_a_locked_folder(void **state) {
    (void)state;
    char *dir = test_tmpdir("rlock"), *space = path_join(dir, "space.json"), *out = path_join(dir, "out");
    const char *sp = "{\"params\": {\"matrix-lr\": {\"type\": \"float\", \"min\": 0.01, \"max\": 0.1}}}";
    test_write_file(space, sp, strlen(sp));
    assert_int_equal(mkdir_p(out), 0);
    int fd;
    assert_int_equal(dir_lock(out, &fd), 0);  // as another research would hold it
    ResearchOptions o;
    memset(&o, 0, sizeof o);
    o.out_dir = out, o.space_path = space, o.strategy = STRAT_GREEDY, o.budget_s = 1, o.max_trials = 1;
    o.baseline_seeds = 1, o.exe = "/bin/false";
    assert_int_equal(research_run(&o), -1);
    char pid[64];
    snprintf(pid, sizeof pid, "(pid %d)", (int)getpid());
    assert_error_contains("is in use by another frontier process");
    assert_error_contains(pid);
    assert_int_equal(err_exit_code(), 1);
    char *ledger = path_join(out, "results.tsv");
    assert_false(path_exists(ledger));  // nothing was started
    dir_unlock(fd);
    remove_tree(dir);
    free(ledger), free(dir), free(space), free(out);
}


// ---------------------------------------------------------------------------------------------
// Processes and the proposer
// ---------------------------------------------------------------------------------------------

// Alive and not a zombie (an orphan's zombie lingers until init reaps it).
static int alive(pid_t pid) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

static void test_proc_exit_signal_and_hang(void **state) {
    (void)state;
    char *dir = test_tmpdir("proc");
    char *log = path_join(dir, "log"), *pidf = path_join(dir, "pid");
    ProcResult r;
    const char *exit3[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    ProcSpec s = {exit3, NULL, log, NULL, 0, 10, 0, NULL, 0, 0, 0};
    assert_int_equal(proc_run(&s, &r), 0);
    assert_int_equal(r.exit_code, 3);
    assert_false(r.timed_out);
    char *text = read_file(log, NULL);
    assert_string_equal(text, "out\nerr\n");
    free(text);
    const char *killed[] = {"/bin/sh", "-c", "kill -9 $$", NULL};
    s.argv = killed;
    assert_int_equal(proc_run(&s, &r), 0);
    assert_int_equal(r.signal, 9);
    assert_string_equal(proc_describe(&r), "killed by signal 9 (Killed)");
    // a hang: killed at the limit, with everything it started in its process group
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sleep 60 & echo $! > %s; sleep 60", pidf);
    const char *hang[] = {"/bin/sh", "-c", cmd, NULL};
    s.argv = hang, s.limit_s = 0.5;
    assert_int_equal(proc_run(&s, &r), 0);
    assert_true(r.timed_out);
    assert_true(r.wall_s >= 0.5 && r.wall_s < 5);
    text = read_file(pidf, NULL);
    assert_non_null(text);
    pid_t bg = (pid_t)atoi(text);
    free(text);
    usleep(100000);
    assert_true(bg > 0 && !alive(bg));  // the background sleep is gone too
    // with a grace period (a launcher) the group gets SIGTERM first and time to clean up; without, none
    char *clean = path_join(dir, "cleaned");
    snprintf(cmd, sizeof cmd, "trap 'echo cleaned > %s; exit 0' TERM; sleep 60 & wait", clean);
    const char *trap_term[] = {"/bin/sh", "-c", cmd, NULL};
    s.argv = trap_term, s.limit_s = 0.5, s.grace_s = 5;
    assert_int_equal(proc_run(&s, &r), 0);
    assert_true(r.timed_out);
    assert_true(path_exists(clean) && r.wall_s < 5);  // it left as soon as it had cleaned up
    remove(clean);
    s.grace_s = 0;
    assert_int_equal(proc_run(&s, &r), 0);
    assert_true(r.timed_out && !path_exists(clean));
    free(clean);
    // the test fault hooks
    const char *none[] = {"/bin/true", NULL};
    ProcSpec f = {none, NULL, log, NULL, 0, 10, 0, "crash", 0, 0, 0};
    assert_int_equal(proc_run(&f, &r), 0);
    assert_int_equal(r.exit_code, 1);
    f.fault = "hang", f.limit_s = 0.2;
    assert_int_equal(proc_run(&f, &r), 0);
    assert_true(r.timed_out);
    const char *missing[] = {"/nonexistent/frontier", NULL};
    s.argv = missing, s.limit_s = 10;
    assert_int_equal(proc_run(&s, &r), 0);
    assert_int_equal(r.exit_code, 127);
    remove_tree(dir);
    free(log), free(pidf), free(dir);
}

static void test_launcher_template(void **state) {
    (void)state;
    assert_int_equal(trial_check_launcher("mpirun -np 1 --host node3 {cmd}"), 0);
    assert_int_equal(trial_check_launcher("srun -J fr{trial} -o {dir}/slurm.log {cmd}"), 0);
    assert_int_equal(trial_check_launcher("mpirun -np 1"), -1);
    assert_non_null(strstr(err_msg(), "has no {cmd}"));
    assert_int_equal(trial_check_launcher("srun -w {host} {cmd}"), -1);
    assert_non_null(strstr(err_msg(), "unknown placeholder at '{host}"));
}

static void test_proposer_output(void **state) {
    (void)state;
    cJSON *c;
    char *d;
    assert_int_equal(proposer_parse_output("{\"matrix-lr\": 0.03}\n", &c, &d), 0);
    assert_null(d);
    assert_true(fabs(cJSON_GetObjectItem(c, "matrix-lr")->valuedouble - 0.03) < 1e-12);
    cJSON_Delete(c);
    assert_int_equal(proposer_parse_output("thinking...\nI will try a longer warm-down.\n{\"change\": {\"warmdown\": 0.7}, "
                                           "\"description\": \"why\"}\n\n",
                                           &c, &d),
                     0);
    assert_string_equal(d, "why");
    assert_non_null(cJSON_GetObjectItem(c, "warmdown"));
    cJSON_Delete(c), free(d);
    assert_int_equal(proposer_parse_output("I propose matrix-lr = 0.03", &c, &d), -1);
    assert_error_contains("the proposer's output is not a JSON object (got \"I propose matrix-lr = 0.03\")");
    assert_int_equal(proposer_parse_output("", &c, &d), -1);
    assert_int_equal(proposer_parse_output("{\"change\": 3}", &c, &d), -1);
    assert_error_contains("\"change\" must be an object");
    assert_int_equal(proposer_parse_output("{\"change\": {}, \"why\": \"x\"}", &c, &d), -1);
    assert_error_contains("unexpected key \"why\"");
}

static void test_proposer_run(void **state) {
    (void)state;
    char *dir = test_tmpdir("proposer");
    cJSON *bundle = cJSON_Parse("{\"trial\": 7}");
    Proposal p;
    // reads the bundle on stdin, answers on stdout
    assert_int_equal(proposer_run("grep -q '\"trial\":' && echo '{\"depth\": 3}'", dir, bundle, 10, &p), 0);
    assert_int_equal(cJSON_GetObjectItem(p.change, "depth")->valueint, 3);
    proposal_free(&p);
    assert_int_equal(proposer_run("echo oops >&2; exit 4", dir, bundle, 10, &p), -1);
    assert_error_contains("the proposer failed: exit 4");
    proposal_free(&p);
    assert_int_equal(proposer_run("sleep 30", dir, bundle, 0.3, &p), -1);
    assert_error_contains("timed out");
    proposal_free(&p);
    cJSON_Delete(bundle);
    remove_tree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_default_parses),
        cmocka_unit_test(test_space_errors_name_the_key_path),
        cmocka_unit_test(test_space_checked_against_the_base),
        cmocka_unit_test(test_space_apply_derives_and_checks),
        cmocka_unit_test(test_space_validate_agent_change),
        cmocka_unit_test(test_proposals_respect_the_space),
        cmocka_unit_test(test_ledger_roundtrip_and_append),
        cmocka_unit_test(test_ledger_batches_and_the_16_column_format),
        cmocka_unit_test(test_ledger_torn_and_corrupt_rows),
        cmocka_unit_test(test_ledger_refuses_impossible_numbers),
        cmocka_unit_test(test_research_refuses_a_locked_folder),
        cmocka_unit_test(test_proc_exit_signal_and_hang),
        cmocka_unit_test(test_launcher_template),
        cmocka_unit_test(test_proposer_output),
        cmocka_unit_test(test_proposer_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
