// tests/fuzz/fuzz_config.c — the config JSON readers: model_config_from_json (the model_config
// a checkpoint stores, src/model/config.c) and args_load_json (`frontier train --config`,
// src/cli/args.c) over an option table with every option type and train's kinds of bounds
// (train's own table is static in src/cli/cmd_train.c, out of reach).
//
// Input: a JSON text. A model config that parses and validates must survive
// model_config_to_json -> model_config_from_json unchanged; an accepted option value must lie
// within its bounds.
#include "fuzz_util.h"

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "model/config.h"

typedef struct {
    int flag, depth, any_int;
    int64_t steps, seed;
    double lr;
    const char *name;
    StringList list;
} Flags;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_cstr(data, size);
    ModelConfig c;
    memset(&c, 0, sizeof c);
    if (model_config_from_json(text, &c) != 0) {
        fuzz_expect_message();
    } else if (model_config_validate(&c) == 0) {
        (void)model_config_num_params(&c);
        (void)model_config_flops_per_token(&c);
        char *j = model_config_to_json(&c);
        ModelConfig d;
        memset(&d, 0, sizeof d);
        FUZZ_CHECK(model_config_from_json(j, &d) == 0, "own JSON refused: %s", err_msg());
        const char *diff = model_config_diff(&c, &d);
        FUZZ_CHECK(!diff, "field %s changed through JSON (%s)", diff, j);
        free(j);
    } else {
        fuzz_expect_message();
    }

    Flags f = {0};
    Option opts[] = {
        {"normuon", OPT_FLAG, &f.flag, NULL, "", 0, 0, 0},
        {"depth", OPT_INT, &f.depth, "L", "", 1, 256, 0},
        {"window", OPT_INT, &f.any_int, "N", "", 0, 0, 0},
        {"steps", OPT_INT64, &f.steps, "N", "", 0, INT64_MAX, 0},
        {"seed", OPT_INT64, &f.seed, "N", "", 0, 0, 0},
        {"matrix-lr", OPT_DOUBLE, &f.lr, "LR", "", 0, 0, 0},
        {"run-dir", OPT_STRING, &f.name, "DIR", "", 0, 0, 0},
        {"input", OPT_LIST, &f.list, "PATH", "", 0, 0, 0},
        {NULL, 0, NULL, NULL, NULL, 0, 0, 0},
    };
    const char *path = fuzz_file("config.json", data, size);
    if (args_load_json(opts, path, 1) != 0) {
        fuzz_expect_message();
    } else {
        FUZZ_CHECK(f.depth >= 0 && f.depth <= 256, "depth %d accepted", f.depth);
        FUZZ_CHECK(f.steps >= 0, "steps %lld accepted", (long long)f.steps);
        struct cJSON *j = args_to_json(opts);
        cJSON_Delete(j);
    }
    free((char *)f.name);  // the copy args_load_json keeps for the life of the process
    free(text);
    return 0;
}
