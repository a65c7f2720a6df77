// research/research.c — the experiment loop: settings, base probe, plan -> run -> record, resume
// (see research.h).
#include "research/research.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "research/ledger.h"
#include "research/proc.h"
#include "research/proposer.h"
#include "research/report.h"
#include "research/trial.h"
#include "train/settings.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/json_file.h"

const char *const STRATEGY_NAMES[] = {"greedy", "random", "halving", "agent"};

enum { MAX_REJECTIONS = 10 };  // consecutive rejected proposals before agent mode gives up

typedef struct {
    const ResearchOptions *o;
    Space space;
    cJSON *user_base, *base;
    char *program;          // agent mode: the protocol text
    char *ledger_path;
    int lock_fd;
    int best_written;       // row index last written to best.json (-1: none)
} Research;

static char *dir_file(const Research *R, const char *name) { return path_join(R->o->out_dir, name); }

static char *trial_dir(const Research *R, int id) {
    char name[64];
    snprintf(name, sizeof name, "trials/%04d", id);
    return dir_file(R, name);
}

static int write_json(const char *path, const cJSON *j) { return json_write_atomic(path, j); }

// ---------------------------------------------------------------------------------------------
// Setting up DIR: lock, settings, base
// ---------------------------------------------------------------------------------------------

// The trial numbers of DIR/trials/NNNN folders: the largest in *max_id (0: none).
static int trial_folders(const Research *R, int *max_id) {
    *max_id = 0;
    char *dir = dir_file(R, "trials");
    DIR *d = opendir(dir);
    if (!d) {
        int missing = errno == ENOENT;
        int rc = missing ? 0 : err_errno("cannot list %s", dir);
        free(dir);
        return rc;
    }
    for (struct dirent *e; (e = readdir(d));) {
        const char *s = e->d_name;
        size_t n = strspn(s, "0123456789");
        if (n == 0 || s[n] || n > 9) continue;
        int id = atoi(s);
        if (id > *max_id) *max_id = id;
    }
    closedir(d);
    free(dir);
    return 0;
}

// Trial ids come from the ledger (row n is trial n), and a trial's folder is wiped before it runs.
// So the folders must agree with the ledger, or the next trial would overwrite a recorded one:
// DIR/trials may hold folders up to --lanes past the last row (the trials that were in flight when
// the research was stopped: a batch, research.h), no further. The ledger is created (header only)
// before the first trial, so trial folders without a ledger mean it was deleted or moved. Either
// way the research refuses to start and says what to restore; it never renumbers.
static int check_trial_folders(const Research *R) {
    int max_id;
    if (trial_folders(R, &max_id) != 0) return -1;
    if (max_id == 0) return 0;
    if (!path_exists(R->ledger_path))
        return err_set("%s holds trial folders (up to trials/%04d) but no results.tsv: the ledger was deleted or "
                       "moved, and the next trials would overwrite those folders; put results.tsv back, or use "
                       "another --out (or delete %s/trials to start over)", R->o->out_dir, max_id, R->o->out_dir);
    LedgerRow *rows;
    int n;
    if (ledger_load(R->ledger_path, &rows, &n, NULL) != 0) return -1;
    ledger_free(rows, n);
    if (max_id > n + (R->o->lanes > 1 ? R->o->lanes : 1))
        return err_set("%s records %d trial%s but %s/trials holds folders up to trials/%04d: results.tsv was "
                       "replaced or cut, and the next trials would overwrite those folders; restore the full "
                       "results.tsv, or use another --out", R->ledger_path, n, n == 1 ? "" : "s", R->o->out_dir,
                       max_id);
    return 0;
}

static cJSON *settings_json(const Research *R) {
    const ResearchOptions *o = R->o;
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "strategy", STRATEGY_NAMES[o->strategy]);
    cJSON_AddNumberToObject(s, "budget_s", o->budget_s);
    cJSON_AddNumberToObject(s, "seed", (double)o->seed);
    cJSON_AddNumberToObject(s, "baseline_seeds", o->baseline_seeds);
    // the keep rule's level and seed cap: the ledger's decisions were made with them
    cJSON_AddNumberToObject(s, "alpha", o->alpha);
    cJSON_AddNumberToObject(s, "max_seeds", o->max_seeds);
    if (o->strategy == STRAT_HALVING) {
        cJSON_AddNumberToObject(s, "eta", o->eta);
        cJSON_AddNumberToObject(s, "rungs", o->rungs);
        cJSON_AddNumberToObject(s, "bracket", o->bracket);
    }
    if (o->lanes > 1) cJSON_AddNumberToObject(s, "lanes", o->lanes);  // absent at 1, as before lanes existed
    if (o->promote_budget_s > 0) {  // absent when off, so that researches from before it resume
        cJSON_AddNumberToObject(s, "promote_budget_s", o->promote_budget_s);
        cJSON_AddNumberToObject(s, "promote_seeds", o->promote_seeds);
    }
    cJSON_AddItemToObject(s, "space", cJSON_Duplicate(R->space.json, 1));
    cJSON_AddItemToObject(s, "base", cJSON_Duplicate(R->user_base, 1));
    // Informational (may change between invocations; the ledger records what each trial used):
    cJSON_AddNumberToObject(s, "threshold", o->threshold);
    if (o->proposer) cJSON_AddStringToObject(s, "proposer", o->proposer);
    if (o->trainer) cJSON_AddStringToObject(s, "trainer", o->trainer);
    if (o->launcher) cJSON_AddStringToObject(s, "launcher", o->launcher);
    return s;
}

