// tests/fuzz/fuzz_config.c — the config JSON readers: model_config_from_json (the model_config
// a checkpoint stores, src/model/config.c) and train_settings_from_json (`frontier train --config`
// and config.json, src/train/settings.c, over the real settings table).
//
// Input: a JSON text. A model config that parses and validates must survive
// model_config_to_json -> model_config_from_json unchanged; accepted settings must survive
// train_settings_to_json -> train_settings_from_json unchanged, and a config that resolves must
// hold a valid model.
#include "fuzz_util.h"

#include <cjson/cJSON.h>

#include "model/config.h"
#include "train/settings.h"

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

    // train's settings reader, over the real table: whatever it accepts, the writer writes and the
    // reader reads back to the same values; a config that also resolves does the same
    cJSON *in = cJSON_Parse(text);
    if (in) {
        TrainConfig raw = train_settings_defaults(), back = train_settings_defaults(), res;
        unsigned char given[TRAIN_MAX_SETTINGS] = {0}, given2[TRAIN_MAX_SETTINGS] = {0};
        if (train_settings_from_json(in, "fuzz", &raw, given, 1) != 0) {
            fuzz_expect_message();
        } else {
            raw.precision = raw.precision == KP_AUTO ? KP_FP32 : raw.precision;  // the writer takes a resolved one
            cJSON *out = train_settings_to_json(&raw);
            FUZZ_CHECK(train_settings_from_json(out, "own", &back, given2, 1) == 0, "own JSON refused: %s", err_msg());
            const Setting *d = train_config_diff(&raw, &back, SETTING_PROCESS);
            FUZZ_CHECK(!d, "setting %s changed through JSON", d ? d->name : "");
            cJSON_Delete(out);
            if (train_config_resolve(&raw, given, 1, &res) != 0) fuzz_expect_message();
            else FUZZ_CHECK(model_config_validate(&res.model) == 0, "resolved an invalid model: %s", err_msg());
        }
        cJSON_Delete(in);
    }
    free(text);
    return 0;
}
