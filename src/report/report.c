// report/report.c — the HTML run report and its SVG charts (see report.h).
//
// Layout of this file: text buffer and number formatting; axes (nice linear ticks, log decades);
// the four chart functions; reading the run folder; the page itself.
#include "report/report.h"

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
// Text buffer
// ---------------------------------------------------------------------------------------------

static void sb_reserve(StrBuf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
}

void sb_puts(StrBuf *b, const char *s) {
    size_t n = strlen(s);
    sb_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
    sb_reserve(b, 256);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->s[b->len] = 0;
        return;
    }
    if ((size_t)n >= b->cap - b->len) {  // did not fit: grow and format again
        sb_reserve(b, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void sb_html(StrBuf *b, const char *text) {
    if (!text) return;
    for (const char *p = text; *p; p++) {
        switch (*p) {
        case '&': sb_puts(b, "&amp;"); break;
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        case '\'': sb_puts(b, "&#39;"); break;
        default: {
            sb_reserve(b, 1);
            b->s[b->len++] = *p;
            b->s[b->len] = 0;
        }
        }
    }
}

void sb_free(StrBuf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

// ---------------------------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------------------------

// 15360 -> "15,360" (rounded to an integer).
static void fmt_int(char *buf, size_t n, double v) {
    if (!isfinite(v)) { snprintf(buf, n, "—"); return; }
    long long x = llround(v);
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", x < 0 ? -x : x);
    size_t len = strlen(digits), o = 0;
    if (x < 0 && o + 1 < n) buf[o++] = '-';
    for (size_t i = 0; i < len && o + 1 < n; i++) {
        if (i && (len - i) % 3 == 0 && o + 1 < n) buf[o++] = ',';
        if (o + 1 < n) buf[o++] = digits[i];
    }
    buf[o] = 0;
}

// A quantity with an SI suffix and about 3 significant digits: 1097728 -> "1.10 M".
static void fmt_si(char *buf, size_t n, double v, const char *unit) {
    static const char *suf[] = {"", " k", " M", " G", " T", " P"};
    if (!isfinite(v)) { snprintf(buf, n, "—"); return; }
    int k = 0;
    double a = fabs(v);
    while (a >= 999.5 && k < 5) a /= 1000, v /= 1000, k++;
    int dec = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
    if (k == 0 && v == floor(v)) dec = 0;
    const char *s = suf[k];
    if (!*unit && k) s++;  // "1.10M" rather than "1.10 M" when there is no unit
    snprintf(buf, n, "%.*f%s%s%s", dec, v, s, (*unit && !k) ? " " : "", unit);
}

// Seconds for people: "0.26 s", "3.9 s", "298.9 s", "12 min 4 s", "2 h 5 min".
static void fmt_secs(char *buf, size_t n, double s) {
    if (!isfinite(s)) snprintf(buf, n, "—");
    else if (s < 10) snprintf(buf, n, "%.2f s", s);
    else if (s < 1000) snprintf(buf, n, s == floor(s) ? "%.0f s" : "%.1f s", s);
    else if (s < 7200) snprintf(buf, n, "%d min %d s", (int)(s / 60), (int)fmod(s, 60));
    else snprintf(buf, n, "%d h %d min", (int)(s / 3600), (int)fmod(s / 60, 60));
}

// A tick label for v on an axis whose ticks are `step` apart and reach |amax|.
static void fmt_tick(char *buf, size_t n, double v, double step, double amax) {
    double scale = 1;
    const char *suf = "";
    if (amax >= 1e10) scale = 1e9, suf = "G";
    else if (amax >= 1e7) scale = 1e6, suf = "M";
    else if (amax >= 1e4) scale = 1e3, suf = "k";
    if (fabs(v) < step * 1e-6) v = 0;
    int dec = (int)ceil(-log10(step / scale) - 1e-9);
    if (dec < 0) dec = 0;
    if (dec > 6) dec = 6;
    if (v == 0) snprintf(buf, n, "0");
    else snprintf(buf, n, "%.*f%s", dec, v / scale, suf);
}

// A log-axis decade label: 0.01, 0.1, 1, 10, 100, 1k, 10k, 100k, 1M, ...
static void fmt_decade(char *buf, size_t n, int e) {
    if (e < 0) snprintf(buf, n, "%.*f", -e, pow(10, e));
    else if (e < 3) snprintf(buf, n, "%.0f", pow(10, e));
    else if (e < 6) snprintf(buf, n, "%.0fk", pow(10, e - 3));
    else if (e < 9) snprintf(buf, n, "%.0fM", pow(10, e - 6));
    else snprintf(buf, n, "%.0fG", pow(10, e - 9));
}

// ---------------------------------------------------------------------------------------------
// Axes
// ---------------------------------------------------------------------------------------------

typedef struct {
    double lo, hi, step;
} Ticks;

// Ticks at 1, 2 or 5 x 10^k covering [lo, hi] with about `target` intervals.
static Ticks nice_ticks(double lo, double hi, int target) {
    if (!isfinite(lo) || !isfinite(hi)) lo = 0, hi = 1;
    if (hi - lo < 1e-12 * fmax(1, fabs(hi))) {
        double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
        lo -= d, hi += d;
    }
    double raw = (hi - lo) / target;
    double mag = pow(10, floor(log10(raw)));
    double norm = raw / mag;
    double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    Ticks t = {floor(lo / step + 1e-9) * step, ceil(hi / step - 1e-9) * step, step};
    return t;
}

typedef struct {
    double x0, x1, y0, y1;        // data range
    double left, top, w, h;       // plot area in px
    int logx, logy;
} Frame;

static double px_x(const Frame *f, double x) {
    if (f->logx) return f->left + (log10(x) - f->x0) / (f->x1 - f->x0) * f->w;
    return f->left + (x - f->x0) / (f->x1 - f->x0) * f->w;
}
static double px_y(const Frame *f, double y) {
    if (f->logy) return f->top + f->h - (log10(y) - f->y0) / (f->y1 - f->y0) * f->h;
    return f->top + f->h - (y - f->y0) / (f->y1 - f->y0) * f->h;
}

// Rough width of a text in px at a font size (proportional sans-serif).
static double text_w(const char *s, double size) {
    double w = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) == 0x80) continue;  // UTF-8 continuation byte
        w += strchr("il.,:;|!'1 ()[]", *p) ? 0.33 : (*p >= 'A' && *p <= 'Z') || strchr("mw%MW", *p) ? 0.72 : 0.56;
    }
    return w * size;
}

