// report/svg.c — the text buffer, number formats, axes and the four chart kinds (see svg.h).
#include "report/svg.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
void fmt_int(char *buf, size_t n, double v) {
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
void fmt_si(char *buf, size_t n, double v, const char *unit) {
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
void fmt_secs(char *buf, size_t n, double s) {
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

// A bar chart's value axis from 0: a vertical grid line and a label per tick, the unit (NULL:
// none) after the 0.
static void value_axis(StrBuf *o, const Frame *f, Ticks t, const char *unit) {
    char buf[64];
    sb_puts(o, "<g stroke=\"" C_GRID "\">\n");
    for (double v = 0; v <= t.hi + t.step * 0.5; v += t.step)
        sb_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", px_x(f, v), f->top, px_x(f, v), f->top + f->h);
    sb_puts(o, "</g>\n<g fill=\"" C_MUTED "\">\n");
    for (double v = 0; v <= t.hi + t.step * 0.5; v += t.step) {
        fmt_tick(buf, sizeof buf, v, t.step, t.hi);
        if (unit && v == 0) snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " %s", unit);
        svg_text(o, px_x(f, v), f->top + f->h + 16, "middle", NULL, buf);
    }
    sb_puts(o, "</g>\n");
}

// The x axis's label centred under the plot, the y axis's rotated beside it (NULL: none).
static void axis_labels(StrBuf *o, const Frame *f, double H, const char *x_label, const char *y_label) {
    if (x_label) svg_text(o, f->left + f->w / 2, H - 8, "middle", "fill=\"" C_TEXT "\"", x_label);
    if (y_label) {
        sb_printf(o, "<text transform=\"translate(14 %.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"" C_TEXT "\">",
                  f->top + f->h / 2);
        sb_html(o, y_label);
        sb_puts(o, "</text>\n");
    }
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
    axis_labels(o, &f, H, c->x_label, c->y_label);

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
    value_axis(o, &f, t, NULL);
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
    value_axis(o, &f, t, c->unit);
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
    axis_labels(o, &f, H, c->x_label, c->y_label);

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
