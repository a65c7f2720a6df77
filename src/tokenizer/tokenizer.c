// tokenizer/tokenizer.c — building, saving, loading and decoding (see tokenizer.h).
// Encoding lives in encode.c.
#include "tokenizer/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/json_file.h"

const char *const TOKENIZER_SPECIAL_NAMES[TOKENIZER_N_SPECIAL] = {
    "<|bos|>",          "<|user_start|>",   "<|user_end|>",  "<|assistant_start|>", "<|assistant_end|>",
    "<|python_start|>", "<|python_end|>", "<|output_start|>", "<|output_end|>",
};

#define TIKTOKEN_FILE "tokenizer.tiktoken"
#define META_FILE "tokenizer.json"

// ---------------------------------------------------------------------------------------------
// The ranks file text, and the content id derived from it
// ---------------------------------------------------------------------------------------------

// `base64(bytes) rank\n` for every mergeable token, in rank order.
static char *ranks_file_text(const Tokenizer *tok, size_t *len) {
    size_t cap = 64, n = 0;
    for (int i = 0; i < tok->n_ranks; i++) cap += tok->tok_len[i] * 4 / 3 + 32;
    char *s = xmalloc(cap);
    for (int i = 0; i < tok->n_ranks; i++) {
        n += base64_encode(tok->bytes + tok->tok_off[i], tok->tok_len[i], s + n);
        n += (size_t)sprintf(s + n, " %d\n", i);
    }
    *len = n;
    return s;
}

static void compute_id(Tokenizer *tok) {
    size_t len;
    char *ranks = ranks_file_text(tok, &len);
    Sha256 *h = sha256_begin();
    sha256_update(h, ranks, len);
    sha256_update(h, "\npattern\n", 9);
    sha256_update(h, tok->pattern, strlen(tok->pattern));
    for (int i = 0; i < TOKENIZER_N_SPECIAL; i++) {
        char line[96];
        int k = snprintf(line, sizeof line, "\n%s %d", TOKENIZER_SPECIAL_NAMES[i], tok->n_ranks + i);
        sha256_update(h, line, (size_t)k);
    }
    sha256_end(h, tok->id);
    free(ranks);
}

// ---------------------------------------------------------------------------------------------
// Build and free
// ---------------------------------------------------------------------------------------------

Tokenizer *tokenizer_build(const uint8_t *const *tokens, const uint32_t *lens, int n_ranks, const char *pattern) {
    if (n_ranks < 256) { err_set("a tokenizer needs at least the 256 byte tokens, got %d", n_ranks); return NULL; }
    if (n_ranks + TOKENIZER_N_SPECIAL > 65536) {
        err_set("vocab size %d exceeds 65536 (token shards store uint16 ids)", n_ranks + TOKENIZER_N_SPECIAL);
        return NULL;
    }
    for (int b = 0; b < 256; b++)
        if (lens[b] != 1 || tokens[b][0] != b) {
            err_set("rank %d must be the single byte 0x%02x (no byte permutation)", b, b);
            return NULL;
        }
    Splitter *sp = splitter_new(pattern);
    if (!sp) return NULL;
    Tokenizer *tok = xcalloc(1, sizeof *tok);
    tok->splitter = sp;
    tok->pattern = xstrdup(pattern);
    tok->n_ranks = n_ranks;
    tok->vocab_size = n_ranks + TOKENIZER_N_SPECIAL;
    tok->bos_id = n_ranks;
    int V = tok->vocab_size;
    tok->tok_off = xmalloc((size_t)V * sizeof *tok->tok_off);
    tok->tok_len = xmalloc((size_t)V * sizeof *tok->tok_len);
    tok->token_bytes = xmalloc((size_t)V * sizeof *tok->token_bytes);
    size_t total = 0;
    for (int i = 0; i < n_ranks; i++) total += lens[i];
    for (int i = 0; i < TOKENIZER_N_SPECIAL; i++) total += strlen(TOKENIZER_SPECIAL_NAMES[i]);
    tok->bytes = xmalloc(total ? total : 1);
    bmap_init(&tok->ranks, (size_t)n_ranks);
    size_t off = 0;
    for (int i = 0; i < V; i++) {
        int special = i >= n_ranks;
        const uint8_t *src = special ? (const uint8_t *)TOKENIZER_SPECIAL_NAMES[i - n_ranks] : tokens[i];
        uint32_t n = special ? (uint32_t)strlen(TOKENIZER_SPECIAL_NAMES[i - n_ranks]) : lens[i];
        if (!special && n == 0) {
            err_set("token of rank %d is empty", i);
            tokenizer_free(tok);
            return NULL;
        }
        memcpy(tok->bytes + off, src, n);
        tok->tok_off[i] = off;
        tok->tok_len[i] = n;
        tok->token_bytes[i] = special ? 0 : (int32_t)n;
        off += n;
        if (special) continue;
        int inserted;
        bmap_upsert(&tok->ranks, src, n, hash_bytes(src, n), (uint64_t)i, &inserted);
        if (!inserted) {
            err_set("token of rank %d repeats the bytes of an earlier token (ranks must be unique)", i);
            tokenizer_free(tok);
            return NULL;
        }
    }
    compute_id(tok);
    return tok;
}

