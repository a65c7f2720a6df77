// research/report.c — progress chart, HTML page and summary.md of a research folder (see
// report.h). The text buffer and HTML escaping come from report/report.h; the chart is drawn
// here, since it needs dots, labels and a step line that the run report's charts do not have.
#include "research/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"
#include "research/ledger.h"
#include "research/plan.h"
#include "research/stats.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

// The run report's palette (report/report.c), so both pages look alike.
#define C_BLUE "#2f6db5"
#define C_GREEN "#3a8f5c"
#define C_RED "#c8393b"
#define C_AMBER "#e07b28"
#define C_GREY "#9aa3ad"
#define C_GRID "#e6e9ee"
#define C_TEXT "#3c4450"
#define C_MUTED "#6b7480"
#define FONT "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

typedef struct {
    const char *dir;
    LedgerRow *rows;
    int n;
    int *group;               // (n) each row's candidate, as research/plan.h groups them
    double *running;          // (n) the incumbent's mean val_bpb after each row (NaN before the baseline)
    double *noise;            // (n) the pooled sd of a paired difference after each row (NaN: none yet)
    double *kept_d;           // (n) a kept candidate's mean paired difference from the incumbent it beat
    double *kept_half;        // (n) and the half-width of its confidence interval (NaN: not a keep)
    int *kept_seeds;          // (n) over how many seeds
    double baseline, spread;  // mean of the baseline runs, their max - min (NaN below 2 runs)
    int n_baseline;
    double best;
    int best_row;             // the incumbent's first row (-1: none)
    double alpha;             // the keep rule's level (research.json; 0.05 when absent)
    cJSON *settings, *base, *best_cfg;
} Progress;

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

static cJSON *optional_json(const char *dir, const char *name) {
    char *path = path_join(dir, name), *text = path_exists(path) ? read_file(path, NULL) : NULL;
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    free(path);
    return j;
}

