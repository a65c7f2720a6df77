// data/prepare.c — corpus -> tokenizer -> token shards, cached (see prepare.h).
#include "data/prepare.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/corpus.h"
#include "data/shard.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/hash.h"
#include "util/mem.h"
#include "util/progress.h"
#include "util/json_file.h"

PrepareConfig prepare_defaults(void) {
    return (PrepareConfig){.cache_dir = "cache", .bpe = bpe_train_defaults(), .shard_tokens = 100000000};
}

const char *default_data_root(void) {
    const char *env = getenv("FRONTIER_DATA");
    return env && *env ? env : "../shared/data";
}

const char *default_train_path(void) {
    static char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/text/train", default_data_root());
    return buf;
}

const char *default_val_path(void) {
    static char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s/text/val", default_data_root());
    return buf;
}

// ---------------------------------------------------------------------------------------------
// Cache keys: what the inputs are (absolute path, size, mtime) plus the settings that matter
// ---------------------------------------------------------------------------------------------

static void hash_inputs(Sha256 *h, const char *tag, char **files, int n) {
    sha256_update(h, tag, strlen(tag) + 1);
    for (int i = 0; i < n; i++) {
        char abs[PATH_MAX], line[PATH_MAX + 64];
        int64_t size = 0, mtime = 0;
        if (!realpath(files[i], abs)) snprintf(abs, sizeof abs, "%s", files[i]);
        file_stat(files[i], &size, &mtime);
        int k = snprintf(line, sizeof line, "%s\t%lld\t%lld\n", abs, (long long)size, (long long)mtime);
        sha256_update(h, line, (size_t)k);
    }
}

static double file_size(const char *path) {
    int64_t size = 0;
    file_stat(path, &size, NULL);
    return (double)size;
}

static double total_size(char **files, int n) {
    double total = 0;
    for (int i = 0; i < n; i++) total += file_size(files[i]);
    return total;
}

// ---------------------------------------------------------------------------------------------
// Tokenizer: given, cached, or trained
// ---------------------------------------------------------------------------------------------

Tokenizer *tokenizer_train_files(char **files, int n_files, const BpeTrainConfig *cfg, int quiet) {
    BpeTrainer *t = bpe_trainer_new(NANOCHAT_SPLIT_PATTERN, cfg);
    if (!t) return NULL;
    Progress pr;
    progress_begin(&pr, "tokenizer: reading", total_size(files, n_files), quiet);
    DocList docs = {0};
    double done = 0;
    int rc = 0;
    for (int i = 0; i < n_files && rc == 0; i++) {
        if (corpus_read_file(files[i], &docs) != 0) { rc = -1; break; }
        const char **texts = xmalloc((size_t)(docs.n ? docs.n : 1) * sizeof *texts);
        for (int d = 0; d < docs.n; d++) texts[d] = doc_text(&docs, d);
        rc = bpe_trainer_feed(t, texts, docs.len, docs.n);
        free(texts);
        done += file_size(files[i]);
        char extra[96];
        snprintf(extra, sizeof extra, "%.1fM chars kept", (double)bpe_trainer_chars(t) / 1e6);
        progress_update(&pr, done, extra);
    }
    doclist_free(&docs);
    if (rc < 0) { bpe_trainer_free(t); return NULL; }
    char extra[96];
    snprintf(extra, sizeof extra, "%lld docs, %.1fM chars kept", (long long)bpe_trainer_docs(t),
             (double)bpe_trainer_chars(t) / 1e6);
    progress_done(&pr, done, extra);
    Tokenizer *tok = bpe_trainer_finish(t);
    bpe_trainer_free(t);
    return tok;
}

