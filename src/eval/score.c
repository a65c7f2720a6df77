// eval/score.c — the competition's scores of several runs (see score.h).
#include "eval/score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/core.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_file.h"

// A run's JSON file: a malformed one is bad input the user handed over (exit 2).
static cJSON *load_json(const char *path) {
    cJSON *j = json_read_object(path, "score:");
    if (!j) err_mark_usage();
    return j;
}

int score_load_run(ScoreRun *r, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    r->name = strndup(dir, n);
    r->bpb = r->core = r->bpb_norm = r->core_norm = r->composite = NAN;
    r->n_tasks = -1;
    if (!is_dir(dir)) {
        return err_usage("%s: %s", dir, path_exists(dir) ? "not a folder" : "no such run folder");
    }
    char *path = path_join(dir, "summary.json");
    if (!path_exists(path)) {
        free(path);
        return err_usage("%s has no summary.json: not the folder of a `frontier train` run", dir);
    }
    cJSON *s = load_json(path);
    if (!s) { free(path); return -1; }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "val_bpb");
    int rc = 0;
    if (v && !cJSON_IsNumber(v)) {
        rc = err_usage("%s: \"val_bpb\" is not a number", path);
    } else if (v && !(isfinite(v->valuedouble) && v->valuedouble > 0)) {
        rc = err_usage("%s: \"val_bpb\" is %g, expected a positive number", path, v->valuedouble);
    } else {
        r->complete = v != NULL;
        if (v) r->bpb = v->valuedouble;
        r->tokens_trained = jnum(s, "tokens_trained");
        r->parameters = jnum(s, "parameters");
        r->eval_tokens = jnum(s, "eval_tokens");
        r->eval_T = jnum(s, "eval_T");
        cJSON *c = cJSON_GetObjectItemCaseSensitive(s, "config");
        if (cJSON_IsObject(c)) r->config = cJSON_DetachItemViaPointer(s, c);
    }
    cJSON_Delete(s);
    free(path);
    if (rc) return rc;

    path = path_join(dir, "core.json");
    if (!path_exists(path)) { free(path); return 0; }
    cJSON *c = load_json(path);
    if (!c) { free(path); return -1; }
    v = cJSON_GetObjectItemCaseSensitive(c, "core");
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        rc = err_usage("%s: \"core\" is missing or not a number", path);
    } else {
        r->has_core = 1;
        r->core = v->valuedouble;
        // "n_tasks" is the number scored where "tasks_total" is written (eval since it exists) and
        // was read as core.yaml's count before: tasks_total wins, else the larger reading.
        const cJSON *nt = cJSON_GetObjectItemCaseSensitive(c, "n_tasks");
        const cJSON *tt = cJSON_GetObjectItemCaseSensitive(c, "tasks_total");
        cJSON *miss = cJSON_GetObjectItemCaseSensitive(c, "missing");
        if (cJSON_IsArray(miss)) r->missing = cJSON_DetachItemViaPointer(c, miss);
        cJSON *unsel = cJSON_GetObjectItemCaseSensitive(c, "not_selected");
        if (cJSON_IsArray(unsel)) r->not_selected = cJSON_DetachItemViaPointer(c, unsel);
        int n_missing = r->missing ? cJSON_GetArraySize(r->missing) : 0;
        const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(c, "tasks");
        if (cJSON_IsArray(tasks)) {
            r->tasks_scored = cJSON_GetArraySize(tasks);
            r->scored = cJSON_CreateArray();
            const cJSON *t;
            cJSON_ArrayForEach(t, tasks) {
                const cJSON *label = cJSON_GetObjectItemCaseSensitive(t, "label");
                if (cJSON_IsString(label)) cJSON_AddItemToArray(r->scored, cJSON_CreateString(label->valuestring));
            }
            if (cJSON_GetArraySize(r->scored) != r->tasks_scored) cJSON_Delete(r->scored), r->scored = NULL;
        } else if (cJSON_IsNumber(nt)) {
            r->tasks_scored = nt->valueint - n_missing;
        } else {
            rc = err_usage("%s: neither \"tasks\" nor \"n_tasks\" says how many tasks were scored", path);
        }
        int n_unsel = r->not_selected ? cJSON_GetArraySize(r->not_selected) : 0;
        if (cJSON_IsNumber(tt)) r->n_tasks = tt->valueint;
        else if (cJSON_IsNumber(nt)) r->n_tasks = (int)fmax(nt->valueint, r->tasks_scored + n_missing + n_unsel);
    }
    cJSON_Delete(c);
    free(path);
    return rc;
}

