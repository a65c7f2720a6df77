// cli/cmd_train.c — `frontier train`, `frontier run` and `frontier profile`.
//
// Every setting is a flag (the table: train/settings.h); `--config FILE.json` sets many at once
// (keys are flag names; flags on the command line win). The full set is written to
// RUN_DIR/config.json and into every checkpoint; `--resume RUN_DIR` reads it back from the newest
// checkpoint (the unit it resumes), and refuses a config.json that disagrees with it (an edited
// run folder). On resume, a flag that contradicts the saved config is an error (except the
// SETTING_RESUMABLE ones, which only say how long to go on or how to save: --budget, --steps,
// --save-every, --quiet, ...). The saved --stop-after is not kept: it stands for the interruption
// the resume continues.
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "dist/dist.h"
#include "kernels/kernels.h"
#include "train/checkpoint.h"
#include "train/train.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

// RUN_DIR/config.json must say what the checkpoint says (but for how long to go on): an edited or
// truncated config.json is refused rather than trusted. Both are read as settings and compared
// setting by setting (a float written by an older binary as 1.2000000476837158 is the float 1.2).
static int check_config_json(const char *run_dir, const char *ckpt_config, const char *ckpt_path) {
    char *path = path_join(run_dir, "config.json");
    size_t len;
    char *text = path_exists(path) ? read_file(path, &len) : NULL;
    int rc = 0;
    if (text) {
        cJSON *a = cJSON_ParseWithLength(text, len), *b = cJSON_Parse(ckpt_config);
        if (!cJSON_IsObject(a))
            rc = err_usage("%s is not a JSON object (a truncated or edited file?): the checkpoint %s holds the run's "
                           "settings; restore config.json from it or start a new run", path, ckpt_path);
        const unsigned skip = SETTING_RESUMABLE | SETTING_PROCESS;
        const cJSON *item;
        cJSON_ArrayForEach(item, b) {
            const Setting *s = train_setting_find(item->string);
            if (rc || (s && (s->flags & skip))) continue;
            if (!cJSON_GetObjectItemCaseSensitive(a, item->string))
                rc = err_usage("%s lacks the setting \"%s\" the checkpoint %s has (edited?): a resumed run keeps the "
                               "settings it was saved with; restore config.json or start a new run", path, item->string,
                               ckpt_path);
        }
        cJSON_ArrayForEach(item, a) {
            const Setting *s = train_setting_find(item->string);
            if (!rc && !(s && (s->flags & skip)) && !cJSON_GetObjectItemCaseSensitive(b, item->string))
                rc = err_usage("%s has a setting \"%s\" the checkpoint %s lacks (edited?)", path, item->string, ckpt_path);
        }
        TrainConfig x = train_settings_defaults(), y = train_settings_defaults();
        unsigned char gx[TRAIN_MAX_SETTINGS] = {0}, gy[TRAIN_MAX_SETTINGS] = {0};
        if (rc == 0 && (rc = train_settings_from_json(a, path, &x, gx, 1)) == 0 &&
            (rc = train_settings_from_json(b, ckpt_path, &y, gy, 1)) == 0) {
            const Setting *d = train_config_diff(&x, &y, skip);
            if (d)
                rc = err_usage("%s gives another \"%s\" than the checkpoint %s (edited?): a resumed run keeps the "
                               "settings it was saved with; restore config.json or start a new run", path, d->name,
                               ckpt_path);
        }
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    free(text);
    free(path);
    return rc;
}

// With --resume: the settings stored in the newest checkpoint become the run's; a setting given now
// that would change the run is refused (those that say how long or how visibly to go on are taken).
static int apply_resume(TrainConfig *raw, unsigned char *given) {
    int rc = -1, fd = -1;
    const char *resume = raw->resume;
    // a folder another process is training into is said to be that, whatever its checkpoints
    char *dir = !is_dir(resume) ? (err_usage("no such run folder"), NULL)
                : dist_rank() == 0 && dir_lock(resume, &fd) != 0 ? NULL : ckpt_latest(resume, NULL);
    dir_unlock(fd);
    char *mp = dir ? ckpt_model_path(dir) : NULL, *settings = dir ? ckpt_read_config(dir) : NULL;
    TrainConfig saved = train_settings_defaults();
    unsigned char saved_given[TRAIN_MAX_SETTINGS] = {0};
    if (settings && check_config_json(resume, settings, mp) == 0) {
        cJSON *j = cJSON_Parse(settings);
        rc = j ? train_settings_from_json(j, mp, &saved, saved_given, 1) : err_usage("%s: the saved settings are not JSON", mp);
        cJSON_Delete(j);
    }
    if (rc != 0) err_prefix("--resume %s", resume);
    free(settings);
    free(mp);
    free(dir);
    saved.stop_after = 0;  // the interruption being resumed from, not a setting of the run
    for (int i = 0; i < TRAIN_N_SETTINGS && rc == 0; i++) {
        const Setting *s = &TRAIN_SETTINGS[i];
        if (!given[i]) continue;
        if (!train_setting_equal(s, raw, &saved) && !(s->flags & (SETTING_RESUMABLE | SETTING_PROCESS)))
            rc = err_usage("--%s conflicts with the run being resumed (--resume %s: its checkpoint's settings): a "
                           "resumed run keeps its config; start a new run to change it", s->name, resume);
        memcpy(train_setting_ptr(s, &saved), train_setting_cptr(s, raw), s->size);
        saved_given[i] = 1;
    }
    if (rc == 0) {
        *raw = saved;
        memcpy(given, saved_given, sizeof saved_given);
    }
    return rc;
}

// --config FILE: its settings, under the ones given on the command line.
static int load_config_file(const char *path, TrainConfig *raw, unsigned char *given) {
    if (!*path) return err_usage("--config: the settings file name is empty: give a path to a JSON object file");
    if (!path_exists(path)) return err_usage("--config: %s: no such file (a JSON object whose keys are flag names)", path);
    if (is_dir(path)) return err_usage("--config: %s is a folder, not a JSON settings file", path);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return err_mark_usage(), err_prefix("--config");
    cJSON *j = cJSON_ParseWithLength(text, len);
    int rc = 0;
    if (!cJSON_IsObject(j))
        rc = err_usage("--config: %s: not a JSON object (error near byte %ld)", path,
                       j ? 0L : (long)(cJSON_GetErrorPtr() - text));
    else if (train_settings_from_json(j, path, raw, given, 0) != 0)
        rc = err_prefix("--config");
    cJSON_Delete(j);
    free(text);
    return rc;
}

static char *default_run_dir(void) {
    char buf[64];
    time_t t = time(NULL);
    strftime(buf, sizeof buf, "runs/%Y%m%d-%H%M%S", localtime(&t));
    return xstrdup(buf);
}

static void print_summary(const TrainConfig *c, const TrainResult *r) {
    printf("\n== frontier run summary ==\n");
    if (r->stopped_by != STOP_AFTER && r->stopped_by != STOP_SIGNAL)
        printf("val_bpb        %.4f  (%lld tokens, T=%d, pinned validation set)\n", r->val_bpb,
               (long long)r->eval_tokens, r->eval_T);
    printf("tokens seen    %lld  (%lld steps x %lld tokens)\n", (long long)r->tokens, (long long)r->steps,
           (long long)c->batch_tokens);
    printf("parameters     %zu  (%.1f MFLOP/token)\n", r->params, r->flops_per_token / 1e6);
    if (!(r->timed_s > 0))  // every step was one of the --excluded-steps warm-up steps
        printf("throughput     not timed: all %lld steps were warm-up steps (--excluded-steps %d)\n", (long long)r->steps,
               c->excluded_steps);
    else
        printf("throughput     %.0f tok/s, MFU %.2f%% of %.0f GFLOP/s (%s)\n", r->tok_per_s, 100 * r->mfu,
               r->peak_flops / 1e9, c->peak_flops > 0 ? "--peak-flops" : c->precision == KP_BF16
                                        ? "measured bf16 peak of the cores used: --precision bf16"
                                        : "measured fp32 peak of the cores used");
    if (c->steps > 0) printf("budget         fixed %lld steps; timed %.1f s\n", (long long)c->steps, r->timed_s);
    else printf("budget         %.1f of %.0f s used (%.1f%%); start-up %.1f s and %d excluded steps %.1f s not counted\n",
                r->timed_s, c->budget_s, 100 * r->timed_s / c->budget_s, r->startup_s, c->excluded_steps, r->excluded_s);
    if (r->checkpoints > 0)
        printf("checkpoints    %lld during training, %.1f s (not on the budget clock), and one at the end\n",
               (long long)r->checkpoints, r->checkpoint_s);
    printf("final loss     %.4f\nrun folder     %s\n", r->final_loss, c->run_dir);
}

enum { MODE_TRAIN, MODE_RUN, MODE_PROFILE };

static int train_like(int argc, char **argv, const char *usage, const char *summary, int mode) {
    if (kernels_init() != 0) { report_error(); return 2; }  // a bad FRONTIER_KERNELS is a usage error
    TrainConfig raw = train_settings_defaults();
    int rows[TRAIN_MAX_SETTINGS];
    Option *opts = train_flag_options(&raw, mode == MODE_TRAIN, rows);
    if (mode == MODE_TRAIN && argc == 1 && !strcmp(argv[0], "--settings")) {  // the settings table, not a run
        args_print_settings(opts, stdout);
        free(opts);
        return 0;
    }
    int rc = parse_args(usage, summary, opts, argc, argv, NULL);
    unsigned char given[TRAIN_MAX_SETTINGS] = {0};
    for (int k = 0; opts[k].name; k++) given[rows[k]] = (unsigned char)opts[k].seen;
    free(opts);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : 2;
    if (raw.config_path && load_config_file(raw.config_path, &raw, given) != 0) return report_error();
    if (raw.resume && apply_resume(&raw, given) != 0) return report_error();
    char *run_dir = NULL;
    if (!raw.run_dir && !raw.resume) raw.run_dir = run_dir = default_run_dir();
    TrainConfig cfg;
    if (train_config_resolve(&raw, given, dist_world(), &cfg) != 0) { free(run_dir); return report_error(); }
    // config.json records what will actually be trained, every setting at its effective value (the
    // shape --preset and --depth derived, the preset's batch, --precision auto resolved), so that
    // --resume, which reads every key back as if given, rebuilds exactly this run. The folders are
    // recorded as absolute paths, so `frontier eval` finds them from anywhere.
    TrainConfig rec = cfg;
    char *abs_data = cfg.data_dir ? realpath(cfg.data_dir, NULL) : NULL, *abs_cache = cfg.cache_dir ? realpath(cfg.cache_dir, NULL) : NULL;
    if (abs_data) rec.data_dir = abs_data;
    if (abs_cache) rec.cache_dir = abs_cache;
    cJSON *j = train_settings_to_json(&rec);
    char *json = cJSON_Print(j);
    cJSON_Delete(j);
    cfg.config_json = json;
    if (cfg.resume) cfg.run_dir = cfg.resume;
    if (mode == MODE_PROFILE) {  // --steps N counts the recorded steps, after the excluded ones
        cfg.profile_steps = raw.steps > 0 ? (int)raw.steps : 5;
        cfg.steps = cfg.excluded_steps + cfg.profile_steps;
    }
    TrainResult res;
    rc = train_run(&cfg, &res);
    int speaks = dist_rank() == 0;  // under mpirun every rank has the result; rank 0 says it once
    if (rc == 0 && mode != MODE_PROFILE && speaks) print_summary(&cfg, &res);
    // an error every rank shares (a diverged loss, a failed save) is said once, by rank 0
    int code = rc == 0 ? 0 : speaks || !dist_exiting_together() ? report_error() : err_exit_code();
    if (rc == 0 && res.stopped_by == STOP_SIGNAL) {
        if (speaks)
            fprintf(stderr, "frontier: interrupted by %s at step %lld; the checkpoint is saved: continue with `frontier "
                    "train --resume %s`\n", res.signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)res.steps, cfg.run_dir);
        code = 128 + res.signal;
    }
    free(json);
    free(run_dir);
    free(abs_data);
    free(abs_cache);
    return code;
}

