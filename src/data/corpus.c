// data/corpus.c — reading documents from JSON Lines or .txt files (see corpus.h).
#include "data/corpus.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

const char *const CORPUS_EXTS[] = {".jsonl", ".txt", NULL};

static void doclist_add(DocList *d, const char *text, size_t len) {
    GROW(d->arena, d->arena_cap, d->arena_len + len + 1);
    if (d->n == (int)d->slots) {
        d->slots = d->slots ? d->slots * 2 : 256;
        d->off = xrealloc(d->off, d->slots * sizeof *d->off);
        d->len = xrealloc(d->len, d->slots * sizeof *d->len);
    }
    memcpy(d->arena + d->arena_len, text, len);
    d->arena[d->arena_len + len] = 0;
    d->off[d->n] = d->arena_len;
    d->len[d->n++] = len;
    d->arena_len += len + 1;
    d->bytes += len;
}

void doclist_free(DocList *d) {
    free(d->arena);
    free(d->off);
    free(d->len);
    memset(d, 0, sizeof *d);
}

// Where a document holds a NUL byte (U+0000), it is refused rather than kept: the corpus is text,
// and a NUL in it is damage (binary data, a bad conversion) to be fixed at the source, not
// something to train on. cJSON hands strings over NUL-terminated, so a \u0000 escape would
// otherwise end the document there without a word.
static int nul_error(const char *path, int line, size_t file_off, size_t col, const char *what, const char *fix) {
    return err_usage("%s:%d: %s at byte offset %zu (column %zu): documents may not contain NUL (U+0000); %s", path,
                     line, what, file_off, col, fix);
}

// Offset in p[0..n) of the first \u0000 escape inside the value of top-level member number
// `member` (0-based, in file order) of the JSON object on this line, or -1. The line has been
// parsed by cJSON already, so it is valid JSON: only strings, nesting and member separators need
// telling apart.
static long nul_escape_in_member(const char *p, size_t n, int member) {
    int depth = 0, idx = -1, in_str = 0, is_key = 0, expect_key = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_str) {
            if (c == '\\') {
                if (!is_key && idx == member && i + 5 < n && p[i + 1] == 'u' && !memcmp(p + i + 2, "0000", 4))
                    return (long)i;
                i++;  // the escaped character; a \uXXXX's hex digits are plain characters after it
            } else if (c == '"') {
                in_str = 0;
            }
            continue;
        }
        if (c == '"') in_str = 1, is_key = depth == 1 && expect_key;
        else if (c == '{' || c == '[') expect_key = ++depth == 1 && c == '{';
        else if (c == '}' || c == ']') depth--;
        else if (c == ',' && depth == 1) expect_key = 1;
        else if (c == ':' && depth == 1) expect_key = 0, idx++;
    }
    return -1;
}

static int read_jsonl(const char *path, char *buf, size_t n, DocList *docs) {
    int line_no = 0;
    for (char *p = buf; p < buf + n;) {
        char *nl = memchr(p, '\n', (size_t)(buf + n - p));
        char *end = nl ? nl : buf + n;
        line_no++;
        size_t len = (size_t)(end - p);
        const char *raw_nul = memchr(p, 0, len);
        if (raw_nul)
            return nul_error(path, line_no, (size_t)(raw_nul - buf), (size_t)(raw_nul - p) + 1, "a raw NUL byte",
                             "remove it (JSON text never holds one unescaped)");
        int blank = 1;
        for (size_t i = 0; i < len && blank; i++) blank = (p[i] == ' ' || p[i] == '\t' || p[i] == '\r');
        if (!blank) {
            const char *parse_end = NULL;
            cJSON *obj = cJSON_ParseWithLengthOpts(p, len, &parse_end, 0);
            if (!obj) {
                const char *at = cJSON_GetErrorPtr();
                long col = at && at >= p && at <= end ? (long)(at - p) + 1 : 1;
                return err_usage("%s:%d: not valid JSON (near column %ld); each line must be one JSON object "
                                 "with a \"text\" string", path, line_no, col);
            }
            const cJSON *text = cJSON_GetObjectItemCaseSensitive(obj, "text");
            if (!cJSON_IsString(text)) {
                cJSON_Delete(obj);
                return err_usage("%s:%d: no string field \"text\" in this JSON object", path, line_no);
            }
            int member = 0;
            for (const cJSON *c = cJSON_IsObject(obj) ? obj->child : NULL; c && c != text; c = c->next) member++;
            long at = nul_escape_in_member(p, parse_end && parse_end > p ? (size_t)(parse_end - p) : len, member);
            if (at >= 0) {
                cJSON_Delete(obj);
                return nul_error(path, line_no, (size_t)(p - buf) + (size_t)at, (size_t)at + 1,
                                 "a \\u0000 escape in \"text\"", "remove the \\u0000 escapes from the document");
            }
            doclist_add(docs, text->valuestring, strlen(text->valuestring));
            cJSON_Delete(obj);
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int corpus_read_file(const char *path, DocList *docs) {
    docs->n = 0;
    docs->bytes = 0;
    docs->arena_len = 0;
    size_t n;
    char *buf = read_file(path, &n);
    if (!buf) return -1;
    int rc = 0;
    if (path_has_suffix(path, ".txt")) {
        const char *nul = memchr(buf, 0, n);
        if (nul) {
            int line = 1;
            const char *bol = buf;
            for (const char *q = buf; q < nul; q++)
                if (*q == '\n') line++, bol = q + 1;
            rc = nul_error(path, line, (size_t)(nul - buf), (size_t)(nul - bol) + 1, "a NUL byte",
                           "remove it (e.g. tr -d '\\000' < FILE > FIXED.txt)");
        } else {
            doclist_add(docs, buf, n);
        }
    } else if (path_has_suffix(path, ".jsonl") || path_has_suffix(path, ".json")) {
        rc = read_jsonl(path, buf, n, docs);
    } else {
        rc = err_usage("%s: unknown corpus format (expected .jsonl with a \"text\" field per line, or .txt)", path);
    }
    free(buf);
    return rc;
}