// research.json: written once the base is resolved (so a base that does not train can be fixed
// and the same command rerun); later invocations must define the same search.
static int check_settings(Research *R, int write) {
    static const char *const fixed[] = {"strategy", "budget_s", "seed", "baseline_seeds", "alpha", "max_seeds", "eta",
                                        "rungs", "bracket", "promote_budget_s", "promote_seeds", "lanes", "space", "base", NULL};
    char *path = dir_file(R, "research.json");
    cJSON *now = settings_json(R), *then = NULL;
    int rc = 0;
    if (!path_exists(path)) rc = write ? write_json(path, now) : 0;
    else if (!(then = json_read_object(path, "--out"))) rc = -1;
    else
        for (int i = 0; fixed[i] && rc == 0; i++) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(now, fixed[i]), *b = cJSON_GetObjectItemCaseSensitive(then, fixed[i]);
            if ((a || b) && !(a && b && cJSON_Compare(a, b, 1))) {
                char *was = b ? cJSON_PrintUnformatted(b) : xstrdup("(unset)");
                if (strlen(was) > 60) strcpy(was + 57, "...");
                rc = err_set("%s was started with another %s (%s); rerun it with the settings it was started with, or "
                             "use another --out", R->o->out_dir, fixed[i], was);
                free(was);
            }
        }
    cJSON_Delete(now);
    cJSON_Delete(then);
    free(path);
    return rc;
}

// Every setting of the base, as the trainer resolves it: the config.json of a one-step run of
// `frontier train --config BASE`. Also prepares the data, so the first trial does not pay for it.
static int probe_base(Research *R, const char *base_path) {
    const ResearchOptions *o = R->o;
    char *dir = dir_file(R, "probe"), *run = path_join(dir, "run"), *log = path_join(dir, "train.log");
    int rc = remove_tree(dir) == 0 && mkdir_p(dir) == 0 ? 0 : -1;
    const char *argv[16];
    int a = 0;
    argv[a++] = o->exe, argv[a++] = "train";
    if (o->base_path) argv[a++] = "--config", argv[a++] = o->base_path;
    argv[a++] = "--steps", argv[a++] = "1", argv[a++] = "--eval-tokens", argv[a++] = "1";
    argv[a++] = "--run-dir", argv[a++] = run, argv[a++] = "--quiet", argv[a] = NULL;
    printf("research: resolving the base config (a one-step run, log in %s)\n", log);
    fflush(stdout);
    ProcSpec spec = {argv, NULL, log, NULL, 0, 3600, 0, NULL, 0, 0, 0};
    ProcResult pr;
    if (rc == 0) rc = proc_run(&spec, &pr);
    if (rc == 0 && pr.interrupted) rc = err_set("interrupted");
    else if (rc == 0 && (pr.exit_code != 0 || pr.signal)) {
        size_t n;
        char *text = read_file(log, &n), *line = text ? strstr(text, "error:") : NULL;
        if (line) line[strcspn(line, "\n")] = 0;
        rc = err_set("the base config does not train (%s%s%s); see %s", proc_describe(&pr), line ? ": " : "",
                     line ? line : "", log);
        free(text);
    }
    cJSON *cfg = NULL;
    char *cfg_path = path_join(run, "config.json");
    if (rc == 0 && !(cfg = json_read_object(cfg_path, "probe"))) rc = -1;
    if (rc == 0) {
        // Settings that say how long, where or how visibly, not what is trained: trials set them.
        for (int i = 0; i < TRAIN_N_SETTINGS; i++)
            if (TRAIN_SETTINGS[i].flags & SETTING_INVOCATION) cJSON_DeleteItemFromObjectCaseSensitive(cfg, TRAIN_SETTINGS[i].name);
        const cJSON *et = cJSON_GetObjectItemCaseSensitive(R->user_base, "eval-tokens");
        cJSON_AddItemToObject(cfg, "eval-tokens", et ? cJSON_Duplicate(et, 1) : cJSON_CreateNumber(0));
        cJSON_AddBoolToObject(cfg, "quiet", 0);
        if (o->lanes > 1 && !o->launcher) {  // every trial gets one lane's cores, alone or beside another
            cJSON_DeleteItemFromObjectCaseSensitive(cfg, "threads");
            cJSON_AddNumberToObject(cfg, "threads", proc_cpus() / o->lanes);
        }
        rc = write_json(base_path, cfg);
        trial_drop_weights(dir);
    }
    R->base = cfg;
    free(cfg_path);
    free(dir);
    free(run);
    free(log);
    return rc;
}