int cmd_train(int argc, char **argv) {
    return train_like(argc, argv, "frontier train [options]",
                      "Train a GPT from scratch within a wall-clock budget (or a fixed number of steps), save the "
                      "checkpoint, and score it by val_bpb on the pinned validation set. Prepares the data first "
                      "if needed (cached). `frontier train --settings` prints every setting with its type, range "
                      "and default as a Markdown table.",
                      MODE_TRAIN);
}

int cmd_run(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--phase")) return cmd_phase(argc, argv);
    return train_like(argc, argv, "frontier run [options]",
                      "The main job: prepare the data (cached), train the default preset for --budget (5m), "
                      "evaluate val_bpb, and print one summary block. Takes the same options as `frontier train`.",
                      MODE_RUN);
}

int cmd_profile(int argc, char **argv) {
    return train_like(argc, argv, "frontier profile [train options] [--steps N]",
                      "Profile training: after the --excluded-steps warm-up, record --steps N (default 5) steps "
                      "with every kernel call timed and costed (analytic FLOPs and bytes), then write trace.json "
                      "(Chrome/Perfetto trace events: step > phase > layer > op spans, data loading on its own "
                      "lane, a tok/s counter), profile.csv, profile_shapes.csv (per op and shape) and "
                      "roofline.json into the run folder and print the per-op table (self time, % of step, "
                      "GFLOP/s, GB/s, FLOP/byte, % of roofline) with time per phase and per layer, the costliest "
                      "(op, shape) rows, MFU and HFU. No evaluation. Takes the options of `frontier train`.",
                      MODE_PROFILE);
}