static double setting_num(const Progress *p, const char *key, double dflt) {
    const cJSON *v = p->settings ? cJSON_GetObjectItemCaseSensitive(p->settings, key) : NULL;
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

// The ledger replayed by research/plan.c itself, one prefix at a time, so the page shows what the
// loop decided and why: the incumbent after each row, the noise estimate it judged with, and for
// each keep the paired evidence (the same test statistic the loop computed).
static int replay(Progress *p) {
    PlanCtx ctx = {.alpha = p->alpha, .max_seeds = (int)setting_num(p, "max_seeds", 6), .base = p->base,
                   .promote_budget_s = setting_num(p, "promote_budget_s", 0),
                   .promote_seeds = (int)setting_num(p, "promote_seeds", 3)};
    PlanState prev, st;
    if (plan_state_build(&ctx, p->rows, 0, &prev) != 0) return -1;
    const double s0 = plan_config_seed(p->base);
    int rc = 0;
    for (int i = 0; i < p->n && rc == 0; i++) {
        if ((rc = plan_state_build(&ctx, p->rows, i + 1, &st)) != 0) break;
        p->group[i] = st.group[i];
        p->running[i] = st.best >= 0 ? st.best_score : NAN;
        p->noise[i] = stats_pool_sd(&st.pool);
        p->kept_d[i] = p->kept_half[i] = NAN;
        const LedgerRow *r = &p->rows[i];
        if (!strcmp(r->status, "keep") && strcmp(r->kind, "baseline") && prev.best >= 0) {
            double d[64], z, pv, half = NAN, mean = 0;
            int k = plan_paired_diffs(&st, st.group[i], prev.best, s0, d, 64);
            for (int j = 0; j < k; j++) mean += d[j] / k;
            double sd = stats_pool_sd(&prev.pool), df = stats_pool_df(&prev.pool);
            if (k > 0 && isfinite(sd) && sd > 0) stats_seq_decide(&prev.seq, d, k, sd, df, &z, &pv, &half);
            p->kept_d[i] = k > 0 ? mean : NAN, p->kept_half[i] = half, p->kept_seeds[i] = k;
        }
        if (i == p->n - 1) {
            p->best_row = st.best, p->best = st.best >= 0 ? st.best_score : NAN;
            p->baseline = st.baseline_mean, p->n_baseline = st.n_baseline;
            p->spread = st.n_baseline >= 2 ? st.spread : NAN;
        }
        plan_state_free(&prev);
        prev = st;
    }
    plan_state_free(&prev);
    return rc;
}

static int progress_load(Progress *p, const char *dir) {
    memset(p, 0, sizeof *p);
    p->dir = dir;
    p->best = p->baseline = p->spread = NAN, p->best_row = -1;
    char *path = path_join(dir, "results.tsv");
    int rc = 0;
    if (!path_exists(path)) rc = err_set("%s: no ledger there (results.tsv); is it a `frontier research --out` folder?", dir);
    else rc = ledger_load(path, &p->rows, &p->n, NULL);
    free(path);
    if (rc != 0) return -1;
    p->settings = optional_json(dir, "research.json");
    p->base = optional_json(dir, "base.json");
    p->best_cfg = optional_json(dir, "best.json");
    p->alpha = setting_num(p, "alpha", 0.05);
    size_t m = (size_t)p->n + 1;
    p->group = xcalloc(m, sizeof *p->group), p->kept_seeds = xcalloc(m, sizeof *p->kept_seeds);
    p->running = xcalloc(m, sizeof *p->running), p->noise = xcalloc(m, sizeof *p->noise);
    p->kept_d = xcalloc(m, sizeof *p->kept_d), p->kept_half = xcalloc(m, sizeof *p->kept_half);
    if (p->n > 0 && !p->base)
        return err_set("%s/base.json: missing or not JSON; the ledger's changes are relative to it, so the research "
                       "cannot be replayed (it is written before the first trial: was the folder copied in part?)",
                       dir);
    return p->n > 0 ? replay(p) : 0;
}

static void progress_free(Progress *p) {
    ledger_free(p->rows, p->n);
    free(p->group), free(p->running), free(p->noise), free(p->kept_d), free(p->kept_half), free(p->kept_seeds);
    cJSON_Delete(p->settings);
    cJSON_Delete(p->base);
    cJSON_Delete(p->best_cfg);
}

// The "what" part of a description (before "; verdict"), at most max characters (malloc'ed).
static char *what_of(const LedgerRow *r, size_t max) {
    char *s = xstrdup(r->description);
    char *cut = strstr(s, "; ");
    if (cut) *cut = 0;
    if ((cut = strstr(s, " (promoted #"))) *cut = 0;  // a halving finalist: its change is enough
    if (strlen(s) > max) strcpy(s + max - 3, "...");
    return s;
}

// The change a kept row stands for: its candidate's first run (a later seed of it only repeats it).
static const LedgerRow *kept_source(const Progress *p, int i) { return &p->rows[p->group[i]]; }

// "-0.0123 +- 0.0051 (90% CI, 3 seeds)" for kept row i.
static void kept_text(const Progress *p, int i, char *buf, size_t n) {
    if (!isfinite(p->kept_d[i])) snprintf(buf, n, "?");
    else if (!isfinite(p->kept_half[i])) snprintf(buf, n, "%+.4f (%d seeds)", p->kept_d[i], p->kept_seeds[i]);
    else
        snprintf(buf, n, "%+.4f +- %.4f (%.0f%% CI, %d seeds)", p->kept_d[i], p->kept_half[i], 100 * (1 - 2 * p->alpha),
                 p->kept_seeds[i]);
}

static int is_screen(const LedgerRow *r) { return !strcmp(r->status, "screen"); }
// A promotion's run: trained at --promote-budget, not comparable with the trials' val_bpb.
static int is_promotion(const LedgerRow *r) { return !strncmp(r->kind, "promote", 7); }

// The verdict row of kept row i's promotion: the first promotion run after it that ended it (a
// transfer, no-transfer, or a run that failed); NULL when none (promotion off, or still running).
static const LedgerRow *promotion_of(const Progress *p, int i) {
    for (int j = i + 1; j < p->n && is_promotion(&p->rows[j]); j++) {
        const LedgerRow *r = &p->rows[j];
        if (!strcmp(r->status, "transfer") || !strcmp(r->status, "no-transfer") || !ledger_status_ok(r->status)) return r;
    }
    return NULL;
}

// "yes: d -0.0123 +- 0.0040 at 300 s" for kept row i (the promotion's verdict).
static void promotion_text(const Progress *p, int i, char *buf, size_t n) {
    const LedgerRow *r = promotion_of(p, i);
    if (!r) {
        snprintf(buf, n, "%s", setting_num(p, "promote_budget_s", 0) > 0 ? "(not finished)" : "-");
        return;
    }
    if (!ledger_status_ok(r->status)) {
        snprintf(buf, n, "no: a promotion run ended in %s", r->status);
        return;
    }
    const char *d = strstr(r->description, ": d "), *end = d ? strstr(d, " (95% CI)") : NULL;
    int len = d && end ? (int)(end - d - 2) : 0;
    snprintf(buf, n, "%s%s%.*s at %g s", strcmp(r->status, "transfer") ? "no" : "yes", len ? ": " : "", len,
             len ? d + 2 : "", r->budget_s);
}

// ---------------------------------------------------------------------------------------------
// The chart
// ---------------------------------------------------------------------------------------------

typedef struct {
    double lo, hi, step;
} Ticks;

static Ticks nice_ticks(double lo, double hi, int target) {
    if (!(hi - lo > 1e-9)) lo -= 0.05, hi += 0.05;
    double raw = (hi - lo) / target, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    return (Ticks){floor(lo / step + 1e-9) * step, ceil(hi / step - 1e-9) * step, step};
}

typedef struct {
    double x0, x1, y0, y1, left, top, w, h;
} Frame;

static double fx(const Frame *f, double x) { return f->left + (x - f->x0) / (f->x1 - f->x0) * f->w; }
static double fy(const Frame *f, double y) { return f->top + f->h - (y - f->y0) / (f->y1 - f->y0) * f->h; }

static void svg_text(StrBuf *o, double x, double y, const char *anchor, const char *attrs, const char *text) {
    sb_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x, y, anchor, attrs ? attrs : "");
    sb_html(o, text);
    sb_puts(o, "</text>\n");
}

