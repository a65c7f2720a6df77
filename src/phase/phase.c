// phase/phase.c — the phase commands (see phase.h).
#include "phase/phase.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist.h"
#include "eval/score.h"
#include "planner/session.h"
#include "report/report.h"
#include "research/proc.h"
#include "train/settings.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_file.h"
#include "util/mem.h"

#define MAX_ARGS 256

typedef struct {
    const char *a[MAX_ARGS];
    int n;
    char *owned[16];
    int n_owned;
} Argv;

static void push(Argv *v, const char *s) {
    if (v->n < MAX_ARGS - 1) v->a[v->n++] = s, v->a[v->n] = NULL;
}

static const char *own(Argv *v, char *s) {
    if (v->n_owned < 16) v->owned[v->n_owned++] = s;
    return s;
}

static void argv_free(Argv *v) {
    for (int i = 0; i < v->n_owned; i++) free(v->owned[i]);
}

// The command line of a child: this binary, through mpirun when the phase runs over ranks.
static void start_command(const PhaseOptions *o, Argv *v, const char *exe) {
    if (o->phase == 2 && (o->ranks > 1 || o->hostfile)) {
        push(v, "/usr/bin/env"), push(v, "mpirun"), push(v, "-np");
        char *n = xmalloc(16);
        snprintf(n, 16, "%d", o->ranks);
        push(v, own(v, n));
        if (o->hostfile) push(v, "--hostfile"), push(v, o->hostfile);
        for (int i = 0; DIST_MPIRUN_ARGS[i]; i++) push(v, DIST_MPIRUN_ARGS[i]);
    }
    push(v, exe);
}

// Run a step's child with this process's output; SIGINT/SIGTERM reach it as SIGTERM (a training
// then saves its checkpoint; 10 minutes' grace for a large one). Its exit code, or -1 + err.
static int run_child(const Argv *v, const char *what) {
    printf("phase: %s:", what);
    for (int i = 1; i < v->n; i++) printf(" %s", v->a[i]);
    printf("\n");
    fflush(stdout);
    ProcSpec spec = {v->a, NULL, NULL, NULL, 0, 0, 600, NULL, 1, 0, 0};
    ProcResult pr;
    if (proc_run(&spec, &pr) != 0) return -1;
    if (pr.interrupted) return 128 + 15;
    if (pr.signal) return 128 + pr.signal;
    return pr.exit_code;
}

// A training folder's state: 2 finished (summary.json, not interrupted), 1 resumable (a
// checkpoint), 0 nothing yet.
static int train_state(const char *dir) {
    char *sum = path_join(dir, "summary.json"), *latest = path_join(dir, "latest");
    int st = 0;
    cJSON *s = path_exists(sum) ? json_read_object(sum, "summary") : NULL;
    err_clear();
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(s, "stopped_by");
    if (cJSON_IsString(why) && (!strcmp(why->valuestring, "budget") || !strcmp(why->valuestring, "steps"))) st = 2;
    else if (path_exists(latest)) st = 1;
    cJSON_Delete(s);
    free(sum), free(latest);
    return st;
}

// The given train options, all of them or only those a resume may change.
static void push_train_args(const PhaseOptions *o, Argv *v, int resuming) {
    for (int i = 0; i < o->n_train_args; i++) {
        const char *a = o->train_args[i];
        const Setting *s = a[0] == '-' && a[1] == '-' ? train_setting_find(a + 2) : NULL;
        int has_value = s && s->type != SETTING_FLAG && i + 1 < o->n_train_args;
        if (!resuming || (s && (s->flags & SETTING_RESUMABLE))) {
            push(v, a);
            if (has_value) push(v, o->train_args[i + 1]);
        }
        if (has_value) i++;
    }
}

static int step_plan(const PhaseOptions *o, const char *dir, const char *plan_json) {
    PlanRequest rq = {o->budget_s, o->ranks, o->threads, o->precision, o->data, o->cache, NULL, 0, 0, o->mix, 0};
    char launcher[1200];
    if (o->phase == 2 && o->hostfile) {
        snprintf(launcher, sizeof launcher, "mpirun -np %d --hostfile %s %s {cmd}", o->ranks, o->hostfile, dist_mpirun_opts());
        rq.launcher = launcher;
    }
    PlanResult *res = xcalloc(1, sizeof *res);
    int rc = plan_session(&rq, res);
    if (rc == 0) {
        plan_print(res, &rq, stdout);
        char *md = path_join(dir, "plan.md");
        FILE *f = fopen(md, "w");
        if (f) plan_print(res, &rq, f), fclose(f);
        free(md);
        rc = plan_write_json(res, &rq, &res->cand[0], plan_json);
    }
    free(res);
    return rc;
}

