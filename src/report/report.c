// report/report.c — the HTML run report: the page's sections, in the order they appear
// (see report.h; the charts are in svg.c, the reading in run_folder.c).
#include "report/report.h"


#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "report/run_folder.h"
#include "report/svg.h"

// ---------------------------------------------------------------------------------------------
// The page
// ---------------------------------------------------------------------------------------------

static const char CSS[] =
    ":root{--fg:#1f2630;--muted:#5f6b78;--line:#dfe3e8;--panel:#fff;--bg:#f4f6f8;--accent:#2f6db5}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,"
    "'Helvetica Neue',Arial,sans-serif;-webkit-font-smoothing:antialiased}\n"
    "main{max-width:1140px;margin:0 auto;padding:28px 24px 40px}\n"
    "header{margin-bottom:18px}\n"
    "header .kicker{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:var(--muted);font-weight:600}\n"
    "h1{font-size:26px;margin:2px 0 6px;font-weight:650;letter-spacing:-.01em}\n"
    "h2{font-size:16px;margin:0 0 12px;font-weight:650}\n"
    ".meta{display:flex;flex-wrap:wrap;gap:4px 18px;color:var(--muted);font-size:13px}\n"
    ".meta b{color:var(--fg);font-weight:600}\n"
    "code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace;font-size:12.5px}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(132px,1fr));gap:12px;margin:18px 0}\n"
    ".card{background:var(--panel);border:1px solid var(--line);border-radius:10px;padding:12px 14px}\n"
    ".card .k{font-size:12px;color:var(--muted);font-weight:600}\n"
    ".card .v{font-size:23px;font-weight:650;font-variant-numeric:tabular-nums;line-height:1.25;margin-top:2px}\n"
    ".card .s{font-size:12px;color:var(--muted)}\n"
    ".card.hero{border-color:#b9cfea;background:linear-gradient(180deg,#f3f8fe,#fff)}\n"
    ".card.hero .v{color:var(--accent)}\n"
    "section{background:var(--panel);border:1px solid var(--line);border-radius:12px;padding:18px 20px;margin:16px 0}\n"
    ".grid2{display:grid;grid-template-columns:1fr 1fr;gap:18px}\n"
    "@media (max-width:900px){.grid2{grid-template-columns:1fr}}\n"
    "svg{display:block;width:100%;height:auto;max-width:100%}\n"
    "figure{margin:0}\nfigure+figure{margin-top:22px}\n"
    "figcaption,.note{color:var(--muted);font-size:12.5px;margin-top:6px}\n"
    ".na{color:var(--muted);font-style:italic;background:#f7f8fa;border:1px dashed var(--line);border-radius:8px;"
    "padding:14px 16px}\n"
    "table{border-collapse:collapse;width:100%;font-size:13px}\n"
    "th,td{padding:5px 8px;border-bottom:1px solid #edf0f3;text-align:left;vertical-align:baseline}\n"
    "th{color:var(--muted);font-weight:600;font-size:12px}\n"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "tbody tr:last-child td{border-bottom:0}\n"
    ".kv td:first-child{color:var(--muted);width:42%}\n"
    ".cfg{columns:3 260px;column-gap:28px}\n"
    ".cfg div{display:flex;justify-content:space-between;gap:12px;padding:3px 0;border-bottom:1px solid #edf0f3;"
    "break-inside:avoid;font-size:12.5px}\n"
    ".cfg div span:first-child{color:var(--muted)}\n"
    ".cfg div span:last-child{text-align:right;word-break:break-all}\n"
    "footer{color:var(--muted);font-size:12px;text-align:center;margin-top:22px}\n"
    "@media print{body{background:#fff}section,.card{break-inside:avoid;border-color:#ccc}}\n";

static void section_open(StrBuf *o, const char *id, const char *title) {
    sb_printf(o, "<section id=\"%s\">\n<h2>", id);
    sb_html(o, title);
    sb_puts(o, "</h2>\n");
}

static void not_available(StrBuf *o, const char *what) {
    sb_puts(o, "<p class=\"na\">");
    sb_html(o, what);
    sb_puts(o, "</p>\n");
}

static void card(StrBuf *o, int hero, const char *key, const char *value, const char *sub) {
    sb_printf(o, "<div class=\"card%s\"><div class=\"k\">", hero ? " hero" : "");
    sb_html(o, key);
    sb_puts(o, "</div><div class=\"v\">");
    sb_html(o, value);
    sb_puts(o, "</div><div class=\"s\">");
    sb_html(o, sub);
    sb_puts(o, "</div></div>\n");
}

