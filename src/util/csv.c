// util/csv.c — RFC 4180 CSV (see csv.h).
#include "util/csv.h"

#include <csv.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/mem.h"

int csv_put_field(FILE *f, const char *s) {
    size_t n = strlen(s);
    int quote = strpbrk(s, ",\"\r\n") != NULL ||
                (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t'));
    if (!quote) return fputs(s, f) < 0 ? -1 : 0;
    if (fputc('"', f) == EOF) return -1;
    for (const char *p = s; *p; p++)
        if ((*p == '"' && fputc('"', f) == EOF) || fputc(*p, f) == EOF) return -1;
    return fputc('"', f) == EOF ? -1 : 0;
}

typedef struct {
    const char *path;
    CsvRecordFn fn;
    void *ctx;
    char **fields;       // the record being read
    int n, cap;
    int line;            // the line being fed to the parser
    int newlines;        // line breaks inside the record's fields so far
    int failed;          // the callback returned -1: stop
} Reader;

static void on_field(void *s, size_t len, void *data) {
    Reader *r = data;
    if (r->failed) return;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->fields = xrealloc(r->fields, (size_t)r->cap * sizeof *r->fields);
    }
    char *copy = xmalloc(len + 1);
    if (len) memcpy(copy, s, len);
    copy[len] = 0;
    for (size_t i = 0; i < len; i++) r->newlines += copy[i] == '\n';
    r->fields[r->n++] = copy;
}

static void clear_record(Reader *r) {
    for (int i = 0; i < r->n; i++) free(r->fields[i]);
    r->n = 0;
    r->newlines = 0;
}

// The record ends on the line being fed; it started as many lines earlier as its fields hold
// line breaks (quoted fields keep them as they are).
static void on_record(int c, void *data) {
    (void)c;
    Reader *r = data;
    if (!r->failed && r->fn(r->fields, r->n, r->line - r->newlines, r->ctx) != 0) r->failed = 1;
    clear_record(r);
}

int csv_read(const char *path, const char *text, size_t len, CsvRecordFn fn, void *ctx) {
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) return err_set("%s: libcsv could not start", path);
    Reader r = {.path = path, .fn = fn, .ctx = ctx};
    int rc = 0;
    // Fed a line at a time, so that a record's callback and a parse error know their line.
    for (size_t at = 0; at < len && rc == 0 && !r.failed;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) + 1 : len - at;
        r.line++;
        if (csv_parse(&p, text + at, n, on_field, on_record, &r) != n && !r.failed)
            rc = err_usage("%s:%d: not valid CSV (%s): a '\"' inside an unquoted field, or text after a closing "
                           "quote; a field holding a comma, quote or line break must be quoted as \"...\" with "
                           "inner quotes doubled (RFC 4180)", path, r.line, csv_strerror(csv_error(&p)));
        at += n;
    }
    if (rc == 0 && !r.failed && csv_fini(&p, on_field, on_record, &r) != 0 && !r.failed)
        rc = err_usage("%s:%d: not valid CSV: the file ends inside a quoted field (a '\"' that is never closed)",
                       path, r.line);
    if (r.failed) rc = -1;
    clear_record(&r);
    free(r.fields);
    csv_free(&p);
    return rc;
}