// Colours (a restrained palette that reads well on white and in greyscale print).
#define C_BLUE "#2f6db5"
#define C_BLUE_LIGHT "#9bbbe0"
#define C_ORANGE "#e07b28"
#define C_RED "#c8393b"
#define C_GREEN "#3a8f5c"
#define C_PURPLE "#7c5aa6"
#define C_TEAL "#2a9d9a"
#define C_GREY "#9aa3ad"
#define C_GRID "#e6e9ee"
#define C_AXIS "#8a939e"
#define C_TEXT "#3c4450"
#define C_MUTED "#6b7480"
// A white outline behind text drawn over data, so it stays readable where it crosses a line.
#define HALO "stroke=\"#fff\" stroke-width=\"3.5\" stroke-linejoin=\"round\" paint-order=\"stroke\" "

static const char *PALETTE[] = {C_BLUE, C_ORANGE, C_GREEN, C_RED, C_PURPLE, C_TEAL, "#b0882b", "#c2569b", "#5d6d7e"};
#define N_PALETTE ((int)(sizeof PALETTE / sizeof *PALETTE))

static void svg_open(StrBuf *o, const char *id, double w, double h, const char *title) {
    sb_puts(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"");
    sb_html(o, id);
    sb_printf(o, "\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"", w, h, w, h);
    sb_html(o, title);
    sb_puts(o, "\" font-family=\"system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif\" "
               "font-size=\"11\">\n<title>");
    sb_html(o, title);
    sb_puts(o, "</title>\n");
}

// <text> with escaped content. anchor: "start" | "middle" | "end".
static void svg_text(StrBuf *o, double x, double y, const char *anchor, const char *attrs, const char *text) {
    sb_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor, attrs ? " " : "", attrs ? attrs : "");
    sb_html(o, text);
    sb_puts(o, "</text>\n");
}

static void svg_title(StrBuf *o, double x, const char *title) {
    svg_text(o, x, 18, "start", "font-size=\"13.5\" font-weight=\"600\" fill=\"" C_TEXT "\"", title);
}

// A legend entry: a short line or a square swatch, then the text. Returns its width.
typedef struct {
    const char *text, *color;
    int kind;  // 0 line, 1 dashed line, 2 square, 3 hollow circle, 4 diamond
} LegendItem;

static double legend_width(const LegendItem *it, int n) {
    double w = 0;
    for (int i = 0; i < n; i++) w += 22 + text_w(it[i].text, 11) + 14;
    return w;
}

static void legend_draw(StrBuf *o, const LegendItem *it, int n, double x, double y) {
    for (int i = 0; i < n; i++) {
        const char *c = it[i].color;
        switch (it[i].kind) {
        case 0: sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\"/>", x, y - 4, x + 16, y - 4, c); break;
        case 1: sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>", x, y - 4, x + 16, y - 4, c); break;
        case 2: sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" rx=\"2\" fill=\"%s\"/>", x + 2, y - 9, c); break;
        case 3: sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"1.6\"/>", x + 8, y - 4, c); break;
        default: sb_printf(o, "<path d=\"M%.1f %.1fl5 5l-5 5l-5 -5z\" fill=\"%s\"/>", x + 8, y - 9, c); break;
        }
        svg_text(o, x + 22, y, "start", "fill=\"" C_TEXT "\"", it[i].text);
        x += 22 + text_w(it[i].text, 11) + 14;
    }
}

// Title at the top left, legend right-aligned on the same line if it fits, else on the next.
// Returns the y where the content can start.
static double title_and_legend(StrBuf *o, double width, double left, const char *title, const LegendItem *it, int n) {
    if (title) svg_title(o, left, title);
    if (n == 0) return 30;
    double lw = legend_width(it, n);
    double tw = title ? text_w(title, 13.5) + 24 : 0;
    if (left + tw + lw <= width - 8) {
        legend_draw(o, it, n, width - 8 - lw, 18);
        return 30;
    }
    legend_draw(o, it, n, left, 38);
    return 48;
}

static void svg_empty(StrBuf *o, const Frame *f, const char *text) {
    sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f7f8fa\" stroke=\"" C_GRID "\"/>\n",
              f->left, f->top, f->w, f->h);
    svg_text(o, f->left + f->w / 2, f->top + f->h / 2, "middle", "font-size=\"13\" fill=\"" C_MUTED "\"", text);
}

