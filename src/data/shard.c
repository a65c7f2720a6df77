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

static int read_header(FILE *f, const char *path, size_t *n_tokens) {
    int32_t h[SHARD_HEADER_INTS];
    struct stat st;
    if (fstat(fileno(f), &st) != 0) return err_errno("cannot stat %s", path);
    if ((size_t)st.st_size < sizeof h || fread(h, sizeof h, 1, f) != 1)
        return err_set("%s: too short for a token shard (%lld bytes; the header alone is %zu)", path,
                       (long long)st.st_size, sizeof h);
    if (h[0] != SHARD_MAGIC)
        return err_set("%s: not a token shard (magic %d, expected %d; llm.c format)", path, h[0], SHARD_MAGIC);
    if (h[1] != SHARD_VERSION)
        return err_set("%s: unsupported shard version %d (expected %d: uint16 tokens)", path, h[1], SHARD_VERSION);
    if (h[2] < 0) return err_set("%s: negative token count %d in the header", path, h[2]);
    size_t want = sizeof h + (size_t)h[2] * sizeof(uint16_t);
    if ((size_t)st.st_size != want)
        return err_set("%s: %s: the header says %d tokens (%zu bytes) but the file has %lld bytes; re-run `frontier "
                       "prepare` to rebuild it", path, (size_t)st.st_size < want ? "truncated" : "trailing bytes",
                       h[2], want, (long long)st.st_size);
    *n_tokens = (size_t)h[2];
    return 0;
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
        return err_set("%s: read error", path);
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