static Tokenizer *obtain_tokenizer(const PrepareConfig *cfg, char **train, int n_train) {
    if (cfg->tokenizer_dir) {
        Tokenizer *tok = tokenizer_load(cfg->tokenizer_dir);
        if (tok && !cfg->quiet) fprintf(stderr, "tokenizer: loaded %s (vocab %d)\n", cfg->tokenizer_dir, tok->vocab_size);
        return tok;
    }
    Sha256 *h = sha256_begin();
    char settings[256];
    int k = snprintf(settings, sizeof settings, "vocab=%d doc_cap=%lld max_chars=%lld\n", cfg->bpe.vocab_size,
                     (long long)cfg->bpe.doc_cap, (long long)cfg->bpe.max_chars);
    sha256_update(h, settings, (size_t)k);
    sha256_update(h, NANOCHAT_SPLIT_PATTERN, sizeof NANOCHAT_SPLIT_PATTERN);
    hash_inputs(h, "train", train, n_train);
    char key[65], name[32];
    sha256_end(h, key);
    snprintf(name, sizeof name, "%.16s", key);
    char *root = path_join(cfg->cache_dir, "tokenizers"), *dir = path_join(root, name);
    char *meta = path_join(dir, "tokenizer.json");
    Tokenizer *tok = NULL;
    if (path_exists(meta)) {
        tok = tokenizer_load(dir);
        if (tok && !cfg->quiet) fprintf(stderr, "tokenizer: cached %s (vocab %d)\n", dir, tok->vocab_size);
    } else {
        if (!cfg->quiet)
            fprintf(stderr, "tokenizer: training vocab %d on %d files (doc cap %lld chars)\n", cfg->bpe.vocab_size,
                    n_train, (long long)cfg->bpe.doc_cap);
        BpeTrainConfig bc = cfg->bpe;
        bc.threads = cfg->threads;
        bc.verbose = !cfg->quiet;
        tok = tokenizer_train_files(train, n_train, &bc, cfg->quiet);
        // tokenizer.json is written last, so its presence marks a complete tokenizer.
        if (tok && tokenizer_save(tok, dir) != 0) { tokenizer_free(tok); tok = NULL; }
        if (tok && !cfg->quiet) fprintf(stderr, "tokenizer: saved %s (id %.16s)\n", dir, tok->id);
    }
    free(root);
    free(dir);
    free(meta);
    return tok;
}

// ---------------------------------------------------------------------------------------------
// Encoding one split into shards
// ---------------------------------------------------------------------------------------------

typedef struct {
    const Tokenizer *tok;
    Encoder **enc;  // (n_threads)
    int n_threads;
    int64_t shard_tokens;
    const char *dir, *prefix;
    ShardWriter w;
    int open;
    cJSON *shard_names;
} SplitWriter;

static int next_shard(SplitWriter *s, SplitStats *st) {
    if (s->open && shard_writer_close(&s->w) != 0) { s->open = 0; return -1; }
    char name[64];
    snprintf(name, sizeof name, "%s_%06d.bin", s->prefix, st->shards);
    char *path = path_join(s->dir, name);
    s->open = shard_writer_open(&s->w, path) == 0;
    free(path);
    if (!s->open) return -1;
    cJSON_AddItemToArray(s->shard_names, cJSON_CreateString(name));
    st->shards++;
    return 0;
}

static int write_doc(SplitWriter *s, const IdVec *ids, SplitStats *st, uint16_t **buf, size_t *cap) {
    size_t n = ids->len + 1;
    if (!s->open || (s->w.n_tokens > 0 && (int64_t)(s->w.n_tokens + n) > s->shard_tokens))
        if (next_shard(s, st) != 0) return -1;
    GROW(*buf, *cap, n);
    (*buf)[0] = (uint16_t)s->tok->bos_id;
    for (size_t i = 0; i < ids->len; i++) (*buf)[i + 1] = (uint16_t)ids->data[i];
    st->tokens += (int64_t)n;
    return shard_writer_append(&s->w, *buf, n);
}

