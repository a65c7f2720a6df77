// research/report.h — `frontier research report DIR`: the progress of a research as a
// self-contained HTML page and a markdown summary.
//
// The page (inline CSS and SVG, no JavaScript, no network) shows autoresearch's progress chart —
// val_bpb of every trial as a dot, kept trials highlighted and labelled with their change, the
// running best as a step line, screening runs of successive halving hollow, failed and rejected
// trials as marks on the top edge — then the numbers (baseline, best, improvement, seed spread),
// the kept changes, the best config and the whole ledger. summary.md has the same numbers, the
// best config's changes and the table of kept changes.
//
// Reads DIR/results.tsv (required), DIR/research.json, DIR/base.json and DIR/best.json (each
// optional). Both files are written atomically; on an error nothing is written.
#pragma once

// html_path / md_path: NULL for DIR/report.html and DIR/summary.md. 0, or -1 + err.
int research_report_write(const char *dir, const char *html_path, const char *md_path);