static void kv_row(StrBuf *o, const char *k, const char *v) {
    sb_puts(o, "<tr><td>");
    sb_html(o, k);
    sb_puts(o, "</td><td class=\"n\">");
    sb_html(o, v);
    sb_puts(o, "</td></tr>\n");
}

static void fmt_date(char *buf, size_t n, time_t t) {
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M %Z", &tm);
}

// A config value as text: numbers without float noise (0.019999999552965164 -> 0.02).
static void fmt_json_value(StrBuf *o, const cJSON *v) {
    if (cJSON_IsString(v)) sb_html(o, v->valuestring);
    else if (cJSON_IsBool(v)) sb_puts(o, cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNull(v)) sb_puts(o, "—");
    else if (cJSON_IsNumber(v)) sb_printf(o, "%.6g", v->valuedouble);
    else {
        char *s = cJSON_PrintUnformatted(v);
        sb_html(o, s ? s : "?");
        free(s);
    }
}


static void page_header(StrBuf *o, Report *r) {
    const cJSON *hw = cJSON_GetObjectItemCaseSensitive(r->summary, "hardware");
    const char *cpu = hw ? jstr(hw, "cpu") : NULL;
    double threads = hw ? jnum(hw, "threads") : NAN, lcpu = hw ? jnum(hw, "logical_cpus") : NAN;
    const char *commit = jstr(r->summary, "git_commit");
    char date[64], buf[128];
    fmt_date(date, sizeof date, r->finished);
    sb_puts(o, "<header>\n<div class=\"kicker\">frontier · training run report</div>\n<h1>");
    char *copy = xstrdup(r->run_dir);
    size_t l = strlen(copy);
    while (l > 1 && copy[l - 1] == '/') copy[--l] = 0;
    sb_html(o, path_basename(copy));
    sb_puts(o, "</h1>\n<div class=\"meta\">");
    sb_puts(o, "<span>folder <b class=\"mono\">");
    sb_html(o, copy);
    sb_puts(o, "</b></span>");
    free(copy);
    sb_puts(o, "<span>finished <b>");
    sb_html(o, date);
    sb_puts(o, "</b></span><span>commit <b class=\"mono\">");
    sb_html(o, commit ? commit : "unknown");
    sb_puts(o, "</b></span><span>CPU <b>");
    sb_html(o, cpu ? cpu : "unknown");
    sb_puts(o, "</b></span><span>threads <b>");
    if (isfinite(threads) && isfinite(lcpu)) snprintf(buf, sizeof buf, "%.0f of %.0f logical CPUs", threads, lcpu);
    else snprintf(buf, sizeof buf, "unknown");
    sb_html(o, buf);
    sb_puts(o, "</b></span></div>\n</header>\n");
}