// ---------------------------------------------------------------------------------------------
// Line chart
// ---------------------------------------------------------------------------------------------

// One series as a path; points that fall in the same pixel column are reduced to their minimum
// and maximum (in order), so 100k steps make a path of ~2 x width points that looks the same.
static void series_path(StrBuf *o, const Frame *f, const SvgSeries *s) {
    sb_printf(o, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"%.2f\" stroke-linejoin=\"round\" stroke-linecap=\"round\"",
              s->color, s->width > 0 ? s->width : 2.0);
    if (s->opacity > 0 && s->opacity < 1) sb_printf(o, " stroke-opacity=\"%.2f\"", s->opacity);
    if (s->dashed) sb_puts(o, " stroke-dasharray=\"6 4\"");
    sb_puts(o, " d=\"");
    int pen_down = 0, col = INT32_MIN, have = 0;
    double bx_min = 0, by_min = 0, bx_max = 0, by_max = 0;
    int i_min = 0, i_max = 0;
#define FLUSH()                                                                                   \
    do {                                                                                          \
        if (have) {                                                                               \
            double ax = i_min <= i_max ? bx_min : bx_max, ay = i_min <= i_max ? by_min : by_max;  \
            double cx = i_min <= i_max ? bx_max : bx_min, cy = i_min <= i_max ? by_max : by_min;  \
            sb_printf(o, "%s%.1f %.1f", pen_down ? "L" : "M", ax, ay);                            \
            pen_down = 1;                                                                         \
            if (i_min != i_max) sb_printf(o, "L%.1f %.1f", cx, cy);                               \
            have = 0;                                                                             \
        }                                                                                         \
    } while (0)
    for (int i = 0; i < s->n; i++) {
        if (!isfinite(s->x[i]) || !isfinite(s->y[i])) {
            FLUSH();
            pen_down = 0;
            col = INT32_MIN;
            continue;
        }
        double px = px_x(f, s->x[i]), py = px_y(f, s->y[i]);
        int c = (int)floor(px);
        if (c != col) {
            FLUSH();
            col = c;
        }
        if (!have) {
            bx_min = bx_max = px, by_min = by_max = py, i_min = i_max = i, have = 1;
        } else {
            if (py > by_min) bx_min = px, by_min = py, i_min = i;  // lower on screen = smaller value
            if (py < by_max) bx_max = px, by_max = py, i_max = i;
        }
    }
    FLUSH();
#undef FLUSH
    sb_puts(o, "\"/>\n");
}

