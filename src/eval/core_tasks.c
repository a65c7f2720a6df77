// eval/core_tasks.c — CORE task loading (libyaml, CSV, cJSON JSONL) and nanochat prompt rendering.
// See core_tasks.h for the contract.
#include "eval/core_tasks.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

const char *core_type_name(CoreTaskType t) {
    switch (t) {
    case CORE_MC: return "multiple_choice";
    case CORE_SCHEMA: return "schema";
    case CORE_LM: return "language_modeling";
    }
    return "?";
}

// ---------------------------------------------------------------------------------------------
// Freeing

static void row_free(CoreRow *r) {
    free(r->text);
    free(r->continuation);
    for (int i = 0; i < r->n_options; i++) free(r->options[i]);
    free(r->options);
    memset(r, 0, sizeof *r);
}

static void task_free(CoreTask *t) {
    free(t->label);
    free(t->dataset_uri);
    free(t->path);
    free(t->delimiter);
    for (size_t i = 0; i < t->n_rows; i++) row_free(&t->rows[i]);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

void core_free(CoreSuite *s) {
    if (!s) return;
    for (int i = 0; i < s->n_tasks; i++) task_free(&s->tasks[i]);
    free(s->tasks);
    free(s->dir);
    free(s);
}

const CoreTask *core_find(const CoreSuite *s, const char *label) {
    for (int i = 0; s && i < s->n_tasks; i++)
        if (strcmp(s->tasks[i].label, label) == 0) return &s->tasks[i];
    return NULL;
}

// ---------------------------------------------------------------------------------------------
// core.yaml (libyaml document API)

static const char *yscalar(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int yline(yaml_node_t *n) { return (int)n->start_mark.line + 1; }

static int parse_int(const char *s, long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_task_node(const char *path, yaml_document_t *doc, yaml_node_t *m, CoreTask *t) {
    if (m->type != YAML_MAPPING_NODE)
        return err_set("%s:%d: each icl_tasks entry must be a mapping (label:, dataset_uri:, num_fewshot:, "
                       "icl_task_type:); fix the indentation of this entry",
                       path, yline(m));
    int have_shots = 0, have_type = 0;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key), *v = yaml_document_get_node(doc, p->value);
        const char *key = yscalar(k);
        if (!key) return err_set("%s:%d: mapping keys must be plain names", path, yline(k));
        const char *val = yscalar(v);
        if (strcmp(key, "label") == 0 || strcmp(key, "dataset_uri") == 0 ||
            strcmp(key, "continuation_delimiter") == 0 || strcmp(key, "icl_task_type") == 0) {
            if (!val) return err_set("%s:%d: '%s' must be a string", path, yline(v), key);
            if (strcmp(key, "label") == 0) {
                free(t->label);
                t->label = xstrdup(val);
            } else if (strcmp(key, "dataset_uri") == 0) {
                free(t->dataset_uri);
                t->dataset_uri = xstrdup(val);
            } else if (strcmp(key, "continuation_delimiter") == 0) {
                free(t->delimiter);
                t->delimiter = xstrdup(val);
            } else {
                if (strcmp(val, "multiple_choice") == 0) t->type = CORE_MC;
                else if (strcmp(val, "schema") == 0) t->type = CORE_SCHEMA;
                else if (strcmp(val, "language_modeling") == 0) t->type = CORE_LM;
                else
                    return err_set("%s:%d: icl_task_type '%s' is not one of multiple_choice, schema, "
                                   "language_modeling",
                                   path, yline(v), val);
                have_type = 1;
            }
        } else if (strcmp(key, "num_fewshot") == 0) {
            long shots;
            if (v->type == YAML_SEQUENCE_NODE) {
                yaml_node_item_t *it = v->data.sequence.items.start;
                if (it == v->data.sequence.items.top)
                    return err_set("%s:%d: num_fewshot is an empty list; write e.g. [0] or [10]", path, yline(v));
                // nanochat uses num_fewshot[0]; a longer list (llm-foundry sweeps) is not supported.
                if (it + 1 != v->data.sequence.items.top)
                    return err_set("%s:%d: num_fewshot lists several values; CORE uses exactly one, e.g. [10]",
                                   path, yline(v));
                yaml_node_t *e = yaml_document_get_node(doc, *it);
                if (parse_int(yscalar(e), &shots))
                    return err_set("%s:%d: num_fewshot must hold an integer", path, yline(e));
            } else if (parse_int(val, &shots)) {
                return err_set("%s:%d: num_fewshot must be a list with one integer, e.g. [10]", path, yline(v));
            }
            if (shots < 0 || shots > 1000)
                return err_set("%s:%d: num_fewshot %ld is out of range 0..1000", path, yline(v), shots);
            t->num_fewshot = (int)shots;
            have_shots = 1;
        }
        // Other keys (has_categories, ...) are not used by CORE.
    }
    if (!t->label) return err_set("%s:%d: task entry lacks 'label:'", path, yline(m));
    if (!t->dataset_uri)
        return err_set("%s:%d: task '%s' lacks 'dataset_uri:'", path, yline(m), t->label);
    if (!have_shots) return err_set("%s:%d: task '%s' lacks 'num_fewshot:'", path, yline(m), t->label);
    if (!have_type) return err_set("%s:%d: task '%s' lacks 'icl_task_type:'", path, yline(m), t->label);
    if (!t->delimiter) t->delimiter = xstrdup(" ");
    return 0;
}

int core_parse_tasks(CoreSuite *s, const char *text, size_t len, const char *path) {
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) return err_set("%s: libyaml could not initialise", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = 0, have_doc = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        rc = err_set("%s:%d:%d: YAML error: %s%s%s; fix the indentation/quoting there", path,
                     (int)parser.problem_mark.line + 1, (int)parser.problem_mark.column + 1,
                     parser.problem ? parser.problem : "malformed", parser.context ? " " : "",
                     parser.context ? parser.context : "");
        goto out;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_MAPPING_NODE) {
        rc = err_set("%s:%d: expected a mapping with an 'icl_tasks:' list at the top", path, root ? yline(root) : 1);
        goto out;
    }
    yaml_node_t *list = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        const char *key = yscalar(yaml_document_get_node(&doc, p->key));
        if (key && strcmp(key, "icl_tasks") == 0) list = yaml_document_get_node(&doc, p->value);
    }
    if (!list || list->type != YAML_SEQUENCE_NODE) {
        rc = err_set("%s:%d: 'icl_tasks:' must be present and be a list of task mappings", path,
                     list ? yline(list) : yline(root));
        goto out;
    }
    int n = (int)(list->data.sequence.items.top - list->data.sequence.items.start);
    s->tasks = xcalloc(n > 0 ? n : 1, sizeof *s->tasks);
    for (int i = 0; i < n; i++) {
        yaml_node_t *m = yaml_document_get_node(&doc, list->data.sequence.items.start[i]);
        s->n_tasks = i + 1;
        if ((rc = parse_task_node(path, &doc, m, &s->tasks[i]))) goto out;
        for (int j = 0; j < i; j++)
            if (strcmp(s->tasks[j].label, s->tasks[i].label) == 0) {
                rc = err_set("%s:%d: task label '%s' appears twice; labels must be unique", path, yline(m),
                             s->tasks[i].label);
                goto out;
            }
    }
    if (n == 0) rc = err_set("%s: 'icl_tasks:' is empty", path);
