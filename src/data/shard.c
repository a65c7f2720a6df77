// data/shard.c — llm.c token shards (see shard.h).
#include "data/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/error.h"
#include "util/mem.h"

static void fill_header(int32_t h[SHARD_HEADER_INTS], uint64_t n) {
    memset(h, 0, SHARD_HEADER_INTS * sizeof *h);
    h[0] = SHARD_MAGIC;
    h[1] = SHARD_VERSION;
    h[2] = (int32_t)n;
}

int shard_writer_open(ShardWriter *w, const char *path) {
    w->n_tokens = 0;
    if (atomic_open(&w->af, path) != 0) return -1;
    int32_t h[SHARD_HEADER_INTS];
    fill_header(h, 0);  // placeholder; the real count is written on close
    if (atomic_write(&w->af, h, sizeof h) != 0) { atomic_abort(&w->af); return -1; }
    return 0;
}

int shard_writer_append(ShardWriter *w, const uint16_t *tokens, size_t n) {
    if (w->n_tokens + n > INT32_MAX) return err_set("%s: a shard holds at most %d tokens", w->af.path, INT32_MAX);
    w->n_tokens += n;
    return atomic_write(&w->af, tokens, n * sizeof *tokens);
}

int shard_writer_close(ShardWriter *w) {
    int32_t h[SHARD_HEADER_INTS];
    fill_header(h, w->n_tokens);
    if (fseek(w->af.f, 0, SEEK_SET) != 0 || atomic_write(&w->af, h, sizeof h) != 0) {
        err_errno("cannot write the header of %s", w->af.tmp_path);
        atomic_abort(&w->af);
        return -1;
    }
    return atomic_commit(&w->af);
}

void shard_writer_abort(ShardWriter *w) { atomic_abort(&w->af); }

int shard_parse_header(const void *hdr, size_t hdr_len, uint64_t file_size, const char *origin, size_t *n_tokens) {
    int32_t h[SHARD_HEADER_INTS];
    if (hdr_len < sizeof h || file_size < sizeof h)
        return err_usage("%s: too short for a token shard (%llu bytes; the header alone is %zu)", origin,
                         (unsigned long long)file_size, sizeof h);
    memcpy(h, hdr, sizeof h);
    if (h[0] != SHARD_MAGIC)
        return err_usage("%s: not a token shard (magic %d, expected %d; llm.c format)", origin, h[0], SHARD_MAGIC);
    if (h[1] != SHARD_VERSION)
        return err_usage("%s: unsupported shard version %d (expected %d: uint16 tokens)", origin, h[1], SHARD_VERSION);
    if (h[2] < 0) return err_usage("%s: negative token count %d in the header", origin, h[2]);
    uint64_t want = sizeof h + (uint64_t)h[2] * sizeof(uint16_t);
    if (file_size != want)
        return err_usage("%s: %s: the header says %d tokens (%llu bytes) but the file has %llu bytes; re-run "
                         "`frontier prepare` to rebuild it", origin, file_size < want ? "truncated" : "trailing bytes",
                         h[2], (unsigned long long)want, (unsigned long long)file_size);
    *n_tokens = (size_t)h[2];
    return 0;
}

int shard_parse(const void *data, size_t len, const char *origin, const uint16_t **tokens, size_t *n_tokens) {
    size_t n;
    if (shard_parse_header(data, len, len, origin, &n) != 0) return -1;
    *tokens = (const uint16_t *)((const char *)data + SHARD_HEADER_INTS * sizeof(int32_t));
    *n_tokens = n;
    return 0;
}

int shard_check_tokens(const uint16_t *t, size_t n, int vocab_size, const char *origin) {
    if (vocab_size <= 0 || vocab_size > UINT16_MAX) return 0;  // every uint16 fits
    // The max over blocks vectorises (a branch per token would not); the first bad one is then
    // looked for only in the block that has it.
    const uint16_t limit = (uint16_t)vocab_size;
    enum { BLOCK = 1 << 16 };
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t e = n - b < BLOCK ? n : b + BLOCK;
        uint16_t mx = 0;
#pragma omp simd reduction(max : mx)
        for (size_t i = b; i < e; i++) mx = t[i] > mx ? t[i] : mx;
        if (mx < limit) continue;
        for (size_t i = b; i < e; i++)
            if (t[i] >= limit)
                return err_usage("%s: token %zu (byte offset %zu) is id %u, outside the tokenizer's vocabulary of %d "
                                 "ids; the shard was prepared with another tokenizer or is corrupt: re-run `frontier "
                                 "prepare` with this tokenizer", origin, i,
                                 SHARD_HEADER_INTS * sizeof(int32_t) + i * sizeof *t, (unsigned)t[i], vocab_size);
    }
    return 0;
}

static int read_header(FILE *f, const char *path, size_t *n_tokens) {
    int32_t h[SHARD_HEADER_INTS];
    struct stat st;
    if (fstat(fileno(f), &st) != 0) return err_errno("cannot stat %s", path);
    size_t got = fread(h, 1, sizeof h, f);
    if (got < sizeof h && ferror(f)) return err_errno("cannot read %s", path);
    return shard_parse_header(h, got, (uint64_t)st.st_size, path, n_tokens);
}

int shard_count(const char *path, size_t *n_tokens) {
    FILE *f = fopen(path, "rb");
    if (!f) return err_errno("cannot open shard %s", path);
    int rc = read_header(f, path, n_tokens);
    fclose(f);
    return rc;
}

int shard_read(const char *path, uint16_t **tokens, size_t *n_tokens) {
    FILE *f = fopen(path, "rb");
    if (!f) return err_errno("cannot open shard %s", path);
    size_t n;
    if (read_header(f, path, &n) != 0) { fclose(f); return -1; }
    uint16_t *t = xmalloc((n ? n : 1) * sizeof *t);
    if (n && fread(t, sizeof *t, n, f) != n) {
        fclose(f);
        free(t);
        return err_set("%s: read error (the file shrank while being read?)", path);
    }
    fclose(f);
    *tokens = t;
    *n_tokens = n;
    return 0;
}

int shard_list(const char *dir, const char *prefix, char ***out, int *n) {
    const char *exts[] = {".bin", NULL}, *dirs[] = {dir};
    char **all;
    int na;
    if (expand_inputs(dirs, 1, exts, &all, &na) != 0) return -1;
    *out = xmalloc((size_t)na * sizeof **out);
    *n = 0;
    for (int i = 0; i < na; i++)
        if (!strncmp(path_basename(all[i]), prefix, strlen(prefix))) (*out)[(*n)++] = xstrdup(all[i]);
    free_string_list(all, na);
    if (*n == 0) {
        free(*out);
        *out = NULL;
        return err_set("%s: no %s*.bin shards (run `frontier prepare`)", dir, prefix);
    }
    return 0;
}