void tokenizer_free(Tokenizer *tok) {
    if (!tok) return;
    splitter_free(tok->splitter);
    bmap_free(&tok->ranks);
    free(tok->pattern);
    free(tok->bytes);
    free(tok->tok_off);
    free(tok->tok_len);
    free(tok->token_bytes);
    free(tok);
}

// ---------------------------------------------------------------------------------------------
// Save
// ---------------------------------------------------------------------------------------------

int tokenizer_save(const Tokenizer *tok, const char *dir) {
    if (mkdir_p(dir) != 0) return -1;
    size_t len;
    char *ranks = ranks_file_text(tok, &len);
    char *path = path_join(dir, TIKTOKEN_FILE);
    int rc = write_file_atomic(path, ranks, len);
    free(ranks);
    free(path);
    if (rc) return -1;

    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "format", "frontier-tokenizer");
    cJSON_AddNumberToObject(meta, "version", 1);
    cJSON_AddStringToObject(meta, "id", tok->id);
    cJSON_AddStringToObject(meta, "pattern", tok->pattern);
    cJSON_AddNumberToObject(meta, "vocab_size", tok->vocab_size);
    cJSON_AddNumberToObject(meta, "n_ranks", tok->n_ranks);
    cJSON_AddNumberToObject(meta, "num_merges", tok->n_ranks - 256);
    cJSON *sp = cJSON_AddObjectToObject(meta, "special_tokens");
    for (int i = 0; i < TOKENIZER_N_SPECIAL; i++) cJSON_AddNumberToObject(sp, TOKENIZER_SPECIAL_NAMES[i], tok->n_ranks + i);
    cJSON *tr = cJSON_AddObjectToObject(meta, "training");
    cJSON_AddNumberToObject(tr, "doc_cap_chars", (double)tok->doc_cap);
    cJSON_AddNumberToObject(tr, "max_chars", (double)tok->max_chars);
    cJSON_AddNumberToObject(tr, "chars_used", (double)tok->train_chars);
    cJSON_AddNumberToObject(tr, "docs_used", (double)tok->train_docs);
    path = path_join(dir, META_FILE);
    rc = json_write_atomic(path, meta);
    cJSON_Delete(meta);
    free(path);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Load: parse the ranks file, then check the metadata against it
// ---------------------------------------------------------------------------------------------

// A rank: decimal digits only (tiktoken writes them so), at most 9 of them.
static long parse_rank(const char *p, const char *end) {
    if (p == end || end - p > 9) return -1;
    long v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int parse_ranks(const char *path, const char *text, size_t len, uint8_t ***tokens_out, uint32_t **lens_out,
                       int *n_out) {
    size_t cap = 0, n = 0, lens_cap = 0;
    uint8_t **tokens = NULL;
    uint32_t *lens = NULL;
    int line_no = 0, rc = 0;
    for (const char *p = text; p < text + len && rc == 0;) {
        const char *nl = memchr(p, '\n', (size_t)(text + len - p));
        const char *end = nl ? nl : text + len, *next = nl ? nl + 1 : end;
        line_no++;
        if (end > p && end[-1] == '\r') end--;
        if (end == p) { p = next; continue; }
        const char *space = memchr(p, ' ', (size_t)(end - p));
        long rank = space ? parse_rank(space + 1, end) : -1;
        uint8_t *buf = xmalloc((size_t)(end - p) + 4);
        long nb = space ? base64_decode(p, (size_t)(space - p), buf) : -1;
        if (!space || nb <= 0 || rank < 0) {
            rc = err_usage("%s:%d: expected `base64 rank` (standard base64 of the token's bytes, a space, the rank "
                           "in decimal), got a malformed line", path, line_no);
        } else if (rank != (long)n) {
            rc = err_usage("%s:%d: rank %ld out of order (expected %zu: ranks must be 0, 1, 2, ...)", path, line_no,
                           rank, n);
        } else if (n >= 65536) {
            rc = err_usage("%s:%d: more than 65536 ranks (token shards store uint16 ids)", path, line_no);
        }
        if (rc != 0) { free(buf); break; }
        GROW(tokens, cap, n + 1);
        GROW(lens, lens_cap, n + 1);
        tokens[n] = buf;
        lens[n++] = (uint32_t)nb;
        p = next;
    }
    if (rc != 0) {
        for (size_t i = 0; i < n; i++) free(tokens[i]);
        free(tokens);
        free(lens);
        return -1;
    }
    *tokens_out = tokens;
    *lens_out = lens;
    *n_out = (int)n;
    return 0;
}

static int check_meta(const Tokenizer *tok, const cJSON *meta, const char *path) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(meta, "id");
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(meta, "vocab_size");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(meta, "special_tokens");
    if (!cJSON_IsNumber(vs) || vs->valuedouble != (double)tok->vocab_size)
        return err_usage("%s: vocab_size does not match %s (%d ranks + %d special tokens = %d)", path, TIKTOKEN_FILE,
                         tok->n_ranks, TOKENIZER_N_SPECIAL, tok->vocab_size);
    for (int i = 0; i < TOKENIZER_N_SPECIAL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(sp, TOKENIZER_SPECIAL_NAMES[i]);
        if (!cJSON_IsNumber(v) || v->valuedouble != (double)(tok->n_ranks + i))
            return err_usage("%s: special token %s must have id %d", path, TOKENIZER_SPECIAL_NAMES[i], tok->n_ranks + i);
    }
    if (!cJSON_IsString(id) || strcmp(id->valuestring, tok->id) != 0)
        return err_usage("%s: id does not match the content of %s (was one of the files edited or replaced? "
                         "retrain or restore both files together)", path, TIKTOKEN_FILE);
    return 0;
}