out:
    if (have_doc) yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc ? err_mark_usage() : 0;
}

static int load_yaml(const char *path, CoreSuite *s) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return err_prefix("the CORE bundle's task list");
    int rc = core_parse_tasks(s, text, len, path);
    free(text);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// eval_meta_data.csv (RFC 4180: quoted fields may hold commas, "" and newlines)

typedef struct {
    char **f;
    int n;
    size_t cap;
    int line;  // line the record starts on
} CsvRec;

static void csv_rec_free(CsvRec *r) {
    for (int i = 0; i < r->n; i++) free(r->f[i]);
    free(r->f);
    memset(r, 0, sizeof *r);
}

// Parse one record starting at *pos; returns 1 if a record was read, 0 at end, -1 on error.
static int csv_next(const char *path, const char *buf, size_t len, size_t *pos, int *line, CsvRec *r) {
    memset(r, 0, sizeof *r);
    if (*pos >= len) return 0;
    r->line = *line;
    char *field = NULL;
    size_t flen = 0, fcap = 0;
    for (;;) {
        // One field.
        flen = 0;
        int quoted = 0;
        if (*pos < len && buf[*pos] == '"') {
            quoted = 1;
            (*pos)++;
        }
        for (;;) {
            if (*pos >= len) {
                if (quoted) {
                    int at = r->line;
                    free(field);
                    csv_rec_free(r);
                    return err_set("%s:%d: unterminated quoted field; close the '\"'", path, at);
                }
                break;
            }
            char c = buf[*pos];
            if (quoted) {
                if (c == '"') {
                    if (*pos + 1 < len && buf[*pos + 1] == '"') {
                        *pos += 2;
                        GROW(field, fcap, flen + 2);
                        field[flen++] = '"';
                        continue;
                    }
                    (*pos)++;
                    quoted = 0;
                    continue;
                }
                if (c == '\n') (*line)++;
            } else if (c == ',' || c == '\n' || c == '\r') {
                break;
            }
            GROW(field, fcap, flen + 2);
            field[flen++] = c;
            (*pos)++;
        }
        GROW(field, fcap, flen + 1);
        field[flen] = 0;
        GROW(r->f, r->cap, (size_t)r->n + 1);
        r->f[r->n++] = xstrdup(field);
        if (*pos < len && buf[*pos] == ',') {
            (*pos)++;
            continue;
        }
        if (*pos < len && buf[*pos] == '\r') (*pos)++;
        if (*pos < len && buf[*pos] == '\n') {
            (*pos)++;
            (*line)++;
        }
        break;
    }
    free(field);
    return 1;
}

