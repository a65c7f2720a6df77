// cli/cmd_phase.c — `frontier run --phase 1|2`: the competition's phases (phase/phase.h).
//
// Phase options are its own (--phase, --ranks, --hostfile, --run-dir, --core-*, --compare); every
// other option is a `frontier train` setting (train/settings.h), passed on to the training and
// winning over the plan; --budget, --precision, --threads, --data, --mix and --cache are also what the
// plan is made for.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/mix.h"
#include "dist/dist.h"
#include "phase/phase.h"
#include "train/settings.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/mem.h"

static const char USAGE[] = "frontier run --phase 1|2 [--ranks N] [--hostfile F] [--run-dir DIR] [train options]";

static const char HELP[] =
    "The competition's phases as one command each. Phase 1: plan the model for this machine and a 30-minute "
    "budget (`frontier plan`), train it, score val_bpb on the pinned validation set, write report.html, and end "
    "with the result line. Phase 2: the same for 4 hours over MPI (--ranks N local ranks, or --hostfile F for "
    "several machines; mpirun is started here), then the full CORE benchmark and the composite score exactly as "
    "`frontier score` computes it (with --compare, among other runs). Both take --budget to scale down and every "
    "`frontier train` option (they win over the plan); --mix auto lets the plan choose the data too (see `frontier plan "
    "--help`). Each step leaves its file in the phase folder and is "
    "skipped when it is there: run the same command again after an interruption and it continues.\n\n"
    "options (besides every `frontier train` setting):\n"
    "  --phase 1|2               which phase\n"
    "  --ranks N                 phase 2: MPI ranks (default 1)\n"
    "  --hostfile FILE           phase 2: mpirun's hostfile (ranks placed on its machines)\n"
    "  --run-dir DIR             the phase folder (default runs/phase1 or runs/phase2)\n"
    "  --core-max-per-task N     phase 2: rows per CORE task (default: all of them, the full CORE)\n"
    "  --core-tasks A,B          phase 2: only these CORE tasks\n"
    "  --core-dir DIR            phase 2: the CORE bundle (default ../shared/data/core)\n"
    "  --compare DIR             phase 2: another run's folder the composite is normalised with (repeatable)\n";