// y range: the finished trials, but a few very bad ones must not squash the interesting part:
// the top is at most the baseline plus twice the distance from the best to the baseline.
static void y_range(const Progress *p, double *lo, double *hi) {
    double mn = INFINITY, mx = -INFINITY;
    for (int i = 0; i < p->n; i++)
        if (ledger_status_ok(p->rows[i].status) && !is_promotion(&p->rows[i]))
            mn = fmin(mn, p->rows[i].val_bpb), mx = fmax(mx, p->rows[i].val_bpb);
    if (!(mn <= mx)) mn = 0, mx = 1;
    double ref = isfinite(p->baseline) ? p->baseline : mn, span = fmax(ref - mn, 0.05);
    *lo = mn, *hi = fmin(mx, ref + 2 * span);
    double pad = 0.06 * (*hi - *lo > 0 ? *hi - *lo : 0.05);
    *lo -= pad, *hi += pad;
}

static void chart_axes(StrBuf *o, const Frame *f, Ticks ty, int n) {
    char buf[32];
    sb_puts(o, "<g stroke=\"" C_GRID "\">\n");
    for (double v = ty.lo; v <= ty.hi + ty.step * 0.5; v += ty.step)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f->left, fy(f, v), f->left + f->w, fy(f, v));
    sb_puts(o, "</g>\n");
    int dec = (int)fmax(0, ceil(-log10(ty.step) - 1e-9));
    for (double v = ty.lo; v <= ty.hi + ty.step * 0.5; v += ty.step) {
        snprintf(buf, sizeof buf, "%.*f", dec, v);
        svg_text(o, f->left - 6, fy(f, v) + 4, "end", "fill=\"" C_MUTED "\"", buf);
    }
    Ticks tx = nice_ticks(1, fmax(n, 2), 10);
    double step = fmax(1, tx.step);
    for (double v = step >= 2 ? step : 1; v <= n + 0.5; v += step) {
        snprintf(buf, sizeof buf, "%.0f", v);
        svg_text(o, fx(f, v), f->top + f->h + 16, "middle", "fill=\"" C_MUTED "\"", buf);
    }
    sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#8a939e\"/>\n", f->left,
              f->top, f->w, f->h);
    svg_text(o, f->left + f->w / 2, f->top + f->h + 34, "middle", "fill=\"" C_TEXT "\"", "trial");
}

// The running best as a step line, from the first finished baseline on.
static void chart_best_line(StrBuf *o, const Frame *f, const Progress *p) {
    sb_puts(o, "<path fill=\"none\" stroke=\"" C_GREEN "\" stroke-width=\"2\" stroke-linejoin=\"round\" d=\"");
    int pen = 0;
    double prev = NAN;
    for (int i = 0; i < p->n; i++) {
        double b = p->running[i];
        if (!isfinite(b)) continue;
        double x = fx(f, i + 1), y = fy(f, fmin(f->y1, fmax(f->y0, b)));
        if (!pen) sb_printf(o, "M%.1f %.1f", x, y);
        else if (b != prev) sb_printf(o, "H%.1f V%.1f", x, y);
        pen = 1, prev = b;
    }
    if (pen) sb_printf(o, "H%.1f", fx(f, p->n + 0.5));
    sb_puts(o, "\"/>\n");
}