void svg_line_chart(StrBuf *o, const SvgLineChart *c) {
    double W = c->width > 0 ? c->width : 560, H = c->height > 0 ? c->height : 300;
    svg_open(o, c->id, W, H, c->title);

    // Data range over every finite point, the reference line and the marks.
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (int s = 0; s < c->n_series; s++)
        for (int i = 0; i < c->series[s].n; i++) {
            double x = c->series[s].x[i], y = c->series[s].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            xmin = fmin(xmin, x), xmax = fmax(xmax, x), ymin = fmin(ymin, y), ymax = fmax(ymax, y);
        }
    int empty = !(xmin <= xmax);
    if (c->has_hline && isfinite(c->hline_y)) ymin = fmin(ymin, c->hline_y), ymax = fmax(ymax, c->hline_y);
    for (int i = 0; i < c->n_marks; i++)
        if (isfinite(c->marks[i].y)) ymin = fmin(ymin, c->marks[i].y), ymax = fmax(ymax, c->marks[i].y);
    if (c->y_zero) ymin = fmin(ymin, 0), ymax = fmax(ymax, 0);
    if (empty) xmin = 0, xmax = 1;
    if (!(ymin <= ymax)) ymin = 0, ymax = 1;

    // Legend: named series, the band, the marks with a label go inline.
    LegendItem leg[16];
    int nl = 0;
    for (int s = 0; s < c->n_series && nl < 15; s++)
        if (c->series[s].name)
            leg[nl++] = (LegendItem){c->series[s].name, c->series[s].color,
                                     c->series[s].markers_only ? 3 : c->series[s].dashed ? 1 : 0};
    if (c->n_bands > 0 && c->band_label && nl < 16) leg[nl++] = (LegendItem){c->band_label, "#f3d9bf", 2};

    Ticks ty = nice_ticks(ymin, ymax, 5);
    Ticks tx = nice_ticks(xmin, xmax, 8);
    // Steps start at 1: an axis from 0 wastes nothing, but do not go below 0 for positive data.
    double ylab_w = 0;
    char buf[64];
    for (double v = ty.lo; v <= ty.hi + ty.step * 0.5; v += ty.step) {
        fmt_tick(buf, sizeof buf, v, ty.step, fmax(fabs(ty.lo), fabs(ty.hi)));
        ylab_w = fmax(ylab_w, text_w(buf, 11));
    }
    // The x axis ends at the last point (a run of 228 steps ends at 228, not at the next tick).
    if (!empty && xmax > tx.lo) tx.hi = xmax;
    Frame f = {tx.lo, tx.hi, ty.lo, ty.hi, 0, 0, 0, 0, 0, 0};
    f.left = 30 + ylab_w + 10;
    double top = title_and_legend(o, W, 12, c->title, leg, nl);
    if (c->has_x2) top += 34;
    f.top = top + 6;
    f.w = W - f.left - 16;
    f.h = H - f.top - 44;

    if (empty) {
        if (c->x_label) svg_text(o, f.left + f.w / 2, H - 8, "middle", "fill=\"" C_TEXT "\"", c->x_label);
        svg_empty(o, &f, "no data");
        sb_puts(o, "</svg>\n");
        return;
    }

    // Grid and y ticks.
    sb_puts(o, "<g stroke=\"" C_GRID "\" stroke-width=\"1\">\n");
    for (double v = ty.lo; v <= ty.hi + ty.step * 0.5; v += ty.step)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f.left, px_y(&f, v), f.left + f.w, px_y(&f, v));
    for (double v = tx.lo; v <= tx.hi + tx.step * 1e-6; v += tx.step)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px_x(&f, v), f.top, px_x(&f, v), f.top + f.h);
    sb_puts(o, "</g>\n<g fill=\"" C_MUTED "\">\n");
    for (double v = ty.lo; v <= ty.hi + ty.step * 0.5; v += ty.step) {
        fmt_tick(buf, sizeof buf, v, ty.step, fmax(fabs(ty.lo), fabs(ty.hi)));
        svg_text(o, f.left - 6, px_y(&f, v) + 4, "end", NULL, buf);
    }
    for (double v = tx.lo; v <= tx.hi + tx.step * 1e-6; v += tx.step) {
        fmt_tick(buf, sizeof buf, v, tx.step, fmax(fabs(tx.lo), fabs(tx.hi)));
        svg_text(o, px_x(&f, v), f.top + f.h + 16, "middle", NULL, buf);
    }
    sb_puts(o, "</g>\n");
    if (c->x_label) svg_text(o, f.left + f.w / 2, H - 8, "middle", "fill=\"" C_TEXT "\"", c->x_label);
    if (c->y_label) {
        sb_printf(o, "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"" C_TEXT "\">",
                  f.top + f.h / 2);
        sb_html(o, c->y_label);
        sb_puts(o, "</text>\n");
    }

    // Top axis: ticks at nice values of x2, placed where x maps to them.
    if (c->has_x2 && c->x2_b != 0 && !empty) {
        double a = c->x2_a + c->x2_b * tx.lo, b = c->x2_a + c->x2_b * tx.hi;
        Ticks t2 = nice_ticks(fmin(a, b), fmax(a, b), 8);
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n", f.left, f.top,
                  f.left + f.w, f.top);
        sb_puts(o, "<g fill=\"" C_MUTED "\">\n");
        for (double v = t2.lo; v <= t2.hi + t2.step * 0.5; v += t2.step) {
            double x = (v - c->x2_a) / c->x2_b;
            if (x < tx.lo - 1e-9 * tx.step || x > tx.hi + 1e-9 * tx.step) continue;
            fmt_tick(buf, sizeof buf, v, t2.step, fmax(fabs(t2.lo), fabs(t2.hi)));
            sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n", px_x(&f, x),
                      f.top - 4, px_x(&f, x), f.top);
            svg_text(o, px_x(&f, x), f.top - 8, "middle", NULL, buf);
        }
        sb_puts(o, "</g>\n");
        if (c->x2_label) svg_text(o, f.left + f.w / 2, f.top - 24, "middle", "fill=\"" C_TEXT "\"", c->x2_label);
    }


    // Shaded bands, clipped to the plot area.
    for (int i = 0; i < c->n_bands; i++) {
        double a = fmax(px_x(&f, c->bands[i].x0), f.left), b = fmin(px_x(&f, c->bands[i].x1), f.left + f.w);
        if (b > a)
            sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f3d9bf\" fill-opacity=\"0.6\"/>\n",
                      a, f.top, b - a, f.h);
    }
    // Axes lines (left, bottom).
    sb_printf(o, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" stroke=\"" C_AXIS "\"/>\n", f.left, f.top, f.top + f.h,
              f.left + f.w);

    if (c->has_hline && isfinite(c->hline_y)) {
        const char *hc = c->hline_color ? c->hline_color : C_RED;
        double y = px_y(&f, c->hline_y);
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
                  f.left, y, f.left + f.w, y, hc);
        if (c->hline_label) {
            char attrs[256];
            snprintf(attrs, sizeof attrs, HALO "font-weight=\"600\" fill=\"%s\"", hc);
            // Above the line unless that leaves the plot.
            double ty_ = y - 6 < f.top + 12 ? y + 15 : y - 6;
            if (c->hline_label_left) svg_text(o, f.left + 6, ty_, "start", attrs, c->hline_label);
            else svg_text(o, f.left + f.w - 4, ty_, "end", attrs, c->hline_label);
        }
    }

    for (int s = 0; s < c->n_series; s++) {
        const SvgSeries *se = &c->series[s];
        if (se->markers_only) {
            for (int i = 0; i < se->n; i++)
                if (isfinite(se->x[i]) && isfinite(se->y[i]))
                    sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#fff\" stroke=\"%s\" stroke-width=\"1.8\"/>\n",
                              px_x(&f, se->x[i]), px_y(&f, se->y[i]), se->color);
        } else {
            series_path(o, &f, se);
        }
    }

    double last_label_y = -1e9;
    for (int i = 0; i < c->n_marks; i++) {
        const SvgMark *m = &c->marks[i];
        if (!isfinite(m->x) || !isfinite(m->y)) continue;
        double x = px_x(&f, m->x), y = px_y(&f, m->y);
        const char *mc = m->color ? m->color : C_RED;
        sb_printf(o, "<path d=\"M%.1f %.1fl6 6l-6 6l-6 -6z\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n", x, y - 6, mc);
        if (m->label) {
            // Above the mark, or below it when the data just before it lies above (the label
            // would sit on the line).
            double sum = 0;
            int cnt = 0;
            for (int s = 0; s < c->n_series; s++)
                for (int k = 0; k < c->series[s].n; k++) {
                    double sx = c->series[s].x[k], sy = c->series[s].y[k];
                    if (c->series[s].markers_only || !isfinite(sx) || !isfinite(sy)) continue;
                    if (sx <= m->x && sx >= m->x - 0.1 * (f.x1 - f.x0)) sum += sy, cnt++;
                }
            int below = cnt > 0 && sum / cnt > m->y;
            double ly = below ? y + 20 : y - 10;
            if (ly < f.top + 12) ly = y + 20;
            if (ly > f.top + f.h - 4) ly = y - 10;
            if (fabs(ly - last_label_y) < 14) ly = last_label_y + (ly < last_label_y ? -14 : 14);
            char attrs[256];
            snprintf(attrs, sizeof attrs, HALO "font-weight=\"600\" fill=\"%s\"", mc);
            svg_text(o, x - 8, ly, "end", attrs, m->label);
            last_label_y = ly;
        }
    }
    sb_puts(o, "</svg>\n");
}