// The finished run teaches the planner the tok/s this layout sustains over a long budget
// (planner/throughput.h), so that the next plan's tokens are the ones a run gets. A failure here
// costs the next plan that correction, not this phase its result: a warning.
static void step_learn(const PhaseOptions *o, const char *train_dir) {
    PlanRequest rq = {o->budget_s, o->ranks, o->threads, o->precision, o->data, o->cache, NULL, 0, 1, o->mix, 0};
    char key[sizeof ((ThroughputModel *)0)->key];
    plan_layout_key(&rq, key, sizeof key);
    ThroughputModel *tp = xcalloc(1, sizeof *tp);
    const char *dirs[] = {train_dir};
    if (tp_load(o->cache, key, tp) != 0 || plan_learn_sustained(&rq, tp, dirs, 1) != 0) {
        if (err_msg()[0]) fprintf(stderr, "phase %d: warning: the planner did not learn this run's throughput: %s\n", o->phase, err_msg());
        err_clear();
    } else if (tp->n_sustained > 0)
        printf("phase %d: the planner's throughput model for this layout now runs long budgets at x%.3f its short-run "
               "rate (%d finished run%s)\n", o->phase, tp_sustained_factor(tp, NULL), tp->n_sustained,
               tp->n_sustained == 1 ? "" : "s");
    free(tp);
}

// result.json and the result line: the phase's score and what produced it.
static int step_score(const PhaseOptions *o, const char *dir, const char *train_dir) {
    int n = 1 + o->n_compare;
    ScoreRun *runs = xcalloc((size_t)n, sizeof *runs);
    int rc = score_load_run(&runs[0], train_dir);
    for (int i = 0; i < o->n_compare && rc == 0; i++) rc = score_load_run(&runs[i + 1], o->compare[i]);
    if (rc == 0 && !runs[0].complete) rc = err_set("%s has no val_bpb in its summary.json", train_dir);
    if (rc == 0) {
        score_find_partial_cores(runs, n);
        score_rank(runs, n);
        ScoreRun *r = &runs[0];
        const cJSON *depth = cJSON_GetObjectItemCaseSensitive(r->config, "depth");
        const cJSON *ut = NULL;
        char *sum = path_join(train_dir, "summary.json");
        cJSON *s = json_read_object(sum, "summary");
        free(sum);
        ut = cJSON_GetObjectItemCaseSensitive(s, "epochs");
        double epochs = cJSON_IsNumber(ut) ? ut->valuedouble : NAN;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "phase", o->phase);
        cJSON_AddNumberToObject(j, "val_bpb", r->bpb);
        if (o->phase == 2 && r->has_core) {
            cJSON_AddNumberToObject(j, "core", r->core);
            cJSON_AddNumberToObject(j, "composite", r->composite);
            cJSON_AddNumberToObject(j, "composite_runs", n);
            cJSON_AddBoolToObject(j, "core_full", !r->lacks);
        }
        cJSON_AddNumberToObject(j, "budget_s", o->budget_s);
        cJSON_AddNumberToObject(j, "ranks", o->ranks);
        if (cJSON_IsNumber(depth)) cJSON_AddNumberToObject(j, "depth", depth->valuedouble);
        cJSON_AddNumberToObject(j, "parameters", r->parameters);
        cJSON_AddNumberToObject(j, "tokens_trained", r->tokens_trained);
        if (isfinite(epochs)) cJSON_AddNumberToObject(j, "epochs", epochs);
        cJSON_AddStringToObject(j, "run", train_dir);
        char *path = path_join(dir, "result.json");
        rc = json_write_atomic(path, j);
        free(path);
        cJSON_Delete(j);
        cJSON_Delete(s);
        char budget[32];
        duration_format(o->budget_s, budget, sizeof budget);
        if (rc == 0 && o->phase == 1)
            printf("phase 1 result: val_bpb %.4f on the pinned validation set (%s budget, depth %d, %.2fM parameters, "
                   "%.1fM tokens = %.2f epochs); report %s/report.html\n", r->bpb, budget,
                   cJSON_IsNumber(depth) ? depth->valueint : 0, r->parameters / 1e6, r->tokens_trained / 1e6, epochs, dir);
        else if (rc == 0 && r->has_core)
            printf("phase 2 result: val_bpb %.4f, CORE %.4f%s, composite %.4f (0.5 val_bpb + 0.5 CORE, min-max over %d "
                   "run%s%s; %s budget on %d rank%s, depth %d, %.1fM tokens = %.2f epochs); report %s/report.html\n",
                   r->bpb, r->core, r->lacks ? " (a subset of the CORE tasks: not the full benchmark)" : "", r->composite,
                   n, n == 1 ? "" : "s",
                   n == 1 ? ": alone, each part is 1 by definition; --compare RUN_DIR places it among others" : "",
                   budget, o->ranks, o->ranks == 1 ? "" : "s", cJSON_IsNumber(depth) ? depth->valueint : 0,
                   r->tokens_trained / 1e6, epochs, dir);
        else if (rc == 0) rc = err_set("%s has no core.json", train_dir);
    }
    for (int i = 0; i < n; i++) score_run_free(&runs[i]);
    free(runs);
    return rc;
}