static int setup(Research *R) {
    const ResearchOptions *o = R->o;
    R->best_written = -1;
    R->lock_fd = -1;
    if (space_load(&R->space, o->space_path) != 0 || space_check_settings(&R->space) != 0) return -1;
    // Held until the process exits (teardown closes it): two researches never write one folder.
    if (mkdir_p(o->out_dir) != 0 || dir_lock(o->out_dir, &R->lock_fd) != 0) return -1;
    R->user_base = o->base_path ? json_read_object(o->base_path, "--base") : cJSON_CreateObject();
    if (!R->user_base) return -1;
    if (o->proposer && !(R->program = read_file(o->program_path, NULL))) return err_prefix("--program");
    if (check_settings(R, 0) != 0) return -1;
    R->ledger_path = dir_file(R, "results.tsv");
    // base.json counts only once research.json exists: before that it may come from another base.
    char *base_path = dir_file(R, "base.json"), *settings = dir_file(R, "research.json");
    int settled = path_exists(settings) && path_exists(base_path);
    int rc = settled ? ((R->base = json_read_object(base_path, "--out")) ? 0 : -1) : probe_base(R, base_path);
    free(base_path);
    free(settings);
    if (rc != 0 || space_check_base(&R->space, R->base) != 0) return -1;
    if (check_settings(R, 1) != 0 || check_trial_folders(R) != 0) return -1;
    return path_exists(R->ledger_path) ? 0 : ledger_create(R->ledger_path);
}

static void teardown(Research *R) {
    space_free(&R->space);
    cJSON_Delete(R->user_base);
    cJSON_Delete(R->base);
    free(R->program);
    free(R->ledger_path);
    dir_unlock(R->lock_fd);
}

// ---------------------------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------------------------

// Training FLOPs per token of a trial's config (its settings resolved as `frontier train` would),
// NaN when they do not resolve.
static double config_fpt(const cJSON *c) {
    TrainConfig raw = train_settings_defaults(), cfg;
    unsigned char given[TRAIN_MAX_SETTINGS] = {0};
    if (train_settings_from_json(c, "config", &raw, given, 1) != 0 || train_config_resolve(&raw, given, 1, &cfg) != 0) {
        err_clear();
        return NAN;
    }
    return model_config_flops_per_token(&cfg.model);
}

double research_trial_limit(const ResearchOptions *o, const PlanState *st, const cJSON *config, double budget_s) {
    double margin = o->eval_margin_s, f = config ? config_fpt(config) : NAN;
    for (int i = 0; i < st->n; i++) {
        const LedgerRow *r = &st->rows[i];
        if (!ledger_status_ok(r->status) || !isfinite(r->wall_s) || !st->configs[i]) continue;
        double over = fmax(0, r->wall_s - r->budget_s), fi = config_fpt(st->configs[i]);
        double scale = isfinite(f) && isfinite(fi) && fi > 0 ? f / fi : 1;
        margin = fmax(margin, 3 * over * scale);
    }
    return 2 * budget_s + margin;
}

// Mean time a trial takes beyond its budget (start-up, excluded steps, evaluation).
static double mean_overhead(const PlanState *st) {
    double sum = 0;
    int k = 0;
    for (int i = 0; i < st->n; i++)
        if (ledger_status_ok(st->rows[i].status) && isfinite(st->rows[i].wall_s))
            sum += fmax(0, st->rows[i].wall_s - st->rows[i].budget_s), k++;
    return k ? sum / k : 0;
}

// Expected wall time of what plan p starts: one trial, or a whole new halving bracket.
static double expected_s(const PlanCtx *ctx, const PlanState *st, const TrialPlan *p) {
    double over = mean_overhead(st);
    if (!p->new_bracket) return p->budget_s + over;
    double t = 0;
    for (int r = 0; r < ctx->rungs; r++) t += plan_rung_size(ctx, r) * (plan_rung_budget(ctx, r) + over);
    return t;
}

// ---------------------------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------------------------

