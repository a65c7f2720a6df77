// util/safetensors.c — safetensors reader and writer (see safetensors.h).
#include "util/safetensors.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

// Tensor bytes and the header length are little-endian on disk; we copy them as they are.
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors.c assumes a little-endian host");

// The reference implementation refuses headers over 100 MB; so do we (a sanity bound: a bad
// length field would otherwise make us parse gigabytes of tensor data as JSON).
#define ST_MAX_HEADER 100000000ull
// Shapes and offsets are JSON numbers, parsed as doubles: exact up to 2^53.
#define ST_MAX_INT 9007199254740992.0

static const struct {
    const char *name;
    size_t size;
} DTYPES[ST_NUM_DTYPES] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},    [ST_I8] = {"I8", 1},
    [ST_U16] = {"U16", 2},   [ST_I16] = {"I16", 2},  [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_U32] = {"U32", 4},  [ST_I32] = {"I32", 4},
    [ST_F32] = {"F32", 4},   [ST_U64] = {"U64", 8},  [ST_I64] = {"I64", 8},
    [ST_F64] = {"F64", 8},
};

const char *st_dtype_name(StDtype dtype) {
    return (unsigned)dtype < ST_NUM_DTYPES ? DTYPES[dtype].name : "?";
}

size_t st_dtype_size(StDtype dtype) {
    return (unsigned)dtype < ST_NUM_DTYPES ? DTYPES[dtype].size : 0;
}

int st_dtype_parse(const char *name) {
    for (int i = 0; i < ST_NUM_DTYPES; i++)
        if (strcmp(DTYPES[i].name, name) == 0) return i;
    return -1;
}

char *st_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
    size_t used = 0;
#define APPEND(...)                                                            \
    do {                                                                       \
        int k_ = snprintf(buf + used, cap > used ? cap - used : 0, __VA_ARGS__); \
        if (k_ > 0) used += (size_t)k_;                                        \
    } while (0)
    if (cap == 0) return buf;
    buf[0] = 0;
    APPEND("(");
    for (int i = 0; i < ndim; i++) APPEND(i ? ", %lld" : "%lld", (long long)shape[i]);
    APPEND(ndim == 1 ? ",)" : ")");
#undef APPEND
    return buf;
}

// numel and nbytes of a shape, with overflow checks. Returns 0 or -1 (no message set).
static int shape_size(const int64_t *shape, int ndim, StDtype dtype, int64_t *numel,
                      size_t *nbytes) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n)) return -1;
    }
    size_t b;
    if (__builtin_mul_overflow((size_t)n, st_dtype_size(dtype), &b)) return -1;
    *numel = n;
    *nbytes = b;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

typedef struct {
    char *name;
    StDtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
} WTensor;

typedef struct {
    char *key, *value;
} StKV;

struct StWriter {
    WTensor *t;
    size_t n, cap;
    StKV *meta;
    size_t n_meta, cap_meta;
    char *error;  // the first st_add / st_meta error; st_save fails with it
};

StWriter *st_writer_new(void) { return xcalloc(1, sizeof(StWriter)); }

void st_writer_free(StWriter *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < w->n_meta; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->t);
    free(w->meta);
    free(w->error);
    free(w);
}

// Set the error message and remember the first one in the writer. Returns -1.
#define WRITER_FAIL(w, ...)                                   \
    do {                                                      \
        err_set(__VA_ARGS__);                                 \
        if (!(w)->error) (w)->error = xstrdup(err_msg());     \
        return -1;                                            \
    } while (0)

