// research/trial.c — one training trial in a child process, then its summary (see trial.h).
#include "research/trial.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "research/proc.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/json_file.h"

const char *trial_budget_text(double budget_s) {
    static char buf[32];
    snprintf(buf, sizeof buf, "%gs", budget_s);
    return buf;
}

const char *trial_fault(int id) {
    const char *env = getenv("FRONTIER_RESEARCH_FAULT");
    if (!env) return NULL;
    static const char *const kinds[] = {"crash", "hang", "signal", NULL};
    for (const char *p = env; *p;) {
        for (int k = 0; kinds[k]; k++) {
            size_t n = strlen(kinds[k]);
            if (!strncmp(p, kinds[k], n) && p[n] == ':' && atoi(p + n + 1) == id) return kinds[k];
        }
        const char *comma = strchr(p, ',');
        if (!comma) break;
        p = comma + 1;
    }
    return NULL;
}

// The last line of the log that says "error" (the trainer's "frontier: error: ..."), else its
// last non-empty line.
static void last_error_line(const char *log_path, char *out, size_t n) {
    out[0] = 0;
    size_t len;
    char *text = read_file(log_path, &len);
    if (!text) return;
    char *best = NULL, *last = NULL;
    for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        if (strstr(line, "error")) best = line;
        if (*line) last = line;
    }
    const char *pick = best ? best : last;
    if (pick) snprintf(out, n, "%s", pick);
    free(text);
}

// A count, time or score of the summary; NaN (the ledger's "-") unless finite and >= 0, so that
// every row recorded parses back (research/ledger.h).
static double jnum(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v->valuedouble : NAN;
}

static int read_summary(const char *run_dir, TrialResult *r) {
    char *path = path_join(run_dir, "summary.json");
    char *text = read_file(path, NULL);
    free(path);
    if (!text) return -1;
    cJSON *s = cJSON_Parse(text);
    free(text);
    r->val_bpb = jnum(s, "val_bpb"), r->tokens = jnum(s, "tokens_trained"), r->tok_per_s = jnum(s, "tok_per_s");
    r->mfu = jnum(s, "mfu"), r->peak_mb = jnum(s, "peak_rss_bytes") / (1024.0 * 1024.0), r->train_s = jnum(s, "timed_s");
    cJSON_Delete(s);
    if (r->val_bpb == 0) r->val_bpb = NAN;
    return isfinite(r->val_bpb) ? 0 : err_set("summary.json has no val_bpb (a number > 0)");
}

static int write_config(const char *path, const cJSON *config, double budget_s) {
    cJSON *c = cJSON_Duplicate(config, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "budget");
    cJSON_AddStringToObject(c, "budget", trial_budget_text(budget_s));
    int rc = json_write_atomic(path, c);
    cJSON_Delete(c);
    return rc;
}

int trial_run(const char *exe, const char *trial_dir, int id, const cJSON *config, double budget_s, double limit_s,
              TrialResult *r) {
    memset(r, 0, sizeof *r);
    r->val_bpb = r->tokens = r->tok_per_s = r->mfu = r->peak_mb = r->train_s = NAN;
    char *cfg = path_join(trial_dir, "trial.json"), *log = path_join(trial_dir, "train.log");
    char *run = path_join(trial_dir, "run");
    int rc = mkdir_p(trial_dir) == 0 && remove_tree(run) == 0 ? write_config(cfg, config, budget_s) : -1;
    const char *argv[] = {exe, "train", "--config", cfg, "--run-dir", run, "--quiet", NULL};
    ProcSpec spec = {argv, NULL, log, NULL, 0, limit_s, trial_fault(id)};
    ProcResult pr;
    if (rc == 0) rc = proc_run(&spec, &pr);
    if (rc == 0) {
        r->wall_s = pr.wall_s, r->timed_out = pr.timed_out, r->interrupted = pr.interrupted;
        if (pr.exit_code == 0 && read_summary(run, r) == 0) r->ok = 1;
        else if (pr.exit_code == 0) snprintf(r->error, sizeof r->error, "finished without a val_bpb: %s", err_msg());
        else {
            char line[400];
            last_error_line(log, line, sizeof line);
            snprintf(r->error, sizeof r->error, "%s%s%s", proc_describe(&pr), line[0] ? ": " : "", line);
        }
    }
    free(cfg);
    free(log);
    free(run);
    return rc;
}

void trial_drop_weights(const char *trial_dir) {
    static const char *const files[] = {"run/model.safetensors", "run/train_state.safetensors", NULL};
    for (int i = 0; files[i]; i++) {
        char *p = path_join(trial_dir, files[i]);
        remove(p);
        free(p);
    }
}
