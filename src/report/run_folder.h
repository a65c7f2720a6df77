// report/run_folder.h — what the run report reads from a run folder: metrics.jsonl, summary.json,
// config.json (required), profile.csv and roofline.json (optional), each validated with errors
// that name the file (and the line for metrics.jsonl and profile.csv).
#pragma once
#include <cjson/cJSON.h>
#include <time.h>

#include "util/json_file.h"  // jnum, jstr: the page's readers use them

typedef struct {
    int n;
    double *step, *loss, *lr_mult, *momentum, *wd, *dt, *tok_s, *mfu, *tokens, *timed_s, *progress;
    int *timed;  // 1 timed, 0 excluded, -1 unknown
} Metrics;

// profile.csv: one row per op type; columns found by their header names.
enum { P_CALLS, P_TOTAL_MS, P_PCT, P_GFLOP, P_GBYTE, P_GFLOPS, P_GBYTES, P_INTENSITY, P_PCT_ROOF, P_NCOLS };

typedef struct {
    char *op;
    double v[P_NCOLS];  // NaN where empty or absent
} ProfileRow;

typedef struct {
    ProfileRow *rows;
    int n;
} Profile;

typedef struct {
    const char *run_dir;
    Metrics m;
    cJSON *summary, *config, *roofline;
    Profile prof;
    int have_profile;
    char roofline_note[256];
    double peak_flops, peak_bw;
    time_t finished;
} Report;

// Load everything the page needs from run_dir: 0, or -1 + err (usage errors for bad files).
int report_load(Report *r, const char *run_dir);
void report_free(Report *r);