static int encode_split(SplitWriter *s, char **files, int n_files, SplitStats *st, int quiet) {
    double done = 0;
    char label[64];
    snprintf(label, sizeof label, "prepare %s", s->prefix);
    Progress pr;
    progress_begin(&pr, label, total_size(files, n_files), quiet);
    DocList docs = {0};
    IdVec *ids = NULL;
    int n_ids = 0, rc = 0;
    uint16_t *buf = NULL;
    size_t buf_cap = 0;
    for (int f = 0; f < n_files && rc == 0; f++) {
        if ((rc = corpus_read_file(files[f], &docs)) != 0) break;
        if (docs.n > n_ids) {
            ids = xrealloc(ids, (size_t)docs.n * sizeof *ids);
            memset(ids + n_ids, 0, (size_t)(docs.n - n_ids) * sizeof *ids);
            n_ids = docs.n;
        }
        const char **texts = xmalloc((size_t)docs.n * sizeof *texts);
        for (int d = 0; d < docs.n; d++) texts[d] = doc_text(&docs, d);
        rc = encode_batch(s->enc, s->n_threads, texts, docs.len, docs.n, ids);
        free(texts);
        if (rc) { err_prefix("%s", files[f]); break; }
        for (int d = 0; d < docs.n && rc == 0; d++) rc = write_doc(s, &ids[d], st, &buf, &buf_cap);
        st->docs += docs.n;
        st->bytes += (int64_t)docs.bytes;
        done += file_size(files[f]);
        char extra[64];
        snprintf(extra, sizeof extra, "%.2fM tokens", (double)st->tokens / 1e6);
        progress_update(&pr, done, extra);
    }
    if (rc == 0 && s->open) {
        s->open = 0;
        rc = shard_writer_close(&s->w);
    }
    if (rc != 0 && s->open) { shard_writer_abort(&s->w); s->open = 0; }
    if (rc == 0) {
        char extra[96];
        snprintf(extra, sizeof extra, "%lld docs, %.2fM tokens", (long long)st->docs, (double)st->tokens / 1e6);
        progress_done(&pr, done, extra);
    }
    for (int i = 0; i < n_ids; i++) idvec_free(&ids[i]);
    free(ids);
    free(buf);
    doclist_free(&docs);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Manifest
// ---------------------------------------------------------------------------------------------

static cJSON *split_json(const SplitStats *st, cJSON *shards, char **files, int n_files) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "docs", (double)st->docs);
    cJSON_AddNumberToObject(o, "tokens", (double)st->tokens);
    cJSON_AddNumberToObject(o, "bytes", (double)st->bytes);
    cJSON_AddItemToObject(o, "shards", shards);
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    for (int i = 0; i < n_files; i++) cJSON_AddItemToArray(in, cJSON_CreateString(files[i]));
    return o;
}

static void read_split_stats(const cJSON *m, const char *name, SplitStats *st) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(m, name);
    st->docs = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "docs"));
    st->tokens = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "tokens"));
    st->bytes = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "bytes"));
    st->shards = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "shards"));
}

static int load_manifest(const char *path, PrepareResult *res) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return -1;
    cJSON *m = cJSON_ParseWithLength(text, len);
    free(text);
    if (!m) return err_set("%s: not valid JSON; delete its folder and run `frontier prepare` again", path);
    read_split_stats(m, "train", &res->train);
    read_split_stats(m, "val", &res->val);
    cJSON_Delete(m);
    return 0;
}

static int write_manifest(const char *dir, const Tokenizer *tok, const SplitStats *tr, cJSON *tr_shards,
                          char **train, int n_train, const SplitStats *va, cJSON *va_shards, char **val, int n_val,
                          int train_only) {
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "format", "frontier-shards");
    cJSON_AddNumberToObject(m, "version", 1);
    cJSON_AddStringToObject(m, "shard_format", "llm.c: 256 x int32 header (20240520, 1, n), uint16 tokens");
    cJSON_AddStringToObject(m, "tokenizer_id", tok->id);
    cJSON_AddNumberToObject(m, "vocab_size", tok->vocab_size);
    cJSON_AddNumberToObject(m, "bos_id", tok->bos_id);
    cJSON_AddItemToObject(m, "train", split_json(tr, tr_shards, train, n_train));
    cJSON_AddItemToObject(m, "val", split_json(va, va_shards, val, n_val));
    if (train_only) cJSON_AddBoolToObject(m, "train_only", 1);  // a mixture's extra source: no val split
    char *path = path_join(dir, "manifest.json");
    int rc = json_write_atomic(path, m);
    cJSON_Delete(m);
    free(path);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// The whole job
