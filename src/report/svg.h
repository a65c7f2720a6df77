// report/svg.h — the small SVG chart functions the HTML reports are drawn with, the text buffer
// they append to, and the number formats and colours the pages share.
//
// Charts are pure functions of their description: they append one <svg id="..."> element with a
// viewBox (it scales to the width of its container) to a StrBuf. Data with NaN y values is
// allowed: such points are gaps. An empty chart (no finite points) draws its frame and a
// "no data" line instead of failing. Every piece of text that goes into a page passes through
// sb_html() (escaping & < > " ').
#pragma once
#include <stdarg.h>
#include <stddef.h>

// ---------------------------------------------------------------------------------------------
// A growable text buffer
// ---------------------------------------------------------------------------------------------

typedef struct {
    char *s;     // NUL-terminated (NULL while empty)
    size_t len;  // bytes, not counting the NUL
    size_t cap;
} StrBuf;

void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_html(StrBuf *b, const char *text);  // text with & < > " ' escaped (NULL appends nothing)
void sb_free(StrBuf *b);

// ---------------------------------------------------------------------------------------------
// Line chart: y against x, linear axes, several series, optional shaded x ranges, a dashed
// horizontal reference line, labelled marks and a second x axis on top (x2 = x2_a + x2_b * x).
//
//    title                                   legend
//   +-----------------------------------------+ <- top axis (x2) when has_x2
//   |   ###  shaded band (e.g. excluded)      |
// y |  /  \__                                 |
//   | /      \____________  ◆ mark + label    |
//   |- - - - - - - - - - - - hline - - - - - -|
//   +-----------------------------------------+
//                       x_label
// ---------------------------------------------------------------------------------------------

typedef struct {
    const double *x, *y;  // n points, x ascending; a NaN y is a gap
    int n;
    const char *name;     // legend text; NULL: not in the legend
    const char *color;    // CSS colour
    double width;         // stroke width in px (0: 2)
    double opacity;       // 0: 1
    int dashed;
    int markers_only;     // 1: hollow circles at the points and no line (a few special points)
} SvgSeries;

typedef struct {
    double x0, x1;  // a shaded range of x (inclusive)
} SvgBand;

typedef struct {
    double x, y;
    const char *label;  // drawn next to the mark (NULL: none)
    const char *color;
} SvgMark;

typedef struct {
    const char *id;                   // the <svg id>
    const char *title, *x_label, *y_label;
    int width, height;                // viewBox size in px (0: 560 x 300)
    const SvgSeries *series;
    int n_series;
    const SvgBand *bands;             // shaded x ranges, all with one legend entry band_label
    int n_bands;
    const char *band_label;
    int has_hline;                    // dashed horizontal line at hline_y, labelled at the right
    double hline_y;                   // (or at the left with hline_label_left: clear of the marks)
    const char *hline_label, *hline_color;
    int hline_label_left;
    const SvgMark *marks;             // filled diamonds with labels
    int n_marks;
    int y_zero;                       // include y = 0 in the range
    int has_x2;                       // top axis
    double x2_a, x2_b;
    const char *x2_label;
} SvgLineChart;

void svg_line_chart(StrBuf *out, const SvgLineChart *c);

// ---------------------------------------------------------------------------------------------
// Horizontal bar chart: one bar per item, labels on the left, value text after each bar.
//
//   title
//   matmul_nt  |################## 41.2%  812 ms
//   attention  |########  18.0%  355 ms
//   softmax    |##  4.1%
//              +----+----+----+----+
//                   value_label
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *id, *title, *value_label;
    int width;                        // viewBox width in px (0: 560); the height follows from n
    const char *const *labels;        // n item labels (left of the bars)
    const double *values;             // n values >= 0 (NaN: no bar)
    const char *const *value_text;    // n texts after the bars (NULL: the value, %g)
    int n;
    const char *color;                // the bars' colour
    const char *const *colors;        // or one per bar (NULL: `color` for all)
} SvgBarChart;

void svg_hbar_chart(StrBuf *out, const SvgBarChart *c);

// ---------------------------------------------------------------------------------------------
// Stacked horizontal bars on one common scale: each row is a sequence of coloured segments
// (e.g. start-up | excluded | timed | eval), with a legend that repeats every segment's text.
//
//   row label  |####|##|################|###|        total text
//   row label  |##################|.........|        total text
//              0 s      100 s      200 s     300 s
//   ■ start-up 0.3 s  ■ excluded 3.1 s  ■ timed 298.9 s ...
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *label;   // legend text, e.g. "timed training 298.9 s"
    double value;        // >= 0, in the scale's unit
    const char *color;
    int hatched;         // 1: drawn as a light, striped placeholder (e.g. unused budget)
} SvgSegment;

typedef struct {
    const char *label;          // row label on the left
    const char *total_text;     // text after the bar (NULL: none)
    const SvgSegment *segments;
    int n_segments;
} SvgStackRow;

typedef struct {
    const char *id, *title, *unit;  // unit is appended to the tick labels, e.g. "s"
    int width;                      // viewBox width in px (0: 1080); the height follows
    const SvgStackRow *rows;
    int n_rows;
} SvgStackedBars;

void svg_stacked_bars(StrBuf *out, const SvgStackedBars *c);

// ---------------------------------------------------------------------------------------------
// Log-log scatter of labelled points, with an optional roofline y = min(roof_peak, roof_slope*x)
// (a horizontal compute roof meeting a memory slope at the ridge x = roof_peak / roof_slope).
//
//  y |            ______________  roof_peak_label
//    |           / ● matmul
//    |         /  ● attention
//    |       /   roof_slope_label
//    |     /  ● softmax
//    +-----------------------------
//          x (log)
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *id, *title, *x_label, *y_label;
    int width, height;                 // viewBox size (0: 560 x 380)
    const double *x, *y;               // n points; non-positive or NaN points are skipped
    const char *const *labels;         // n point labels (NULL: none)
    const char *const *colors;         // n point colours (NULL: a palette in order)
    int n;
    int has_roof;
    double roof_peak, roof_slope;      // in y units, and y units per x unit
    const char *roof_peak_label, *roof_slope_label;
} SvgScatter;

void svg_loglog_scatter(StrBuf *out, const SvgScatter *c);

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// Numbers for people, and the colours
// ---------------------------------------------------------------------------------------------

void fmt_int(char *buf, size_t n, double v);                    // 1234567 -> "1,234,567"
void fmt_si(char *buf, size_t n, double v, const char *unit);   // 1097728 -> "1.10 M" + unit
void fmt_secs(char *buf, size_t n, double s);                   // "0.26 s", "12 min 4 s", "2 h 5 min"

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
static const char *const PALETTE[] = {C_BLUE, C_ORANGE, C_GREEN, C_RED, C_PURPLE, C_TEAL, "#b0882b", "#c2569b", "#5d6d7e"};
#define N_PALETTE ((int)(sizeof PALETTE / sizeof *PALETTE))
