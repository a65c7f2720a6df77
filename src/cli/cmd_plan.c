// cli/cmd_plan.c — `frontier plan`: the model, batch and schedule for this machine and budget
// (planner/session.h), printed as a table and written as plan.json for `frontier train --config`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/mix.h"
#include "kernels/kernels.h"
#include "planner/session.h"
#include "planner/worth.h"
#include "research/trial.h"
#include "util/error.h"
#include "util/fileio.h"

static const char SUMMARY[] =
    "Choose the model for this machine and budget: for every depth of nanochat's family (width 64 x depth) "
    "predict tok/s from a throughput model calibrated on this machine (a dozen short runs, measured once and "
    "cached), hence the tokens the budget trains and how often that repeats the training data, and rank the "
    "candidates by the val_bpb a loss model fitted on this machine predicts (`--fit`: a ladder of runs over "
    "sizes, budgets and repetition, about an hour, resumable). Without a fitted loss model the ranking falls "
    "back to the tokens:params rule, and the output says so. Prints the table (params, FLOPs/token, tok/s, MFU, "
    "tokens, epochs, tokens:params, batch, weight decay, predicted val_bpb) and writes the best candidate's "
    "settings to --out, which `frontier train --config FILE` runs. With --mix auto it also chooses the data: each "
    "candidate's shares of the opt-in folders of text/ whose worth per token was measured (--worth), so that a budget "
    "that would repeat the corpus many times reads fresh text instead; a source's worth is priced at the candidate's "
    "training length, between or past the lengths it was measured at (one per --worth-budget).";

