// research/trial.c — one training trial in a child process, then its summary (see trial.h).
#include "research/trial.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu/cpu.h"
#include "report/svg.h"
#include "research/proc.h"
#include "train/summary.h"
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
// A line of only rule characters: the frame of a launcher's message box (Open MPI draws its
// help messages between lines of dashes).
static int is_rule(const char *line) {
    int any = 0;
    for (; *line; line++)
        if (*line == '-' || *line == '=' || *line == '*') any = 1;
        else if (*line != ' ' && *line != '\t') return 0;
    return any;
}

// What the child's log says went wrong: its last line that mentions an error; else the first line
// of a framed message (a launcher's refusal: Open MPI's box leads with what happened, then
// advice); else its last line that is not a frame.
static void last_error_line(const char *log_path, char *out, size_t n) {
    out[0] = 0;
    size_t len;
    char *text = read_file(log_path, &len);
    if (!text) return;
    char *best = NULL, *last = NULL, *boxed = NULL;
    int framed = 0;
    for (char *line = strtok(text, "\r\n"); line; line = strtok(NULL, "\r\n")) {
        if (is_rule(line)) { framed = 1; continue; }
        if (strcasestr(line, "error")) best = line;
        if (framed && !boxed && *line) boxed = line;
        if (*line) last = line;
    }
    const char *pick = best ? best : boxed ? boxed : last;
    if (pick) snprintf(out, n, "%s", pick);
    free(text);
}

// A count, time or score of the summary; NaN (the ledger's "-") unless finite and >= 0, so that
// every row recorded parses back (research/ledger.h).
static double summary_num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0 ? v->valuedouble : NAN;
}

int trial_read_summary(const char *run_dir, TrialResult *r) {
    char *path = path_join(run_dir, "summary.json");
    char *text = read_file(path, NULL);
    free(path);
    if (!text) return -1;
    cJSON *s = cJSON_Parse(text);
    free(text);
    r->val_bpb = summary_num(s, "val_bpb"), r->tokens = summary_num(s, "tokens_trained"), r->tok_per_s = summary_num(s, "tok_per_s");
    r->mfu = summary_num(s, "mfu"), r->peak_mb = summary_num(s, "peak_rss_bytes") / (1024.0 * 1024.0), r->train_s = summary_num(s, "timed_s");
    r->unique_tokens = summary_num(s, "unique_tokens");
    cJSON_Delete(s);
    if (r->val_bpb == 0) r->val_bpb = NAN;
    return isfinite(r->val_bpb) ? 0 : err_set("summary.json has no val_bpb (a number > 0)");
}

// s in single quotes for /bin/sh (a ' becomes '\'').
static void sh_quote(StrBuf *o, const char *s) {
    sb_puts(o, "'");
    for (const char *c = s; *c; c++) {
        if (*c == '\'') sb_puts(o, "'\\''");
        else {
            char one[2] = {*c, 0};
            sb_puts(o, one);
        }
    }
    sb_puts(o, "'");
}

// The path a shell can run exe by: /proc/self/exe is the research's own binary only to itself.
static void real_exe(const char *exe, char *buf, size_t n) {
    ssize_t k = !strcmp(exe, "/proc/self/exe") ? readlink(exe, buf, n - 1) : -1;
    if (k > 0) buf[k] = 0;
    else snprintf(buf, n, "%s", exe);
}

// command.sh: what runs the trial, from the directory the research runs in, so that a ledger
// row can be reproduced by hand (and a reader sees which code and which machine produced it).
static int write_command(const char *path, const char *const *argv) {
    StrBuf o = {0};
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
    char *commit = train_git_commit();
    const CpuInfo *ci = cpu_info();
    sb_printf(&o, "#!/bin/sh\n# frontier research trial: checkout %s, %s (%d logical cpus)\ncd ", commit, ci->model,
              ci->logical_cpus);
    sh_quote(&o, cwd);
    sb_puts(&o, " || exit 1\nexec");
    char exe[4096];
    real_exe(argv[0], exe, sizeof exe);
    for (int i = 0; argv[i]; i++) sb_puts(&o, " "), sh_quote(&o, i == 0 ? exe : argv[i]);
    sb_puts(&o, "\n");
    int rc = write_file_atomic(path, o.s, o.len);
    sb_free(&o);
    free(commit);
    return rc;
}