// ---------------------------------------------------------------------------------------------
// Horizontal bar chart
// ---------------------------------------------------------------------------------------------

void svg_hbar_chart(StrBuf *o, const SvgBarChart *c) {
    double W = c->width > 0 ? c->width : 560;
    double label_w = 0, text_wmax = 0, vmax = 0;
    char buf[64];
    for (int i = 0; i < c->n; i++) {
        label_w = fmax(label_w, text_w(c->labels[i], 11.5));
        if (isfinite(c->values[i])) vmax = fmax(vmax, c->values[i]);
        const char *t = c->value_text ? c->value_text[i] : (snprintf(buf, sizeof buf, "%g", c->values[i]), buf);
        text_wmax = fmax(text_wmax, text_w(t, 11));
    }
    label_w = fmin(label_w, W * 0.35);
    double row = 24, top = 34;
    double H = top + fmax(c->n, 1) * row + 44;
    svg_open(o, c->id, W, H, c->title);
    svg_title(o, 12, c->title);
    Frame f = {0, 1, 0, 1, 12 + label_w + 10, top, 0, fmax(c->n, 1) * row, 0, 0};
    f.w = W - f.left - text_wmax - 20;
    if (c->n == 0) {
        svg_empty(o, &f, "no data");
        sb_puts(o, "</svg>\n");
        return;
    }
    Ticks t = nice_ticks(0, vmax > 0 ? vmax : 1, 5);
    f.x0 = 0, f.x1 = t.hi;
    sb_puts(o, "<g stroke=\"" C_GRID "\">\n");
    for (double v = 0; v <= t.hi + t.step * 0.5; v += t.step)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px_x(&f, v), f.top, px_x(&f, v), f.top + f.h);
    sb_puts(o, "</g>\n<g fill=\"" C_MUTED "\">\n");
    for (double v = 0; v <= t.hi + t.step * 0.5; v += t.step) {
        fmt_tick(buf, sizeof buf, v, t.step, t.hi);
        svg_text(o, px_x(&f, v), f.top + f.h + 16, "middle", NULL, buf);
    }
    sb_puts(o, "</g>\n");
    for (int i = 0; i < c->n; i++) {
        double y = f.top + i * row;
        svg_text(o, f.left - 8, y + row / 2 + 4, "end", "font-size=\"11.5\" fill=\"" C_TEXT "\"", c->labels[i]);
        double v = c->values[i];
        double bw = isfinite(v) && v > 0 ? px_x(&f, v) - f.left : 0;
        if (bw > 0)
            sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"2\" fill=\"%s\"/>\n", f.left,
                      y + 4, bw, row - 8, c->colors && c->colors[i] ? c->colors[i] : c->color ? c->color : C_BLUE);
        const char *txt = c->value_text ? c->value_text[i] : (snprintf(buf, sizeof buf, "%g", v), buf);
        svg_text(o, f.left + bw + 6, y + row / 2 + 4, "start", "fill=\"" C_TEXT "\"", txt);
    }
    sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n", f.left, f.top, f.left,
              f.top + f.h);
    if (c->value_label) svg_text(o, f.left + f.w / 2, H - 8, "middle", "fill=\"" C_TEXT "\"", c->value_label);
    sb_puts(o, "</svg>\n");
}

// ---------------------------------------------------------------------------------------------
// Stacked bars
// ---------------------------------------------------------------------------------------------

