// report/run_folder.c — reading and validating a run folder for the report (see run_folder.h).
#include "report/run_folder.h"


#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/csv.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Reading the run folder
// ---------------------------------------------------------------------------------------------


void metrics_free(Metrics *m) {
    double **cols[] = {&m->step, &m->loss, &m->lr_mult, &m->momentum, &m->wd, &m->dt, &m->tok_s,
                       &m->mfu, &m->tokens, &m->timed_s, &m->progress};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) free(*cols[i]);
    free(m->timed);
    memset(m, 0, sizeof *m);
}

static void metrics_grow(Metrics *m, size_t cap) {
    double **cols[] = {&m->step, &m->loss, &m->lr_mult, &m->momentum, &m->wd, &m->dt, &m->tok_s,
                       &m->mfu, &m->tokens, &m->timed_s, &m->progress};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) *cols[i] = xrealloc(*cols[i], cap * sizeof **cols[i]);
    m->timed = xrealloc(m->timed, cap * sizeof *m->timed);
}

int metrics_read(const char *path, Metrics *m) {
    memset(m, 0, sizeof *m);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return -1;
    size_t cap = 0;
    int line = 0, rc = 0;
    for (char *p = text; p < text + len && rc == 0;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *end = nl ? nl : text + len;
        line++;
        char *q = p;
        while (q < end && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < end) {
            cJSON *j = cJSON_ParseWithLength(p, (size_t)(end - p));
            double step = j ? jnum(j, "step") : NAN, loss = j ? jnum(j, "loss") : NAN;
            if (!j) rc = err_usage("%s:%d: not valid JSON (a truncated or corrupted line?)", path, line);
            else if (!cJSON_IsObject(j)) rc = err_usage("%s:%d: expected a JSON object", path, line);
            else if (!isfinite(step)) rc = err_usage("%s:%d: missing or non-numeric \"step\"", path, line);
            else if (!isfinite(loss)) rc = err_usage("%s:%d: missing or non-numeric \"loss\"", path, line);
            if (rc == 0) {
                if ((size_t)m->n == cap) {
                    cap = cap ? 2 * cap : 256;
                    metrics_grow(m, cap);
                }
                int i = m->n++;
                m->step[i] = step, m->loss[i] = loss;
                m->lr_mult[i] = jnum(j, "lr_mult"), m->momentum[i] = jnum(j, "muon_momentum");
                m->wd[i] = jnum(j, "muon_wd"), m->dt[i] = jnum(j, "dt_s"), m->tok_s[i] = jnum(j, "tok_per_s");
                m->mfu[i] = jnum(j, "mfu"), m->tokens[i] = jnum(j, "tokens"), m->timed_s[i] = jnum(j, "timed_s");
                m->progress[i] = jnum(j, "progress");
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "timed");
                m->timed[i] = cJSON_IsBool(t) ? cJSON_IsTrue(t) : -1;
            }
            cJSON_Delete(j);
        }
        p = end + 1;
    }
    free(text);
    if (rc != 0) metrics_free(m);
    return rc;
}

// A JSON object file, or NULL + err naming it.
cJSON *json_object_read(const char *path) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, len);
    if (!j) {
        // cJSON points at where parsing stopped: turn that into a line number.
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        if (at && at >= text && at <= text + len)
            for (const char *p = text; p < at; p++) line += *p == '\n';
        err_usage("%s:%d: not valid JSON", path, line);
    } else if (!cJSON_IsObject(j)) {
        err_usage("%s: expected a JSON object", path);
        cJSON_Delete(j);
        j = NULL;
    }
    free(text);
    return j;
}

static const char *PROFILE_COLS[P_NCOLS] = {"calls", "total_ms", "pct_step", "gflop", "gbyte",
                                            "gflops_per_s", "gbytes_per_s", "intensity", "pct_roofline"};



void profile_free(Profile *p) {
    for (int i = 0; i < p->n; i++) free(p->rows[i].op);
    free(p->rows);
    memset(p, 0, sizeof *p);
}

// Reading state: the header's columns, then one ProfileRow per record.
typedef struct {
    const char *path;
    Profile *pr;
    size_t cap;
    int col_of[P_NCOLS], op_col, n_header;
} ProfileReader;