void score_run_free(ScoreRun *r) {
    free(r->name);
    cJSON_Delete(r->config);
    cJSON_Delete(r->missing);
    cJSON_Delete(r->not_selected);
    cJSON_Delete(r->scored);
    cJSON_Delete(r->lacks);
}

static int has_label(const cJSON *list, const char *label) {
    const cJSON *x;
    cJSON_ArrayForEach(x, list)
        if (cJSON_IsString(x) && !strcmp(x->valuestring, label)) return 1;
    return 0;
}

static void lack(ScoreRun *r, const char *label) {
    if (!r->lacks) r->lacks = cJSON_CreateArray();
    if (!has_label(r->lacks, label)) cJSON_AddItemToArray(r->lacks, cJSON_CreateString(label));
}

// What each run's CORE lacks: tasks of its bundle left out (known-absent ones aside) and tasks
// another run scored. Runs whose core.json names no labels are compared by count.
void score_find_partial_cores(ScoreRun *runs, int n) {
    for (int i = 0; i < n; i++) {
        ScoreRun *r = &runs[i];
        if (!r->complete || !r->has_core) continue;
        const cJSON *x;
        cJSON_ArrayForEach(x, r->missing)
            if (cJSON_IsString(x) && !core_known_absent(x->valuestring)) lack(r, x->valuestring);
        cJSON_ArrayForEach(x, r->not_selected)
            if (cJSON_IsString(x) && !core_known_absent(x->valuestring)) lack(r, x->valuestring);
        for (int j = 0; j < n; j++) {
            const ScoreRun *o = &runs[j];
            if (j == i || !o->complete || !o->has_core) continue;
            if (r->scored && o->scored) {
                cJSON_ArrayForEach(x, o->scored)
                    if (!has_label(r->scored, x->valuestring)) lack(r, x->valuestring);
            } else if (r->tasks_scored < o->tasks_scored) {
                char what[96];
                snprintf(what, sizeof what, "%d task(s) that %s scored", o->tasks_scored - r->tasks_scored, o->name);
                lack(r, what);
            }
        }
    }
}

// Min-max over complete runs (val_bpb) and over complete runs with core.json (CORE), then the
// composites and the ranks.
ScoreRange score_rank(ScoreRun *runs, int n) {
    double min_b = INFINITY, max_b = -INFINITY, min_c = INFINITY, max_c = -INFINITY;
    int n_core = 0;
    for (int i = 0; i < n; i++) {
        const ScoreRun *r = &runs[i];
        if (!r->complete) continue;
        min_b = fmin(min_b, r->bpb), max_b = fmax(max_b, r->bpb);
        if (r->has_core) n_core++, min_c = fmin(min_c, r->core), max_c = fmax(max_c, r->core);
    }
    int bpb_eq = max_b == min_b, core_eq = n_core > 0 && max_c == min_c;
    for (int i = 0; i < n; i++) {
        ScoreRun *r = &runs[i];
        if (!r->complete) continue;
        r->bpb_norm = bpb_eq ? 1.0 : (max_b - r->bpb) / (max_b - min_b);
        if (r->has_core) {
            r->core_norm = core_eq ? 1.0 : (r->core - min_c) / (max_c - min_c);
            r->composite = 0.5 * r->bpb_norm + 0.5 * r->core_norm;
        }
    }
    // Ranks: 1 + the number of runs strictly better.
    for (int i = 0; i < n; i++) {
        ScoreRun *r = &runs[i];
        if (!r->complete) continue;
        int better1 = 0, better2 = 0;
        for (int j = 0; j < n; j++) {
            if (!runs[j].complete) continue;
            better1 += runs[j].bpb < r->bpb;
            if (r->has_core && runs[j].has_core) better2 += runs[j].composite > r->composite;
        }
        r->rank1 = 1 + better1;
        r->rank2 = r->has_core ? 1 + better2 : 0;
    }
    return (ScoreRange){.n_core = n_core, .min_bpb = min_b, .max_bpb = max_b, .min_core = min_c, .max_core = max_c,
                        .bpb_equal = bpb_eq, .core_equal = core_eq};
}
