// cli/args.c — declarative flag parsing (see args.h).
#include "cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/duration.h"
#include "util/error.h"
#include "util/mem.h"

static void list_push(StringList *l, const char *s) {
    l->items = xrealloc(l->items, (size_t)(l->n + 1) * sizeof *l->items);
    l->items[l->n++] = s;
}

void string_list_free(StringList *l) {
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

int args_parse_one(const char *usage, const char *summary, Option *opts, int argc, char **argv, const char *what,
                   StringList *pos) {
    int rc = parse_args(usage, summary, opts, argc, argv, pos);
    if (rc == ARGS_OK && pos->n != 1) {
        fprintf(stderr, "%s: expected one %s, got %d arguments\nusage: %s\n", usage, what, pos->n, usage);
        rc = ARGS_ERROR;
    }
    if (rc != ARGS_OK) string_list_free(pos);
    return rc;
}

// Whether a double is an integer that int64_t holds: the test comes before any cast, since
// converting a value outside the range (or NaN) is undefined behaviour. 2^63 is exact in a double.
static int double_is_int64(double d) {
    return isfinite(d) && d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

// "20M" -> 20000000, "2e9" -> 2000000000, "-3" -> -3. Returns 0 on success, -1 if not an integer,
// -2 for an integer beyond int64 (a range error, not a syntax one).
static int parse_int64(const char *s, int64_t *out) {
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end != s && *end == 0 && errno == 0) { *out = v; return 0; }
    if (end != s && *end == 0 && errno == ERANGE) return -2;
    double d = strtod(s, &end);
    if (end == s) return -1;
    double mult = 1;
    if (*end == 'k' || *end == 'K') mult = 1e3, end++;
    else if (*end == 'M') mult = 1e6, end++;
    else if (*end == 'G') mult = 1e9, end++;
    if (*end != 0) return -1;
    d *= mult;
    if (!isfinite(d) || d != floor(d)) return isinf(d) && end[-1] != 'f' && end[-1] != 'F' ? -2 : -1;
    if (!double_is_int64(d)) return -2;
    *out = (int64_t)d;
    return 0;
}

// The bounds an integer option enforces: its own, or int's range for an OPT_INT without any.
static void int_bounds(const Option *o, int64_t *lo, int64_t *hi) {
    *lo = o->min, *hi = o->max;
    if (o->type == OPT_INT && !(*lo < *hi)) *lo = INT32_MIN, *hi = INT32_MAX;
}

// How a flag is spelled in messages: --name, or -n for a one-letter option.
#define DASHES(o) ((o)->name[1] ? "--" : "-")

static int set_value(const char *usage, const Option *o, const char *val) {
    const char *cmd = usage;
    switch (o->type) {
    case OPT_STRING: *(const char **)o->dest = val; return 0;
    case OPT_LIST: list_push((StringList *)o->dest, val); return 0;
    case OPT_DOUBLE: {
        char *end;
        double d = strtod(val, &end);
        if (end == val || *end || !isfinite(d)) {
            fprintf(stderr, "%s: %s%s expects a finite number, got '%s'\n", cmd, DASHES(o), o->name, val);
            return -1;
        }
        if (o->min < o->max && (d < (double)o->min || d > (double)o->max)) {
            fprintf(stderr, "%s: %s%s must be between %lld and %lld, got %s\n", cmd, DASHES(o), o->name,
                    (long long)o->min, (long long)o->max, val);
            return -1;
        }
        *(double *)o->dest = d;
        return 0;
    }
    case OPT_INT:
    case OPT_INT64: {
        int64_t v, lo, hi;
        int_bounds(o, &lo, &hi);
        int prc = parse_int64(val, &v);
        if (prc == -2) {
            fprintf(stderr, "%s: %s%s must be between %lld and %lld, got %s\n", cmd, DASHES(o), o->name, (long long)lo,
                    (long long)hi, val);
            return -1;
        }
        if (prc != 0) {
            fprintf(stderr, "%s: %s%s expects an integer (suffixes k, M, G allowed), got '%s'\n", cmd, DASHES(o), o->name,
                    val);
            return -1;
        }
        if (lo < hi && (v < lo || v > hi)) {
            fprintf(stderr, "%s: %s%s must be between %lld and %lld, got %lld\n", cmd, DASHES(o), o->name, (long long)lo,
                    (long long)hi, (long long)v);
            return -1;
        }
        if (o->type == OPT_INT) *(int *)o->dest = (int)v;
        else *(int64_t *)o->dest = v;
        return 0;
    }
    case OPT_FLOAT: {
        char *end;
        double d = strtod(val, &end);
        if (end == val || *end || !isfinite(d) || fabs(d) > FLT_MAX) {
            fprintf(stderr, "%s: %s%s expects a finite number, got '%s'\n", cmd, DASHES(o), o->name, val);
            return -1;
        }
        *(float *)o->dest = (float)d;
        return 0;
    }
    case OPT_CHARS:
        if (strlen(val) >= o->cap) {
            fprintf(stderr, "%s: %s%s '%s' is longer than %zu characters\n", cmd, DASHES(o), o->name, val, o->cap - 1);
            return -1;
        }
        snprintf(o->dest, o->cap, "%s", val);
        return 0;
    case OPT_ENUM:
        for (int k = 0; o->words[k]; k++)
            if (!strcmp(o->words[k], val)) { *(int *)o->dest = k; return 0; }
        fprintf(stderr, "%s: %s%s must be ", cmd, DASHES(o), o->name);
        for (int k = 0; o->words[k]; k++)
            fprintf(stderr, "%s%s", k == 0 ? "" : o->words[k + 1] ? ", " : " or ", o->words[k]);
        fprintf(stderr, ", got '%s'\n", val);
        return -1;
    case OPT_DURATION: {
        double d = duration_parse(val);
        if (d < 0) {
            fprintf(stderr, "%s: %s%s '%s': expected a duration of at most a year, like 90s, 5m or 1h\n", cmd,
                    DASHES(o), o->name, val);
            return -1;
        }
        *(double *)o->dest = d;
        return 0;
    }
    case OPT_FLAG: return 0;
    }
    return -1;
}

static Option *find_option(Option *opts, const char *name, size_t len) {
    for (Option *o = opts; o->name; o++)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0) return o;
    return NULL;
}