static int profile_record(char **fields, int n, int line, void *ctx) {
    ProfileReader *r = ctx;
    if (r->n_header == 0) {
        r->n_header = n;
        for (int i = 0; i < n; i++) {
            if (!strcmp(fields[i], "op")) r->op_col = i;
            for (int k = 0; k < P_NCOLS; k++)
                if (!strcmp(fields[i], PROFILE_COLS[k])) r->col_of[k] = i;
        }
        if (r->op_col < 0 || r->col_of[P_PCT] < 0)
            return err_usage("%s:%d: the header needs the columns op and pct_step (expected "
                             "op,calls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline)",
                             r->path, line);
        return 0;
    }
    if (n != r->n_header)
        return err_usage("%s:%d: %d fields, but the header has %d (a field holding a comma must be quoted)", r->path,
                         line, n, r->n_header);
    Profile *pr = r->pr;
    GROW(pr->rows, r->cap, (size_t)pr->n + 1);
    ProfileRow *row = &pr->rows[pr->n];
    row->op = xstrdup(fields[r->op_col]);
    pr->n++;
    for (int k = 0; k < P_NCOLS; k++) {
        row->v[k] = NAN;
        if (r->col_of[k] < 0 || !*fields[r->col_of[k]]) continue;
        const char *f = fields[r->col_of[k]];
        char *e;
        double d = strtod(f, &e);
        if (e == f || *e) return err_usage("%s:%d: column %s: '%s' is not a number", r->path, line, PROFILE_COLS[k], f);
        row->v[k] = d;
    }
    return 0;
}

int profile_read(const char *path, Profile *pr) {
    memset(pr, 0, sizeof *pr);
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return -1;
    ProfileReader r = {.path = path, .pr = pr, .op_col = -1};
    for (int k = 0; k < P_NCOLS; k++) r.col_of[k] = -1;
    int rc = csv_read(path, text, len, profile_record, &r);
    if (rc == 0 && r.n_header == 0) rc = err_usage("%s: empty (expected a header line and one row per op)", path);
    free(text);
    if (rc != 0) profile_free(pr);
    return rc;
}

void report_free(Report *r) {
    metrics_free(&r->m);
    cJSON_Delete(r->summary);
    cJSON_Delete(r->config);
    cJSON_Delete(r->roofline);
    profile_free(&r->prof);
}

int report_load(Report *r, const char *run_dir) {
    memset(r, 0, sizeof *r);
    r->run_dir = run_dir;
    if (!is_dir(run_dir))
        return err_usage("%s is not a run folder (%s); give the folder `frontier train` wrote (runs/<date>-<time>)", run_dir,
                       path_exists(run_dir) ? "it is a file" : "no such folder");
    const char *required[] = {"metrics.jsonl", "summary.json", "config.json"};
    for (int i = 0; i < 3; i++) {
        char *p = path_join(run_dir, required[i]);
        int ok = path_exists(p);
        free(p);
        if (!ok) return err_usage("%s has no %s: not a finished training run folder", run_dir, required[i]);
    }
    char *p = path_join(run_dir, "metrics.jsonl");
    int rc = metrics_read(p, &r->m);
    free(p);
    if (rc != 0) return -1;
    p = path_join(run_dir, "summary.json");
    r->summary = json_object_read(p);
    int64_t size, mtime_ns;
    r->finished = r->summary && file_stat(p, &size, &mtime_ns) == 0 ? (time_t)(mtime_ns / 1000000000) : time(NULL);
    free(p);
    if (!r->summary) return -1;
    p = path_join(run_dir, "config.json");
    r->config = json_object_read(p);
    free(p);
    if (!r->config) return -1;

    p = path_join(run_dir, "profile.csv");
    if (path_exists(p)) {
        if (profile_read(p, &r->prof) != 0) { free(p); return -1; }
        r->have_profile = 1;
    }
    free(p);
    r->peak_flops = jnum(r->summary, "peak_flops");
    r->peak_bw = 29e9;
    p = path_join(run_dir, "roofline.json");
    if (path_exists(p)) {
        r->roofline = json_object_read(p);
        if (!r->roofline) { free(p); return -1; }
        double pf = jnum(r->roofline, "peak_flops"), bw = jnum(r->roofline, "peak_bw");
        if (!(pf > 0) || !(bw > 0)) {
            err_usage("%s: expected {\"peak_flops\": FLOP/s, \"peak_bw\": bytes/s}, both positive numbers", p);
            free(p);
            return -1;
        }
        r->peak_flops = pf, r->peak_bw = bw;
        snprintf(r->roofline_note, sizeof r->roofline_note, "Roofs from roofline.json (measured peaks of this machine).");
    } else {
        snprintf(r->roofline_note, sizeof r->roofline_note,
                 "No roofline.json: the compute roof is summary.json's peak_flops and the memory slope an assumed "
                 "29 GB/s (frontier profile writes the measured figures).");
    }
    free(p);
    if (!(r->peak_flops > 0)) r->peak_flops = 384e9;
    return 0;
}