int st_add(StWriter *w, const char *name, StDtype dtype, const int64_t *shape, int ndim,
           const void *data) {
    if (!name || !*name) WRITER_FAIL(w, "safetensors: a tensor needs a non-empty name");
    if (strcmp(name, "__metadata__") == 0)
        WRITER_FAIL(w, "safetensors: \"__metadata__\" is reserved for metadata and cannot name a "
                       "tensor; rename it");
    if ((unsigned)dtype >= ST_NUM_DTYPES)
        WRITER_FAIL(w, "safetensors: tensor %s has an invalid dtype (%d)", name, (int)dtype);
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape))
        WRITER_FAIL(w, "safetensors: tensor %s has %d dimensions; 0 to %d are supported", name, ndim,
                    ST_MAX_DIMS);
    int64_t numel;
    size_t nbytes;
    if (shape_size(shape, ndim, dtype, &numel, &nbytes) != 0) {
        char s[256];
        WRITER_FAIL(w, "safetensors: tensor %s has shape %s: dimensions must be >= 0 and the size "
                       "must fit in memory", name, st_shape_str(shape, ndim, s, sizeof s));
    }
    if (nbytes > 0 && !data)
        WRITER_FAIL(w, "safetensors: tensor %s has %zu bytes but no data (NULL)", name, nbytes);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            WRITER_FAIL(w, "safetensors: tensor %s added twice; names must be unique", name);
    GROW(w->t, w->cap, w->n + 1);
    WTensor *t = &w->t[w->n++];
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->data = data;
    t->nbytes = nbytes;
    return 0;
}

int st_meta(StWriter *w, const char *key, const char *value) {
    if (!key || !value) WRITER_FAIL(w, "safetensors: metadata key and value must not be NULL");
    for (size_t i = 0; i < w->n_meta; i++)
        if (strcmp(w->meta[i].key, key) == 0) {
            free(w->meta[i].value);
            w->meta[i].value = xstrdup(value);
            return 0;
        }
    GROW(w->meta, w->cap_meta, w->n_meta + 1);
    w->meta[w->n_meta].key = xstrdup(key);
    w->meta[w->n_meta].value = xstrdup(value);
    w->n_meta++;
    return 0;
}

typedef struct {
    size_t elem, index;
} LayoutKey;

static int cmp_layout(const void *a, const void *b) {
    const LayoutKey *x = a, *y = b;
    if (x->elem != y->elem) return x->elem > y->elem ? -1 : 1;  // larger elements first
    return x->index < y->index ? -1 : x->index > y->index;      // then in the order added
}

static cJSON *json_int_array(const int64_t *v, int n) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)v[i]);
        cJSON_AddItemToArray(arr, cJSON_CreateRaw(num));  // exact, whatever the magnitude
    }
    return arr;
}