int cmd_plan(int argc, char **argv) {
    if (kernels_init() != 0) { report_error(); return 2; }
    double budget_s = 1800;
    int ranks = 1, threads = 0, calibrate = 0, check = 0, fit = 0, worth = 0, worth_seeds = PLAN_WORTH_SEEDS, quiet = 0,
        precision = KP_AUTO;
    double fit_minutes = 60, worth_budget_s = PLAN_WORTH_BUDGET_S;
    const char *data = NULL, *mix = NULL, *cache = "cache", *out = "plan.json", *launcher = NULL;
    StringList reuse = {0};
    static const char *const PRECISIONS[] = {"fp32", "bf16", "auto", NULL};
    Option opts[] = {
        {"budget", OPT_DURATION, &budget_s, "TIME", "the training budget to plan for: 5m, 30m, 4h", 0, 0, 0, 0, NULL},
        {"ranks", OPT_INT, &ranks, "N", "data-parallel ranks the run will have (calibration runs through mpirun)", 1, 4096, 0, 0, NULL},
        {"threads", OPT_INT, &threads, "N", "threads per rank (0 = all cores / ranks)", 0, 1024, 0, 0, NULL},
        {"precision", OPT_ENUM, &precision, "auto|fp32|bf16", "the training steps' matmul precision", 0, 0, 0, 0, PRECISIONS},
        {"data", OPT_STRING, &data, "DIR", "a prepared data folder (default: the shared corpus, prepared and cached)", 0, 0, 0, 0, NULL},
        {"mix", OPT_STRING, &mix, "SPEC|auto", "train on a mixture of sources (frontier train --mix): each source's "
         "repetition and measured worth counted, and the mixture written into the plan; auto: the planner chooses each "
         "candidate's shares among the folders of text/ whose worth is measured (--worth)", 0, 0, 0, 0, NULL},
        {"cache", OPT_STRING, &cache, "DIR", "cache folder: throughput.json, plan/ (runs, fits)", 0, 0, 0, 0, NULL},
        {"out", OPT_STRING, &out, "FILE", "write the chosen settings here (a `frontier train --config` file)", 0, 0, 0, 0, NULL},
        {"calibrate", OPT_FLAG, &calibrate, NULL, "measure the throughput model again even if one is cached", 0, 0, 0, 0, NULL},
        {"check", OPT_FLAG, &check, NULL, "measure held-out shapes and print predicted vs measured tok/s", 0, 0, 0, 0, NULL},
        {"fit", OPT_FLAG, &fit, NULL, "run the loss ladder (resumable) and fit the loss model before ranking", 0, 0, 0, 0, NULL},
        {"fit-minutes", OPT_DOUBLE, &fit_minutes, "M", "the ladder's training budgets add up to at most M minutes", 1, 100000, 0, 0, NULL},
        {"worth", OPT_FLAG, &worth, NULL, "measure what a token of each --mix source (auto: every folder of text/) is "
         "worth against the corpus's own: paired short runs read off the fitted loss model (resumable; needs --fit)", 0, 0, 0, 0, NULL},
        {"worth-budget", OPT_DURATION, &worth_budget_s, "TIME", "with --worth: each run's budget, one training length of each source's worth (a second, "
         "like 5m, gives the trend the planner follows past them; short of repeating the corpus)", 0, 0, 0, 0, NULL},
        {"worth-seeds", OPT_INT, &worth_seeds, "N", "with --worth: paired seeds per source", 1, 100, 0, 0, NULL},
        {"reuse", OPT_LIST, &reuse, "DIR", "the finished runs of this research, ladder or run folder (repeatable): with --fit the loss model fits them "
         "too, and those of at least 10 minutes on this layout teach the throughput model the rate long runs sustain", 0, 0, 0, 0, NULL},
        {"launcher", OPT_STRING, &launcher, "TEMPLATE", "run the planner's measuring runs through this launcher ({cmd}: the run), "
         "e.g. 'srun -n 2 {cmd}' (default with --ranks N: mpirun -np N --bind-to none {cmd})", 0, 0, 0, 0, NULL},
        {"quiet", OPT_FLAG, &quiet, NULL, "no progress lines", 0, 0, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier plan [options]", SUMMARY, opts, argc, argv, NULL);
    if (rc != ARGS_OK) { string_list_free(&reuse); return rc == ARGS_HELP ? 0 : 2; }
    // every input checked before any work: a calibration or a ladder takes minutes
    if (!(budget_s > 0)) rc = err_usage("--budget must be a positive duration, like 5m, 30m or 4h");
    else if (!*out || is_dir(out)) rc = err_usage("--out '%s': %s", out, *out ? "is a folder: give the plan's file name" : "is empty");
    else if (!*cache || (path_exists(cache) && !is_dir(cache)))
        rc = err_usage("--cache '%s': %s", cache, *cache ? "not a folder (it is a file)" : "is empty");
    else if (data && (!*data || !is_dir(data))) rc = err_usage("--data '%s': no such folder", data);
    else if (!(worth_budget_s > 0)) rc = err_usage("--worth-budget must be a positive duration, like 2m");
    else if (worth && !mix) rc = err_usage("--worth measures the sources --mix names: add --mix SOURCE,... or --mix auto");
    else if (mix && strcmp(mix, MIX_AUTO) && (rc = mix_parse(mix, default_data_root(), &(Mix){0})) != 0) rc = err_mark_usage();
    else if (launcher && trial_check_launcher(launcher) != 0) rc = err_mark_usage();
    for (int i = 0; i < reuse.n && rc == 0; i++)
        if (!*reuse.items[i] || !is_dir(reuse.items[i])) rc = err_usage("--reuse '%s': no such folder", reuse.items[i]);
    if (rc != 0) {
        string_list_free(&reuse);
        return report_error();
    }
    PlanRequest rq = {budget_s, ranks, threads, precision == KP_AUTO ? kernels_precision_auto() : (KernelPrecision)precision,
                      data, cache, launcher, calibrate, quiet, mix, worth};
    PlanResult *res = calloc(1, sizeof *res);
    rc = plan_session(&rq, res);
    if (rc == 0 && check) rc = plan_check(&rq, res, stdout);
    if (rc == 0 && fit) {
        rq.calibrate = 0;
        rc = plan_fit(&rq, res, fit_minutes, reuse.items, reuse.n);
        if (rc == 0) rc = plan_session(&rq, res);  // ranked again, by the fitted loss model
    }
    if (rc == 0 && worth) {
        rq.calibrate = 0;
        rc = plan_worth(&rq, res, worth_budget_s, worth_seeds);
        rq.worth = 0;
        if (rc == 0) rc = plan_session(&rq, res);  // ranked again, the sources priced
    }
    if (rc == 0 && reuse.n > 0) {
        rq.calibrate = 0;
        rc = plan_learn_sustained(&rq, &res->tp, (const char *const *)reuse.items, reuse.n);
        if (rc == 0) rc = plan_session(&rq, res);  // ranked again, at the sustained rate
    }
    if (rc == 0) {
        plan_print(res, &rq, stdout);
        rc = plan_write_json(res, &rq, &res->cand[0], out);
        if (rc == 0) printf("plan: depth %d written to %s: `frontier train --config %s`\n", res->cand[0].depth, out, out);
    }
    free(res);
    string_list_free(&reuse);
    return rc == 0 ? 0 : report_error();
}
