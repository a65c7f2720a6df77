// tests/train/test_settings.c — the settings table (train/settings.h) is the one definition of
// every setting: each row, given on the command line with a value other than its default, goes
// flag -> config -> config.json -> config unchanged and is listed by `frontier train --settings`
// and --help; the process settings are not saved; a resolved config written and read back
// resolves to the same run; the model's JSON (model_config_to_json) holds every MODEL_SETTINGS
// field; and the research space's bounds check refuses a value outside a setting's range.
#include "test_util.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>

#include "cli/train_flags.h"
#include "research/space.h"
#include "train/settings.h"

// A value other than the default that the row's parser accepts, as the command line writes it.
static void other_value(const Setting *s, const TrainConfig *d, char *buf, size_t n) {
    const void *v = train_setting_cptr(s, d);
    switch (s->type) {
    case SETTING_INT:
    case SETTING_INT64: {
        long long x = s->type == SETTING_INT ? *(const int *)v : (long long)*(const int64_t *)v;
        long long y = s->min < s->max && x + 1 > s->max ? x - 1 : x + 1;
        snprintf(buf, n, "%lld", y);
        break;
    }
    case SETTING_FLOAT:
    case SETTING_DOUBLE: {
        double x = s->type == SETTING_FLOAT ? *(const float *)v : *(const double *)v;
        double y = x != 0 ? x * 0.5 : s->has_range ? s->lo + (s->hi - s->lo) / 4 : 1.5;
        snprintf(buf, n, "%.9g", y);
        break;
    }
    case SETTING_TEXT: snprintf(buf, n, "/tmp/frontier-test-%s", s->name); break;
    case SETTING_CHARS: snprintf(buf, n, "SSL"); break;
    case SETTING_ENUM: {
        int k = *(const int *)v, count = 0;
        while (s->words[count]) count++;
        snprintf(buf, n, "%s", s->words[(k + 1) % count]);
        break;
    }
    case SETTING_DURATION: snprintf(buf, n, "%gs", *(const double *)v + 90); break;
    case SETTING_FLAG: buf[0] = 0; break;
    }
}

static void test_every_setting_round_trips(void **state) {
    (void)state;
    const TrainConfig defaults = train_settings_defaults();
    char *settings = NULL;
    size_t settings_len = 0;
    {
        TrainConfig c = defaults;
        int rows[TRAIN_MAX_SETTINGS];
        Option *opts = train_flag_options(&c, 1, rows);
        FILE *f = open_memstream(&settings, &settings_len);
        args_print_settings(opts, f);
        fclose(f);
        free(opts);
    }
    for (int i = 0; i < TRAIN_N_SETTINGS; i++) {
        const Setting *s = &TRAIN_SETTINGS[i];
        // listed by --settings
        char cell[80];
        snprintf(cell, sizeof cell, "| `%s` |", s->name);
        if (!strstr(settings, cell)) fail_msg("--%s is not in frontier train --settings", s->name);
        // flag -> config
        TrainConfig raw = defaults;
        int rows[TRAIN_MAX_SETTINGS];
        Option *opts = train_flag_options(&raw, 1, rows);
        char flag[64], value[256];
        snprintf(flag, sizeof flag, "--%s", s->name);
        other_value(s, &defaults, value, sizeof value);
        char *argv[] = {flag, value, NULL};
        int argc = s->type == SETTING_FLAG ? 1 : 2;
        if (parse_args("frontier train", "", opts, argc, argv, NULL) != ARGS_OK) fail_msg("--%s %s was refused", s->name, value);
        int k = 0;
        while (opts[k].name && rows[k] != i) k++;
        assert_non_null(opts[k].name);
        assert_true(opts[k].seen);
        free(opts);
        if (train_setting_equal(s, &raw, &defaults)) fail_msg("--%s %s left the default in place", s->name, value);
        // config -> config.json -> config
        cJSON *j = train_settings_to_json(&raw);
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(j, s->name);
        if (s->flags & SETTING_PROCESS) {
            if (item) fail_msg("--%s says how the process was started, but config.json holds it", s->name);
            cJSON_Delete(j);
            continue;
        }
        if (!item) fail_msg("config.json lacks \"%s\"", s->name);
        TrainConfig back = defaults;
        unsigned char given[TRAIN_MAX_SETTINGS] = {0};
        if (train_settings_from_json(j, "config.json", &back, given, 1) != 0) fail_msg("%s", err_msg());
        cJSON_Delete(j);
        assert_true(given[i]);
        if (!train_setting_equal(s, &raw, &back)) fail_msg("--%s %s changed through config.json", s->name, value);
        const Setting *d = train_config_diff(&raw, &back, SETTING_PROCESS);
        if (d) fail_msg("--%s %s: --%s changed through config.json", s->name, value, d->name);
    }
    free(settings);
}