int phase_run(const PhaseOptions *o) {
    proc_catch_signals();
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k <= 0) return err_errno("cannot find this program's path (/proc/self/exe)"), 1;
    exe[k] = 0;
    if (mkdir_p(o->run_dir) != 0) return 1;
    char *plan_json = path_join(o->run_dir, "plan.json"), *train_dir = path_join(o->run_dir, "train");
    char *core_json = path_join(train_dir, "core.json"), *report = path_join(o->run_dir, "report.html");
    int rc = 0;
    if (!path_exists(plan_json)) {
        printf("phase %d: planning for %s\n", o->phase, o->run_dir);
        rc = step_plan(o, o->run_dir, plan_json) == 0 ? 0 : 1;
    } else printf("phase %d: %s is there: the plan stands\n", o->phase, plan_json);
    if (rc == 0) {
        int st = train_state(train_dir);
        if (st == 2) printf("phase %d: %s has finished training\n", o->phase, train_dir);
        else {
            Argv v = {0};
            start_command(o, &v, exe);
            push(&v, "train");
            if (st == 1) push(&v, "--resume"), push(&v, train_dir);
            else push(&v, "--config"), push(&v, plan_json), push(&v, "--run-dir"), push(&v, train_dir);
            push_train_args(o, &v, st == 1);
            int c = run_child(&v, st == 1 ? "training (continued)" : "training");
            argv_free(&v);
            if (c != 0) rc = c < 0 ? 1 : c;
        }
    }
    if (rc == 0) step_learn(o, train_dir);
    if (rc == 0 && o->phase == 2 && !path_exists(core_json)) {
        Argv v = {0};
        start_command(o, &v, exe);
        push(&v, "eval"), push(&v, "--core"), push(&v, "--ckpt"), push(&v, train_dir);
        char per[16];
        snprintf(per, sizeof per, "%d", o->core_max_per_task);
        if (o->core_max_per_task > 0) push(&v, "--max-per-task"), push(&v, per);
        if (o->core_tasks) push(&v, "--tasks"), push(&v, o->core_tasks);
        if (o->core_dir) push(&v, "--core-dir"), push(&v, o->core_dir);
        int c = run_child(&v, "CORE");
        argv_free(&v);
        if (c != 0) rc = c < 0 ? 1 : c;
    }
    if (rc == 0 && (rc = report_write(train_dir, report)) != 0) rc = 1;
    if (rc == 0 && step_score(o, o->run_dir, train_dir) != 0) rc = 1;
    if (rc == 1 && err_msg()[0]) fprintf(stderr, "frontier: error: %s\n", err_msg());
    if (rc >= 128)
        fprintf(stderr, "phase %d: interrupted; what is done is kept: run the same command again to continue\n", o->phase);
    else if (rc != 0 && rc != 1)
        fprintf(stderr, "phase %d: a step exited %d (its output is above); run the command again once it is fixed\n",
                o->phase, rc);
    free(plan_json), free(train_dir), free(core_json), free(report);
    return rc;
}