// best.json: the incumbent, except that a keep whose promotion is still running is not yet a
// recommendation (it may not transfer): until its verdict, the incumbent it replaced stays there.
static int write_best(Research *R, const PlanState *st) {
    int best = st->promoting >= 0 ? st->promote_prev : st->best;
    if (best < 0 || best == R->best_written) return 0;
    cJSON *c = cJSON_Duplicate(st->configs[best], 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "budget");
    cJSON_AddStringToObject(c, "budget", trial_budget_text(st->rows[best].budget_s));
    char *path = dir_file(R, "best.json");
    int rc = write_json(path, c);
    free(path);
    cJSON_Delete(c);
    if (rc == 0) R->best_written = best;
    return rc;
}

static char *join_desc(const char *what, const char *verdict) {
    size_t n = strlen(what ? what : "") + strlen(verdict) + 4;
    char *s = xmalloc(n);
    snprintf(s, n, "%s%s%s", what && *what ? what : "", what && *what ? "; " : "", verdict);
    return s;
}

static int record(Research *R, LedgerRow *row) {
    int rc = ledger_append(R->ledger_path, row);
    free(row->change);
    free(row->description);
    return rc;
}

static LedgerRow row_for(const TrialPlan *p) {
    LedgerRow row;
    memset(&row, 0, sizeof row);
    row.trial = p->trial, row.parent = p->parent, row.budget_s = p->budget_s;
    snprintf(row.kind, sizeof row.kind, "%s", p->kind);
    row.val_bpb = row.tokens = row.tok_per_s = row.mfu = row.peak_mb = row.wall_s = row.paired = row.z = NAN;
    row.seed = p->config ? plan_config_seed(p->config) : NAN;
    return row;
}

// ---------------------------------------------------------------------------------------------
// Agent mode
// ---------------------------------------------------------------------------------------------

static cJSON *agent_bundle(const Research *R, const PlanState *st, const TrialPlan *p) {
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "protocol", R->program);
    cJSON_AddNumberToObject(b, "trial", p->trial);
    cJSON_AddNumberToObject(b, "budget_s", p->budget_s);
    cJSON_AddItemToObject(b, "space", cJSON_Duplicate(R->space.json, 1));
    cJSON_AddItemToObject(b, "base", cJSON_Duplicate(R->base, 1));
    cJSON *best = cJSON_AddObjectToObject(b, "best");
    cJSON_AddNumberToObject(best, "trial", st->rows[st->best].trial);
    cJSON_AddNumberToObject(best, "val_bpb", st->best_score);
    cJSON_AddItemToObject(best, "config", cJSON_Duplicate(st->configs[st->best], 1));
    cJSON_AddItemToObject(best, "change_from_base", space_config_diff(R->base, st->configs[st->best]));
    cJSON *bl = cJSON_AddObjectToObject(b, "baseline");
    cJSON_AddNumberToObject(bl, "val_bpb", st->baseline_mean);
    cJSON_AddNumberToObject(bl, "seed_spread", st->spread);
    cJSON *rule = cJSON_AddObjectToObject(b, "keep_rule");
    cJSON_AddNumberToObject(rule, "alpha", st->seq.alpha);
    cJSON_AddNumberToObject(rule, "max_seeds", st->seq.max_seeds);
    cJSON_AddNumberToObject(rule, "threshold", R->o->threshold);
    double sd = stats_pool_sd(&st->pool);
    if (isfinite(sd)) cJSON_AddNumberToObject(rule, "paired_sd", sd);
    cJSON_AddNumberToObject(rule, "paired_sd_df", stats_pool_df(&st->pool));
    char *ledger = read_file(R->ledger_path, NULL);
    cJSON_AddStringToObject(b, "ledger", ledger ? ledger : LEDGER_HEADER);
    free(ledger);
    return b;
}

// 0: p now has a change; 1: rejected (row recorded); 130: interrupted; -1: error.
static int ask_agent(Research *R, const PlanCtx *ctx, const PlanState *st, TrialPlan *p, int *rejections) {
    char *dir = trial_dir(R, p->trial);
    remove_tree(dir);  // what an interrupted attempt left
    cJSON *bundle = agent_bundle(R, st, p);
    printf("trial %d (agent): asking the proposer\n", p->trial);
    fflush(stdout);
    Proposal pr;
    int rc = proposer_run(R->o->proposer, dir, bundle, R->o->proposer_timeout_s, &pr);
    cJSON_Delete(bundle);
    free(dir);
    if (pr.interrupted) {
        proposal_free(&pr);
        return 130;
    }
    if (rc == 0) rc = plan_take_proposal(ctx, st, p, pr.change, pr.description);
    if (rc == 0) {
        proposal_free(&pr);
        *rejections = 0;
        return 0;
    }
    LedgerRow row = row_for(p);
    row.change = pr.change ? cJSON_PrintUnformatted(pr.change) : xstrdup("{}");
    row.wall_s = pr.wall_s;
    snprintf(row.status, sizeof row.status, "rejected");
    row.description = join_desc("rejected", err_msg());
    printf("trial %d: rejected: %s\n", p->trial, err_msg());
    proposal_free(&pr);
    if (record(R, &row) != 0) return -1;
    if (++*rejections >= MAX_REJECTIONS)
        return err_set("the proposer's last %d proposals were all rejected; stopping (see the ledger and "
                       "trials/*/proposer.log)", MAX_REJECTIONS);
    return 1;
}

