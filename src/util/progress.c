// util/progress.c — progress line (see progress.h).
#include "util/progress.h"

#include <stdio.h>
#include <unistd.h>

#include "util/timer.h"

void progress_begin(Progress *p, const char *label, double total, int quiet) {
    p->label = label;
    p->total = total;
    p->t_start = p->t_last = now_seconds();
    p->tty = isatty(2);
    p->quiet = quiet;
}

static void fmt_eta(double s, char *buf, size_t n) {
    if (s < 0 || s > 1e7) snprintf(buf, n, "?");
    else if (s < 60) snprintf(buf, n, "%.0fs", s);
    else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void print_line(Progress *p, double done, const char *extra, int final) {
    double el = now_seconds() - p->t_start, rate = el > 0 ? done / el : 0;
    char eta[32];
    fmt_eta(rate > 0 && p->total > 0 ? (p->total - done) / rate : -1, eta, sizeof eta);
    double pct = p->total > 0 ? 100.0 * done / p->total : 0;
    if (final) snprintf(eta, sizeof eta, "%.1fs", el);
    fprintf(stderr, "%s%s: %5.1f%% %.1f/%.1f MB, %.1f MB/s, %s %s%s%s", p->tty ? "\r\033[K" : "", p->label, pct,
            done / 1e6, p->total / 1e6, rate / 1e6, final ? "took" : "ETA", eta, extra && *extra ? ", " : "",
            extra ? extra : "");
    if (final || !p->tty) fprintf(stderr, "\n");
    fflush(stderr);
}

void progress_update(Progress *p, double done, const char *extra) {
    if (p->quiet) return;
    double t = now_seconds();
    if (t - p->t_last < (p->tty ? 0.2 : 10.0)) return;
    p->t_last = t;
    print_line(p, done, extra, 0);
}

void progress_done(Progress *p, double done, const char *extra) {
    if (!p->quiet) print_line(p, done, extra, 1);
}