static void chart_points(StrBuf *o, const Frame *f, const Progress *p) {
    for (int i = 0; i < p->n; i++) {
        const LedgerRow *r = &p->rows[i];
        double x = fx(f, i + 1);
        if (is_promotion(r)) continue;  // another budget: in the kept changes' table instead
        if (!ledger_status_ok(r->status)) {  // crash, timeout, rejected: a mark on the top edge
            const char *c = strcmp(r->status, "rejected") ? C_RED : C_AMBER;
            sb_printf(o, "<path d=\"M%.1f %.1fl6 6m0 -6l-6 6\" stroke=\"%s\" stroke-width=\"1.8\"><title>#%d %s</title></path>\n",
                      x - 3, f->top + 4, c, r->trial, r->status);
            continue;
        }
        int off = r->val_bpb > f->y1;
        double y = fy(f, fmin(r->val_bpb, f->y1));
        char tip[96];
        snprintf(tip, sizeof tip, "#%d %s %s %.4f", r->trial, r->kind, r->status, r->val_bpb);
        if (off) sb_printf(o, "<path d=\"M%.1f %.1fl4 7h-8z\" fill=\"" C_GREY "\">", x, y);
        else if (!strcmp(r->status, "keep")) sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5.5\" fill=\"" C_GREEN "\" stroke=\"#fff\">", x, y);
        else if (!strcmp(r->status, "pending"))  // a candidate awaiting its next seed
            sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#fff\" stroke=\"" C_GREEN "\" stroke-width=\"1.6\">", x, y);
        else if (is_screen(r)) sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" stroke=\"" C_BLUE "\" stroke-width=\"1.4\">", x, y);
        else sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"" C_GREY "\">", x, y);
        sb_puts(o, "<title>");
        sb_html(o, tip);
        sb_puts(o, "</title>");
        sb_puts(o, off ? "</path>\n" : "</circle>\n");
    }
}

// Kept changes labelled like autoresearch's progress.png: rotated text above each kept dot.
static void chart_labels(StrBuf *o, const Frame *f, const Progress *p) {
    for (int i = 0; i < p->n; i++) {
        const LedgerRow *r = &p->rows[i];
        if (strcmp(r->status, "keep") || !ledger_status_ok(r->status)) continue;
        char *label = what_of(kept_source(p, i), 38);
        double x = fx(f, i + 1) + 4, y = fy(f, fmin(r->val_bpb, f->y1)) - 8;
        char attrs[160];
        snprintf(attrs, sizeof attrs, "font-size=\"10.5\" fill=\"" C_GREEN "\" transform=\"rotate(-28 %.1f %.1f)\"", x, y);
        svg_text(o, x, y, "start", attrs, label);
        free(label);
    }
}

static void chart_legend(StrBuf *o, double x, double y) {
    sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"" C_GREEN "\"/>", x, y - 4);
    svg_text(o, x + 9, y, "start", "fill=\"" C_TEXT "\"", "kept");
    sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"" C_GREY "\"/>", x + 52, y - 4);
    svg_text(o, x + 60, y, "start", "fill=\"" C_TEXT "\"", "discarded");
    sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" stroke=\"" C_BLUE "\"/>", x + 130, y - 4);
    svg_text(o, x + 138, y, "start", "fill=\"" C_TEXT "\"", "screen (short budget)");
    sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_GREEN "\" stroke-width=\"2\"/>", x + 262, y - 4, x + 280, y - 4);
    svg_text(o, x + 285, y, "start", "fill=\"" C_TEXT "\"", "running best");
    sb_printf(o, "<path d=\"M%.1f %.1fl6 6m0 -6l-6 6\" stroke=\"" C_RED "\" stroke-width=\"1.8\"/>", x + 370, y - 8);
    svg_text(o, x + 380, y, "start", "fill=\"" C_TEXT "\"", "crash / timeout");
}

static void draw_chart(StrBuf *o, const Progress *p) {
    const double W = 960, H = 460;
    sb_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"progress\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
                 "height=\"%.0f\" role=\"img\" aria-label=\"val_bpb per trial\" font-family=\"" FONT "\" font-size=\"11\">\n",
              W, H, W, H);
    char title[160];
    int kept = 0;
    for (int i = 0; i < p->n; i++) kept += !strcmp(p->rows[i].status, "keep");
    snprintf(title, sizeof title, "val_bpb per trial (%d trials, %d kept)", p->n, kept);
    svg_text(o, 12, 20, "start", "font-size=\"13.5\" font-weight=\"600\" fill=\"" C_TEXT "\"", title);
    chart_legend(o, W - 480, 20);
    double lo, hi;
    y_range(p, &lo, &hi);
    Ticks ty = nice_ticks(lo, hi, 6);
    // Labels rise to the upper right: leave room above and at the right.
    Frame f = {0.5, fmax(p->n, 1) + 0.5, ty.lo, ty.hi, 64, 120, W - 64 - 200, H - 120 - 48};
    chart_axes(o, &f, ty, p->n);
    chart_best_line(o, &f, p);
    chart_points(o, &f, p);
    chart_labels(o, &f, p);
    char attrs[96];
    snprintf(attrs, sizeof attrs, "fill=\"" C_TEXT "\" transform=\"rotate(-90 18 %.1f)\"", f.top + f.h / 2);
    svg_text(o, 18, f.top + f.h / 2, "middle", attrs, "val_bpb");
    sb_puts(o, "</svg>\n");
}

