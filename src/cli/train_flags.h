// cli/train_flags.h — the options of `frontier train`, `run` and `profile`, made from the settings
// table (train/settings.h): one option per row, writing straight into a TrainConfig.
#pragma once
#include "cli/args.h"
#include "train/settings.h"

// The options for TRAIN_SETTINGS, each writing into *c (NULL-terminated; the caller frees them);
// rows[k] is the table row of option k. with_resume: the command takes --resume (`frontier train`
// only; run and profile leave out the SETTING_TRAIN_ONLY rows).
Option *train_flag_options(TrainConfig *c, int with_resume, int *rows);