// A training-provenance count: absent = 0 (unknown); otherwise a whole number in [0, 2^53].
static int meta_int(const cJSON *obj, const char *name, const char *path, int64_t *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    *out = 0;
    if (!v) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(int64_t)d)
        return err_usage("%s: training.%s must be a whole number >= 0", path, name);
    *out = (int64_t)d;
    return 0;
}

Tokenizer *tokenizer_parse(const char *meta_text, size_t meta_len, const char *meta_path, const char *ranks_text,
                           size_t ranks_len, const char *ranks_path) {
    Tokenizer *tok = NULL;
    uint8_t **tokens = NULL;
    uint32_t *lens = NULL;
    int n = 0;
    const char *err_at = NULL;
    cJSON *meta = cJSON_ParseWithLengthOpts(meta_text, meta_len, &err_at, 0);
    if (!cJSON_IsObject(meta)) {
        size_t at = !meta && err_at >= meta_text && err_at <= meta_text + meta_len ? (size_t)(err_at - meta_text) : 0;
        err_usage("%s: not a JSON object (near byte %zu)", meta_path, at);
        goto done;
    }
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(meta, "pattern");
    if (!cJSON_IsString(pat)) { err_usage("%s: missing string field \"pattern\"", meta_path); goto done; }
    if (parse_ranks(ranks_path, ranks_text, ranks_len, &tokens, &lens, &n) != 0) goto done;
    tok = tokenizer_build((const uint8_t *const *)tokens, lens, n, pat->valuestring);
    if (!tok) { err_prefix("%s", ranks_path); err_mark_usage(); goto done; }
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(meta, "training");
    if (check_meta(tok, meta, meta_path) != 0 || meta_int(tr, "doc_cap_chars", meta_path, &tok->doc_cap) != 0 ||
        meta_int(tr, "max_chars", meta_path, &tok->max_chars) != 0 ||
        meta_int(tr, "chars_used", meta_path, &tok->train_chars) != 0 ||
        meta_int(tr, "docs_used", meta_path, &tok->train_docs) != 0) {
        tokenizer_free(tok);
        tok = NULL;
    }
done:
    for (int i = 0; i < n; i++) free(tokens[i]);
    free(tokens);
    free(lens);
    cJSON_Delete(meta);
    return tok;
}

Tokenizer *tokenizer_load(const char *dir) {
    char *meta_path = path_join(dir, META_FILE), *ranks_path = path_join(dir, TIKTOKEN_FILE);
    Tokenizer *tok = NULL;
    char *meta_text = NULL, *ranks_text = NULL;
    size_t meta_len, ranks_len;
    if (!(meta_text = read_file(meta_path, &meta_len))) err_prefix("loading tokenizer %s", dir);
    else if (!(ranks_text = read_file(ranks_path, &ranks_len))) err_prefix("loading tokenizer %s", dir);
    else tok = tokenizer_parse(meta_text, meta_len, meta_path, ranks_text, ranks_len, ranks_path);
    free(meta_text);
    free(ranks_text);
    free(meta_path);
    free(ranks_path);
    return tok;
}

// ---------------------------------------------------------------------------------------------
// Decode
// ---------------------------------------------------------------------------------------------

int tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n, uint8_t **out, size_t *out_len,
                     size_t *out_cap) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= (uint32_t)tok->vocab_size)
            return err_set("decode: token id %u at position %zu is outside the vocabulary (size %d)", ids[i], i,
                           tok->vocab_size);
        uint32_t k = tok->tok_len[ids[i]];
        GROW(*out, *out_cap, *out_len + k + 1);
        memcpy(*out + *out_len, tok->bytes + tok->tok_off[ids[i]], k);
        *out_len += k;
    }
    return 0;
}

void idvec_push(IdVec *v, uint32_t id) {
    if (v->len == v->cap) GROW(v->data, v->cap, v->len + 1);
    v->data[v->len++] = id;
}

void idvec_free(IdVec *v) {
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}