static int usage_error(const char *fmt, const char *a) {
    fprintf(stderr, "%s: ", USAGE);
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see frontier run --phase 1 --help)\n");
    return FRONTIER_EXIT_USAGE;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int cmd_phase(int argc, char **argv) {
    if (dist_world() > 1) {
        fprintf(stderr, "frontier run --phase: started by mpirun; run it without mpirun (it starts mpirun itself "
                        "with --ranks N or --hostfile F)\n");
        return FRONTIER_EXIT_USAGE;
    }
    PhaseOptions o = {.ranks = 1, .precision = KP_AUTO, .cache = "cache"};
    const char **train = xcalloc((size_t)argc + 3, sizeof *train), **compare = xcalloc((size_t)argc + 1, sizeof *compare);
    int nt = 0, nc = 0, rc = 0, budget_given = 0;
    char *run_dir = NULL;
    for (int i = 0; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { printf("usage: %s\n\n%s", USAGE, HELP); goto done; }
        if (strncmp(a, "--", 2)) { rc = usage_error("unexpected argument '%s'", a); break; }
        const char *name = a + 2;
        int phase_opt = !strcmp(name, "phase") || !strcmp(name, "ranks") || !strcmp(name, "hostfile") ||
                        !strcmp(name, "core-max-per-task") || !strcmp(name, "core-tasks") ||
                        !strcmp(name, "core-dir") || !strcmp(name, "compare") || !strcmp(name, "run-dir");
        const Setting *s = phase_opt ? NULL : train_setting_find(name);
        if (!phase_opt && !s) { rc = usage_error("unknown option '%s'", a); break; }
        if ((phase_opt || s->type != SETTING_FLAG) && !v) { rc = usage_error("%s needs a value", a); break; }
        if (s) {  // a train setting: passed on; some are also the plan's
            train[nt++] = a;
            if (s->type != SETTING_FLAG) train[nt++] = v, i++;
            if (!strcmp(name, "budget")) {
                if (!((o.budget_s = duration_parse(v)) > 0)) rc = usage_error("--budget '%s': expected a duration like 5m or 4h", v);
                budget_given = 1;
            } else if (!strcmp(name, "precision")) {
                if (!strcmp(v, "fp32")) o.precision = KP_FP32;
                else if (!strcmp(v, "bf16")) o.precision = KP_BF16;
                else if (strcmp(v, "auto")) rc = usage_error("--precision must be fp32, bf16 or auto, got '%s'", v);
            } else if (!strcmp(name, "threads") && parse_int(v, 0, 1024, &o.threads) != 0) {
                rc = usage_error("--threads '%s': expected 0 to 1024", v);
            } else if (!strcmp(name, "data")) o.data = v;
            else if (!strcmp(name, "mix")) {
                o.mix = v;
                if (!strcmp(v, MIX_AUTO)) nt -= 2;  // the planner's: the plan's mixture is what trains
            }
            else if (!strcmp(name, "cache")) o.cache = v;
            else if (!strcmp(name, "resume") || !strcmp(name, "config"))
                rc = usage_error("%s: a phase plans and resumes by itself (run it again to continue)", a);
            continue;
        }
        i++;
        if (!strcmp(name, "phase") && (parse_int(v, 1, 2, &o.phase) != 0)) rc = usage_error("--phase '%s': 1 or 2", v);
        else if (!strcmp(name, "ranks") && parse_int(v, 1, 4096, &o.ranks) != 0) rc = usage_error("--ranks '%s': expected 1 to 4096", v);
        else if (!strcmp(name, "hostfile")) o.hostfile = v;
        else if (!strcmp(name, "core-max-per-task") && parse_int(v, 1, 1 << 30, &o.core_max_per_task) != 0)
            rc = usage_error("--core-max-per-task '%s': expected a positive number of rows", v);
        else if (!strcmp(name, "core-tasks")) o.core_tasks = v;
        else if (!strcmp(name, "core-dir")) o.core_dir = v;
        else if (!strcmp(name, "compare")) compare[nc++] = v;
        else if (!strcmp(name, "run-dir")) o.run_dir = v;
    }
    if (rc == 0 && o.phase == 0) rc = usage_error("%s", "--phase 1 or --phase 2 is required");
    if (rc == 0 && o.phase == 1 && (o.ranks > 1 || o.hostfile || nc))
        rc = usage_error("%s", "--ranks, --hostfile and --compare are phase 2's (phase 1 is one machine, one process)");
    if (rc == 0 && o.hostfile && !*o.hostfile) rc = usage_error("%s", "--hostfile is empty");
    if (rc == 0) {
        if (!budget_given) o.budget_s = o.phase == 1 ? 1800 : 4 * 3600;
        if (!o.run_dir) {
            run_dir = xmalloc(32);
            snprintf(run_dir, 32, "runs/phase%d", o.phase);
            o.run_dir = run_dir;
        }
        if (o.precision == KP_AUTO) o.precision = kernels_precision_auto();
        // ranks on this machine share its cores (with a hostfile the machines' counts are theirs)
        static char per_rank[16];
        if (o.phase == 2 && o.ranks > 1 && !o.hostfile && o.threads == 0) {
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            o.threads = cores / o.ranks > 1 ? (int)(cores / o.ranks) : 1;
            snprintf(per_rank, sizeof per_rank, "%d", o.threads);
            train[nt++] = "--threads", train[nt++] = per_rank;
        }
        o.train_args = train, o.n_train_args = nt, o.compare = compare, o.n_compare = nc;
        // before any work: phase 2 over ranks starts mpirun itself (its plan's calibration, the training, CORE)
        if (o.phase == 2 && (o.ranks > 1 || o.hostfile) && dist_mpirun_preflight("frontier run --phase 2 over ranks") != 0)
            rc = report_error();
        else rc = phase_run(&o);
    }
done:
    free(train), free(compare), free(run_dir);
    return rc;
}