// ---------------------------------------------------------------------------------------------
// One trial
// ---------------------------------------------------------------------------------------------

static int load_state(Research *R, const PlanCtx *ctx, LedgerRow **rows, int *n, PlanState *st);

// A trial in flight in one lane: lane L of N runs on CPUs L*k .. L*k+k-1, k = the CPUs / N
// (with a launcher the launcher places it instead).
typedef struct {
    const Research *R;
    const TrialPlan *p;
    const char *dir;
    double limit;
    int lane;
    TrialResult tr;
    int rc;
    char err[600];  // the lane thread's error message (errors are per thread)
} LaneJob;

static void *lane_main(void *arg) {
    LaneJob *j = arg;
    const ResearchOptions *o = j->R->o;
    int k = o->launcher ? 0 : proc_cpus() / o->lanes;
    TrialRunner runner = {o->exe, o->trainer, o->launcher, j->lane * k, o->lanes > 1 ? k : 0};
    j->rc = trial_run(&runner, j->dir, j->p->trial, j->p->config, j->p->budget_s, j->limit, &j->tr);
    if (j->rc != 0) snprintf(j->err, sizeof j->err, "trial %d: %s", j->p->trial, err_msg());
    return NULL;
}

static void announce(const TrialPlan *p, double limit, int lane, int lanes) {
    char from[32] = "", where[32] = "";
    if (p->parent) snprintf(from, sizeof from, " from #%d", p->parent);
    if (lanes > 1) snprintf(where, sizeof where, ", lane %d of %d", lane + 1, lanes);
    printf("trial %d (%s%s, %g s budget, limit %.0f s%s): %s\n", p->trial, p->kind, from, p->budget_s, limit, where,
           p->description ? p->description : "");
    fflush(stdout);
}

// The ledger row of a finished trial: the verdict against st (the ledger before it). batch: the
// first trial of the batch it trained in (0: it trained alone).
static int record_trial(Research *R, const PlanCtx *ctx, const PlanState *st, const TrialPlan *p, const LaneJob *j,
                        int batch) {
    const TrialResult *tr = &j->tr;
    LedgerRow row = row_for(p);
    row.batch = batch;
    PlanVerdict v;
    plan_decide(ctx, st, p, tr->ok ? tr->val_bpb : NAN, tr->ok ? NULL : tr->timed_out ? "timeout" : "crash", &v);
    char *verdict = v.text;
    if (!tr->ok) {  // the status says crash/timeout; the error says why
        free(verdict);
        verdict = xstrdup(tr->error);
    }
    snprintf(row.status, sizeof row.status, "%s", v.status);
    row.paired = v.paired, row.z = v.z;
    row.change = cJSON_PrintUnformatted(p->diff);
    row.val_bpb = tr->val_bpb, row.tokens = tr->tokens, row.tok_per_s = tr->tok_per_s, row.mfu = tr->mfu;
    row.peak_mb = tr->peak_mb, row.wall_s = tr->wall_s;
    row.description = join_desc(p->description, verdict);
    printf("trial %d: %s: %s [%.0f s]\n", p->trial, row.status, verdict, tr->wall_s);
    fflush(stdout);
    free(verdict);
    if (!R->o->keep_weights && strcmp(row.status, "keep")) trial_drop_weights(j->dir);
    return record(R, &row);
}

// The trials that train at the same moment, one per lane, in lane order (a twin just before its
// candidate). The first is what the ledger says comes next; the others are what comes after it
// if nothing it and they decide changes the plan (speculate()), checked when they are recorded.
typedef struct {
    TrialPlan p[RESEARCH_MAX_LANES];
    int n;
} Batch;

static void batch_free(Batch *b) {
    for (int i = 0; i < b->n; i++) plan_free(&b->p[i]);
    b->n = 0;
}