// The noise the loop judged with: the pooled sd of a paired difference after each trial. It
// starts from the baseline's seeds (twice their variance, the unpaired bound) and moves as
// candidates' first two seeds add paired evidence; a drift up means the research sees more
// noise than it assumed at the start.
static void draw_noise_chart(StrBuf *o, const Progress *p) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < p->n; i++)
        if (isfinite(p->noise[i])) lo = fmin(lo, p->noise[i]), hi = fmax(hi, p->noise[i]);
    if (!(lo <= hi)) return;
    const double W = 960, H = 240;
    sb_printf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"noise\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
                 "height=\"%.0f\" role=\"img\" aria-label=\"noise estimate per trial\" font-family=\"" FONT "\" "
                 "font-size=\"11\">\n",
              W, H, W, H);
    svg_text(o, 12, 20, "start", "font-size=\"13.5\" font-weight=\"600\" fill=\"" C_TEXT "\"",
             "noise estimate: pooled sd of a paired difference after each trial");
    Ticks ty = nice_ticks(0, hi * 1.1, 4);
    Frame f = {0.5, fmax(p->n, 1) + 0.5, ty.lo, ty.hi, 64, 40, W - 64 - 200, H - 40 - 48};
    chart_axes(o, &f, ty, p->n);
    sb_puts(o, "<path fill=\"none\" stroke=\"" C_BLUE "\" stroke-width=\"2\" d=\"");
    int pen = 0;
    for (int i = 0; i < p->n; i++) {
        if (!isfinite(p->noise[i])) continue;
        double x = fx(&f, i + 1), y = fy(&f, p->noise[i]);
        if (pen) sb_printf(o, "H%.1f V%.1f", x, y);
        else sb_printf(o, "M%.1f %.1f", x, y);
        pen = 1;
    }
    sb_puts(o, "\"/>\n</svg>\n");
}

// ---------------------------------------------------------------------------------------------
// Numbers shared by both documents
// ---------------------------------------------------------------------------------------------

static const char *setting_text(const Progress *p, const char *key, char *buf, size_t n) {
    const cJSON *v = p->settings ? cJSON_GetObjectItemCaseSensitive(p->settings, key) : NULL;
    if (cJSON_IsString(v)) snprintf(buf, n, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(buf, n, "%g", v->valuedouble);
    else if (cJSON_IsBool(v)) snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "yes" : "no");
    else snprintf(buf, n, "?");
    return buf;
}

static double total_wall(const Progress *p) {
    double t = 0;
    for (int i = 0; i < p->n; i++)
        if (isfinite(p->rows[i].wall_s)) t += p->rows[i].wall_s;
    return t;
}

static int count_status(const Progress *p, const char *status) {
    int k = 0;
    for (int i = 0; i < p->n; i++) k += !strcmp(p->rows[i].status, status);
    return k;
}

static char *best_change_json(const Progress *p) {
    if (!p->base || !p->best_cfg) return xstrdup("{}");
    cJSON *d = cJSON_CreateObject();
    const cJSON *it;
    cJSON_ArrayForEach(it, p->best_cfg) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(p->base, it->string);
        if (strcmp(it->string, "budget") && (!b || !cJSON_Compare(b, it, 1)))
            cJSON_AddItemToObject(d, it->string, cJSON_Duplicate(it, 1));
    }
    char *s = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    return s;
}

// "... level 0.05, at most 6 seeds per candidate, least improvement 0"
static const char *keep_rule_text(const Progress *p, char *buf, size_t n) {
    snprintf(buf, n, "paired sequential test at one-sided level %g, at most %g seeds per candidate, least improvement %g",
             p->alpha, setting_num(p, "max_seeds", 6), setting_num(p, "threshold", 0));
    return buf;
}

