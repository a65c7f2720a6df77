// tests/research/research_test_util.h — what the research tests (test_research.c,
// test_research_plan.c) share: the base configuration a research starts from, and the shipped
// default search space checked against it.
#pragma once
#include <cjson/cJSON.h>

#include "test_util.h"

#include "research/space.h"
#include "train/settings.h"

static const char BASE[] =
    "{\"preset\":\"cpu\",\"depth\":2,\"n-embd\":128,\"n-head\":1,\"n-kv-head\":1,\"head-dim\":128,\"seq-len\":256,"
    "\"vocab-size\":8192,\"mlp-ratio\":4,\"rope-base\":100000,\"softcap\":15,\"qk-norm\":1,\"batch-tokens\":4096,"
    "\"device-batch\":16,\"lr-batch-ref\":4096,\"matrix-lr\":0.02,\"embedding-lr\":0.3,\"unembedding-lr\":0.008,"
    "\"weight-decay\":0.2,\"momentum-start\":0.85,\"momentum-end\":0.95,\"warmup-steps\":10,\"warmdown\":0.5,"
    "\"final-lr-frac\":0.05,\"ortho\":\"polar-express\",\"normuon\":0,\"muon-eq\":0,\"cautious-wd\":0,\"seed\":42,"
    "\"eval-tokens\":0,\"threads\":0,\"quiet\":false,\"precision\":\"fp32\",\"window-pattern\":\"L\",\"window\":0,\"qk-scale\":1,\"lambdas\":0,\"backout\":0,"
    "\"value-embeds\":0,\"smear\":0,\"bigram\":0,\"scalar-lr\":0.5}";

// Every setting of `frontier train` at its default (as a run's config.json holds them), with
// BASE's values over them: a setting added to the table is in the base without editing BASE.
static inline cJSON *base_config(void) {
    TrainConfig d = train_settings_defaults();
    cJSON *b = train_settings_to_json(&d), *over = cJSON_Parse(BASE);
    assert_non_null(b);
    assert_non_null(over);
    for (cJSON *o = over->child; o; o = o->next) {
        assert_true(cJSON_HasObjectItem(b, o->string));  // BASE names settings that exist
        cJSON_ReplaceItemInObjectCaseSensitive(b, o->string, cJSON_Duplicate(o, 1));
    }
    cJSON_Delete(over);
    return b;
}

// The shipped default space, checked against the base.
static inline void load_default_space(Space *s, cJSON *base) {
    if (space_load(s, "research/space.json") != 0) fail_msg("%s", err_msg());
    if (space_check_base(s, base) != 0) fail_msg("%s", err_msg());
}