int core_parse_baselines(CoreSuite *s, const char *buf, size_t len, const char *path) {
    size_t pos = 0;
    int line = 1, rc = 0;
    CsvRec hdr, r;
    int got = csv_next(path, buf, len, &pos, &line, &hdr);
    if (got < 0) return err_mark_usage();
    if (got == 0) {
        return err_usage("%s:1: empty file; expected a header with 'Eval Task' and 'Random baseline'", path);
    }
    int c_task = -1, c_base = -1;
    for (int i = 0; i < hdr.n; i++) {
        if (strcmp(hdr.f[i], "Eval Task") == 0) c_task = i;
        if (strcmp(hdr.f[i], "Random baseline") == 0) c_base = i;
    }
    csv_rec_free(&hdr);
    if (c_task < 0 || c_base < 0) {
        return err_usage("%s:1: header lacks 'Eval Task' or 'Random baseline' column", path);
    }
    int *found = xcalloc(s->n_tasks + 1, sizeof *found);
    int k;
    while ((k = csv_next(path, buf, len, &pos, &line, &r)) == 1) {
        if (r.n == 1 && r.f[0][0] == 0) {  // blank line
            csv_rec_free(&r);
            continue;
        }
        if (r.n <= c_task || r.n <= c_base) {
            rc = err_set("%s:%d: row has %d fields, fewer than the header's columns", path, r.line, r.n);
            csv_rec_free(&r);
            break;
        }
        for (int i = 0; i < s->n_tasks; i++) {
            if (strcmp(s->tasks[i].label, r.f[c_task]) != 0) continue;
            char *end;
            errno = 0;
            double b = strtod(r.f[c_base], &end);
            if (errno || end == r.f[c_base] || *end || b < 0 || b >= 100) {
                rc = err_set("%s:%d: 'Random baseline' of %s is '%s'; expected a percentage in [0, 100)", path,
                             r.line, r.f[c_task], r.f[c_base]);
                break;
            }
            s->tasks[i].baseline = b / 100.0;
            found[i] = 1;
        }
        csv_rec_free(&r);
        if (rc) break;
    }
    if (k < 0) rc = -1;
    for (int i = 0; !rc && i < s->n_tasks; i++)
        if (!found[i])
            rc = err_set("%s: no row for task '%s' (column 'Eval Task'); add its random baseline", path,
                         s->tasks[i].label);
    free(found);
    return rc ? err_mark_usage() : 0;
}