void svg_stacked_bars(StrBuf *o, const SvgStackedBars *c) {
    double W = c->width > 0 ? c->width : 1080;
    double label_w = 0, total_w = 0, vmax = 0;
    for (int r = 0; r < c->n_rows; r++) {
        label_w = fmax(label_w, text_w(c->rows[r].label, 11.5));
        if (c->rows[r].total_text) total_w = fmax(total_w, text_w(c->rows[r].total_text, 11));
        double sum = 0;
        for (int s = 0; s < c->rows[r].n_segments; s++)
            if (isfinite(c->rows[r].segments[s].value) && c->rows[r].segments[s].value > 0) sum += c->rows[r].segments[s].value;
        vmax = fmax(vmax, sum);
    }
    // Legend entries, without repeats, laid out in lines.
    LegendItem leg[32];
    int nl = 0;
    for (int r = 0; r < c->n_rows; r++)
        for (int s = 0; s < c->rows[r].n_segments && nl < 32; s++) {
            const SvgSegment *g = &c->rows[r].segments[s];
            int dup = 0;
            for (int k = 0; k < nl; k++) dup |= !strcmp(leg[k].text, g->label);
            if (!dup) leg[nl++] = (LegendItem){g->label, g->hatched ? "#d5dae0" : g->color, 2};
        }
    double row = 34, top = 34;
    double bars_h = fmax(c->n_rows, 1) * row;
    int legend_lines = 1;
    {
        double x = 0;
        for (int k = 0; k < nl; k++) {
            double w = legend_width(&leg[k], 1);
            if (x > 0 && x + w > W - 24) legend_lines++, x = 0;
            x += w;
        }
    }
    double H = top + bars_h + 30 + legend_lines * 20 + 8;
    svg_open(o, c->id, W, H, c->title);
    sb_printf(o, "<defs><pattern id=\"%s-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
                 "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f1f3f5\"/>"
                 "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#cfd5dc\" stroke-width=\"2\"/></pattern></defs>\n",
              c->id);
    svg_title(o, 12, c->title);
    Frame f = {0, 1, 0, 1, 12 + label_w + 12, top, 0, bars_h, 0, 0};
    f.w = W - f.left - total_w - 24;
    Ticks t = nice_ticks(0, vmax > 0 ? vmax : 1, 8);
    f.x1 = t.hi;
    char buf[64];
    sb_puts(o, "<g stroke=\"" C_GRID "\">\n");
    for (double v = 0; v <= t.hi + t.step * 0.5; v += t.step)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px_x(&f, v), f.top, px_x(&f, v), f.top + f.h);
    sb_puts(o, "</g>\n<g fill=\"" C_MUTED "\">\n");
    for (double v = 0; v <= t.hi + t.step * 0.5; v += t.step) {
        fmt_tick(buf, sizeof buf, v, t.step, t.hi);
        if (c->unit && v == 0) snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " %s", c->unit);
        svg_text(o, px_x(&f, v), f.top + f.h + 16, "middle", NULL, buf);
    }
    sb_puts(o, "</g>\n");
    for (int r = 0; r < c->n_rows; r++) {
        const SvgStackRow *R = &c->rows[r];
        double y = f.top + r * row + 6, h = row - 12, x = f.left;
        svg_text(o, f.left - 10, y + h / 2 + 4, "end", "font-size=\"11.5\" font-weight=\"600\" fill=\"" C_TEXT "\"", R->label);
        for (int s = 0; s < R->n_segments; s++) {
            const SvgSegment *g = &R->segments[s];
            if (!isfinite(g->value) || g->value <= 0) continue;
            double w = px_x(&f, g->value) - f.left;
            if (g->hatched)
                sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"url(#%s-hatch)\" stroke=\"#cfd5dc\"/>\n",
                          x, y, w, h, c->id);
            else
                sb_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, y, fmax(w, 1.0), h,
                          g->color);
            x += w;
        }
        if (R->total_text) svg_text(o, x + 8, y + h / 2 + 4, "start", "fill=\"" C_TEXT "\"", R->total_text);
    }
    sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_AXIS "\"/>\n", f.left, f.top, f.left,
              f.top + f.h);
    // Legend lines under the axis.
    double lx = f.left, ly = f.top + f.h + 42;
    for (int k = 0; k < nl; k++) {
        double w = legend_width(&leg[k], 1);
        if (lx > f.left && lx + w > W - 12) lx = f.left, ly += 20;
        legend_draw(o, &leg[k], 1, lx, ly);
        lx += w;
    }
    sb_puts(o, "</svg>\n");
}

// ---------------------------------------------------------------------------------------------
// Log-log scatter with a roofline
// ---------------------------------------------------------------------------------------------

typedef struct {
    double x0, y0, x1, y1;
} Box;