static int write_config(const char *path, const cJSON *config, double budget_s) {
    cJSON *c = cJSON_Duplicate(config, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, "budget");
    cJSON_AddStringToObject(c, "budget", trial_budget_text(budget_s));
    int rc = json_write_atomic(path, c);
    cJSON_Delete(c);
    return rc;
}

int trial_check_launcher(const char *t) {
    if (!strstr(t, "{cmd}"))
        return err_set("--launcher '%s' has no {cmd}: the template must say where the trial's command goes, e.g. "
                       "'mpirun -np 1 --host node3 {cmd}'", t);
    for (const char *c = strchr(t, '{'); c; c = strchr(c + 1, '{'))
        if (strncmp(c, "{cmd}", 5) && strncmp(c, "{trial}", 7) && strncmp(c, "{dir}", 5))
            return err_set("--launcher '%s': unknown placeholder at '%.12s' (the template knows {cmd}, {trial}, {dir})", t, c);
    return 0;
}

// The shell script a trial runs when it goes through a trainer command or a launcher template:
// the trial's arguments follow as "$@".
static char *trial_script(const TrialRunner *R, const char *trial_dir, int id) {
    StrBuf inner = {0}, o = {0};
    char exe[4096];
    if (R->trainer) sb_puts(&inner, R->trainer);
    else real_exe(R->exe, exe, sizeof exe), sh_quote(&inner, exe), sb_puts(&inner, " train");
    sb_puts(&inner, " \"$@\"");
    if (!R->launcher) return inner.s;
    // exec: the launcher itself is the process the research waits for and signals, so that at a
    // hang it gets SIGTERM and the grace period to stop its job, not a shell that dies at once
    sb_puts(&o, "exec ");
    for (const char *c = R->launcher; *c;) {
        if (!strncmp(c, "{cmd}", 5)) sb_puts(&o, inner.s), c += 5;
        else if (!strncmp(c, "{trial}", 7)) sb_printf(&o, "%04d", id), c += 7;
        else if (!strncmp(c, "{dir}", 5)) sh_quote(&o, trial_dir), c += 5;
        else {
            char one[2] = {*c++, 0};
            sb_puts(&o, one);
        }
    }
    sb_free(&inner);
    return o.s;
}

int trial_run(const TrialRunner *R, const char *trial_dir, int id, const cJSON *config, double budget_s,
              double limit_s, TrialResult *r) {
    memset(r, 0, sizeof *r);
    r->val_bpb = r->tokens = r->tok_per_s = r->mfu = r->peak_mb = r->train_s = r->unique_tokens = NAN;
    char *cfg = path_join(trial_dir, "trial.json"), *log = path_join(trial_dir, "train.log");
    char *run = path_join(trial_dir, "run");
    int rc = mkdir_p(trial_dir) == 0 && remove_tree(run) == 0 ? write_config(cfg, config, budget_s) : -1;
    const char *own[] = {R->exe, "train", "--config", cfg, "--run-dir", run, "--quiet", NULL};
    char *script = R->trainer || R->launcher ? trial_script(R, trial_dir, id) : NULL;
    const char *wrapped[] = {"/bin/sh", "-c", script, "frontier-trainer", "--config", cfg, "--run-dir", run, "--quiet", NULL};
    const char *const *argv = script ? wrapped : own;
    char *cmd_path = path_join(trial_dir, "command.sh");
    if (rc == 0) rc = write_command(cmd_path, argv);
    free(cmd_path);
    ProcSpec spec = {argv,  NULL,          log, NULL, 0, limit_s, R->launcher ? TRIAL_LAUNCHER_GRACE_S : 0, trial_fault(id),
                     0,     R->cpu_first, R->cpu_count};
    ProcResult pr;
    if (rc == 0) rc = proc_run(&spec, &pr);
    if (rc == 0) {
        r->wall_s = pr.wall_s, r->timed_out = pr.timed_out, r->interrupted = pr.interrupted;
        if (pr.exit_code == 0 && trial_read_summary(run, r) == 0) r->ok = 1;
        else if (pr.exit_code == 0) snprintf(r->error, sizeof r->error, "finished without a val_bpb: %s", err_msg());
        else {
            char line[400];
            last_error_line(log, line, sizeof line);
            snprintf(r->error, sizeof r->error, "%s%s%s", proc_describe(&pr), line[0] ? ": " : "", line);
        }
    }
    free(script);
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