int st_save(StWriter *w, const char *path) {
    if (w->error) return err_set("cannot save %s: %s", path, w->error);

    // Layout: by element size (largest first), so each tensor is aligned to its element size.
    LayoutKey *order = xmalloc((w->n ? w->n : 1) * sizeof *order);
    for (size_t i = 0; i < w->n; i++) order[i] = (LayoutKey){st_dtype_size(w->t[i].dtype), i};
    qsort(order, w->n, sizeof *order, cmp_layout);
    int64_t *begin = xmalloc((w->n ? w->n : 1) * sizeof *begin);
    size_t pos = 0;
    for (size_t k = 0; k < w->n; k++) {
        begin[order[k].index] = (int64_t)pos;
        pos += w->t[order[k].index].nbytes;
    }

    // Header: metadata first, then the tensors in the order added.
    cJSON *root = cJSON_CreateObject();
    if (w->n_meta) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        for (size_t i = 0; i < w->n_meta; i++)
            cJSON_AddStringToObject(meta, w->meta[i].key, w->meta[i].value);
    }
    for (size_t i = 0; i < w->n; i++) {
        const WTensor *t = &w->t[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "dtype", st_dtype_name(t->dtype));
        cJSON_AddItemToObject(e, "shape", json_int_array(t->shape, t->ndim));
        int64_t off[2] = {begin[i], begin[i] + (int64_t)t->nbytes};
        cJSON_AddItemToObject(e, "data_offsets", json_int_array(off, 2));
        cJSON_AddItemToObject(root, t->name, e);
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    free(begin);
    if (!json) {
        free(order);
        return err_set("cannot save %s: out of memory formatting the header", path);
    }

    // 8-byte length, then the header padded with spaces so the data starts at a multiple of 8.
    size_t json_len = strlen(json), pad = (8 - json_len % 8) % 8;
    uint64_t header_len = json_len + pad;
    char *head = xmalloc(8 + header_len);
    memcpy(head, &header_len, 8);
    memcpy(head + 8, json, json_len);
    memset(head + 8 + json_len, ' ', pad);
    free(json);

    AtomicFile af;
    int rc = atomic_open(&af, path);
    if (rc == 0) {
        rc = atomic_write(&af, head, 8 + header_len);
        for (size_t k = 0; rc == 0 && k < w->n; k++) {
            const WTensor *t = &w->t[order[k].index];
            rc = atomic_write(&af, t->data, t->nbytes);
        }
        if (rc == 0) rc = atomic_commit(&af);  // aborts (removes the temp file) on failure
        else atomic_abort(&af);
    }
    free(head);
    free(order);
    if (rc != 0) return err_prefix("cannot save %s", path);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

struct StFile {
    char *path;
    void *map;
    size_t map_len;
    StTensor *t;   // header order
    int n;
    int *by_name;  // indices into t sorted by name, for st_get
    StKV *meta;
    int n_meta;
};

void st_close(StFile *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->map_len);
    for (int i = 0; i < f->n; i++) free((char *)f->t[i].name);
    for (int i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->t);
    free(f->by_name);
    free(f->meta);
    free(f->path);
    free(f);
}

const char *st_path(const StFile *f) { return f->path; }
int st_count(const StFile *f) { return f->n; }
const StTensor *st_tensor(const StFile *f, int i) {
    return i >= 0 && i < f->n ? &f->t[i] : NULL;
}
int st_meta_count(const StFile *f) { return f->n_meta; }
const char *st_meta_at(const StFile *f, int i, const char **value) {
    if (i < 0 || i >= f->n_meta) return NULL;
    if (value) *value = f->meta[i].value;
    return f->meta[i].key;
}

