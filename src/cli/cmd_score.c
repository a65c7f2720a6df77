// cli/cmd_score.c — `frontier score RUN_DIR... [--json FILE] [--skip-incomplete]
// [--allow-partial-core]`: the competition's scores for several training runs, side by side (the
// rules: eval/score.h), as a table and optionally JSON.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "eval/score.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_file.h"


// Order for display: phase-1 rank, then input order (qsort is not stable, so compare indices).
static const ScoreRun *g_runs;
static int cmp_by_rank1(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    if (g_runs[i].rank1 != g_runs[j].rank1) return g_runs[i].rank1 < g_runs[j].rank1 ? -1 : 1;
    return i < j ? -1 : i > j;
}

static cJSON *num_or_null(double x) { return isnan(x) ? cJSON_CreateNull() : cJSON_CreateNumber(x); }

static void fmt_count(char *buf, size_t n, double x) {
    if (isnan(x)) snprintf(buf, n, "-");
    else if (x >= 1e9) snprintf(buf, n, "%.2fG", x / 1e9);
    else if (x >= 1e6) snprintf(buf, n, "%.2fM", x / 1e6);
    else if (x >= 1e3) snprintf(buf, n, "%.1fk", x / 1e3);
    else snprintf(buf, n, "%.0f", x);
}

static const char SUMMARY[] =
    "The competition's scores for several training runs. Each RUN_DIR needs summary.json (from `frontier "
    "train`); core.json (CORE) is optional. Phase 1 ranks runs by val_bpb (lower is better). Phase 2 "
    "composite = 0.5*bpb_norm + 0.5*core_norm, min-max normalised over the runs given: bpb_norm = "
    "(max_bpb - bpb)/(max_bpb - min_bpb), core_norm = (core - min_core)/(max_core - min_core); when all "
    "runs share a value that component is 1.0. Runs without core.json get composite n/a and are left out "
    "of the CORE min-max. A CORE that covers fewer tasks than the others or than its bundle's full set (a task "
    "left out for missing data, except one the bundle is known not to ship such as coqa, or not selected with "
    "--tasks) is an error naming the run and the tasks it lacks, unless --allow-partial-core (then it is ranked "
    "and flagged). A run without val_bpb (interrupted) is an error unless --skip-incomplete. Prints "
    "a table; --json FILE also writes the scores as JSON (atomically), --json - prints only the JSON on "
    "stdout (the table goes to stderr).";