int parse_args(const char *usage, const char *summary, Option *opts, int argc, char **argv,
               StringList *positional) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s", usage);
    char *cut = strstr(cmd, " [");  // "frontier prepare [options]" -> "frontier prepare"
    if (cut) *cut = 0;
    int only_positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || a[1] == 0) {
            if (!positional) {
                fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", cmd, a, cmd);
                return ARGS_ERROR;
            }
            list_push(positional, a);
            continue;
        }
        if (!strcmp(a, "--")) { only_positional = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { print_help(usage, summary, opts); return ARGS_HELP; }
        const char *name = a + 2;
        if (a[1] != '-') {  // only a one-letter option has a short form: -n is --n
            if (a[2] != 0 || !find_option(opts, a + 1, 1)) {
                fprintf(stderr, "%s: unknown flag '%s': flags are spelled --name (see %s --help)\n", cmd, a, cmd);
                return ARGS_ERROR;
            }
            name = a + 1;
        }
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        Option *o = find_option(opts, name, len);
        if (!o) {
            fprintf(stderr, "%s: unknown flag --%.*s (see %s --help)\n", cmd, (int)len, name, cmd);
            return ARGS_ERROR;
        }
        o->seen = 1;
        if (o->type == OPT_FLAG) {
            if (eq) { fprintf(stderr, "%s: %s%s takes no value\n", cmd, DASHES(o), o->name); return ARGS_ERROR; }
            *(int *)o->dest = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: %s%s needs a value (%s)\n", cmd, DASHES(o), o->name, o->metavar ? o->metavar : "VALUE");
                return ARGS_ERROR;
            }
            val = argv[++i];
        }
        if (set_value(cmd, o, val) != 0) return ARGS_ERROR;
    }
    return ARGS_OK;
}

// An option's current value as text ("" when it has none worth printing: a flag, a list, NULL).
static void value_text(const Option *o, char *buf, size_t n) {
    buf[0] = 0;
    switch (o->type) {
    case OPT_INT: snprintf(buf, n, "%d", *(int *)o->dest); break;
    case OPT_INT64: snprintf(buf, n, "%lld", (long long)*(int64_t *)o->dest); break;
    case OPT_DOUBLE: snprintf(buf, n, "%g", *(double *)o->dest); break;
    case OPT_STRING:
        if (*(const char **)o->dest) snprintf(buf, n, "%s", *(const char **)o->dest);
        break;
    case OPT_FLOAT: snprintf(buf, n, "%g", (double)*(float *)o->dest); break;
    case OPT_CHARS: snprintf(buf, n, "%s", (const char *)o->dest); break;
    case OPT_ENUM: snprintf(buf, n, "%s", o->words[*(int *)o->dest]); break;
    case OPT_DURATION: duration_format(*(double *)o->dest, buf, n); break;
    default: break;
    }
}

void args_print_settings(const Option *opts, FILE *f) {
    static const char *const TYPE[] = {"flag", "int", "int", "number", "text", "list", "number", "text", "text", "text"};
    fprintf(f, "| setting | type | range | default | meaning |\n|---|---|---|---|---|\n");
    for (const Option *o = opts; o->name; o++) {
        char def[128], range[64] = "";
        value_text(o, def, sizeof def);
        if (o->min < o->max) snprintf(range, sizeof range, "%lld..%lld", (long long)o->min, (long long)o->max);
        fprintf(f, "| `%s` | %s | %s | %s | ", o->name, TYPE[o->type], range, *def ? def : "");
        for (const char *c = o->help; *c; c++) fputs(*c == '|' ? "\\|" : (char[2]){*c, 0}, f);
        fputs(" |\n", f);
    }
}

void print_help(const char *usage, const char *summary, const Option *opts) {
    printf("usage: %s\n\n%s\n", usage, summary);
    if (!opts[0].name) return;
    printf("\noptions:\n");
    for (const Option *o = opts; o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s%s", DASHES(o), o->name, o->metavar ? " " : "",
                 o->metavar ? o->metavar : "");
        char def[128];
        value_text(o, def, sizeof def);
        printf("  %-26s %s", left, o->help);
        if (*def && !strstr(o->help, "(default")) printf(" (default %s)", def);  // a help that states it says more
        printf("\n");
    }
    printf("  %-26s %s\n", "--help", "show this help");
}

int report_error(void) {
    fprintf(stderr, "frontier: error: %s\n", err_msg());
    return err_exit_code();
}

const Option *args_find(const Option *opts, const char *name) {
    for (const Option *o = opts; o->name; o++)
        if (!strcmp(o->name, name)) return o;
    return NULL;
}