const char *st_get_meta(const StFile *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

static int cmp_by_name_r(const void *a, const void *b, void *ctx) {
    const StTensor *t = ctx;
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

static int cmp_meta_key_r(const void *a, const void *b, void *ctx) {
    const StKV *m = ctx;
    return strcmp(m[*(const int *)a].key, m[*(const int *)b].key);
}

static int cmp_by_offset_r(const void *a, const void *b, void *ctx) {
    const StTensor *t = ctx;
    const StTensor *x = &t[*(const int *)a], *y = &t[*(const int *)b];
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

const StTensor *st_get(const StFile *f, const char *name) {
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->t[f->by_name[mid]].name, name);
        if (c == 0) return &f->t[f->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

// A JSON number that is an exact non-negative integer (as safetensors' u64/usize fields are).
static int json_uint(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= ST_MAX_INT) || d != (double)(int64_t)d) return -1;
    *out = (int64_t)d;
    return 0;
}

// Parse one tensor entry of the header into t (name already set). data_size: buffer bytes.
static int parse_entry(const char *path, const cJSON *e, StTensor *t, uint64_t data_size) {
    const char *name = t->name;
    if (!cJSON_IsObject(e))
        return err_set("%s: tensor %s: its header entry is not a JSON object; the file is corrupt "
                       "or not a safetensors file", path, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dtype))
        return err_set("%s: tensor %s has no \"dtype\" string in the header; the file is corrupt — "
                       "save it again", path, name);
    if (!cJSON_IsArray(shape))
        return err_set("%s: tensor %s has no \"shape\" array in the header; the file is corrupt — "
                       "save it again", path, name);
    if (!cJSON_IsArray(offs))
        return err_set("%s: tensor %s has no \"data_offsets\" array in the header; the file is "
                       "corrupt — save it again", path, name);
    int dt = st_dtype_parse(dtype->valuestring);
    if (dt < 0)
        return err_set("%s: tensor %s has dtype \"%s\", which is not supported (supported: BOOL, U8, "
                       "I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64); convert it when "
                       "saving", path, name, dtype->valuestring);
    t->dtype = (StDtype)dt;
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ST_MAX_DIMS)
        return err_set("%s: tensor %s has %d dimensions; at most %d are supported", path, name, ndim,
                       ST_MAX_DIMS);
    t->ndim = ndim;
    int i = 0;
    for (const cJSON *d = shape->child; d; d = d->next, i++)
        if (json_uint(d, &t->shape[i]) != 0)
            return err_set("%s: tensor %s: shape entry %d is not a non-negative integer; the file is "
                           "corrupt — save it again", path, name, i);
    if (shape_size(t->shape, ndim, t->dtype, &t->numel, &t->nbytes) != 0)
        return err_set("%s: tensor %s: shape is too large (size overflows); the file is corrupt",
                       path, name);
    int64_t b, e2;
    if (cJSON_GetArraySize(offs) != 2 || json_uint(offs->child, &b) != 0 ||
        json_uint(offs->child->next, &e2) != 0 || b > e2)
        return err_set("%s: tensor %s: data_offsets must be [begin, end] with 0 <= begin <= end; the "
                       "file is corrupt — save it again", path, name);
    char s[256];
    if ((uint64_t)e2 > data_size)
        return err_set("%s: tensor %s: data_offsets [%lld, %lld] are out of range: the data buffer "
                       "has only %llu bytes; the file is truncated or corrupt — save it again",
                       path, name, (long long)b, (long long)e2, (unsigned long long)data_size);
    if ((uint64_t)(e2 - b) != t->nbytes)
        return err_set("%s: tensor %s is %s with shape %s, which takes %zu bytes, but its "
                       "data_offsets [%lld, %lld] span %lld bytes; the file is corrupt — save it "
                       "again", path, name, st_dtype_name(t->dtype),
                       st_shape_str(t->shape, ndim, s, sizeof s), t->nbytes, (long long)b,
                       (long long)e2, (long long)(e2 - b));
    t->offset = (size_t)b;
    return 0;
}

