// util/duration.c — see duration.h.
#include "util/duration.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double duration_parse(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0 || isspace((unsigned char)*s)) return -1;
    double mult;
    if (!strcmp(end, "s") || !*end) mult = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min")) mult = 60;
    else if (!strcmp(end, "h")) mult = 3600;
    else return -1;
    return v * mult <= DURATION_MAX_S ? v * mult : -1;
}

// The shortest "%g" of v that reads back as v, without an exponent ("30", not "3e+01").
static void shortest(double v, char *buf, size_t n) {
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v && !strchr(buf, 'e')) return;
    }
    snprintf(buf, n, "%.17g", v);
}

void duration_format(double s, char *buf, size_t n) {
    char num[40];
    const char *unit = "s";
    if (s > 0 && fmod(s, 3600) == 0) s /= 3600, unit = "h";
    else if (s > 0 && fmod(s, 60) == 0) s /= 60, unit = "m";
    shortest(s, num, sizeof num);
    snprintf(buf, n, "%s%s", num, unit);
}