static void page_summary(StrBuf *o, Report *r) {
    const cJSON *s = r->summary;
    double val = jnum(s, "val_bpb"), eval_tok = jnum(s, "eval_tokens"), eval_T = jnum(s, "eval_T");
    double tokens = jnum(s, "tokens_trained"), steps = jnum(s, "steps"), params = jnum(s, "parameters");
    double fpt = jnum(s, "flops_per_token"), toks = jnum(s, "tok_per_s"), mfu = jnum(s, "mfu");
    double peak = jnum(s, "peak_flops"), budget = jnum(s, "budget_s"), timed = jnum(s, "timed_s");
    double startup = jnum(s, "startup_s"), excluded = jnum(s, "excluded_s"), total = jnum(s, "total_s");
    double rss = jnum(s, "peak_rss_bytes"), final_loss = jnum(s, "final_loss");
    const char *stopped = jstr(s, "stopped_by");
    if (!isfinite(final_loss) && r->m.n) final_loss = r->m.loss[r->m.n - 1];
    if (!isfinite(steps) && r->m.n) steps = r->m.step[r->m.n - 1];
    char v[256], sub[256], a[64], b[64];

    sb_puts(o, "<div class=\"cards\">\n");
    if (isfinite(val)) {
        snprintf(v, sizeof v, "%.4f", val);
        fmt_int(a, sizeof a, eval_tok);
        snprintf(sub, sizeof sub, "bits/byte · %s val tokens, T=%.0f", a, eval_T);
        card(o, 1, "val_bpb", v, sub);
    } else {
        card(o, 1, "val_bpb", "—", "not available: the run was not evaluated");
    }
    snprintf(v, sizeof v, "%.3f", final_loss);
    card(o, 0, "final train loss", isfinite(final_loss) ? v : "—", "nats/token, last step");
    fmt_si(v, sizeof v, tokens, "");
    fmt_int(a, sizeof a, steps);
    snprintf(sub, sizeof sub, "%s steps", a);
    card(o, 0, "tokens trained", v, sub);
    fmt_si(v, sizeof v, params, "");
    fmt_si(a, sizeof a, fpt, "FLOP");
    snprintf(sub, sizeof sub, "%s/token", a);
    card(o, 0, "parameters", v, sub);
    fmt_int(v, sizeof v, toks);
    card(o, 0, "throughput", v, "tokens/s over timed steps");
    snprintf(v, sizeof v, "%.2f%%", mfu * 100);
    fmt_si(a, sizeof a, peak, "FLOP/s");
    snprintf(sub, sizeof sub, "of %s peak", a);
    card(o, 0, "MFU", isfinite(mfu) ? v : "—", sub);
    fmt_secs(v, sizeof v, timed);
    if (budget > 0) {
        fmt_secs(a, sizeof a, budget);
        snprintf(sub, sizeof sub, "%.1f%% of the %s budget", 100 * timed / budget, a);
    } else {
        snprintf(sub, sizeof sub, "no time budget (fixed steps)");
    }
    card(o, 0, "timed training", v, sub);
    sb_puts(o, "</div>\n");

    section_open(o, "summary", "Summary");
    sb_puts(o, "<div class=\"grid2\">\n<table class=\"kv\"><tbody>\n");
    if (isfinite(val)) {
        snprintf(v, sizeof v, "%.4f bits/byte", val);
        kv_row(o, "val_bpb", v);
        fmt_int(a, sizeof a, eval_tok);
        snprintf(v, sizeof v, "%s tokens, T=%.0f", a, eval_T);
        kv_row(o, "evaluated on", v);
    } else {
        kv_row(o, "val_bpb", "not available (no evaluation recorded)");
    }
    snprintf(v, sizeof v, "%.4f nats/token", final_loss);
    kv_row(o, "final training loss", v);
    fmt_int(v, sizeof v, tokens);
    kv_row(o, "tokens trained", v);
    fmt_int(v, sizeof v, steps);
    kv_row(o, "steps", v);
    fmt_int(a, sizeof a, params);
    fmt_si(b, sizeof b, params, "");
    snprintf(v, sizeof v, "%s (%s)", a, b);
    kv_row(o, "parameters", v);
    fmt_si(v, sizeof v, fpt, "FLOP");
    kv_row(o, "FLOPs per token", v);
    kv_row(o, "stopped by", stopped ? stopped : "—");
    sb_puts(o, "</tbody></table>\n<table class=\"kv\"><tbody>\n");
    fmt_int(a, sizeof a, toks);
    snprintf(v, sizeof v, "%s tok/s", a);
    kv_row(o, "throughput (timed steps)", v);
    fmt_si(a, sizeof a, peak, "FLOP/s");
    snprintf(v, sizeof v, "%.2f%% of %s", mfu * 100, a);
    kv_row(o, "MFU", v);
    if (budget > 0) {
        fmt_secs(a, sizeof a, timed);
        fmt_secs(b, sizeof b, budget);
        snprintf(v, sizeof v, "%s of %s (%.1f%%)", a, b, 100 * timed / budget);
    } else {
        fmt_secs(a, sizeof a, timed);
        snprintf(v, sizeof v, "%s (fixed steps, no budget)", a);
    }
    kv_row(o, "timed training vs budget", v);
    fmt_secs(v, sizeof v, startup);
    kv_row(o, "start-up (not on the clock)", v);
    fmt_secs(v, sizeof v, excluded);
    int n_excl = 0;
    for (int i = 0; i < r->m.n; i++) n_excl += r->m.timed[i] == 0;
    snprintf(v + strlen(v), sizeof v - strlen(v), " (%d step%s)", n_excl, n_excl == 1 ? "" : "s");
    kv_row(o, "excluded warm-up steps (not on the clock)", v);
    fmt_secs(v, sizeof v, total);
    kv_row(o, "total wall clock", v);
    fmt_si(a, sizeof a, rss, "B");
    kv_row(o, "peak memory (RSS)", isfinite(rss) ? a : "—");
    sb_puts(o, "</tbody></table>\n</div>\n</section>\n");
}

