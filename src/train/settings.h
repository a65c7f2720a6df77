// train/settings.h — every setting of a training run, once.
//
// TRAIN_SETTINGS lists each setting with where its value lives in a TrainConfig, its type, range,
// flags and help line. The model's rows come from MODEL_SETTINGS (model/config.h), the optimizer's
// from OPTIM_SETTINGS (optim/optim.h), the run's own are written in settings.c; the order is the
// one `frontier train --help` and `--settings` print. Everything else is derived from the table:
// the flag parser, --help and --settings (cli/train_flags.h builds the options from it), the
// defaults (the fields of train_settings_defaults()), the validation ranges, the JSON reader and
// writer of config.json, train_config_diff, which settings may change on --resume, and the
// research space's bounds check (research/space.h). Adding a setting = one row (or one line in
// MODEL_SETTINGS / OPTIM_SETTINGS) and the code that uses it.
//
// A raw config holds what was given (or the defaults); train_config_resolve() derives the run's
// config from it: the preset's shape and batch, --depth's width and heads, the defaults that
// follow from other settings (--n-kv-head from --n-head, --window from --seq-len, the preset's
// --batch-tokens and --lr-batch-ref), --precision auto, --save-every, and every check that needs
// more than one setting. The resolved config holds every setting's effective value, so writing
// it (config.json) and reading it back gives the same run.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "train/train.h"

typedef enum {
    SETTING_INT,       // int
    SETTING_INT64,     // int64_t (or uint64_t)
    SETTING_FLOAT,     // float
    SETTING_DOUBLE,    // double
    SETTING_TEXT,      // const char * (NULL: unset)
    SETTING_CHARS,     // char[size]
    SETTING_ENUM,      // int (or an enum): the index of its word in `words`
    SETTING_DURATION,  // double seconds, written "90s", "5m", "1h"
    SETTING_FLAG,      // int 0/1, a flag without a value
} SettingType;

enum {
    SETTING_RESUMABLE = 1 << 0,   // says how long or how visibly to go on: may change on --resume
    SETTING_PROCESS = 1 << 1,     // how this process was started (--config, --resume, --overwrite): not saved
    SETTING_TRAIN_ONLY = 1 << 2,  // only `frontier train` takes it (not run or profile)
    SETTING_INVOCATION = 1 << 3,  // how long, where or how visibly one invocation runs, not what it trains
                                  // (a research trial sets these itself)
    SETTING_MODEL = 1 << 4,       // a field of ModelConfig (MODEL_SETTINGS)
};

typedef struct {
    const char *name;        // the flag without "--"; the key in config.json
    SettingType type;
    size_t offset, size;     // of the value in TrainConfig
    const char *metavar;     // NULL for a flag
    int64_t min, max;        // integers: the inclusive range (min < max), 0, 0 = int's
    double lo, hi;           // reals: the range, an end excluded where lo_open / hi_open
    int lo_open, hi_open, has_range;
    const char *const *words;  // SETTING_ENUM: the words, NULL-terminated, in the order of the values
    unsigned flags;          // SETTING_*
    const char *help;
} Setting;

extern const Setting TRAIN_SETTINGS[];
extern const int TRAIN_N_SETTINGS;
#define TRAIN_MAX_SETTINGS 96

// The row of a flag name, or NULL.
const Setting *train_setting_find(const char *name);
// Where a row's value lives in c.
static inline void *train_setting_ptr(const Setting *s, TrainConfig *c) { return (char *)c + s->offset; }
static inline const void *train_setting_cptr(const Setting *s, const TrainConfig *c) {
    return (const char *)c + s->offset;
}

// The defaults a command line starts from: train_defaults() with the CLI's choices (precision
// auto, save-every auto, the cpu preset).
TrainConfig train_settings_defaults(void);

// The run's config from a raw one; given[i]: whether TRAIN_SETTINGS[i] was given (flag, --config
// or the saved settings of --resume). Every value is checked here, before any work: a bad one is
// a usage error (exit 2) naming its flag. world: the ranks the batch is split over. 0, or -1 + err.
int train_config_resolve(const TrainConfig *raw, const unsigned char *given, int world, TrainConfig *out);

// Whether two configs give the same value to a setting (the row's field compared as its type).
int train_setting_equal(const Setting *s, const TrainConfig *a, const TrainConfig *b);
// config.json: every setting but the process ones (SETTING_PROCESS), as c holds it (a resolved
// config: the effective values). Floats as the shortest decimal of the float. Caller deletes.
struct cJSON *train_settings_to_json(const TrainConfig *c);
// The same for the settings marked in given[] only: a --config file of chosen settings (a plan, a
// research trial), every other one left to the trainer's defaults.
struct cJSON *train_settings_to_json_given(const TrainConfig *c, const unsigned char *given);
// Mark setting `name` given (a row of the table; aborts on a name that is not one: a programming error).
void train_setting_give(unsigned char *given, const char *name);
// Settings from a JSON object whose keys are flag names into raw, marking given[]; a setting given
// already is skipped unless `override` (the command line wins over --config). Values obey the
// flags' rules (types, integer bounds, finite numbers; the real ranges are checked by
// train_config_resolve). Errors are usage errors naming `origin` and the key. 0 or -1 + err.
int train_settings_from_json(const struct cJSON *o, const char *origin, TrainConfig *raw, unsigned char *given,
                             int override);
// One setting's value from JSON (the same rules). 0 or -1 + err.
int train_setting_from_json(const Setting *s, const struct cJSON *v, const char *origin, TrainConfig *raw);

// The first setting whose value differs between a and b, skipping those whose flags include any
// of `skip` (e.g. SETTING_RESUMABLE | SETTING_PROCESS); NULL when none does.
const Setting *train_config_diff(const TrainConfig *a, const TrainConfig *b, unsigned skip);