// Parse and validate the header; fill f->t, f->meta. data: the buffer (data_size bytes).
static int parse_header(StFile *f, const char *hdr, size_t len, const char *data,
                        uint64_t data_size) {
    const char *path = f->path;
    if (len < 2 || hdr[0] != '{')
        return err_set("%s: the header does not start with '{'; not a safetensors file", path);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, len, &end, 0);
    if (!root) {
        size_t at = end && end >= hdr && end <= hdr + len ? (size_t)(end - hdr) : 0;
        return err_set("%s: the header (%zu bytes) is not valid JSON (error near byte %zu); the file "
                       "is corrupt or not a safetensors file — save it again", path, len, at);
    }
    for (const char *p = end; p < hdr + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return err_set("%s: the header has extra bytes after the JSON object (at byte %zu of "
                           "%zu); the file is corrupt — save it again", path, (size_t)(p - hdr), len);
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return err_set("%s: the header is not a JSON object; not a safetensors file", path);
    }
    int n_entries = cJSON_GetArraySize(root);
    f->t = xcalloc(n_entries ? (size_t)n_entries : 1, sizeof *f->t);
    int rc = 0;
    for (const cJSON *e = root->child; e && rc == 0; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (f->meta) {
                rc = err_set("%s: the header has two \"__metadata__\" entries; the file is corrupt",
                             path);
                break;
            }
            if (!cJSON_IsObject(e)) {
                rc = err_set("%s: \"__metadata__\" must be an object of strings; the file is corrupt",
                             path);
                break;
            }
            int n = cJSON_GetArraySize(e);
            f->meta = xcalloc(n ? (size_t)n : 1, sizeof *f->meta);
            for (const cJSON *m = e->child; m; m = m->next) {
                if (!cJSON_IsString(m)) {
                    rc = err_set("%s: \"__metadata__\" must map strings to strings, but key \"%s\" "
                                 "has a non-string value; store it as a string", path, m->string);
                    break;
                }
                f->meta[f->n_meta].key = xstrdup(m->string);
                f->meta[f->n_meta].value = xstrdup(m->valuestring);
                f->n_meta++;
            }
            continue;
        }
        StTensor *t = &f->t[f->n++];
        t->name = xstrdup(e->string);
        rc = parse_entry(path, e, t, data_size);
        if (rc == 0) t->data = data + t->offset;
    }
    cJSON_Delete(root);
    if (rc != 0) return -1;

    // Unique metadata keys: with two, st_get_meta would see the first and Python's reader (a dict)
    // the last.
    if (f->n_meta > 1) {
        int *by_key = xmalloc((size_t)f->n_meta * sizeof *by_key);
        for (int i = 0; i < f->n_meta; i++) by_key[i] = i;
        qsort_r(by_key, (size_t)f->n_meta, sizeof *by_key, cmp_meta_key_r, f->meta);
        for (int i = 1; i < f->n_meta && rc == 0; i++)
            if (strcmp(f->meta[by_key[i - 1]].key, f->meta[by_key[i]].key) == 0)
                rc = err_set("%s: metadata key \"%s\" appears twice in the header; the file is corrupt — save it "
                             "again", path, f->meta[by_key[i]].key);
        free(by_key);
        if (rc != 0) return -1;
    }

    // Unique names (and the index for st_get).
    f->by_name = xmalloc((f->n ? (size_t)f->n : 1) * sizeof *f->by_name);
    for (int i = 0; i < f->n; i++) f->by_name[i] = i;
    qsort_r(f->by_name, (size_t)f->n, sizeof *f->by_name, cmp_by_name_r, f->t);
    for (int i = 1; i < f->n; i++)
        if (strcmp(f->t[f->by_name[i - 1]].name, f->t[f->by_name[i]].name) == 0)
            return err_set("%s: tensor %s appears twice in the header; the file is corrupt — save it "
                           "again", path, f->t[f->by_name[i]].name);

    // The tensors must tile the buffer exactly: sorted by offset, each starts where the previous
    // ended, and the last ends at the end of the file (the reference implementation's rule).
    int *by_off = xmalloc((f->n ? (size_t)f->n : 1) * sizeof *by_off);
    for (int i = 0; i < f->n; i++) by_off[i] = i;
    qsort_r(by_off, (size_t)f->n, sizeof *by_off, cmp_by_offset_r, f->t);
    uint64_t pos = 0;
    const StTensor *prev = NULL;
    for (int k = 0; k < f->n && rc == 0; k++) {
        const StTensor *t = &f->t[by_off[k]];
        if (t->offset < pos)
            rc = err_set("%s: tensors %s (bytes [%zu, %zu]) and %s (bytes [%zu, %zu]) overlap in the "
                         "data buffer; the file is corrupt — save it again", path, prev->name,
                         prev->offset, prev->offset + prev->nbytes, t->name, t->offset,
                         t->offset + t->nbytes);
        else if (t->offset > pos)
            rc = err_set("%s: bytes [%llu, %zu) of the data buffer belong to no tensor (a gap before "
                         "tensor %s); the reference safetensors library rejects such files — save "
                         "it again", path, (unsigned long long)pos, t->offset, t->name);
        pos = t->offset + t->nbytes;
        prev = t;
    }
    free(by_off);
    if (rc == 0 && pos != data_size)
        rc = err_set("%s: %llu bytes after the last tensor%s%s belong to no tensor (the data buffer "
                     "has %llu bytes, the tensors end at byte %llu); the file has trailing bytes "
                     "or is corrupt — save it again", path,
                     (unsigned long long)(data_size - pos), prev ? " " : "", prev ? prev->name : "",
                     (unsigned long long)data_size, (unsigned long long)pos);
    return rc;
}