// A planned trial as a ledger row with what it would say if it only continued what it started:
// a candidate's run (and a promotion's) pending, the others recorded. Its val_bpb is a placeholder
// (any finite value): speculable() admits only trials planned the same whatever the values are.
static LedgerRow hypothetical_row(const TrialPlan *x) {
    LedgerRow r = row_for(x);
    r.change = cJSON_PrintUnformatted(x->diff);
    r.description = xstrdup("");
    r.val_bpb = 1;
    const char *status = !strcmp(x->kind, "baseline") ? (x->parent ? "replicate" : "keep")
                         : !strcmp(x->kind, "twin") || !strcmp(x->kind, "pair") || !strcmp(x->kind, "promote-pair")
                             ? "replicate"
                         : !strncmp(x->kind, "rung", 4) ? "screen"
                                                        : "pending";
    snprintf(r.status, sizeof r.status, "%s", status);
    return r;
}

// Whether q, planned after the batch's last trial `last` on the hypothesis of hypothetical_row()
// (hyp: the ledger with the batch's rows so far), is the trial that follows last whatever the
// batch's runs score, unless last itself decides: the next seed of the same candidate below the
// seed cap (at the cap its run decides), the next baseline seed, the next screen of the same
// rung, the other half of a promotion's pair, or its next pair below the last.
static int speculable(const PlanCtx *ctx, const PlanState *hyp, const TrialPlan *last, const TrialPlan *q) {
    double d[PLAN_MAX_SEEDS];
    const double s0 = plan_config_seed(ctx->base);
    if (q->needs_proposal || q->new_bracket) return 0;
    if (!strcmp(last->kind, "baseline")) return !strcmp(q->kind, "baseline");
    if (plan_wants_twin(last)) {  // a candidate's run
        int head = !strcmp(last->kind, "seed") ? last->parent : last->trial;
        int g = hyp->group[hyp->n - 1];
        return !strcmp(q->kind, "seed") && q->parent == head &&
               plan_paired_diffs(hyp, g, hyp->best, s0, d, PLAN_MAX_SEEDS) < ctx->max_seeds;
    }
    if (!strncmp(last->kind, "rung", 4)) return !strcmp(q->kind, last->kind);
    if (!strcmp(last->kind, "promote-pair"))
        return !strcmp(q->kind, "promote") && plan_config_seed(q->config) == plan_config_seed(last->config);
    if (!strcmp(last->kind, "promote"))
        return !strcmp(q->kind, "promote-pair") && plan_promotion_diffs(hyp, s0, d, PLAN_MAX_SEEDS) < ctx->promote_seeds;
    return 0;
}

// Fill the batch's free lanes with what follows its trials (speculable()), as far as --trials
// allows. A candidate's next run comes with its twin: two lanes, or none.
static void speculate(const Research *R, const PlanCtx *ctx, const PlanState *st, Batch *b) {
    const int lanes = R->o->lanes;
    LedgerRow *rows = xmalloc(((size_t)st->n + (size_t)lanes) * sizeof *rows);
    if (st->n) memcpy(rows, st->rows, (size_t)st->n * sizeof *rows);
    int k = 0;  // hypothetical rows in rows[st->n ..]
    while (b->n < lanes) {
        for (; k < b->n; k++) rows[st->n + k] = hypothetical_row(&b->p[k]);
        PlanState hyp;
        TrialPlan q;
        memset(&q, 0, sizeof q);
        if (plan_state_build(ctx, rows, st->n + k, &hyp) != 0) {
            err_clear();
            plan_state_free(&hyp);
            break;
        }
        int ok = plan_next(ctx, &hyp, &q) == 0 && speculable(ctx, &hyp, &b->p[b->n - 1], &q);
        if (!ok) err_clear();
        int unit = ctx->side_by_side && plan_wants_twin(&q) ? 2 : 1;
        if (ok && (b->n + unit > lanes || (R->o->max_trials > 0 && st->n + b->n + unit > R->o->max_trials))) ok = 0;
        if (ok && unit == 2) plan_twin(&hyp, &q, &b->p[b->n++]);
        if (ok) b->p[b->n++] = q;
        else plan_free(&q);
        plan_state_free(&hyp);
        if (!ok) break;
    }
    for (int i = 0; i < k; i++) free(rows[st->n + i].change), free(rows[st->n + i].description);
    free(rows);
}

static int same_plan(const TrialPlan *a, const TrialPlan *b) {
    return a->trial == b->trial && !strcmp(a->kind, b->kind) && a->parent == b->parent && a->budget_s == b->budget_s &&
           cJSON_Compare(a->config, b->config, 1);
}

// Whether the ledger's next trial (with its twin: cand) is x: what a research in one lane would run
// now. A speculative trial is recorded only then.
static int still_next(const PlanCtx *ctx, const PlanState *st, const TrialPlan *x, const TrialPlan *cand) {
    TrialPlan q, tw;
    memset(&tw, 0, sizeof tw);
    if (plan_next(ctx, st, &q) != 0) {
        err_clear();
        plan_free(&q);
        return 0;
    }
    int same;
    if (ctx->side_by_side && plan_wants_twin(&q)) {
        plan_twin(st, &q, &tw);
        same = cand && same_plan(x, &tw) && same_plan(cand, &q);
    } else same = !cand && same_plan(x, &q);
    plan_free(&q), plan_free(&tw);
    return same;
}