static int load_csv(const char *path, CoreSuite *s) {
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf) return err_prefix("random baselines");
    int rc = core_parse_baselines(s, buf, len, path);
    free(buf);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// JSONL rows

static char *json_str(const char *path, int line, const cJSON *o, const char *key, int *rc) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || !v->valuestring) {
        *rc = err_set("%s:%d: field \"%s\" must be a string%s", path, line, key, v ? "" : " (it is missing)");
        return NULL;
    }
    return xstrdup(v->valuestring);
}

static int json_list(const char *path, int line, const cJSON *o, const char *key, CoreRow *r) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1)
        return err_set("%s:%d: field \"%s\" must be a non-empty list of strings", path, line, key);
    int n = cJSON_GetArraySize(v);
    r->options = xcalloc(n, sizeof *r->options);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e) || !e->valuestring)
            return err_set("%s:%d: \"%s\"[%d] must be a string", path, line, key, r->n_options);
        r->options[r->n_options++] = xstrdup(e->valuestring);
    }
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, "gold");
    // Range before the conversion: a double outside int's range has no int value.
    if (!cJSON_IsNumber(g) || !(g->valuedouble >= 0 && g->valuedouble < n) || g->valuedouble != floor(g->valuedouble))
        return err_set("%s:%d: field \"gold\" must be an integer index into \"%s\" (0 to %d)%s", path, line, key,
                       n - 1, cJSON_IsNumber(g) ? "" : ", it is not a number");
    r->gold = (int)g->valuedouble;
    return 0;
}

static int parse_row(const char *path, int line, const cJSON *o, CoreTaskType type, CoreRow *r) {
    int rc = 0;
    r->gold = -1;
    if (!cJSON_IsObject(o)) return err_set("%s:%d: each line must be a JSON object", path, line);
    switch (type) {
    case CORE_MC:
        if (!(r->text = json_str(path, line, o, "query", &rc))) return rc;
        return json_list(path, line, o, "choices", r);
    case CORE_SCHEMA:
        if (!(r->continuation = json_str(path, line, o, "continuation", &rc))) return rc;
        return json_list(path, line, o, "context_options", r);
    case CORE_LM:
        if (!(r->text = json_str(path, line, o, "context", &rc))) return rc;
        if (!(r->continuation = json_str(path, line, o, "continuation", &rc))) return rc;
        return 0;
    }
    return err_set("%s:%d: unknown task type", path, line);
}

int core_parse_rows(CoreTask *t, const char *buf, size_t len, const char *path) {
    size_t cap = t->n_rows;
    int line = 0, rc = 0;
    for (size_t pos = 0; pos < len && !rc;) {
        line++;
        const char *p = buf + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + (nl ? 1 : 0);
        size_t a = 0;
        while (a < n && (p[a] == ' ' || p[a] == '\t' || p[a] == '\r')) a++;
        if (a == n) continue;  // blank line
        const char *end = NULL;
        cJSON *o = cJSON_ParseWithLengthOpts(p, n, &end, 0);
        if (!o) {
            size_t col = end && end >= p ? (size_t)(end - p) + 1 : 1;
            rc = err_set("%s:%d: invalid JSON near column %zu; each line must be one JSON object (fix or "
                         "remove the line)",
                         path, line, col);
            break;
        }
        for (; end < p + n; end++)
            if (*end != ' ' && *end != '\t' && *end != '\r') {
                rc = err_set("%s:%d: text after the JSON object at column %zu; put one object per line",
                             path, line, (size_t)(end - p) + 1);
                break;
            }
        if (!rc) {
            GROW(t->rows, cap, t->n_rows + 1);
            CoreRow *r = &t->rows[t->n_rows];
            memset(r, 0, sizeof *r);
            rc = parse_row(path, line, o, t->type, r);
            if (rc) row_free(r);
            else t->n_rows++;
        }
        cJSON_Delete(o);
    }
    if (!rc && t->n_rows == 0) rc = err_set("%s: no rows; the task file is empty", path);
    if (!rc && t->n_rows <= (size_t)t->num_fewshot)
        rc = err_set("%s: %zu rows, but %s needs %d few-shot examples besides the row itself", path,
                     t->n_rows, t->label ? t->label : "the task", t->num_fewshot);
    return rc ? err_mark_usage() : 0;
}