// Contiguous runs of excluded steps as bands half a step wide on either side.
static int excluded_bands(const Metrics *m, SvgBand *bands, int max) {
    int n = 0;
    for (int i = 0; i < m->n; i++) {
        if (m->timed[i] != 0) continue;
        int j = i;
        while (j + 1 < m->n && m->timed[j + 1] == 0) j++;
        if (n < max) bands[n++] = (SvgBand){m->step[i] - 0.5, m->step[j] + 0.5};
        i = j;
    }
    return n;
}

// A debiased exponential moving average of y (NaNs skipped), over a window of ~n/40 points;
// NULL when there are too few points (< 40) for smoothing to help. Caller frees.
static double *ema_smooth(const double *y, int n) {
    if (n < 40) return NULL;
    double win = fmin(fmax(n / 40.0, 3), 100), beta = 1 - 1 / win, acc = 0, wsum = 0;
    double *out = xmalloc((size_t)n * sizeof *out);
    for (int i = 0; i < n; i++) {
        if (isfinite(y[i])) acc = beta * acc + (1 - beta) * y[i], wsum = beta * wsum + (1 - beta);
        out[i] = wsum > 0 ? acc / wsum : NAN;
    }
    return out;
}

static void page_loss(StrBuf *o, Report *r) {
    const Metrics *m = &r->m;
    section_open(o, "loss", "Learning curve");
    double *ema = ema_smooth(m->loss, m->n);
    int smooth = ema != NULL;
    SvgSeries ser[2];
    int ns = 0;
    ser[ns++] = (SvgSeries){m->step, m->loss, m->n, smooth ? "loss (each step)" : "training loss", smooth ? C_BLUE_LIGHT : C_BLUE,
                            smooth ? 1.2 : 2.2, 0, 0, 0};
    if (smooth) ser[ns++] = (SvgSeries){m->step, ema, m->n, "smoothed (EMA)", C_BLUE, 2.4, 0, 0, 0};
    double val = jnum(r->summary, "val_bpb");
    char hl[96], fl[64];
    SvgMark marks[2];
    int nm = 0;
    if (m->n) {
        snprintf(fl, sizeof fl, "final %.3f", m->loss[m->n - 1]);
        marks[nm++] = (SvgMark){m->step[m->n - 1], m->loss[m->n - 1], fl, C_BLUE};
    }
    if (isfinite(val) && m->n) {
        snprintf(hl, sizeof hl, "val_bpb %.4f bits/byte (after training)", val);
        marks[nm++] = (SvgMark){m->step[m->n - 1], val, NULL, C_RED};
    }
    // Tokens on a top axis when they grow linearly with the step (a fixed batch), which they do
    // unless the batch changed mid-run; otherwise a second chart against tokens.
    int linear = m->n >= 2 && isfinite(m->tokens[0]) && isfinite(m->tokens[m->n - 1]) && m->step[m->n - 1] > m->step[0];
    double b = 0, a = 0;
    if (linear) {
        b = (m->tokens[m->n - 1] - m->tokens[0]) / (m->step[m->n - 1] - m->step[0]);
        a = m->tokens[0] - b * m->step[0];
        for (int i = 0; i < m->n && linear; i++) linear = fabs(m->tokens[i] - (a + b * m->step[i])) <= 0.01 * fabs(b) + 0.5;
    }
    SvgLineChart c = {.id = "plot-loss", .title = "Training loss", .x_label = "step", .y_label = "loss (nats/token)",
                      .width = 1080, .height = 380, .series = ser, .n_series = ns, .marks = marks, .n_marks = nm,
                      .has_hline = isfinite(val) && m->n, .hline_y = val, .hline_label = hl, .hline_color = C_RED,
                      .hline_label_left = 1,
                      .has_x2 = linear && b > 0, .x2_a = a, .x2_b = b, .x2_label = "tokens trained"};
    sb_puts(o, "<figure>\n");
    svg_line_chart(o, &c);
    sb_puts(o, "<figcaption>Mean training loss of each step's batch (before its update), in nats per token; top axis: "
               "tokens trained. ");
    if (isfinite(val))
        sb_puts(o, "The red dashed line is the validation score after training, val_bpb, in bits per byte (a different "
                   "unit: it does not depend on the tokenizer).");
    else
        sb_puts(o, "val_bpb: not available (the run was not evaluated).");
    sb_puts(o, "</figcaption>\n</figure>\n");
    if (!linear && m->n >= 2) {
        SvgSeries st[1] = {{m->tokens, m->loss, m->n, NULL, C_BLUE, 1.8, 0, 0, 0}};
        SvgLineChart ct = {.id = "plot-loss-tokens", .title = "Training loss vs tokens", .x_label = "tokens trained",
                           .y_label = "loss (nats/token)", .width = 1080, .height = 300, .series = st, .n_series = 1};
        svg_line_chart(o, &ct);
    }
    free(ema);
    sb_puts(o, "</section>\n");
}