// With --lanes: what a trial had (research.json's lanes, base.json's threads) and how busy the lanes
// were: the trials' wall time over the machine time times the lanes, and the share of it that went
// to runs planned past a decision and not used (DIR/unused.tsv). 0 when one lane.
static int lanes_text(const Progress *p, char *buf, size_t n) {
    int lanes = (int)setting_num(p, "lanes", 1);
    const cJSON *t = p->base ? cJSON_GetObjectItemCaseSensitive(p->base, "threads") : NULL;
    if (lanes < 2) return 0;
    double used = 0, unused = 0;
    int n_unused = 0;
    for (int i = 0; i < p->n; i++) used += isfinite(p->rows[i].wall_s) ? p->rows[i].wall_s : 0;
    char *path = path_join(p->dir, "unused.tsv"), *text = path_exists(path) ? read_file(path, NULL) : NULL;
    char *save = NULL;
    for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
        const char *wall = strrchr(line, '\t');  // the last field; the header's is not a number
        if (wall && line != text) unused += atof(wall + 1), n_unused++;
    }
    free(text), free(path);
    double machine = plan_machine_s(p->rows, p->n);
    const cJSON *launcher = p->settings ? cJSON_GetObjectItemCaseSensitive(p->settings, "launcher") : NULL;
    char share[160];
    if (cJSON_IsString(launcher)) snprintf(share, sizeof share, "trials in flight through the launcher");
    else
        snprintf(share, sizeof share, "%d thread%s each; a trial had 1/%d of the machine, so its budget buys less than "
                 "a one-lane trial's", cJSON_IsNumber(t) ? t->valueint : 0,
                 cJSON_IsNumber(t) && t->valueint == 1 ? "" : "s", lanes);
    int k = snprintf(buf, n, "%d: each candidate run trained beside a run of the incumbent on its seed (side-by-side "
                     "pairs), and free lanes ran what follows (its next seeds); %s", lanes, share);
    if (machine > 0 && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "; lanes busy %.0f%% of the machine time, %d run%s (%.0f%% of that) past a "
                 "decision not used", 100 * (used + unused) / (machine * lanes), n_unused, n_unused == 1 ? "" : "s",
                 used + unused > 0 ? 100 * unused / (used + unused) : 0);
    return 1;
}

static const char *const STATUS_ORDER[] = {"keep",        "discard", "pending", "screen",   "replicate", "transfer",
                                           "no-transfer", "crash",   "timeout", "rejected", NULL};

// ---------------------------------------------------------------------------------------------
// summary.md
// ---------------------------------------------------------------------------------------------

static void md_cell(StrBuf *o, const char *s) {
    for (const char *c = s; *c; c++) {
        if (*c == '|') sb_puts(o, "\\|");
        else {
            char one[2] = {*c, 0};
            sb_puts(o, one);
        }
    }
}

static void write_md(StrBuf *o, const Progress *p) {
    char a[64], b[64];
    sb_printf(o, "# Research summary: %s\n\n", p->dir);
    sb_printf(o, "Strategy %s, %s s per trial, %d trials in %.2f h of trial wall time (", setting_text(p, "strategy", a, sizeof a),
              setting_text(p, "budget_s", b, sizeof b), p->n, total_wall(p) / 3600);
    int first = 1;
    for (int k = 0; STATUS_ORDER[k]; k++) {
        int c = count_status(p, STATUS_ORDER[k]);
        if (c) sb_printf(o, "%s%d %s", first ? "" : ", ", c, STATUS_ORDER[k]), first = 0;
    }
    sb_puts(o, ").\n\n| | val_bpb |\n|---|---|\n");
    sb_printf(o, "| baseline (mean of %d seed%s) | %.4f |\n", p->n_baseline, p->n_baseline == 1 ? "" : "s", p->baseline);
    if (p->best_row >= 0) sb_printf(o, "| best (trial %d) | %.4f |\n", p->rows[p->best_row].trial, p->best);
    if (isfinite(p->best) && isfinite(p->baseline))
        sb_printf(o, "| improvement over the baseline | %+.4f (%+.2f%%) |\n", p->best - p->baseline,
                  100 * (p->best - p->baseline) / p->baseline);
    if (isfinite(p->spread)) sb_printf(o, "| seed spread of the baseline (max - min) | %.4f |\n", p->spread);
    char rule[512];
    sb_printf(o, "| keep rule | %s |\n", keep_rule_text(p, rule, sizeof rule));
    if (lanes_text(p, rule, sizeof rule)) sb_printf(o, "| lanes | %s |\n", rule);
    double noise = p->n ? p->noise[p->n - 1] : NAN;
    if (isfinite(noise)) sb_printf(o, "| pooled sd of a paired difference | %.4f |\n", noise);
    sb_puts(o, "\n");
    char *ch = best_change_json(p);
    sb_printf(o, "## Best config\n\nChanges from the base: `%s`\n\nFull config: `%s/best.json`; reproduce it with "
                 "`frontier train --config %s/best.json`.\n\n", ch, p->dir, p->dir);
    free(ch);
    sb_puts(o, "## Kept changes\n\n| trial | kind | change | val_bpb (mean over its seeds) | paired difference from the "
               "incumbent | transferred at --promote-budget |\n|---|---|---|---|---|---|\n");
    for (int i = 0; i < p->n; i++) {
        const LedgerRow *r = &p->rows[i];
        if (strcmp(r->status, "keep") || (!strcmp(r->kind, "baseline"))) continue;
        char *w = what_of(kept_source(p, i), 200), ci[96], tr[128];
        kept_text(p, i, ci, sizeof ci);
        promotion_text(p, i, tr, sizeof tr);
        sb_printf(o, "| %d | %s | ", kept_source(p, i)->trial, kept_source(p, i)->kind);
        md_cell(o, w);
        sb_printf(o, " | %.4f | %s | %s |\n", p->running[i], ci, tr);
        free(w);
    }
    sb_puts(o, "\n## Results\n\nThe full ledger is `results.tsv`; the progress chart is in `report.html`.\n");
}