static int load_rows(CoreTask *t) {
    size_t len;
    char *buf = read_file(t->path, &len);
    if (!buf) return err_prefix("CORE task %s", t->label);
    int rc = core_parse_rows(t, buf, len, t->path);
    free(buf);
    return rc;
}



CoreSuite *core_load(const char *core_dir) {
    CoreSuite *s = xcalloc(1, sizeof *s);
    s->dir = xstrdup(core_dir);
    char *yp = path_join(core_dir, "core.yaml"), *cp = path_join(core_dir, "eval_meta_data.csv");
    char *dd = path_join(core_dir, "eval_data");
    int rc = load_yaml(yp, s);
    if (!rc) rc = load_csv(cp, s);
    for (int i = 0; !rc && i < s->n_tasks; i++) {
        CoreTask *t = &s->tasks[i];
        t->path = path_join(dd, t->dataset_uri);
        if (!path_exists(t->path)) {
            t->available = 0;  // e.g. coqa: reported as unavailable, not an error
            continue;
        }
        t->available = 1;
        rc = load_rows(t);
    }
    free(yp);
    free(cp);
    free(dd);
    if (rc) {
        core_free(s);
        return NULL;
    }
    return s;
}

int core_task_permute(CoreTask *t, const size_t *perm, size_t n) {
    if (n > t->n_rows) return err_set("%s: cannot keep %zu rows of %zu", t->label, n, t->n_rows);
    unsigned char *used = xcalloc(t->n_rows ? t->n_rows : 1, 1);
    for (size_t i = 0; i < n; i++) {
        if (perm[i] >= t->n_rows || used[perm[i]]) {
            free(used);
            return err_set("%s: permutation entry %zu (= %zu) is out of range or repeated", t->label, i, perm[i]);
        }
        used[perm[i]] = 1;
    }
    CoreRow *nr = xcalloc(n ? n : 1, sizeof *nr);
    for (size_t i = 0; i < n; i++) nr[i] = t->rows[perm[i]];
    for (size_t i = 0; i < t->n_rows; i++)
        if (!used[i]) row_free(&t->rows[i]);
    free(used);
    free(t->rows);
    t->rows = nr;
    t->n_rows = n;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Rendering

// Python's str.isspace() set: \t \n \v \f \r, \x1c-\x1f, space, U+0085, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
static int py_space_cp(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
           c == 0x3000;
}

// Decode one UTF-8 code point at s[i..n); returns its byte length (invalid bytes count as 1, cp = ~0).
static size_t utf8_next(const unsigned char *s, size_t i, size_t n, uint32_t *cp) {
    unsigned c = s[i];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (k == 0 || i + k > n) {
        *cp = 0xffffffffu;
        return 1;
    }
    uint32_t v = k == 1 ? c : k == 2 ? (c & 0x1f) : k == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t j = 1; j < k; j++) {
        if ((s[i + j] & 0xc0) != 0x80) {
            *cp = 0xffffffffu;
            return 1;
        }
        v = (v << 6) | (s[i + j] & 0x3f);
    }
    *cp = v;
    return k;
}

void core_py_strip(const char *str, size_t n, size_t *start, size_t *len) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0, first = n, last_end = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = utf8_next(s, i, n, &cp);
        if (!py_space_cp(cp)) {
            if (first == n) first = i;
            last_end = i + k;
        }
        i += k;
    }
    if (first == n) {
        *start = 0;
        *len = 0;
        return;
    }
    *start = first;
    *len = last_end - first;
}

typedef struct {
    char *b;
    size_t n, cap;
} Buf;