static int box_overlap(const Box *a, const Box *b) {
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

void svg_loglog_scatter(StrBuf *o, const SvgScatter *c) {
    double W = c->width > 0 ? c->width : 560, H = c->height > 0 ? c->height : 380;
    svg_open(o, c->id, W, H, c->title);
    double lx0 = INFINITY, lx1 = -INFINITY, ly0 = INFINITY, ly1 = -INFINITY;
    int npts = 0;
    for (int i = 0; i < c->n; i++) {
        if (!(c->x[i] > 0) || !(c->y[i] > 0) || !isfinite(c->x[i]) || !isfinite(c->y[i])) continue;
        lx0 = fmin(lx0, log10(c->x[i])), lx1 = fmax(lx1, log10(c->x[i]));
        ly0 = fmin(ly0, log10(c->y[i])), ly1 = fmax(ly1, log10(c->y[i]));
        npts++;
    }
    int roof = c->has_roof && c->roof_peak > 0 && c->roof_slope > 0;
    double lridge = roof ? log10(c->roof_peak / c->roof_slope) : 0, lpeak = roof ? log10(c->roof_peak) : 0;
    if (roof) {
        lx0 = fmin(lx0, lridge - 1), lx1 = fmax(lx1, lridge + 1);
        ly1 = fmax(ly1, lpeak);
        if (!npts) ly0 = lpeak - 3;
    }
    if (!(lx0 <= lx1)) lx0 = -1, lx1 = 2;
    if (!(ly0 <= ly1)) ly0 = 0, ly1 = 3;
    // Whole decades with a little room around the points.
    Frame f = {floor(lx0 - 0.15), ceil(lx1 + 0.15), floor(ly0 - 0.2), ceil(ly1 + 0.15), 0, 0, 0, 0, 1, 1};
    if (f.x1 - f.x0 < 2) f.x1 = f.x0 + 2;
    if (f.y1 - f.y0 < 2) f.y0 = f.y1 - 2;
    double ylab_w = 0;
    char buf[64];
    for (int e = (int)f.y0; e <= (int)f.y1; e++) fmt_decade(buf, sizeof buf, e), ylab_w = fmax(ylab_w, text_w(buf, 11));
    f.left = 30 + ylab_w + 10;
    f.top = title_and_legend(o, W, 12, c->title, NULL, 0) + 8;
    f.w = W - f.left - 16;
    f.h = H - f.top - 44;
    sb_printf(o, "<defs><clipPath id=\"%s-clip\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/></clipPath></defs>\n",
              c->id, f.left, f.top, f.w, f.h);

    // Decade grid with faint minor lines at 2..9.
    sb_puts(o, "<g stroke=\"" C_GRID "\">\n");
    for (int e = (int)f.x0; e < (int)f.x1; e++)
        for (int m = 2; m <= 9; m++)
            sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-opacity=\"0.45\"/>\n", px_x(&f, m * pow(10, e)),
                      f.top, px_x(&f, m * pow(10, e)), f.top + f.h);
    for (int e = (int)f.y0; e < (int)f.y1; e++)
        for (int m = 2; m <= 9; m++)
            sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-opacity=\"0.45\"/>\n", f.left,
                      px_y(&f, m * pow(10, e)), f.left + f.w, px_y(&f, m * pow(10, e)));
    for (int e = (int)f.x0; e <= (int)f.x1; e++)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d4d9e0\"/>\n", px_x(&f, pow(10, e)), f.top,
                  px_x(&f, pow(10, e)), f.top + f.h);
    for (int e = (int)f.y0; e <= (int)f.y1; e++)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d4d9e0\"/>\n", f.left, px_y(&f, pow(10, e)),
                  f.left + f.w, px_y(&f, pow(10, e)));
    sb_puts(o, "</g>\n<g fill=\"" C_MUTED "\">\n");
    for (int e = (int)f.x0; e <= (int)f.x1; e++) {
        fmt_decade(buf, sizeof buf, e);
        svg_text(o, px_x(&f, pow(10, e)), f.top + f.h + 16, "middle", NULL, buf);
    }
    for (int e = (int)f.y0; e <= (int)f.y1; e++) {
        fmt_decade(buf, sizeof buf, e);
        svg_text(o, f.left - 6, px_y(&f, pow(10, e)) + 4, "end", NULL, buf);
    }
    sb_puts(o, "</g>\n");
    sb_printf(o, "<path d=\"M%.1f %.1fV%.1fH%.1f\" fill=\"none\" stroke=\"" C_AXIS "\"/>\n", f.left, f.top, f.top + f.h,
              f.left + f.w);
    if (c->x_label) svg_text(o, f.left + f.w / 2, H - 8, "middle", "fill=\"" C_TEXT "\"", c->x_label);
    if (c->y_label) {
        sb_printf(o, "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"" C_TEXT "\">",
                  f.top + f.h / 2);
        sb_html(o, c->y_label);
        sb_puts(o, "</text>\n");
    }

    Box placed[128];
    int n_placed = 0;
    if (roof) {
        // The roof: memory slope up to the ridge, then flat; the area under it lightly tinted.
        double xa = pow(10, f.x0), xr = pow(10, lridge), xb = pow(10, f.x1);
        double ya = c->roof_slope * xa;
        sb_printf(o, "<g clip-path=\"url(#%s-clip)\">\n", c->id);
        sb_printf(o, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fV%.1fH%.1fz\" fill=\"#2f6db5\" fill-opacity=\"0.05\"/>\n",
                  px_x(&f, xa), px_y(&f, ya), px_x(&f, xr), px_y(&f, c->roof_peak), px_x(&f, xb), px_y(&f, c->roof_peak),
                  f.top + f.h, f.left);
        sb_printf(o, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1f\" fill=\"none\" stroke=\"#1d3f6e\" stroke-width=\"2.2\"/>\n",
                  px_x(&f, xa), px_y(&f, ya), px_x(&f, xr), px_y(&f, c->roof_peak), px_x(&f, xb), px_y(&f, c->roof_peak));
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1d3f6e\" stroke-dasharray=\"2 3\"/>\n",
                  px_x(&f, xr), px_y(&f, c->roof_peak), px_x(&f, xr), f.top + f.h);
        sb_puts(o, "</g>\n");
        if (c->roof_peak_label) {
            double y = px_y(&f, c->roof_peak) - 7;
            svg_text(o, f.left + f.w - 4, y, "end", HALO "font-weight=\"600\" fill=\"#1d3f6e\"", c->roof_peak_label);
            double w = text_w(c->roof_peak_label, 11);
            placed[n_placed++] = (Box){f.left + f.w - 4 - w, y - 11, f.left + f.w - 4, y + 3};
        }
        if (c->roof_slope_label) {
            // Along the visible part of the slope, a third of the way up, rotated to match it.
            double la = fmax(f.x0, f.y0 - log10(c->roof_slope));
            double lm = la + (lridge - la) * 0.45;
            double x = px_x(&f, pow(10, lm)), y = px_y(&f, c->roof_slope * pow(10, lm));
            double ang = atan2(px_y(&f, c->roof_peak) - px_y(&f, c->roof_slope * pow(10, la)),
                               px_x(&f, xr) - px_x(&f, pow(10, la))) * 180 / M_PI;
            sb_printf(o, "<text transform=\"translate(%.1f %.1f) rotate(%.1f)\" text-anchor=\"middle\" dy=\"-6\" "
                         HALO "font-weight=\"600\" fill=\"#1d3f6e\">", x, y, ang);
            sb_html(o, c->roof_slope_label);
            sb_puts(o, "</text>\n");
        }
        snprintf(buf, sizeof buf, "ridge %.3g FLOP/B", pow(10, lridge));
        svg_text(o, px_x(&f, xr) + 4, f.top + f.h - 6, "start", "fill=\"" C_MUTED "\"", buf);
    }

    if (!npts) {
        svg_text(o, f.left + f.w / 2, f.top + f.h / 2, "middle", "font-size=\"13\" fill=\"" C_MUTED "\"", "no points to plot");
        sb_puts(o, "</svg>\n");
        return;
    }
    // Points first, then labels placed where they do not collide with earlier ones.
    for (int i = 0, k = 0; i < c->n; i++) {
        if (!(c->x[i] > 0) || !(c->y[i] > 0) || !isfinite(c->x[i]) || !isfinite(c->y[i])) continue;
        double x = px_x(&f, c->x[i]), y = px_y(&f, c->y[i]);
        const char *color = c->colors && c->colors[i] ? c->colors[i] : PALETTE[k % N_PALETTE];
        k++;
        sb_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5.5\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n", x, y,
                  color);
        if (n_placed < 128) placed[n_placed++] = (Box){x - 6, y - 6, x + 6, y + 6};
    }
    static const double DY[] = {0, -13, 13, -26, 26, -39, 39};
    for (int i = 0, k = 0; i < c->n; i++) {
        if (!(c->x[i] > 0) || !(c->y[i] > 0) || !isfinite(c->x[i]) || !isfinite(c->y[i])) continue;
        const char *color = c->colors && c->colors[i] ? c->colors[i] : PALETTE[k % N_PALETTE];
        k++;
        if (!c->labels || !c->labels[i]) continue;
        double x = px_x(&f, c->x[i]), y = px_y(&f, c->y[i]), w = text_w(c->labels[i], 11.5);
        Box best = {x + 9, y - 7, x + 9 + w, y + 6};
        int right = 1, found = 0;
        for (int side = 0; side < 2 && !found; side++)
            for (int d = 0; d < (int)(sizeof DY / sizeof *DY) && !found; d++) {
                Box b = side == 0 ? (Box){x + 9, y - 7 + DY[d], x + 9 + w, y + 6 + DY[d]}
                                  : (Box){x - 9 - w, y - 7 + DY[d], x - 9, y + 6 + DY[d]};
                if (b.x1 > f.left + f.w || b.x0 < f.left || b.y0 < f.top || b.y1 > f.top + f.h) continue;
                int clash = 0;
                for (int p = 0; p < n_placed && !clash; p++) clash = box_overlap(&b, &placed[p]);
                if (!clash) best = b, right = side == 0, found = 1;
            }
        if (n_placed < 128) placed[n_placed++] = best;
        char attrs[256];
        snprintf(attrs, sizeof attrs, HALO "font-size=\"11.5\" font-weight=\"600\" fill=\"%s\"", color);
        svg_text(o, right ? best.x0 : best.x1, best.y1 - 2.5, right ? "start" : "end", attrs, c->labels[i]);
    }
    sb_puts(o, "</svg>\n");
}