// ---------------------------------------------------------------------------------------------

static int build_shards(const PrepareConfig *cfg, const Tokenizer *tok, const char *tmp, char **train, int n_train,
                        char **val, int n_val, PrepareResult *res) {
    char *tokdir = path_join(tmp, "tokenizer");
    int rc = tokenizer_save(tok, tokdir);
    free(tokdir);
    if (rc) return -1;
    int nt = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();
    SplitWriter s = {.tok = tok, .n_threads = nt, .shard_tokens = cfg->shard_tokens, .dir = tmp};
    s.enc = xmalloc((size_t)nt * sizeof *s.enc);
    for (int i = 0; i < nt; i++) s.enc[i] = encoder_new(tok);
    cJSON *tr_shards = cJSON_CreateArray(), *va_shards = cJSON_CreateArray();
    s.prefix = "train";
    s.shard_names = tr_shards;
    rc = encode_split(&s, train, n_train, &res->train, cfg->quiet);
    if (rc == 0 && !cfg->train_only) {
        s.prefix = "val";
        s.shard_names = va_shards;
        rc = encode_split(&s, val, n_val, &res->val, cfg->quiet);
    }
    if (rc == 0) {
        rc = write_manifest(tmp, tok, &res->train, tr_shards, train, n_train, &res->val, va_shards, val,
                            cfg->train_only ? 0 : n_val, cfg->train_only);
    } else {
        cJSON_Delete(tr_shards);
        cJSON_Delete(va_shards);
    }
    for (int i = 0; i < nt; i++) encoder_free(s.enc[i]);
    free(s.enc);
    return rc;
}

// The validation set must be held out: no file may be both a training and a validation input,
// whatever it is called (another path to it, a link, overlapping folders), so files are compared
// by device and inode after both lists are expanded.
static int check_disjoint(char **train, int n_train, char **val, int n_val) {
    struct stat *ts = xmalloc((size_t)(n_train ? n_train : 1) * sizeof *ts);
    int rc = 0;
    for (int i = 0; i < n_train && rc == 0; i++)
        if (stat(train[i], &ts[i]) != 0) rc = err_errno("input %s", train[i]);
    for (int j = 0; j < n_val && rc == 0; j++) {
        struct stat vs;
        if (stat(val[j], &vs) != 0) { rc = err_errno("input %s", val[j]); break; }
        for (int i = 0; i < n_train; i++)
            if (ts[i].st_dev == vs.st_dev && ts[i].st_ino == vs.st_ino) {
                rc = strcmp(train[i], val[j])
                         ? err_usage("%s (training input) and %s (validation input) are the same file: the validation "
                                     "set must be held out of training; give --train and --val disjoint files",
                                     train[i], val[j])
                         : err_usage("%s is both a training and a validation input: the validation set must be held "
                                     "out of training; give --train and --val disjoint files", train[i]);
                break;
            }
    }
    free(ts);
    return rc;
}