// Train the batch, one trial per lane, all at once; 0, 130 when interrupted (nothing is recorded
// then), -1 + err.
static int run_lanes(Research *R, const PlanState *st, const Batch *b, LaneJob *jobs) {
    pthread_t th[RESEARCH_MAX_LANES];
    for (int i = 0; i < b->n; i++) {
        const TrialPlan *p = &b->p[i];
        char *dir = trial_dir(R, p->trial);
        if (!p->needs_proposal) remove_tree(dir);  // what an interrupted attempt left
        jobs[i] = (LaneJob){R, p, dir, research_trial_limit(R->o, st, p->config, p->budget_s), i, {0}, 0, ""};
        announce(p, jobs[i].limit, i, R->o->lanes);
    }
    int started = 0;
    for (; started < b->n; started++)
        if (pthread_create(&th[started], NULL, lane_main, &jobs[started]) != 0) break;
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    int rc = started < b->n ? err_set("cannot start a lane's thread") : 0;
    for (int i = 0; i < b->n && rc == 0; i++)
        if (jobs[i].rc != 0) rc = err_set("%s", jobs[i].err);
    for (int i = 0; i < b->n && rc == 0; i++)
        if (jobs[i].tr.interrupted) rc = 130;
    return rc;
}

// A speculative run the research did not take (the trial before it decided): its folder goes (its
// id is the next trial's), and DIR/unused.tsv keeps what it cost.
static int drop_unused(Research *R, const TrialPlan *p, const LaneJob *j, int batch) {
    printf("trial %d (%s): not used: the trials before it changed what comes next [%.0f s]\n", p->trial, p->kind,
           j->tr.wall_s);
    fflush(stdout);
    remove_tree(j->dir);
    char *path = dir_file(R, "unused.tsv");
    int fresh = !path_exists(path), rc = 0;
    FILE *f = fopen(path, "a");
    if (!f) rc = err_errno("cannot open %s", path);
    else {
        if (fresh) fprintf(f, "batch\tkind\tparent\tseed\tbudget_s\twall_s\n");
        fprintf(f, "%d\t%s\t%d\t%.0f\t%g\t%.1f\n", batch, p->kind, p->parent, plan_config_seed(p->config), p->budget_s,
                isfinite(j->tr.wall_s) ? j->tr.wall_s : 0);
        if (fflush(f) != 0 || fsync(fileno(f)) != 0) rc = err_errno("cannot write %s", path);
        fclose(f);
    }
    free(path);
    return rc;
}