static void page_schedules(StrBuf *o, Report *r) {
    const Metrics *m = &r->m;
    section_open(o, "schedules", "Schedules");
    sb_puts(o, "<div class=\"grid2\">\n<figure>\n");
    SvgSeries s1[2] = {{m->step, m->lr_mult, m->n, "LR multiplier", C_BLUE, 2.2, 0, 0, 0},
                       {m->step, m->wd, m->n, "Muon weight decay", C_PURPLE, 2, 0, 1, 0}};
    SvgLineChart c1 = {.id = "plot-lr", .title = "Learning rate and weight decay", .x_label = "step",
                       .y_label = "multiplier / decay", .width = 540, .height = 300, .series = s1, .n_series = 2,
                       .y_zero = 1};
    svg_line_chart(o, &c1);
    sb_puts(o, "<figcaption>The multiplier applied to every base learning rate (warm-up, flat, warm-down) and Muon's "
               "decoupled weight decay.</figcaption>\n</figure>\n<figure>\n");
    SvgSeries s2[1] = {{m->step, m->momentum, m->n, "Muon momentum", C_GREEN, 2.2, 0, 0, 0}};
    SvgLineChart c2 = {.id = "plot-momentum", .title = "Muon momentum", .x_label = "step", .y_label = "momentum",
                       .width = 540, .height = 300, .series = s2, .n_series = 1};
    svg_line_chart(o, &c2);
    sb_puts(o, "<figcaption>Nesterov momentum of the Muon optimizer, ramped over the first steps.</figcaption>\n"
               "</figure>\n</div>\n</section>\n");
}