int prepare_run(const PrepareConfig *cfg, PrepareResult *res) {
    memset(res, 0, sizeof *res);
    if (cfg->shard_tokens <= 0 || cfg->shard_tokens > INT32_MAX)
        return err_usage("--shard-tokens must be between 1 and %d", INT32_MAX);
    if (cfg->train_only && !cfg->tokenizer_dir)
        return err_set("prepare: train-only shards are made with a given tokenizer (none was given)");
    const char *dtrain = default_train_path(), *dval = default_val_path();
    char **train = NULL, **val = NULL;
    int n_train = 0, n_val = 0, rc = -1;
    Tokenizer *tok = NULL;
    char *shard_root = NULL, *dir = NULL, *tmp = NULL, *manifest = NULL;
    // A path the user gave that cannot be read is a bad flag value; a default that is missing is
    // this machine's data not being where it should.
    if (expand_inputs(cfg->n_train ? cfg->train : &dtrain, cfg->n_train ? cfg->n_train : 1, CORPUS_EXTS, &train,
                      &n_train) != 0) {
        err_prefix(cfg->n_train ? "--train" : "training data (set it with --train PATH)");
        if (cfg->n_train) err_mark_usage();
        goto done;
    }
    // train-only: the val inputs given are checked against the train ones, and none is the default
    if ((!cfg->train_only || cfg->n_val) &&
        expand_inputs(cfg->n_val ? cfg->val : &dval, cfg->n_val ? cfg->n_val : 1, CORPUS_EXTS, &val, &n_val) != 0) {
        err_prefix(cfg->n_val ? "--val" : "validation data (set it with --val PATH)");
        if (cfg->n_val) err_mark_usage();
        goto done;
    }
    if (check_disjoint(train, n_train, val, n_val) != 0) goto done;
    if (cfg->tokenizer_dir && !is_dir(cfg->tokenizer_dir)) {
        err_usage("--tokenizer %s: %s (give a folder with tokenizer.json, as `frontier tokenizer train --out` writes)",
                  cfg->tokenizer_dir, path_exists(cfg->tokenizer_dir) ? "not a folder" : "no such folder");
        goto done;
    }
    if (!(tok = obtain_tokenizer(cfg, train, n_train))) {
        if (cfg->tokenizer_dir) err_prefix("--tokenizer"), err_mark_usage();
        goto done;
    }

    Sha256 *h = sha256_begin();
    char settings[64], key[65], name[64];
    int k = snprintf(settings, sizeof settings, "shard_tokens=%lld\n%s", (long long)cfg->shard_tokens,
                     cfg->train_only ? "train_only\n" : "");
    sha256_update(h, settings, (size_t)k);
    hash_inputs(h, "train", train, n_train);
    if (!cfg->train_only) hash_inputs(h, "val", val, n_val);
    sha256_end(h, key);
    snprintf(name, sizeof name, "%.16s-%.16s", tok->id, key);
    shard_root = path_join(cfg->cache_dir, "shards");
    dir = path_join(shard_root, name);
    manifest = path_join(dir, "manifest.json");
    snprintf(res->data_dir, sizeof res->data_dir, "%s", dir);
    snprintf(res->tokenizer_dir, sizeof res->tokenizer_dir, "%s/tokenizer", dir);
    memcpy(res->tokenizer_id, tok->id, sizeof res->tokenizer_id);
    res->vocab_size = tok->vocab_size;
    if (path_exists(manifest)) {
        rc = load_manifest(manifest, res);
        res->cached = rc == 0;
        if (rc == 0 && !cfg->quiet) fprintf(stderr, "prepare: shards up to date in %s (nothing to do)\n", dir);
        goto done;
    }
    size_t tl = strlen(dir) + 32;
    tmp = xmalloc(tl);
    snprintf(tmp, tl, "%s.tmp-%d", dir, (int)getpid());
    if (remove_tree(tmp) != 0 || mkdir_p(tmp) != 0) goto done;
    rc = build_shards(cfg, tok, tmp, train, n_train, val, n_val, res);
    if (rc == 0 && path_exists(dir)) rc = remove_tree(dir);  // an incomplete folder from a crash
    if (rc == 0 && rename(tmp, dir) != 0) rc = err_errno("cannot rename %s to %s", tmp, dir);
    if (rc == 0) rc = fsync_dir(shard_root);
    if (rc != 0) {  // removing the temporary folder must not replace the error (nor its kind)
        char saved[4096];
        snprintf(saved, sizeof saved, "%s", err_msg());
        int usage = err_exit_code() == FRONTIER_EXIT_USAGE;
        remove_tree(tmp);
        err_set("%s", saved);
        if (usage) err_mark_usage();
    }
done:
    tokenizer_free(tok);
    free_string_list(train, n_train);
    free_string_list(val, n_val);
    free(shard_root);
    free(dir);
    free(tmp);
    free(manifest);
    return rc;
}