// Validate size bytes at base (a whole file) into f. -1 + err.
static int st_parse(StFile *f, const char *base, size_t size) {
    const char *path = f->path;
    if (size < 8)
        return err_set("%s: the file is only %zu bytes, too short for a safetensors file (an 8-byte header "
                       "length, then the header); it is truncated or not a safetensors file", path, size);
    uint64_t header_len;
    memcpy(&header_len, base, 8);
    if (header_len > size - 8)
        return err_set("%s: the header length field says %llu bytes, but only %zu bytes follow it; the file "
                       "is truncated or not a safetensors file", path, (unsigned long long)header_len, size - 8);
    if (header_len > ST_MAX_HEADER)
        return err_set("%s: the header length field says %llu bytes, over the 100 MB limit of the reference "
                       "implementation; not a safetensors file?", path, (unsigned long long)header_len);
    const char *hdr = base + 8;
    const char *data = hdr + header_len;
    return parse_header(f, hdr, (size_t)header_len, data, size - 8 - header_len);
}

StFile *st_open_mem(const void *data, size_t len, const char *origin) {
    StFile *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(origin);
    if (st_parse(f, data, len) != 0) {
        st_close(f);
        return NULL;
    }
    return f;
}

StFile *st_open(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { err_errno("cannot open %s", path); return NULL; }
    struct stat sb;
    if (fstat(fd, &sb) != 0) { err_errno("cannot stat %s", path); close(fd); return NULL; }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        err_set("cannot read %s: is a folder, not a safetensors file", path);
        return NULL;
    }
    if (sb.st_size < 8) {  // also: mmap refuses a length of 0
        close(fd);
        err_set("%s: the file is only %lld bytes, too short for a safetensors file (an 8-byte header "
                "length, then the header); it is truncated or not a safetensors file", path,
                (long long)sb.st_size);
        return NULL;
    }
    size_t size = (size_t)sb.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) { err_errno("cannot map %s", path); return NULL; }
    StFile *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    f->map = map;
    f->map_len = size;
    if (st_parse(f, map, size) != 0) {
        st_close(f);
        return NULL;
    }
    return f;
}

int st_read(const StFile *f, const char *name, StDtype dtype, void *dst,
            const int64_t *expect_shape, int ndim) {
    const StTensor *t = st_get(f, name);
    if (!t)
        return err_set("%s: no tensor %s (the file has %d tensor%s%s%s); the checkpoint does not "
                       "match this model — check the model config and the tensor names", f->path,
                       name, f->n, f->n == 1 ? "" : "s", f->n ? ", the first is " : "",
                       f->n ? f->t[0].name : "");
    if (t->dtype != dtype)
        return err_set("%s: tensor %s has dtype %s, expected %s; convert it when saving (e.g. "
                       "tensor.float() in PyTorch for F32)", f->path, name, st_dtype_name(t->dtype),
                       st_dtype_name(dtype));
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == expect_shape[i];
    if (!same) {
        char have[256], want[256];
        return err_set("%s: tensor %s has shape %s, the config expects %s; the checkpoint was saved "
                       "with a different model config", f->path, name,
                       st_shape_str(t->shape, t->ndim, have, sizeof have),
                       st_shape_str(expect_shape, ndim < 0 ? 0 : ndim, want, sizeof want));
    }
    if (t->nbytes) memcpy(dst, t->data, t->nbytes);
    return 0;
}

int st_read_f32(const StFile *f, const char *name, float *dst, const int64_t *expect_shape,
                int ndim) {
    return st_read(f, name, ST_F32, dst, expect_shape, ndim);
}