static void page_throughput(StrBuf *o, Report *r) {
    const Metrics *m = &r->m;
    section_open(o, "throughput", "Throughput and budget");
    SvgBand bands[64];
    int nb = excluded_bands(m, bands, 64);
    double *ex = xmalloc((size_t)(m->n + 1) * sizeof *ex);
    for (int i = 0; i < m->n; i++) ex[i] = m->timed[i] == 0 ? m->tok_s[i] : NAN;
    double *sm = ema_smooth(m->tok_s, m->n);
    SvgSeries ser[3] = {{m->step, m->tok_s, m->n, sm ? "tok/s (each step)" : "tok/s", sm ? C_BLUE_LIGHT : C_BLUE,
                         sm ? 1.2 : 1.8, 0, 0, 0},
                        {m->step, sm, m->n, "smoothed (EMA)", C_BLUE, 2.4, 0, 0, 0},
                        {m->step, ex, m->n, "excluded step", C_ORANGE, 0, 0, 0, 1}};
    double mean = jnum(r->summary, "tok_per_s");
    char hl[96], a[64];
    fmt_int(a, sizeof a, mean);
    snprintf(hl, sizeof hl, "%s tok/s over timed steps", a);
    SvgLineChart c = {.id = "plot-toks", .title = "Throughput", .x_label = "step", .y_label = "tokens / s",
                      .width = 1080, .height = 320, .series = sm ? ser : (SvgSeries[]){ser[0], ser[2]}, .n_series = sm ? 3 : 2, .bands = bands, .n_bands = nb,
                      .band_label = "excluded warm-up (not on the clock)", .has_hline = isfinite(mean),
                      .hline_y = mean, .hline_label = hl, .hline_color = C_TEXT, .y_zero = 1};
    sb_puts(o, "<figure>\n");
    svg_line_chart(o, &c);
    sb_puts(o, "<figcaption>Tokens per second of each optimizer step. The first steps are excluded from the clock "
               "(page faults, first touches of every buffer) and marked; the dashed line is the run's figure: tokens "
               "of the timed steps / timed seconds.</figcaption>\n</figure>\n");
    free(ex);
    free(sm);

    // Budget bar.
    const cJSON *s = r->summary;
    double budget = jnum(s, "budget_s"), timed = jnum(s, "timed_s"), startup = jnum(s, "startup_s");
    double excluded = jnum(s, "excluded_s"), total = jnum(s, "total_s");
    double other = total - (isfinite(startup) ? startup : 0) - (isfinite(excluded) ? excluded : 0) - timed;
    char l_start[64], l_excl[64], l_timed[64], l_other[64], l_unused[64], t_budget[96], t_total[64];
    char x[32];
    fmt_secs(x, sizeof x, startup), snprintf(l_start, sizeof l_start, "start-up %s", x);
    fmt_secs(x, sizeof x, excluded), snprintf(l_excl, sizeof l_excl, "excluded warm-up %s", x);
    fmt_secs(x, sizeof x, timed), snprintf(l_timed, sizeof l_timed, "timed training %s", x);
    fmt_secs(x, sizeof x, other), snprintf(l_other, sizeof l_other, "evaluation, saving %s", x);
    fmt_secs(x, sizeof x, total), snprintf(t_total, sizeof t_total, "%s wall clock", x);
    SvgSegment seg_budget[2] = {{l_timed, timed, C_BLUE, 0}, {l_unused, budget - timed, C_GREY, 1}};
    if (budget > 0) {
        fmt_secs(x, sizeof x, budget - timed > 0 ? budget - timed : 0);
        snprintf(l_unused, sizeof l_unused, "unused budget %s", x);
        fmt_secs(x, sizeof x, budget);
        snprintf(t_budget, sizeof t_budget, "%.1f%% of %s", 100 * timed / budget, x);
    }
    SvgSegment seg_wall[4] = {{l_start, startup, C_GREY, 0},
                              {l_excl, excluded, C_ORANGE, 0},
                              {l_timed, timed, C_BLUE, 0},
                              {l_other, other > 0 ? other : 0, C_TEAL, 0}};
    SvgStackRow rows[2];
    int nr = 0;
    rows[nr++] = (SvgStackRow){"wall clock", t_total, seg_wall, 4};
    if (budget > 0) rows[nr++] = (SvgStackRow){"budget", t_budget, seg_budget, 2};
    SvgStackedBars sb = {.id = "plot-budget", .title = "Budget use", .unit = "s", .width = 1080, .rows = rows, .n_rows = nr};
    sb_puts(o, "<figure>\n");
    svg_stacked_bars(o, &sb);
    if (budget > 0)
        sb_puts(o, "<figcaption>Only timed training counts against the budget; start-up and the excluded warm-up steps "
                   "are measured and shown, never hidden. Evaluation runs after the budget.</figcaption>\n");
    else
        sb_puts(o, "<figcaption>A fixed-steps run (<code>--steps</code>): no time budget; the clock is still kept. "
                   "Start-up and the excluded warm-up steps are not on it.</figcaption>\n");
    sb_puts(o, "</figure>\n</section>\n");
}

static int cmp_pct_desc(const void *a, const void *b) {
    double x = ((const ProfileRow *)a)->v[P_PCT], y = ((const ProfileRow *)b)->v[P_PCT];
    if (!isfinite(x)) x = -1;
    if (!isfinite(y)) y = -1;
    return (x < y) - (x > y);
}

static void td_num(StrBuf *o, double v, const char *fmt) {
    sb_puts(o, "<td class=\"n\">");
    if (isfinite(v)) sb_printf(o, fmt, v);
    else sb_puts(o, "—");
    sb_puts(o, "</td>");
}

