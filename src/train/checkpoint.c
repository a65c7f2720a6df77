// train/checkpoint.c — saving and restoring a run (see checkpoint.h).
#include "train/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/error.h"
#include "util/faults.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/safetensors.h"

#define CKPT_SUBDIR "checkpoints"
#define LATEST "latest"
#define MODEL_FILE "model.safetensors"
#define AVG_MODEL_FILE "model_avg.safetensors"
#define STATE_FILE "train_state.safetensors"

static void meta_i64(StWriter *w, const char *key, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    st_meta(w, key, buf);
}

static void meta_f64(StWriter *w, const char *key, double v) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    st_meta(w, key, buf);
}

// "step-00000120" <-> 120
static void step_name(char *buf, size_t cap, int64_t step) { snprintf(buf, cap, "step-%08" PRId64, step); }

static int parse_step_name(const char *name, int64_t *step) {
    if (strncmp(name, "step-", 5) || !name[5]) return -1;
    int64_t v = 0;
    for (const char *p = name + 5; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10) return -1;
        v = v * 10 + (*p - '0');
    }
    *step = v;
    return 0;
}

static int is_symlink(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

static int lexists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

// ---------------------------------------------------------------------------------------------
// Finding the newest checkpoint
// ---------------------------------------------------------------------------------------------

// `latest`'s step, or -1 when there is no `latest` (nothing set; other errors set err and give -2).
static int64_t latest_step(const char *run_dir) {
    char *link = path_join(run_dir, LATEST);
    char target[PATH_MAX];
    ssize_t n = readlink(link, target, sizeof target - 1);
    int64_t step = -2;
    if (n < 0) {
        if (errno == ENOENT) step = -1;
        else err_errno("cannot read %s", link);
    } else {
        target[n] = 0;
        const char *slash = strrchr(target, '/');
        if (strncmp(target, CKPT_SUBDIR "/", sizeof CKPT_SUBDIR) || parse_step_name(slash + 1, &step) != 0)
            err_usage("%s points to '%s', not to %s/step-<N>: the run folder was edited; point it at the newest "
                      "complete checkpoint folder (ln -sfn %s/step-N %s)", link, target, CKPT_SUBDIR, CKPT_SUBDIR, link), step = -2;
    }
    free(link);
    return step;
}

static char *step_dir(const char *run_dir, int64_t step) {
    char name[40], rel[64];
    step_name(name, sizeof name, step);
    snprintf(rel, sizeof rel, "%s/%s", CKPT_SUBDIR, name);
    return path_join(run_dir, rel);
}

static int complete_checkpoint(const char *dir) {
    char *m = path_join(dir, MODEL_FILE), *s = path_join(dir, STATE_FILE);
    int ok = path_exists(m) && path_exists(s);
    free(m);
    free(s);
    return ok;
}

char *ckpt_latest(const char *run_dir, int64_t *step) {
    int64_t ls = latest_step(run_dir);
    if (ls == -2) return NULL;
    if (ls >= 0) {
        char *dir = step_dir(run_dir, ls);
        if (!complete_checkpoint(dir)) {
            err_usage("%s/%s names %s, which is not a complete checkpoint (missing or partial): the run folder was "
                      "edited; point `latest` at a complete checkpoint folder", run_dir, LATEST, dir);
            free(dir);
            return NULL;
        }
        if (step) *step = ls;
        return dir;
    }
    // the older layout: the two files as plain files in the run folder
    char *m = path_join(run_dir, MODEL_FILE);
    int legacy = path_exists(m) && !is_symlink(m) && complete_checkpoint(run_dir);
    free(m);
    if (!legacy) {
        err_usage("%s holds no checkpoint (no %s/%s): nothing to resume or evaluate; was the run killed before its "
                  "first checkpoint? (--save-every sets how often one is saved)", run_dir, run_dir, LATEST);
        return NULL;
    }
    int64_t s = 0;
    if (ckpt_read_meta(run_dir, NULL, NULL, &s) != 0) return NULL;
    if (step) *step = s;
    return xstrdup(run_dir);
}

char *ckpt_model_path_weights(const char *p, const char *weights) {
    if (path_has_suffix(p, ".safetensors")) return xstrdup(p);
    char *avg = path_join(p, AVG_MODEL_FILE);
    if (strcmp(weights, "raw") && (!strcmp(weights, "avg") || path_exists(avg))) return avg;
    free(avg);
    return ckpt_model_path(p);
}

char *ckpt_model_path(const char *p) {
    if (path_has_suffix(p, ".safetensors")) return xstrdup(p);
    char *link = path_join(p, LATEST);
    int has_latest = lexists(link);
    free(link);
    return path_join(p, has_latest ? LATEST "/" MODEL_FILE : MODEL_FILE);
}

int ckpt_run_exists(const char *run_dir) {
    static const char *const names[] = {"config.json", "metrics.jsonl", "summary.json", LATEST, MODEL_FILE,
                                        STATE_FILE,    CKPT_SUBDIR,     NULL};
    for (int i = 0; names[i]; i++) {
        char *p = path_join(run_dir, names[i]);
        int e = lexists(p);
        free(p);
        if (e) return 1;
    }
    return 0;
}

int ckpt_remove_run(const char *run_dir) {
    static const char *const names[] = {CKPT_SUBDIR, LATEST, MODEL_FILE, STATE_FILE, AVG_MODEL_FILE, "metrics.jsonl", "summary.json",
                                        "config.json", "tokenizer", "trace.json", "profile.csv", "profile_shapes.csv",
                                        "roofline.json", "report.html", NULL};
    for (int i = 0; names[i]; i++) {
        char *p = path_join(run_dir, names[i]);
        int rc = remove_tree(p);
        free(p);
        if (rc) return -1;
    }
    return 0;
}

// Remove the entries of `dir` whose names hold ".tmp-" (what a killed atomic write or save left).
static int sweep_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : err_errno("cannot open folder %s", dir);
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) && rc == 0) {
        if (!strstr(e->d_name, ".tmp-")) continue;
        char *p = path_join(dir, e->d_name);
        rc = remove_tree(p);
        free(p);
    }
    closedir(d);
    return rc;
}

