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

static int read_jsonl(const char *path, char *buf, size_t n, DocList *docs) {
    int line_no = 0;
    for (char *p = buf; p < buf + n;) {
        char *nl = memchr(p, '\n', (size_t)(buf + n - p));
        char *end = nl ? nl : buf + n;
        line_no++;
        size_t len = (size_t)(end - p);
        int blank = 1;
        for (size_t i = 0; i < len && blank; i++) blank = (p[i] == ' ' || p[i] == '\t' || p[i] == '\r');
        if (!blank) {
            const char *parse_end = NULL;
            cJSON *obj = cJSON_ParseWithLengthOpts(p, len, &parse_end, 0);
            if (!obj) {
                const char *at = cJSON_GetErrorPtr();
                long col = at && at >= p && at <= end ? (long)(at - p) + 1 : 1;
                return err_set("%s:%d: not valid JSON (near column %ld); each line must be one JSON object "
                               "with a \"text\" string", path, line_no, col);
            }
            const cJSON *text = cJSON_GetObjectItemCaseSensitive(obj, "text");
            if (!cJSON_IsString(text)) {
                cJSON_Delete(obj);
                return err_set("%s:%d: no string field \"text\" in this JSON object", path, line_no);
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
    if (path_has_suffix(path, ".txt")) doclist_add(docs, buf, n);
    else if (path_has_suffix(path, ".jsonl") || path_has_suffix(path, ".json")) rc = read_jsonl(path, buf, n, docs);
    else rc = err_set("%s: unknown corpus format (expected .jsonl with a \"text\" field per line, or .txt)", path);
    free(buf);
    return rc;
}