// ---------------------------------------------------------------------------------------------
// Reading the run folder
// ---------------------------------------------------------------------------------------------

typedef struct {
    int n;
    double *step, *loss, *lr_mult, *momentum, *wd, *dt, *tok_s, *mfu, *tokens, *timed_s, *progress;
    int *timed;  // 1 timed, 0 excluded, -1 unknown
} Metrics;

static void metrics_free(Metrics *m) {
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

static double jnum(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int metrics_read(const char *path, Metrics *m) {
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
static cJSON *json_object_read(const char *path) {
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

// profile.csv: one row per op type; columns found by their header names.
enum { P_CALLS, P_TOTAL_MS, P_PCT, P_GFLOP, P_GBYTE, P_GFLOPS, P_GBYTES, P_INTENSITY, P_PCT_ROOF, P_NCOLS };
static const char *PROFILE_COLS[P_NCOLS] = {"calls", "total_ms", "pct_step", "gflop", "gbyte",
                                            "gflops_per_s", "gbytes_per_s", "intensity", "pct_roofline"};

typedef struct {
    char *op;
    double v[P_NCOLS];  // NaN where empty or absent
} ProfileRow;

typedef struct {
    ProfileRow *rows;
    int n;
} Profile;

static void profile_free(Profile *p) {
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

static int profile_read(const char *path, Profile *pr) {
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

static void report_free(Report *r) {
    metrics_free(&r->m);
    cJSON_Delete(r->summary);
    cJSON_Delete(r->config);
    cJSON_Delete(r->roofline);
    profile_free(&r->prof);
}

static int report_load(Report *r, const char *run_dir) {
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
