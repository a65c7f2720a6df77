// cli/train_flags.c — options from the settings table (see train_flags.h).
#include "cli/train_flags.h"

#include <stdint.h>
#include <string.h>

#include "util/mem.h"

static OptType opt_type(SettingType t) {
    switch (t) {
    case SETTING_INT: return OPT_INT;
    case SETTING_INT64: return OPT_INT64;
    case SETTING_FLOAT: return OPT_FLOAT;
    case SETTING_DOUBLE: return OPT_DOUBLE;
    case SETTING_TEXT: return OPT_STRING;
    case SETTING_CHARS: return OPT_CHARS;
    case SETTING_ENUM: return OPT_ENUM;
    case SETTING_DURATION: return OPT_DURATION;
    case SETTING_FLAG: return OPT_FLAG;
    }
    return OPT_STRING;
}

Option *train_flag_options(TrainConfig *c, int with_resume, int *rows) {
    Option *opts = xcalloc((size_t)TRAIN_N_SETTINGS + 1, sizeof *opts);
    int n = 0;
    for (int i = 0; i < TRAIN_N_SETTINGS; i++) {
        const Setting *s = &TRAIN_SETTINGS[i];
        if ((s->flags & SETTING_TRAIN_ONLY) && !with_resume) continue;
        // the reals' ranges are checked by train_config_resolve, which names the open ends
        opts[n] = (Option){.name = s->name, .type = opt_type(s->type), .dest = train_setting_ptr(s, c),
                           .metavar = s->metavar, .help = s->help, .min = s->min, .max = s->max,
                           .cap = s->size, .words = s->words};
        rows[n++] = i;
    }
    return opts;
}