// Resolved configs (the shape a preset or --depth derives, --precision auto resolved, ...) written
// as config.json and read back as if every setting were given resolve to the same run.
static void test_resolved_configs_round_trip(void **state) {
    (void)state;
    const char *cases[][12] = {
        {NULL},
        {"--depth", "4", NULL},
        {"--preset", "kit-d10", NULL},
        {"--depth", "3", "--n-embd", "256", "--n-head", "4", "--n-kv-head", "2", NULL},
        {"--window-pattern", "SSSL", "--seq-len", "1024", NULL},
        {"--precision", "fp32", "--budget", "90s", "--save-every", "500steps", "--matrix-lr", "0.0234567", NULL},
        {"--bigram", "0", "--lambdas", "0", "--ortho", "newton-schulz", "--ns-steps", "7", NULL},
        {"--data-order", "rows", "--epoch-order", "same", "--train-tokens", "100000", NULL},
        {"--crop-rest", "drop", "--ema-steps", "50", "--ema-blend", "0.4", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        TrainConfig raw = train_settings_defaults(), cfg, raw2 = train_settings_defaults(), cfg2;
        int rows[TRAIN_MAX_SETTINGS], argc = 0;
        while (cases[c][argc]) argc++;
        Option *opts = train_flag_options(&raw, 1, rows);
        assert_int_equal(parse_args("frontier train", "", opts, argc, (char **)cases[c], NULL), ARGS_OK);
        unsigned char given[TRAIN_MAX_SETTINGS] = {0}, given2[TRAIN_MAX_SETTINGS] = {0};
        for (int k = 0; opts[k].name; k++) given[rows[k]] = (unsigned char)opts[k].seen;
        free(opts);
        if (train_config_resolve(&raw, given, 1, &cfg) != 0) fail_msg("case %zu: %s", c, err_msg());
        assert_int_not_equal(cfg.precision, KP_AUTO);
        cJSON *j = train_settings_to_json(&cfg);
        assert_int_equal(train_settings_from_json(j, "config.json", &raw2, given2, 1), 0);
        cJSON_Delete(j);
        if (train_config_resolve(&raw2, given2, 1, &cfg2) != 0) fail_msg("case %zu, read back: %s", c, err_msg());
        const Setting *d = train_config_diff(&cfg, &cfg2, SETTING_PROCESS);
        if (d) fail_msg("case %zu: --%s differs after config.json", c, d->name);
        assert_null(model_config_diff(&cfg.model, &cfg2.model));
        assert_int_equal(cfg.save_every_steps, cfg2.save_every_steps);
        assert_true(cfg.budget_s == cfg2.budget_s);
    }
}

// The rows say what --resume may change: how long and how visibly, never what is trained.
static void test_resumable_rows(void **state) {
    (void)state;
    const char *resumable[] = {"budget", "steps", "stop-after", "quiet", "threads", "eval-tokens", "save-every",
                               "keep-checkpoints"};
    const char *fixed[] = {"depth", "matrix-lr", "seed", "batch-tokens", "precision", "preset", "window-pattern"};
    for (size_t i = 0; i < sizeof resumable / sizeof *resumable; i++)
        assert_true(train_setting_find(resumable[i])->flags & SETTING_RESUMABLE);
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        assert_false(train_setting_find(fixed[i])->flags & SETTING_RESUMABLE);
    assert_null(train_setting_find("no-such-setting"));
    // a config whose float settings an older binary wrote with float noise is the same config
    TrainConfig a = train_settings_defaults(), b = train_settings_defaults();
    unsigned char ga[TRAIN_MAX_SETTINGS] = {0}, gb[TRAIN_MAX_SETTINGS] = {0};
    cJSON *x = cJSON_Parse("{\"qk-scale\": 1.2000000476837158, \"matrix-lr\": 0.019999999552965164}");
    cJSON *y = cJSON_Parse("{\"qk-scale\": 1.2, \"matrix-lr\": 0.02}");
    assert_int_equal(train_settings_from_json(x, "x", &a, ga, 1), 0);
    assert_int_equal(train_settings_from_json(y, "y", &b, gb, 1), 0);
    assert_null(train_config_diff(&a, &b, 0));
    cJSON_Delete(x);
    cJSON_Delete(y);
    // bad values name the file and the key
    cJSON *bad = cJSON_Parse("{\"depth\": 0}");
    assert_int_equal(train_settings_from_json(bad, "cfg.json", &a, ga, 1), -1);
    assert_error_contains("cfg.json: \"depth\" must be between 1 and 256");
    cJSON_Delete(bad);
    bad = cJSON_Parse("{\"precision\": \"fp16\"}");
    assert_int_equal(train_settings_from_json(bad, "cfg.json", &a, ga, 1), -1);
    assert_error_contains("\"precision\"");
    cJSON_Delete(bad);
}

// Every field of MODEL_SETTINGS is in the model's JSON, under its field name.
static void test_model_json_has_every_field(void **state) {
    (void)state;
    ModelConfig m = model_config_from_depth(3, 8192, 256);
    char *json = model_config_to_json(&m);
    cJSON *j = cJSON_Parse(json);
#define HAS(f, flag, type, meta, lo, lo_open, hi, hi_open, absent, help) \
    if (!cJSON_GetObjectItemCaseSensitive(j, #f)) fail_msg("the model's JSON lacks %s", #f);
    MODEL_SETTINGS(HAS)
#undef HAS
    assert_non_null(strstr(json, "\"qk_scale\":1.2,"));  // the float's shortest decimal
    cJSON_Delete(j);
    free(json);
}

// The research space's bounds come from the table: a value the trainer would refuse is refused
// when the space is loaded, naming the range.
static void test_space_bounds_from_the_table(void **state) {
    (void)state;
    Space s;
    assert_int_equal(space_parse(&s, "{\"params\": {\"depth\": {\"type\": \"int\", \"min\": 1, \"max\": 300}}}", "sp.json"), 0);
    assert_int_equal(space_check_settings(&s), -1);
    assert_error_contains("params.depth: 300 lies outside --depth's range 1..256");
    space_free(&s);
    assert_int_equal(space_parse(&s, "{\"params\": {\"momentum-end\": {\"type\": \"choice\", \"values\": [0.9, 1.0]}}}", "sp.json"), 0);
    assert_int_equal(space_check_settings(&s), -1);
    assert_error_contains("1 lies outside --momentum-end's range [0, 1)");
    space_free(&s);
    assert_int_equal(space_parse(&s, "{\"params\": {\"matrx-lr\": {\"type\": \"float\", \"min\": 0.01, \"max\": 0.1}}}", "sp.json"), 0);
    assert_int_equal(space_check_settings(&s), -1);
    assert_error_contains("params.matrx-lr: not a setting of frontier train");
    space_free(&s);
    assert_int_equal(space_load(&s, "research/space.json"), 0);
    if (space_check_settings(&s) != 0) fail_msg("research/space.json: %s", err_msg());
    space_free(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_setting_round_trips),
        cmocka_unit_test(test_resolved_configs_round_trip),
        cmocka_unit_test(test_resumable_rows),
        cmocka_unit_test(test_model_json_has_every_field),
        cmocka_unit_test(test_space_bounds_from_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