// ---------------------------------------------------------------------------------------------
// report.html
// ---------------------------------------------------------------------------------------------

static const char CSS[] =
    "body{font-family:" FONT ";color:#2b313b;margin:24px auto;max-width:1000px;padding:0 16px;line-height:1.45}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #e6e9ee;padding-bottom:4px}"
    ".muted{color:#6b7480}table{border-collapse:collapse;font-size:12.5px;width:100%}"
    "td,th{padding:4px 8px;border-bottom:1px solid #eef0f3;text-align:left;vertical-align:top}"
    "th{background:#f6f7f9;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "tr.keep td{background:#eef7f1}tr.crash td,tr.timeout td{background:#fbeeee}tr.rejected td{background:#fdf4ea}"
    ".kv td:first-child{width:300px;color:#6b7480}svg{max-width:100%;height:auto}"
    "pre{background:#f6f7f9;padding:10px;font-size:12px;overflow:auto}code{font-size:12px;word-break:break-all}";

static void html_num(StrBuf *o, double v, const char *fmt) {
    sb_puts(o, "<td class=\"n\">");
    if (isfinite(v)) sb_printf(o, fmt, v);
    else sb_puts(o, "&ndash;");
    sb_puts(o, "</td>");
}

static void html_kv(StrBuf *o, const char *k, const char *v) {
    sb_puts(o, "<tr><td>");
    sb_html(o, k);
    sb_puts(o, "</td><td>");
    sb_html(o, v);
    sb_puts(o, "</td></tr>\n");
}

static void html_numbers(StrBuf *o, const Progress *p) {
    char a[64], b[512];
    sb_puts(o, "<h2>Numbers</h2><table class=\"kv\">\n");
    char bud[32];
    setting_text(p, "strategy", a, sizeof a);
    setting_text(p, "budget_s", bud, sizeof bud);
    snprintf(b, sizeof b, "%s, %s s per trial, %.2f h of trial wall time", a, bud, total_wall(p) / 3600);
    html_kv(o, "strategy", b);
    b[0] = 0;
    for (int k = 0; STATUS_ORDER[k]; k++) {
        int c = count_status(p, STATUS_ORDER[k]);
        if (c) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%d %s", b[0] ? ", " : "", c, STATUS_ORDER[k]);
    }
    html_kv(o, "trials", b);
    snprintf(b, sizeof b, "%.4f (mean of %d seed%s)", p->baseline, p->n_baseline, p->n_baseline == 1 ? "" : "s");
    html_kv(o, "baseline val_bpb", b);
    if (p->best_row >= 0) {
        snprintf(b, sizeof b, "%.4f (trial %d)", p->best, p->rows[p->best_row].trial);
        html_kv(o, "best val_bpb", b);
        snprintf(b, sizeof b, "%+.4f (%+.2f%%)", p->best - p->baseline, 100 * (p->best - p->baseline) / p->baseline);
        html_kv(o, "improvement over the baseline", b);
    }
    if (isfinite(p->spread)) {
        snprintf(b, sizeof b, "%.4f", p->spread);
        html_kv(o, "seed spread of the baseline (max - min)", b);
    }
    html_kv(o, "keep rule", keep_rule_text(p, b, sizeof b));
    if (lanes_text(p, b, sizeof b)) html_kv(o, "lanes", b);
    double noise = p->n ? p->noise[p->n - 1] : NAN;
    if (isfinite(noise)) {
        snprintf(b, sizeof b, "%.4f", noise);
        html_kv(o, "pooled sd of a paired difference", b);
    }
    sb_puts(o, "</table>\n");
}

static void html_row(StrBuf *o, const LedgerRow *r) {
    sb_printf(o, "<tr class=\"%s\"><td class=\"n\">%d</td><td class=\"n\">", r->status, r->trial);
    if (r->parent) sb_printf(o, "%d", r->parent);
    else sb_puts(o, "&ndash;");
    sb_printf(o, "</td><td>%s</td>", r->kind);
    html_num(o, r->budget_s, "%g");
    sb_puts(o, "<td><code>");
    sb_html(o, r->change);
    sb_puts(o, "</code></td>");
    html_num(o, r->val_bpb, "%.4f");
    html_num(o, r->tok_per_s, "%.0f");
    html_num(o, r->mfu * 100, "%.2f%%");
    html_num(o, r->peak_mb, "%.0f");
    html_num(o, r->wall_s, "%.0f");
    sb_printf(o, "<td>%s</td><td>", r->status);
    sb_html(o, r->description);
    sb_puts(o, "</td></tr>\n");
}

static void html_tables(StrBuf *o, const Progress *p) {
    sb_puts(o, "<h2>Kept changes</h2><table><tr><th>trial</th><th>kind</th><th>change</th><th>val_bpb (mean over its "
               "seeds)</th><th>paired difference from the incumbent</th><th>transferred at --promote-budget</th></tr>\n");
    for (int i = 0; i < p->n; i++) {
        const LedgerRow *r = &p->rows[i];
        if (strcmp(r->status, "keep")) continue;
        if (!strcmp(r->kind, "baseline")) continue;
        char *w = what_of(kept_source(p, i), 300), ci[96], tr[128];
        kept_text(p, i, ci, sizeof ci);
        promotion_text(p, i, tr, sizeof tr);
        sb_printf(o, "<tr class=\"keep\"><td class=\"n\">%d</td><td>%s</td><td>", kept_source(p, i)->trial,
                  kept_source(p, i)->kind);
        sb_html(o, w);
        sb_puts(o, "</td>");
        html_num(o, p->running[i], "%.4f");
        sb_printf(o, "<td class=\"n\">%s</td><td>", ci);
        sb_html(o, tr);
        sb_puts(o, "</td></tr>\n");
        free(w);
    }
    sb_puts(o, "</table>\n<h2>Best config</h2>\n");
    if (p->best_cfg) {
        char *ch = best_change_json(p), *full = cJSON_Print(p->best_cfg);
        sb_puts(o, "<p>Changes from the base: <code>");
        sb_html(o, ch);
        sb_puts(o, "</code>. Reproduce: <code>frontier train --config ");
        sb_html(o, p->dir);
        sb_puts(o, "/best.json</code></p><pre>");
        sb_html(o, full);
        sb_puts(o, "</pre>\n");
        free(ch);
        free(full);
    } else sb_puts(o, "<p class=\"muted\">no best.json yet</p>\n");
    sb_puts(o, "<h2>Ledger</h2><table><tr><th>trial</th><th>parent</th><th>kind</th><th>budget s</th><th>change</th>"
               "<th>val_bpb</th><th>tok/s</th><th>MFU</th><th>peak MB</th><th>wall s</th><th>status</th>"
               "<th>description</th></tr>\n");
    for (int i = 0; i < p->n; i++) html_row(o, &p->rows[i]);
    sb_puts(o, "</table>\n");
}

static void write_html(StrBuf *o, const Progress *p) {
    sb_puts(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>frontier research ");
    sb_html(o, p->dir);
    sb_printf(o, "</title><style>%s</style></head><body>\n<h1>frontier research: ", CSS);
    sb_html(o, p->dir);
    sb_puts(o, "</h1><p class=\"muted\">Every trial trains from scratch under the same wall-clock budget and is scored by "
               "val_bpb on the pinned validation set. A candidate runs on the incumbent's seeds, one at a time, and is "
               "kept only when its paired improvement is significant (research/stats.h: a one-sided sequential test "
               "on the differences, judged with the noise pooled over the research).</p>\n");
    draw_chart(o, p);
    draw_noise_chart(o, p);
    html_numbers(o, p);
    html_tables(o, p);
    sb_puts(o, "</body></html>\n");
}

int research_report_write(const char *dir, const char *html_path, const char *md_path) {
    Progress p;
    if (progress_load(&p, dir) != 0) return -1;
    StrBuf html = {0}, md = {0};
    write_html(&html, &p);
    write_md(&md, &p);
    char *hp = html_path ? xstrdup(html_path) : path_join(dir, "report.html");
    char *mp = md_path ? xstrdup(md_path) : path_join(dir, "summary.md");
    int rc = write_file_atomic(hp, html.s, html.len);
    if (rc == 0) rc = write_file_atomic(mp, md.s, md.len);
    free(hp);
    free(mp);
    sb_free(&html);
    sb_free(&md);
    progress_free(&p);
    return rc;
}