static void page_kernels(StrBuf *o, Report *r) {
    section_open(o, "kernels", "Kernels");
    if (!r->have_profile) {
        not_available(o, "Kernel breakdown and roofline: not available — this run folder has no profile.csv "
                         "(frontier profile writes one).");
        sb_puts(o, "</section>\n");
        return;
    }
    Profile *p = &r->prof;
    qsort(p->rows, (size_t)p->n, sizeof *p->rows, cmp_pct_desc);
    const char **labels = xcalloc((size_t)p->n + 1, sizeof *labels);
    const char **texts = xcalloc((size_t)p->n + 1, sizeof *texts);
    const char **colors = xcalloc((size_t)p->n + 1, sizeof *colors);
    char **text_store = xcalloc((size_t)p->n + 1, sizeof *text_store);
    double *pct = xcalloc((size_t)p->n + 1, sizeof *pct), *ai = xcalloc((size_t)p->n + 1, sizeof *ai);
    double *gf = xcalloc((size_t)p->n + 1, sizeof *gf), covered = 0;
    StrBuf unplotted = {0};
    for (int i = 0; i < p->n; i++) {
        ProfileRow *row = &p->rows[i];
        labels[i] = row->op;
        pct[i] = row->v[P_PCT];
        if (isfinite(pct[i])) covered += pct[i];
        text_store[i] = xmalloc(64);
        if (isfinite(row->v[P_TOTAL_MS]))
            snprintf(text_store[i], 64, "%.1f%%  ·  %.1f ms", pct[i], row->v[P_TOTAL_MS]);
        else snprintf(text_store[i], 64, "%.1f%%", pct[i]);
        texts[i] = text_store[i];
        colors[i] = PALETTE[i % N_PALETTE];  // the same colour for an op's bar and its roofline point
        // Intensity and rate, derived from the totals where the CSV leaves them empty.
        ai[i] = row->v[P_INTENSITY];
        if (!isfinite(ai[i]) && row->v[P_GBYTE] > 0) ai[i] = row->v[P_GFLOP] / row->v[P_GBYTE];
        gf[i] = row->v[P_GFLOPS];
        if (!isfinite(gf[i]) && row->v[P_TOTAL_MS] > 0) gf[i] = row->v[P_GFLOP] / (row->v[P_TOTAL_MS] / 1e3);
        if (!(ai[i] > 0) || !(gf[i] > 0)) {
            if (unplotted.len) sb_puts(&unplotted, ", ");
            sb_puts(&unplotted, row->op);
        }
    }
    sb_puts(o, "<div class=\"grid2\">\n<figure>\n");
    SvgBarChart bc = {.id = "plot-kernels", .title = "Share of a training step by op", .value_label = "% of step time",
                      .width = 540, .labels = labels, .values = pct, .value_text = texts, .n = p->n, .colors = colors};
    svg_hbar_chart(o, &bc);
    sb_printf(o, "<figcaption>The listed ops account for %.1f%% of the step.</figcaption>\n</figure>\n<figure>\n", covered);
    char peak_l[96], bw_l[96], a[48];
    fmt_si(a, sizeof a, r->peak_flops, "FLOP/s");
    snprintf(peak_l, sizeof peak_l, "compute roof %s", a);
    fmt_si(a, sizeof a, r->peak_bw, "B/s");
    snprintf(bw_l, sizeof bw_l, "memory %s", a);
    SvgScatter sc = {.id = "plot-roofline", .title = "Roofline", .x_label = "arithmetic intensity (FLOP/byte)",
                     .y_label = "GFLOP/s", .width = 540, .height = 400, .x = ai, .y = gf, .labels = labels, .colors = colors, .n = p->n,
                     .has_roof = 1, .roof_peak = r->peak_flops / 1e9, .roof_slope = r->peak_bw / 1e9,
                     .roof_peak_label = peak_l, .roof_slope_label = bw_l};
    svg_loglog_scatter(o, &sc);
    sb_puts(o, "<figcaption>");
    sb_html(o, r->roofline_note);
    if (unplotted.len) {
        sb_puts(o, " Not on the plot (no FLOP or byte count): ");
        sb_html(o, unplotted.s);
        sb_puts(o, ".");
    }
    sb_puts(o, "</figcaption>\n</figure>\n</div>\n");
    sb_puts(o, "<table style=\"margin-top:14px\"><thead><tr><th>op</th><th class=\"n\">calls</th><th class=\"n\">total ms</th>"
               "<th class=\"n\">% step</th><th class=\"n\">GFLOP</th><th class=\"n\">GB</th><th class=\"n\">GFLOP/s</th>"
               "<th class=\"n\">GB/s</th><th class=\"n\">FLOP/B</th><th class=\"n\">% roofline</th></tr></thead><tbody>\n");
    for (int i = 0; i < p->n; i++) {
        ProfileRow *row = &p->rows[i];
        sb_puts(o, "<tr><td class=\"mono\">");
        sb_html(o, row->op);
        sb_puts(o, "</td>");
        td_num(o, row->v[P_CALLS], "%.0f");
        td_num(o, row->v[P_TOTAL_MS], "%.1f");
        td_num(o, row->v[P_PCT], "%.1f");
        td_num(o, row->v[P_GFLOP], "%.3g");
        td_num(o, row->v[P_GBYTE], "%.3g");
        td_num(o, gf[i], "%.1f");
        td_num(o, row->v[P_GBYTES], "%.1f");
        td_num(o, ai[i], "%.3g");
        td_num(o, row->v[P_PCT_ROOF], "%.1f");
        sb_puts(o, "</tr>\n");
    }
    sb_puts(o, "</tbody></table>\n</section>\n");
    for (int i = 0; i < p->n; i++) free(text_store[i]);
    free(text_store), free(texts), free(colors), free(labels), free(pct), free(ai), free(gf);
    sb_free(&unplotted);
}

