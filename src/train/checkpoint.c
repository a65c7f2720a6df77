// train/checkpoint.c — saving and restoring a run (see checkpoint.h).
#include "train/checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/safetensors.h"

char *ckpt_model_path(const char *p) {
    if (path_has_suffix(p, ".safetensors")) return xstrdup(p);
    return path_join(p, "model.safetensors");
}

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

// ---------------------------------------------------------------------------------------------
// Save
// ---------------------------------------------------------------------------------------------

static int save_model(const char *path, const Model *m, int64_t step, const char *tokenizer_id,
                      const char *config_json) {
    StWriter *w = st_writer_new();
    for (int i = 0; i < m->params.n; i++) {
        const ParamTensor *p = &m->params.t[i];
        int64_t shape[2] = {p->rows, p->cols};
        st_add(w, p->name, ST_F32, shape, 2, m->param + p->offset);
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

static int save_state(const char *path, const Optimizer *o, const DataLoader *dl, const TrainCounters *c) {
    for (int i = 0; i < o->n_st; i++)  // a shard must have been gathered first (train.c)
        if (!optim_state_ptr(o, &o->st[i]))
            return err_set("%s: optimizer state %s is on another rank (gather the shards first)", path, o->st[i].name);
    StWriter *w = st_writer_new();
    for (int i = 0; i < o->n_st; i++) {
        const OptimStateTensor *t = &o->st[i];
        int64_t shape[2] = {t->rows, t->cols};
        st_add(w, t->name, ST_F32, shape, 2, optim_state_ptr(o, t));
    }
    size_t ls = dl ? loader_state_size(dl) : 0;
    uint8_t *blob = xmalloc(ls ? ls : 1);
    if (dl) loader_save_state(dl, blob);
    int64_t lshape[1] = {(int64_t)ls};
    st_add(w, "loader.state", ST_U8, lshape, 1, blob);
    int64_t tshape[1] = {STEP_TIME_WINDOW};
    st_add(w, "step_times", ST_F64, tshape, 1, c->step_times);
    meta_i64(w, "step", c->step);
    meta_i64(w, "optim_step", o->step);
    meta_i64(w, "tokens", c->tokens);
    meta_i64(w, "n_step_times", c->n_step_times);
    meta_f64(w, "timed_s", c->timed_s);
    meta_f64(w, "startup_s", c->startup_s);
    meta_f64(w, "excluded_s", c->excluded_s);
    int rc = st_save(w, path);
    free(blob);
    st_writer_free(w);
    return rc;
}

int ckpt_save(const char *run_dir, const Model *m, const Optimizer *o, const DataLoader *dl, const TrainCounters *c,
              const char *tokenizer_id, const char *config_json) {
    // State first, model second: a crash in between leaves a model from the previous save and a
    // state from this one, which resume detects by their different steps.
    char *sp = path_join(run_dir, "train_state.safetensors"), *mp = path_join(run_dir, "model.safetensors");
    int rc = save_state(sp, o, dl, c);
    if (rc == 0) rc = save_model(mp, m, c->step, tokenizer_id, config_json);
    free(sp);
    free(mp);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------------

static int meta_int(const StFile *f, const char *key, int64_t *v) {
    const char *s = st_get_meta(f, key);
    char *end;
    if (!s || (*v = strtoll(s, &end, 10), *end)) return err_set("%s: metadata \"%s\" missing or not an integer", st_path(f), key);
    return 0;
}

static int meta_double(const StFile *f, const char *key, double *v) {
    const char *s = st_get_meta(f, key);
    char *end;
    if (!s || (*v = strtod(s, &end), *end)) return err_set("%s: metadata \"%s\" missing or not a number", st_path(f), key);
    return 0;
}

int ckpt_read_meta(const char *path, ModelConfig *cfg, char tokenizer_id[65], int64_t *step) {
    char *p = ckpt_model_path(path);
    StFile *f = st_open(p);
    free(p);
    if (!f) return -1;
    int rc = 0;
    const char *fmt = st_get_meta(f, "format"), *mc = st_get_meta(f, "model_config"), *tid = st_get_meta(f, "tokenizer_id");
    if (!fmt || strcmp(fmt, "frontier") || !mc)
        rc = err_set("%s: not a frontier checkpoint (no \"model_config\" in its metadata)", st_path(f));
    else if (model_config_from_json(mc, cfg) != 0) rc = err_prefix("%s", st_path(f));
    else if (step && meta_int(f, "step", step) != 0) rc = -1;
    if (rc == 0 && tokenizer_id) snprintf(tokenizer_id, 65, "%s", tid ? tid : "");
    st_close(f);
    return rc;
}

int ckpt_load_model(const char *path, Model *m) {
    char *p = ckpt_model_path(path);
    StFile *f = st_open(p);
    free(p);
    if (!f) return -1;
    int rc = 0;
    for (int i = 0; i < m->params.n && rc == 0; i++) {
        const ParamTensor *t = &m->params.t[i];
        int64_t shape[2] = {t->rows, t->cols};
        rc = st_read_f32(f, t->name, m->param + t->offset, shape, 2);
    }
    if (rc == 0 && st_count(f) != m->params.n)
        rc = err_set("%s: %d tensors, but the model has %d (extra tensors from another architecture?)", st_path(f),
                     st_count(f), m->params.n);
    st_close(f);
    return rc;
}

int ckpt_load_state(const char *run_dir, Optimizer *o, DataLoader *dl, TrainCounters *c, int64_t expect_step) {
    char *p = path_join(run_dir, "train_state.safetensors");
    StFile *f = st_open(p);
    free(p);
    if (!f) return -1;
    int rc = 0;
    int64_t optim_step = 0, n_times = 0;
    memset(c, 0, sizeof *c);
    if (meta_int(f, "step", &c->step) || meta_int(f, "optim_step", &optim_step) || meta_int(f, "tokens", &c->tokens) ||
        meta_int(f, "n_step_times", &n_times) || meta_double(f, "timed_s", &c->timed_s) ||
        meta_double(f, "startup_s", &c->startup_s) || meta_double(f, "excluded_s", &c->excluded_s))
        rc = -1;
    if (rc == 0 && c->step != expect_step)
        rc = err_set("%s: saved at step %lld but model.safetensors at step %lld (interrupted save?); the two files "
                     "must come from the same save", st_path(f), (long long)c->step, (long long)expect_step);
    for (int i = 0; i < o->n_st && rc == 0; i++) {  // a shard reads only the tensors it owns
        const OptimStateTensor *t = &o->st[i];
        int64_t shape[2] = {t->rows, t->cols};
        float *dst = optim_state_ptr(o, t);
        if (dst) rc = st_read_f32(f, t->name, dst, shape, 2);
    }
    int64_t tshape[1] = {STEP_TIME_WINDOW};
    if (rc == 0) rc = st_read(f, "step_times", ST_F64, c->step_times, tshape, 1);
    if (rc == 0 && dl) {
        const StTensor *ls = st_get(f, "loader.state");
        if (!ls) rc = err_set("%s: no loader.state tensor", st_path(f));
        else if (loader_load_state(dl, ls->data, ls->nbytes) != 0) rc = err_prefix("%s", st_path(f));
    }
    c->n_step_times = (int)n_times;
    o->step = optim_step;
    st_close(f);
    return rc;
}
