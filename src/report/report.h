// report/report.h — `frontier report`: one self-contained HTML page for a training run folder.
//
// The page is plain HTML with inline CSS and inline SVG (report/svg.h): no JavaScript, no network,
// no external fonts, so it opens anywhere (a browser, a mail attachment, a CI artefact) and
// prints well.
#pragma once
#include "report/svg.h"

// ---------------------------------------------------------------------------------------------
// The report
// ---------------------------------------------------------------------------------------------

// Read RUN_DIR/{metrics.jsonl, summary.json, config.json} (required) and profile.csv,
// roofline.json (optional), and write the page to out_path atomically (nothing is written when
// anything fails). Errors name the file, and the line for metrics.jsonl and profile.csv.
// 0, or -1 with err_set().
int report_write(const char *run_dir, const char *out_path);