// Run p (and, in lanes, what follows it: speculate()) and record the results in ledger order:
// each trial against the ledger with the ones before it, a twin before its candidate. A trial
// past the point where the plan changed is not recorded (drop_unused), so a research decides in
// N lanes exactly as in one. 0: recorded; 130: interrupted (nothing recorded); -1: error. (A kill
// between two records leaves the ledger at a trial boundary: the rerun plans from there.)
static int run_trial(Research *R, const PlanCtx *ctx, const PlanState *st, TrialPlan *p) {
    Batch b = {.n = 0};
    if (R->o->lanes > 1 && plan_wants_twin(p)) plan_twin(st, p, &b.p[b.n++]);
    b.p[b.n++] = *p;
    memset(p, 0, sizeof *p);  // the batch owns it now
    if (R->o->lanes > 1) speculate(R, ctx, st, &b);
    LaneJob *jobs = xcalloc((size_t)b.n, sizeof *jobs);
    int rc = run_lanes(R, st, &b, jobs), batch = b.n > 1 ? b.p[0].trial : 0, done = 0;
    while (rc == 0 && done < b.n) {
        int unit = !strcmp(b.p[done].kind, "twin") && done + 1 < b.n ? 2 : 1;
        for (int u = 0; u < unit && rc == 0; u++) {
            LedgerRow *rows = NULL;
            int m = 0;
            PlanState now;
            memset(&now, 0, sizeof now);
            rc = load_state(R, ctx, &rows, &m, &now);
            if (rc == 0 && u == 0 && done > 0 && !still_next(ctx, &now, &b.p[done], unit == 2 ? &b.p[done + 1] : NULL))
                rc = 1;
            if (rc == 0) rc = record_trial(R, ctx, &now, &b.p[done + u], &jobs[done + u], batch);
            plan_state_free(&now);
            ledger_free(rows, m);
        }
        if (rc == 0) done += unit;
    }
    if (rc == 1) rc = 0;
    for (int i = done; i < b.n && rc == 0 && jobs[i].dir; i++) rc = drop_unused(R, &b.p[i], &jobs[i], batch);
    for (int i = 0; i < b.n; i++) free((char *)jobs[i].dir);
    free(jobs);
    batch_free(&b);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------------

// Load the ledger (dropping a torn last row) and replay it.
static int load_state(Research *R, const PlanCtx *ctx, LedgerRow **rows, int *n, PlanState *st) {
    size_t valid;
    if (ledger_load(R->ledger_path, rows, n, &valid) != 0) return -1;
    int64_t size = 0;
    if (path_exists(R->ledger_path) && file_stat(R->ledger_path, &size, NULL) == 0 && (size_t)size > valid) {
        printf("research: %s ends with a torn row (the process was killed while writing it); dropping it\n", R->ledger_path);
        if (ledger_truncate(R->ledger_path, valid) != 0) return -1;
    }
    if (plan_state_build(ctx, *rows, *n, st) != 0) return err_prefix("%s", R->ledger_path);
    return 0;
}

// 1 when a limit says stop before starting p.
static int limits_reached(const Research *R, const PlanCtx *ctx, const PlanState *st, const TrialPlan *p) {
    const ResearchOptions *o = R->o;
    if (o->hours > 0 && st->n > 0) {
        double used = plan_machine_s(st->rows, st->n), need = expected_s(ctx, st, p);
        if (used + need > o->hours * 3600) {
            printf("research: --hours %g reached (%.0f s used, the next %s needs about %.0f s)\n", o->hours, used,
                   p->new_bracket ? "bracket" : "trial", need);
            return 1;
        }
    }
    return 0;
}

static int loop(Research *R) {
    const ResearchOptions *o = R->o;
    PlanCtx ctx = {o->strategy,   o->budget_s,         o->baseline_seeds, o->threshold, o->alpha, o->max_seeds,
                   o->eta,        o->rungs,            o->bracket,        o->seed,      &R->space, R->base,
                   o->promote_budget_s, o->promote_seeds, o->lanes > 1};
    int rejections = 0, first = 1;
    for (;;) {
        LedgerRow *rows = NULL;
        int n = 0, rc = 0, stop = 0;
        PlanState st;
        memset(&st, 0, sizeof st);
        if (load_state(R, &ctx, &rows, &n, &st) != 0) rc = -1;
        if (rc == 0 && first && n > 0) printf("research: resuming %s after trial %d\n", o->out_dir, n);
        first = 0;
        if (rc == 0) rc = write_best(R, &st);
        if (rc == 0 && o->max_trials > 0 && n >= o->max_trials) {
            printf("research: --trials %d reached\n", o->max_trials);
            stop = 1;
        }
        if (rc == 0 && proc_interrupted()) rc = 130;
        TrialPlan p;
        memset(&p, 0, sizeof p);
        if (rc == 0 && !stop) {
            if (plan_next(&ctx, &st, &p) != 0) {
                rc = n > 0 && !ledger_status_ok(rows[0].status) ? err_prefix("%s", o->out_dir) : 0;  // else: the space is exhausted
                if (rc == 0) printf("research: stopping: %s\n", err_msg()), stop = 1;
            }
        }
        if (rc == 0 && !stop) stop = limits_reached(R, &ctx, &st, &p);
        if (rc == 0 && !stop && p.needs_proposal) {
            int a = ask_agent(R, &ctx, &st, &p, &rejections);
            rc = a == 1 ? 0 : a;
            if (a == 1) stop = 2;  // recorded as rejected: plan again
        }
        if (rc == 0 && !stop) rc = run_trial(R, &ctx, &st, &p);
        plan_free(&p);
        plan_state_free(&st);
        ledger_free(rows, n);
        if (rc != 0) return rc;
        if (stop == 1) return 0;
    }
}

int research_run(const ResearchOptions *o) {
    Research R;
    memset(&R, 0, sizeof R);
    R.o = o;
    proc_catch_signals();
    int rc = setup(&R);
    if (rc == 0) rc = loop(&R);
    if (rc != 0 && proc_interrupted()) rc = 130;
    if (rc == 130) printf("research: interrupted; the trial in flight was not recorded. Rerun the same command to continue.\n");
    if (R.ledger_path && path_exists(R.ledger_path) && (rc == 0 || rc == 130)) {
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", err_msg());
        if (research_report_write(o->out_dir, NULL, NULL) == 0)
            printf("research: %s/summary.md and %s/report.html written\n", o->out_dir, o->out_dir);
        else fprintf(stderr, "frontier research: warning: no report: %s\n", err_msg());
        err_set("%s", saved);
    }
    teardown(&R);
    return rc;
}