static void page_config(StrBuf *o, Report *r) {
    section_open(o, "config", "Configuration");
    sb_puts(o, "<div class=\"cfg mono\">\n");
    const cJSON *it;
    cJSON_ArrayForEach(it, r->config) {
        sb_puts(o, "<div><span>");
        sb_html(o, it->string);
        sb_puts(o, "</span><span>");
        fmt_json_value(o, it);
        sb_puts(o, "</span></div>\n");
    }
    sb_puts(o, "</div>\n<p class=\"note\">From <code>config.json</code>: every setting of the run, flag names as keys.</p>\n"
               "</section>\n");

    section_open(o, "hardware", "Hardware and provenance");
    const cJSON *hw = cJSON_GetObjectItemCaseSensitive(r->summary, "hardware");
    sb_puts(o, "<div class=\"grid2\">\n<table class=\"kv\"><tbody>\n");
    if (cJSON_IsObject(hw)) {
        cJSON_ArrayForEach(it, hw) {
            sb_puts(o, "<tr><td>");
            sb_html(o, it->string);
            sb_puts(o, "</td><td class=\"n\">");
            fmt_json_value(o, it);
            sb_puts(o, "</td></tr>\n");
        }
    } else {
        sb_puts(o, "<tr><td>hardware</td><td class=\"n\">not recorded</td></tr>\n");
    }
    sb_puts(o, "</tbody></table>\n<table class=\"kv\"><tbody>\n");
    char a[64];
    fmt_si(a, sizeof a, r->peak_flops, "FLOP/s");
    kv_row(o, "peak compute (roofline)", a);
    fmt_si(a, sizeof a, r->peak_bw, "B/s");
    kv_row(o, "peak memory bandwidth (roofline)", a);
    const char *commit = jstr(r->summary, "git_commit"), *tok = jstr(r->summary, "tokenizer_id");
    kv_row(o, "git commit", commit ? commit : "unknown");
    snprintf(a, sizeof a, "%.16s", tok ? tok : "unknown");
    kv_row(o, "tokenizer id", a);
    sb_puts(o, "</tbody></table>\n</div>\n</section>\n");
}

int report_write(const char *run_dir, const char *out_path) {
    Report r;
    if (report_load(&r, run_dir) != 0) {
        report_free(&r);
        return -1;
    }
    StrBuf o = {0};
    sb_puts(&o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>frontier run ");
    sb_html(&o, path_basename(run_dir));
    sb_puts(&o, "</title>\n<style>\n");
    sb_puts(&o, CSS);
    sb_puts(&o, "</style>\n</head>\n<body>\n<main>\n");
    page_header(&o, &r);
    page_summary(&o, &r);
    page_loss(&o, &r);
    page_schedules(&o, &r);
    page_throughput(&o, &r);
    page_kernels(&o, &r);
    page_config(&o, &r);
    char now[64];
    fmt_date(now, sizeof now, time(NULL));
    sb_puts(&o, "<footer>Generated by <code>frontier report</code> on ");
    sb_html(&o, now);
    sb_puts(&o, " from metrics.jsonl, summary.json, config.json");
    if (r.have_profile) sb_puts(&o, ", profile.csv");
    if (r.roofline) sb_puts(&o, ", roofline.json");
    sb_puts(&o, ".</footer>\n</main>\n</body>\n</html>\n");
    report_free(&r);

    AtomicFile af;
    int rc = atomic_open(&af, out_path) != 0 ? err_prefix("writing the report") : 0;
    if (rc == 0) {
        if (atomic_write(&af, o.s, o.len) != 0) {
            atomic_abort(&af);
            rc = -1;
        } else {
            rc = atomic_commit(&af);
        }
    }
    sb_free(&o);
    return rc;
}