static void buf_put(Buf *b, const char *s, size_t n) {
    GROW(b->b, b->cap, b->n + n + 1);
    memcpy(b->b + b->n, s, n);
    b->n += n;
    b->b[b->n] = 0;
}
static void buf_puts(Buf *b, const char *s) { buf_put(b, s, strlen(s)); }
static void buf_trim(Buf *b, const char *s) {  // Jinja's |trim == Python str.strip()
    size_t a, n;
    core_py_strip(s, strlen(s), &a, &n);
    buf_put(b, s + a, n);
}

static char *dup_n(const char *s, size_t n) {
    char *r = xmalloc(n + 1);
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static void set_pair(CorePair *p, const char *prefix, size_t np, const char *cont) {
    size_t nc = strlen(cont);
    p->prefix = dup_n(prefix, np);
    p->continuation = dup_n(cont, nc);
    p->full = xmalloc(np + nc + 1);
    memcpy(p->full, prefix, np);
    memcpy(p->full + np, cont, nc + 1);
}

void core_prompts_free(CorePrompts *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        free(p->pairs[i].prefix);
        free(p->pairs[i].continuation);
        free(p->pairs[i].full);
    }
    free(p->pairs);
    p->pairs = NULL;
    p->n = 0;
}

int core_render(const CoreTask *t, size_t row, const size_t *fewshot, int n_fewshot, CorePrompts *out) {
    core_prompts_free(out);
    if (!t->available) return err_set("CORE task %s is unavailable: %s is missing", t->label, t->path);
    if (row >= t->n_rows) return err_set("CORE task %s: row %zu out of range (%zu rows)", t->label, row, t->n_rows);
    if (n_fewshot < 0 || (n_fewshot > 0 && !fewshot))
        return err_set("CORE task %s: bad few-shot list", t->label);
    for (int i = 0; i < n_fewshot; i++)
        if (fewshot[i] >= t->n_rows)
            return err_set("CORE task %s: few-shot index %zu out of range (%zu rows)", t->label, fewshot[i],
                           t->n_rows);
    const char *d = t->delimiter;
    const CoreRow *r = &t->rows[row];
    // The few-shot block, identical for every pair of this row.
    Buf shots = {0};
    buf_put(&shots, "", 0);
    for (int i = 0; i < n_fewshot; i++) {
        const CoreRow *e = &t->rows[fewshot[i]];
        switch (t->type) {
        case CORE_MC:
            buf_puts(&shots, e->text);
            buf_puts(&shots, d);
            buf_puts(&shots, e->options[e->gold]);
            break;
        case CORE_SCHEMA:
            buf_puts(&shots, e->options[e->gold]);
            buf_puts(&shots, d);
            buf_puts(&shots, e->continuation);
            break;
        case CORE_LM:
            buf_trim(&shots, e->text);
            buf_puts(&shots, d);
            buf_puts(&shots, e->continuation);
            break;
        }
        buf_puts(&shots, "\n\n");
    }
    int rc = 0;
    if (t->type == CORE_MC || t->type == CORE_SCHEMA) {
        out->n = r->n_options;
        out->pairs = xcalloc(out->n, sizeof *out->pairs);
        Buf pre = {0};
        for (int i = 0; i < r->n_options; i++) {
            pre.n = 0;
            buf_put(&pre, shots.b, shots.n);
            buf_puts(&pre, t->type == CORE_MC ? r->text : r->options[i]);
            buf_puts(&pre, d);
            set_pair(&out->pairs[i], pre.b, pre.n, t->type == CORE_MC ? r->options[i] : r->continuation);
        }
        free(pre.b);
    } else {
        Buf with = {0};
        buf_put(&with, shots.b, shots.n);
        buf_trim(&with, r->text);
        buf_puts(&with, d);
        size_t a, n;
        core_py_strip(with.b, with.n, &a, &n);  // prompt_without = (...).strip()
        buf_puts(&with, r->continuation);       // prompt_with
        if (a != 0) {
            rc = err_set("CORE task %s row %zu: the stripped prompt is not a prefix of the full prompt", t->label,
                         row);
        } else {
            out->n = 1;
            out->pairs = xcalloc(1, sizeof *out->pairs);
            set_pair(&out->pairs[0], with.b, n, with.b + n);
        }
        free(with.b);
    }
    free(shots.b);
    return rc;
}