int cmd_score(int argc, char **argv) {
    const char *json_path = NULL;
    int skip_incomplete = 0, allow_partial = 0;
    Option opts[] = {
        {"json", OPT_STRING, &json_path, "FILE", "also write the scores as JSON to FILE ('-': stdout)", 0, 0, 0, 0, NULL},
        {"skip-incomplete", OPT_FLAG, &skip_incomplete, NULL, "list runs without val_bpb as skipped instead of failing", 0, 0, 0, 0, NULL},
        {"allow-partial-core", OPT_FLAG, &allow_partial, NULL, "rank runs whose CORE covers fewer tasks than the "
         "others or than the full set (flagged) instead of failing", 0, 0, 0, 0, NULL},
        {0},
    };
    StringList pos = {0};
    const char *usage = "frontier score RUN_DIR... [--json FILE] [--skip-incomplete] [--allow-partial-core]";
    int rc = parse_args(usage, SUMMARY, opts, argc, argv, &pos);
    if (rc != ARGS_OK) {
        string_list_free(&pos);
        return rc == ARGS_HELP ? 0 : FRONTIER_EXIT_USAGE;
    }
    if (pos.n < 1) {
        fprintf(stderr, "%s: expected at least one RUN_DIR\nusage: %s\n", "frontier score", usage);
        string_list_free(&pos);
        return FRONTIER_EXIT_USAGE;
    }
    if (json_path && (!*json_path || is_dir(json_path))) {
        fprintf(stderr, "frontier score: --json %s: %s\n", json_path,
                *json_path ? "is a folder: give a file name (or '-')" : "needs a file name (or '-')");
        string_list_free(&pos);
        return FRONTIER_EXIT_USAGE;
    }

    int n = pos.n;
    ScoreRun *runs = calloc((size_t)n, sizeof *runs);
    int *order = calloc((size_t)n, sizeof *order);
    cJSON *root = NULL;
    char *text = NULL;
    rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = score_load_run(&runs[i], pos.items[i]);
        if (rc == 0 && !runs[i].complete && !skip_incomplete)
            rc = err_usage("%s/summary.json has no val_bpb (an interrupted run?); pass --skip-incomplete to leave it out",
                         runs[i].name);
    }
    int n_ok = 0;
    for (int i = 0; i < n; i++) n_ok += runs[i].complete;
    if (rc == 0 && n_ok == 0) rc = err_usage("no run has val_bpb: nothing to score");
    if (rc) goto done;
    score_find_partial_cores(runs, n);
    int n_partial = 0;
    for (int i = 0; i < n; i++) n_partial += runs[i].lacks != NULL;
    for (int i = 0; i < n && !allow_partial && rc == 0; i++) {
        const ScoreRun *r = &runs[i];
        if (!r->lacks) continue;
        char list[1024] = "";
        size_t used = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, r->lacks) {
            int k = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", x->valuestring);
            if (k < 0 || used + (size_t)k >= sizeof list) break;
            used += (size_t)k;
        }
        rc = err_usage("%s: its CORE covers %d of %d tasks and lacks %s, so its phase-2 composite would not compare "
                       "with the others; score it on every task (frontier eval --core, without --tasks), or pass "
                       "--allow-partial-core to rank it anyway (flagged)", r->name, r->tasks_scored,
                       r->n_tasks >= 0 ? r->n_tasks : r->tasks_scored + cJSON_GetArraySize(r->lacks), list);
    }
    if (rc) goto done;

    ScoreRange range = score_rank(runs, n);
    int n_order = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].complete) order[n_order++] = i;
    g_runs = runs;
    qsort(order, (size_t)n_order, sizeof *order, cmp_by_rank1);

    // Footnotes.
    const char *notes[4];
    int n_notes = 0;
    if (n_partial)
        notes[n_notes++] = "partial CORE (--allow-partial-core): runs marked * cover fewer tasks than the others or "
                           "than the full set; their composites do not compare (JSON: core_lacks)";
    if (range.bpb_equal)
        notes[n_notes++] = n_ok == 1 ? "only one run has val_bpb: its val_bpb component is 1.0"
                                     : "every run has the same val_bpb (max == min): its component is 1.0 for every run";
    if (range.core_equal)
        notes[n_notes++] = range.n_core == 1 ? "only one run has CORE: its CORE component is 1.0"
                                       : "every run with CORE has the same CORE (max == min): its component is 1.0 for every run";
    if (range.n_core < n_ok)
        notes[n_notes++] = "runs without core.json have no composite (n/a) and are left out of the CORE min-max";

    // The table (on stderr when stdout carries the JSON).
    FILE *out = json_path && !strcmp(json_path, "-") ? stderr : stdout;
    int w = 3;
    for (int i = 0; i < n; i++) w = (int)fmax(w, (double)strlen(runs[i].name));
    fprintf(out, "%-*s  %8s %4s  %8s %6s  %9s %4s  %9s %9s\n", w, "run", "val_bpb", "rank", "CORE", "tasks",
            "composite", "rank", "tokens", "params");
    for (int k = 0; k < n_order; k++) {
        const ScoreRun *r = &runs[order[k]];
        char core[32] = "n/a", tasks[32] = "-", comp[32] = "n/a", rank2[16] = "-", tok[32], par[32];
        if (r->has_core) {
            snprintf(core, sizeof core, "%.4f", r->core);
            if (r->n_tasks >= 0) snprintf(tasks, sizeof tasks, "%d/%d%s", r->tasks_scored, r->n_tasks, r->lacks ? "*" : "");
            else snprintf(tasks, sizeof tasks, "%d%s", r->tasks_scored, r->lacks ? "*" : "");
            snprintf(comp, sizeof comp, "%.4f", r->composite);
            snprintf(rank2, sizeof rank2, "%d", r->rank2);
        }
        fmt_count(tok, sizeof tok, r->tokens_trained);
        fmt_count(par, sizeof par, r->parameters);
        fprintf(out, "%-*s  %8.4f %4d  %8s %6s  %9s %4s  %9s %9s\n", w, r->name, r->bpb, r->rank1, core, tasks, comp,
                rank2, tok, par);
    }
    for (int i = 0; i < n; i++)
        if (!runs[i].complete) fprintf(out, "skipped: %s (no val_bpb: interrupted run)\n", runs[i].name);
    fprintf(out, "composite = 0.5*bpb_norm + 0.5*core_norm, min-max normalised over the %d run%s scored\n", n_ok,
            n_ok == 1 ? "" : "s");
    for (int k = 0; k < n_notes; k++) fprintf(out, "* %s\n", notes[k]);

    if (!json_path) goto done;
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "formula",
                            "composite = 0.5*bpb_norm + 0.5*core_norm; bpb_norm = (max_bpb - bpb)/(max_bpb - min_bpb); "
                            "core_norm = (core - min_core)/(max_core - min_core); a component is 1.0 when max == min");
    cJSON *jr = cJSON_AddArrayToObject(root, "runs");
    for (int k = 0; k < n_order; k++) {
        const ScoreRun *r = &runs[order[k]];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run", r->name);
        cJSON_AddNumberToObject(o, "val_bpb", r->bpb);
        cJSON_AddNumberToObject(o, "phase1_rank", r->rank1);
        cJSON_AddItemToObject(o, "core", num_or_null(r->core));
        cJSON_AddItemToObject(o, "tasks_scored", r->has_core ? cJSON_CreateNumber(r->tasks_scored) : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "n_tasks", r->has_core && r->n_tasks >= 0 ? cJSON_CreateNumber(r->n_tasks) : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "missing_tasks", r->missing ? cJSON_Duplicate(r->missing, 1) : cJSON_CreateArray());
        cJSON_AddBoolToObject(o, "partial_core", r->lacks != NULL);
        cJSON_AddItemToObject(o, "core_lacks", r->lacks ? cJSON_Duplicate(r->lacks, 1) : cJSON_CreateArray());
        cJSON_AddNumberToObject(o, "bpb_norm", r->bpb_norm);
        cJSON_AddItemToObject(o, "core_norm", num_or_null(r->core_norm));
        cJSON_AddItemToObject(o, "composite", num_or_null(r->composite));
        cJSON_AddItemToObject(o, "phase2_rank", r->rank2 ? cJSON_CreateNumber(r->rank2) : cJSON_CreateNull());
        cJSON_AddItemToObject(o, "tokens_trained", num_or_null(r->tokens_trained));
        cJSON_AddItemToObject(o, "parameters", num_or_null(r->parameters));
        cJSON_AddItemToObject(o, "eval_tokens", num_or_null(r->eval_tokens));
        cJSON_AddItemToObject(o, "eval_T", num_or_null(r->eval_T));
        cJSON_AddItemToObject(o, "config", r->config ? cJSON_Duplicate(r->config, 1) : cJSON_CreateNull());
        cJSON_AddItemToArray(jr, o);
    }
    cJSON *js = cJSON_AddArrayToObject(root, "skipped");
    for (int i = 0; i < n; i++) {
        if (runs[i].complete) continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "run", runs[i].name);
        cJSON_AddStringToObject(o, "reason", "no val_bpb (interrupted run)");
        cJSON_AddItemToArray(js, o);
    }
    cJSON *jn = cJSON_AddArrayToObject(root, "notes");
    for (int k = 0; k < n_notes; k++) cJSON_AddItemToArray(jn, cJSON_CreateString(notes[k]));
    cJSON *mm = cJSON_AddObjectToObject(root, "normalisation");
    cJSON_AddNumberToObject(mm, "min_bpb", range.min_bpb);
    cJSON_AddNumberToObject(mm, "max_bpb", range.max_bpb);
    cJSON_AddItemToObject(mm, "min_core", range.n_core ? cJSON_CreateNumber(range.min_core) : cJSON_CreateNull());
    cJSON_AddItemToObject(mm, "max_core", range.n_core ? cJSON_CreateNumber(range.max_core) : cJSON_CreateNull());
    if (!strcmp(json_path, "-")) {
        text = cJSON_Print(root);
        if (!text) { rc = err_set("out of memory printing JSON"); goto done; }
        printf("%s\n", text);
    } else {
        rc = json_write_atomic(json_path, root);
        if (rc == 0) printf("scores %s\n", json_path);
        else err_prefix("writing %s", json_path);
    }

done:
    free(text);
    cJSON_Delete(root);
    for (int i = 0; i < n; i++) score_run_free(&runs[i]);
    free(runs);
    free(order);
    string_list_free(&pos);
    return rc == 0 ? 0 : report_error();
}
