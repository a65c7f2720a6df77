// util/progress.h — a live progress line with rate and ETA on stderr.
//
// On a terminal the line is redrawn in place at most 5 times a second; otherwise (logs, CI) a
// plain line is printed at most every 10 s, so logs stay short. progress_done() prints the final
// line.
#pragma once
#include <stdint.h>

typedef struct {
    const char *label;  // e.g. "prepare train"
    double total;       // units of work (bytes), 0 if unknown
    double t_start, t_last;
    int tty, quiet;
} Progress;

void progress_begin(Progress *p, const char *label, double total, int quiet);
void progress_update(Progress *p, double done, const char *extra);
void progress_done(Progress *p, double done, const char *extra);