// The step folders in RUN_DIR/checkpoints, ascending (malloc'ed; *n of them).
static int64_t *list_steps(const char *run_dir, int *n) {
    char *cdir = path_join(run_dir, CKPT_SUBDIR);
    DIR *d = opendir(cdir);
    free(cdir);
    *n = 0;
    if (!d) return NULL;
    int64_t *steps = NULL;
    size_t cap = 0, k = 0;
    struct dirent *e;
    int64_t s;
    while ((e = readdir(d)))
        if (parse_step_name(e->d_name, &s) == 0) {
            GROW(steps, cap, k + 1);
            steps[k++] = s;
        }
    closedir(d);
    for (size_t i = 1; i < k; i++)  // insertion sort: a handful of entries
        for (size_t j = i; j > 0 && steps[j - 1] > steps[j]; j--) {
            int64_t t = steps[j];
            steps[j] = steps[j - 1], steps[j - 1] = t;
        }
    *n = (int)k;
    return steps;
}

int ckpt_sweep(const char *run_dir) {
    char *cdir = path_join(run_dir, CKPT_SUBDIR), *tdir = path_join(run_dir, "tokenizer");
    int rc = sweep_temps(run_dir);
    if (rc == 0) rc = sweep_temps(cdir);
    if (rc == 0) rc = sweep_temps(tdir);
    free(cdir);
    free(tdir);
    int64_t ls = rc == 0 ? latest_step(run_dir) : -2;
    if (ls == -2) return -1;
    int n;
    int64_t *steps = list_steps(run_dir, &n);
    for (int i = 0; i < n && rc == 0; i++)
        if (steps[i] > ls) {  // published after `latest` was last moved: a save killed before its commit
            char *p = step_dir(run_dir, steps[i]);
            rc = remove_tree(p);
            free(p);
        }
    free(steps);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Save
// ---------------------------------------------------------------------------------------------

static int save_model(const char *path, const Model *m, int64_t step, const char *tokenizer_id,
                      const char *config_json) {
    StWriter *w = st_writer_new();
    for (int i = 0; i < m->params.n; i++) {
        const ParamTensor *p = &m->params.t[i];
        int64_t shape[2] = {p->vector ? p->cols : p->rows, p->cols};
        st_add(w, p->name, ST_F32, shape, p->vector ? 1 : 2, m->param + p->offset);
    }
    char *mc = model_config_to_json(&m->cfg);
    st_meta(w, "format", "frontier");
    st_meta(w, "model_config", mc);
    st_meta(w, "tokenizer_id", tokenizer_id ? tokenizer_id : "");
    if (config_json) st_meta(w, "config", config_json);
    meta_i64(w, "step", step);
    int rc = st_save(w, path);
    free(mc);
    st_writer_free(w);
    return rc;
}

int ckpt_save_average(const char *run_dir, const Model *m, int64_t step, const char *tokenizer_id,
                      const char *config_json) {
    char *path = path_join(run_dir, AVG_MODEL_FILE);
    int rc = save_model(path, m, step, tokenizer_id, config_json);
    free(path);
    return rc;
}

static int save_state(const char *path, const Optimizer *o, const void *loader_state, size_t loader_len,
                      const TrainCounters *c) {
    for (int i = 0; i < o->n_st; i++)  // a shard must have been gathered first (train.c)
        if (!optim_state_ptr(o, &o->st[i]))
            return err_set("%s: optimizer state %s is on another rank (gather the shards first)", path, o->st[i].name);
    StWriter *w = st_writer_new();
    for (int i = 0; i < o->n_st; i++) {
        const OptimStateTensor *t = &o->st[i];
        int64_t shape[2] = {t->rows, t->cols};
        st_add(w, t->name, ST_F32, shape, 2, optim_state_ptr(o, t));
    }
    int64_t lshape[1] = {(int64_t)loader_len};
    st_add(w, "loader.state", ST_U8, lshape, 1, loader_state);
    int64_t tshape[1] = {STEP_TIME_WINDOW};
    st_add(w, "step_times", ST_F64, tshape, 1, c->step_times);
    meta_i64(w, "step", c->step);
    meta_i64(w, "optim_step", o->step);
    meta_i64(w, "tokens", c->tokens);
    meta_i64(w, "n_step_times", c->n_step_times);
    meta_i64(w, "checkpoints", c->checkpoints);
    meta_i64(w, "metrics_bytes", c->metrics_bytes);
    meta_f64(w, "timed_s", c->timed_s);
    meta_f64(w, "startup_s", c->startup_s);
    meta_f64(w, "excluded_s", c->excluded_s);
    meta_f64(w, "checkpoint_s", c->checkpoint_s);
    int rc = st_save(w, path);
    st_writer_free(w);
    return rc;
}

int64_t ckpt_bytes(const Model *m, const Optimizer *o, size_t loader_len) {
    // the data, plus each file's JSON header (names, shapes, the config text): well under 1 MiB
    return (int64_t)m->params.total * 4 + (int64_t)o->n_state * 4 + (int64_t)loader_len +
           STEP_TIME_WINDOW * 8 + (2 << 20);
}

int64_t ckpt_free_bytes(const char *dir) {
    struct statvfs sv;
    if (statvfs(dir, &sv) != 0) return err_errno("cannot read the free space of %s", dir), -1;
    return (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
}

// Make DIR/NAME a symlink to TARGET by renaming a fresh link over it (atomic), then fsync DIR.
static int publish_link(const char *dir, const char *name, const char *target) {
    char *path = path_join(dir, name);
    char tmpname[96];
    snprintf(tmpname, sizeof tmpname, ".%s.tmp-%d", name, (int)getpid());
    char *tmp = path_join(dir, tmpname);
    unlink(tmp);
    int rc = 0;
    temps_track(tmp, 0);
    if (symlink(target, tmp) != 0) rc = err_errno("cannot create the symlink %s", tmp);
    else if (rename(tmp, path) != 0) rc = err_errno("cannot rename %s to %s", tmp, path), unlink(tmp);
    temps_untrack(tmp);
    if (rc == 0) rc = fsync_dir(dir);
    free(tmp);
    free(path);
    return rc;
}

// DIR/NAME -> TARGET, unless it already is.
static int ensure_link(const char *dir, const char *name, const char *target) {
    char *path = path_join(dir, name);
    char have[PATH_MAX];
    ssize_t n = readlink(path, have, sizeof have - 1);
    free(path);
    if (n >= 0 && (size_t)n == strlen(target) && !memcmp(have, target, (size_t)n)) return 0;
    return publish_link(dir, name, target);
}

// Remove all but the newest `keep` checkpoints at or before `newest`.
static int prune(const char *run_dir, int keep, int64_t newest) {
    int n, rc = 0;
    int64_t *steps = list_steps(run_dir, &n);
    int kept = 0;
    for (int i = n - 1; i >= 0 && rc == 0; i--) {
        if (steps[i] > newest || kept++ < keep) continue;
        char *p = step_dir(run_dir, steps[i]);
        rc = remove_tree(p);
        free(p);
    }
    free(steps);
    if (rc == 0 && n > 0) {
        char *cdir = path_join(run_dir, CKPT_SUBDIR);
        rc = fsync_dir(cdir);
        free(cdir);
    }
    return rc;
}

int ckpt_save(const char *run_dir, const Model *m, const Optimizer *o, const void *loader_state, size_t loader_len,
              const TrainCounters *c, const char *tokenizer_id, const char *config_json, int keep) {
    if (latest_step(run_dir) == c->step) return 0;  // this step is already the newest checkpoint
    char *cdir = path_join(run_dir, CKPT_SUBDIR);
    char name[40], tmpname[80], rel[80];
    step_name(name, sizeof name, c->step);
    snprintf(tmpname, sizeof tmpname, ".tmp-%s-%d", name, (int)getpid());
    snprintf(rel, sizeof rel, "%s/%s", CKPT_SUBDIR, name);
    char *tmp = path_join(cdir, tmpname), *final = path_join(cdir, name);
    char *sp = path_join(tmp, STATE_FILE), *mp = path_join(tmp, MODEL_FILE);
    int rc = mkdir_p(cdir);
    if (rc == 0) rc = remove_tree(tmp);
    if (rc == 0 && mkdir(tmp, 0755) != 0) rc = err_errno("cannot create folder %s", tmp);
    if (rc == 0) {
        temps_track(tmp, 1);
        temps_track(sp, 0);
        temps_track(mp, 0);
        fault_point("ckpt-begin");
        rc = save_state(sp, o, loader_state, loader_len, c);
    }
    if (rc == 0) {
        fault_point("ckpt-state");
        rc = save_model(mp, m, c->step, tokenizer_id, config_json);
    }
    if (rc == 0) {
        fault_point("ckpt-model");
        rc = fsync_dir(tmp);
    }
    // A step folder of this step that `latest` does not name is an orphan of a killed save.
    if (rc == 0) rc = remove_tree(final);
    if (rc == 0 && rename(tmp, final) != 0) rc = err_errno("cannot rename %s to %s", tmp, final);
    if (rc != 0) {
        char *why = xstrdup(err_msg());
        int usage = err_exit_code() == FRONTIER_EXIT_USAGE;
        remove_tree(tmp);
        err_set("%s", why);
        if (usage) err_mark_usage();
        free(why);
    }
    temps_untrack(mp);
    temps_untrack(sp);
    temps_untrack(tmp);
    if (rc == 0) rc = fsync_dir(cdir);
    if (rc == 0) {
        fault_point("ckpt-renamed");
        rc = publish_link(run_dir, LATEST, rel);  // the commit point
    }
    if (rc == 0) {
        fault_point("ckpt-published");
        rc = ensure_link(run_dir, MODEL_FILE, LATEST "/" MODEL_FILE);
    }
    if (rc == 0) rc = ensure_link(run_dir, STATE_FILE, LATEST "/" STATE_FILE);
    if (rc == 0) rc = prune(run_dir, keep < 1 ? 1 : keep, c->step);
    if (rc == 0) fault_point("ckpt-pruned");
    free(sp);
    free(mp);
    free(tmp);
    free(final);
    free(cdir);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------------

// A checkpoint file that cannot be opened or read is bad input (exit 2), named with its path.
static StFile *open_ckpt_file(const char *path) {
    StFile *f = st_open(path);
    if (!f) err_mark_usage();
    return f;
}

static int meta_int(const StFile *f, const char *key, int64_t *v) {
    const char *s = st_get_meta(f, key);
    char *end;
    errno = 0;
    if (!s || (*v = strtoll(s, &end, 10), *end || end == s || errno))
        return err_usage("%s: metadata \"%s\" missing or not an integer", st_path(f), key);
    return 0;
}

// A key older checkpoints lack: `dflt` when absent.
static int meta_int_opt(const StFile *f, const char *key, int64_t *v, int64_t dflt) {
    if (!st_get_meta(f, key)) { *v = dflt; return 0; }
    return meta_int(f, key, v);
}

// A finite number >= 0 (a duration).
static int meta_seconds(const StFile *f, const char *key, double *v, int optional) {
    const char *s = st_get_meta(f, key);
    char *end;
    if (!s && optional) { *v = 0; return 0; }
    if (!s || (*v = strtod(s, &end), *end || end == s))
        return err_usage("%s: metadata \"%s\" missing or not a number", st_path(f), key);
    if (!isfinite(*v) || *v < 0 || *v > 1e12)
        return err_usage("%s: metadata \"%s\" = %s is not a duration in seconds (finite, >= 0): the file is corrupt or "
                         "was edited", st_path(f), key, s);
    return 0;
}

int ckpt_read_meta(const char *path, ModelConfig *cfg, char tokenizer_id[65], int64_t *step) {
    char *p = ckpt_model_path(path);
    StFile *f = open_ckpt_file(p);
    free(p);
    if (!f) return -1;
    int rc = 0;
    const char *fmt = st_get_meta(f, "format"), *mc = st_get_meta(f, "model_config"), *tid = st_get_meta(f, "tokenizer_id");
    ModelConfig tmp;
    if (!fmt || strcmp(fmt, "frontier") || !mc)
        rc = err_usage("%s: not a frontier checkpoint (no \"model_config\" in its metadata)", st_path(f));
    else if (model_config_from_json(mc, cfg ? cfg : &tmp) != 0) rc = err_prefix("%s", st_path(f)), err_mark_usage();
    else if (step && meta_int(f, "step", step) != 0) rc = -1;
    else if (step && *step < 0) rc = err_usage("%s: metadata \"step\" is negative (%" PRId64 ")", st_path(f), *step);
    if (rc == 0 && tokenizer_id) snprintf(tokenizer_id, 65, "%s", tid ? tid : "");
    st_close(f);
    return rc;
}

char *ckpt_read_config(const char *path) {
    char *p = ckpt_model_path(path);
    StFile *f = open_ckpt_file(p);
    free(p);
    if (!f) return NULL;
    const char *c = st_get_meta(f, "config");
    char *out = c ? xstrdup(c) : NULL;
    if (!c) err_usage("%s: no \"config\" in its metadata (the training settings)", st_path(f));
    st_close(f);
    return out;
}

// The first element of x[0..n) that is not finite, or -1.
static int64_t first_nonfinite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return (int64_t)i;
    return -1;
}

static int check_finite(const StFile *f, const char *name, const float *x, int64_t rows, int64_t cols, const char *why) {
    int64_t bad = first_nonfinite(x, (size_t)(rows * cols));
    if (bad < 0) return 0;
    return err_usage("%s: tensor %s holds %s at element %" PRId64 " (row %" PRId64 ", column %" PRId64 ")%s",
                     st_path(f), name, isnan(x[bad]) ? "NaN" : "an infinity", bad, bad / cols, bad % cols, why);
}

int ckpt_load_model(const char *path, Model *m) {
    char *p = ckpt_model_path(path);
    StFile *f = open_ckpt_file(p);
    free(p);
    if (!f) return -1;
    int rc = 0;
    for (int i = 0; i < m->params.n && rc == 0; i++) {
        const ParamTensor *t = &m->params.t[i];
        int64_t shape[2] = {t->vector ? t->cols : t->rows, t->cols};
        float *dst = m->param + t->offset;
        rc = st_read_f32(f, t->name, dst, shape, t->vector ? 1 : 2);
        if (rc) err_mark_usage();
        else rc = check_finite(f, t->name, dst, t->rows, t->cols, ": the weights are corrupt or the run diverged");
    }
    if (rc == 0 && st_count(f) != m->params.n)
        rc = err_usage("%s: %d tensors, but the model has %d (extra tensors from another architecture?)", st_path(f),
                       st_count(f), m->params.n);
    st_close(f);
    return rc;
}

int ckpt_load_state(const char *ckpt_dir, Optimizer *o, DataLoader *dl, TrainCounters *c, int64_t expect_step,
                    int64_t batch_tokens) {
    char *p = path_join(ckpt_dir, STATE_FILE);
    StFile *f = open_ckpt_file(p);
    free(p);
    if (!f) return -1;
    int rc = 0;
    int64_t optim_step = 0, n_times = 0;
    TrainCounters t = {0};
    if (meta_int(f, "step", &t.step) || meta_int(f, "optim_step", &optim_step) || meta_int(f, "tokens", &t.tokens) ||
        meta_int(f, "n_step_times", &n_times) || meta_int_opt(f, "checkpoints", &t.checkpoints, 0) ||
        meta_int_opt(f, "metrics_bytes", &t.metrics_bytes, -1) || meta_seconds(f, "timed_s", &t.timed_s, 0) ||
        meta_seconds(f, "startup_s", &t.startup_s, 0) || meta_seconds(f, "excluded_s", &t.excluded_s, 0) ||
        meta_seconds(f, "checkpoint_s", &t.checkpoint_s, 1))
        rc = -1;
    const char *path = st_path(f);
    if (rc == 0 && t.step != expect_step)
        rc = err_usage("%s: saved at step %" PRId64 " but model.safetensors at step %" PRId64 " (interrupted save?); the "
                       "two files must come from the same save", path, t.step, expect_step);
    if (rc == 0 && optim_step != t.step)
        rc = err_usage("%s: metadata optim_step %" PRId64 " differs from step %" PRId64 ": the file is corrupt or was "
                       "edited", path, optim_step, t.step);
    if (rc == 0 && (batch_tokens <= 0 || t.tokens < 0 || t.tokens / batch_tokens != t.step || t.tokens % batch_tokens))
        rc = err_usage("%s: %" PRId64 " tokens trained in %" PRId64 " steps, but this run trains %" PRId64
                       " tokens a step: the file is corrupt, or --batch-tokens differs from the run's", path, t.tokens,
                       t.step, batch_tokens);
    if (rc == 0 && (n_times < 0 || n_times > t.step))
        rc = err_usage("%s: metadata n_step_times %" PRId64 " is outside [0, step %" PRId64 "]: the file is corrupt",
                       path, n_times, t.step);
    if (rc == 0 && (t.checkpoints < 0 || t.checkpoints > t.step + 1))
        rc = err_usage("%s: metadata checkpoints %" PRId64 " is outside [0, step + 1]: the file is corrupt", path,
                       t.checkpoints);
    int64_t tshape[1] = {STEP_TIME_WINDOW};
    if (rc == 0 && st_read(f, "step_times", ST_F64, t.step_times, tshape, 1) != 0) rc = err_mark_usage();
    for (int i = 0; i < STEP_TIME_WINDOW && rc == 0; i++)
        if (!isfinite(t.step_times[i]) || t.step_times[i] < 0)
            rc = err_usage("%s: step_times[%d] = %g is not a duration (finite, >= 0): the file is corrupt", path, i,
                           t.step_times[i]);
    for (int i = 0; i < o->n_st && rc == 0; i++) {  // a shard reads only the tensors it owns
        const OptimStateTensor *s = &o->st[i];
        int64_t shape[2] = {s->rows, s->cols};
        float *dst = optim_state_ptr(o, s);
        if (!dst) continue;
        if (st_read_f32(f, s->name, dst, shape, 2) != 0) rc = err_mark_usage();
        else rc = check_finite(f, s->name, dst, s->rows, s->cols, ": the optimizer state is corrupt");
    }
    if (rc == 0 && dl) {
        const StTensor *ls = st_get(f, "loader.state");
        if (!ls) rc = err_usage("%s: no loader.state tensor", path);
        else if (loader_load_state(dl, ls->data, ls->nbytes) != 0) rc = err_prefix("%s", path), err_mark_usage();
    }
    if (rc == 0) {
        t.n_step_times = (int)n_times;
        *c = t;
        o->step = optim_step;
    }
    st_close(f);
    return rc;
}
