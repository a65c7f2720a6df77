// tests/model/tool_parity_dump.c — writes what tests/model/torch_ref.py checks frontier against
// (the dump contract is in tests/model/README.md).
//
//   tool_parity_dump DATA_DIR OUT_DIR
//
// OUT_DIR/steps: a small GQA model (depth 2, C 64, 2 query heads, 1 kv head; layer 0 with a
//   sliding window of 16 keys, layer 1 full) at init, 10 Muon +
//   AdamW steps on real training batches (2 micro-batches of 2 x 64 tokens), step 0's loss and
//   gradients, and every step's loss.
// OUT_DIR/val: the same model after those 10 steps, saved by frontier's own checkpoint writer,
//   one more step's batch and gradients, and the packed rows of the first 100,000 validation
//   target positions with frontier's val_bpb on them.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"
#include "data/shard.h"
#include "eval/bpb.h"
#include "model/model.h"
#include "optim/optim.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/rng.h"
#include "util/safetensors.h"

#define DUMP_B 2
#define DUMP_T 64
#define DUMP_G 2
#define VAL_TOKENS 100000

static void die(void) {
    fprintf(stderr, "tool_parity_dump: %s\n", err_msg());
    exit(1);
}

static char **shards(const char *dir, const char *prefix, int *n) {
    char **out;
    if (shard_list(dir, prefix, &out, n) != 0) die();
    return out;
}

static cJSON *step_json(const Model *m, const Optimizer *o, const OptimSchedule *s) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "muon_lr", (double)(o->lr_muon * s->lr_mult));
    cJSON_AddNumberToObject(j, "muon_momentum", s->muon_momentum);
    cJSON_AddNumberToObject(j, "muon_wd", s->muon_wd);
    cJSON_AddNumberToObject(j, "wte_lr", (double)(o->lr_wte * s->lr_mult));
    cJSON_AddNumberToObject(j, "wte_beta1", o->cfg.wte_beta1);
    cJSON_AddNumberToObject(j, "wte_beta2", o->cfg.wte_beta2);
    cJSON_AddNumberToObject(j, "wte_wd", o->cfg.wte_wd);
    cJSON_AddNumberToObject(j, "lm_head_lr", (double)(o->lr_lm_head * s->lr_mult));
    cJSON_AddNumberToObject(j, "lm_head_beta1", o->cfg.lm_head_beta1);
    cJSON_AddNumberToObject(j, "lm_head_beta2", o->cfg.lm_head_beta2);
    cJSON_AddNumberToObject(j, "lm_head_wd", o->cfg.lm_head_wd);
    cJSON_AddNumberToObject(j, "adam_eps", o->cfg.adam_eps);
    // the other AdamW groups, where the model has them: one set of keys per group
    for (int i = 0; i < m->params.n; i++) {
        const ParamTensor *p = &m->params.t[i];
        const char *group = p->kind == PARAM_RESID_LAMBDAS ? "resid" : p->kind == PARAM_X0_LAMBDAS ? "x0"
                          : p->kind == PARAM_GATE_SCALARS ? "gate" : p->kind == PARAM_VALUE_EMBED ? "ve"
                          : p->kind == PARAM_BIGRAM ? "bigram" : NULL;
        char key[32];
        snprintf(key, sizeof key, "%s_lr", group ? group : "");
        if (!group || cJSON_GetObjectItemCaseSensitive(j, key)) continue;
        float lr, b1, b2, wd;
        if (optim_adamw_hparams(o, p->name, &lr, &b1, &b2, &wd) != 0) die();
        cJSON_AddNumberToObject(j, key, (double)(lr * s->lr_mult));
        snprintf(key, sizeof key, "%s_beta1", group), cJSON_AddNumberToObject(j, key, b1);
        snprintf(key, sizeof key, "%s_beta2", group), cJSON_AddNumberToObject(j, key, b2);
        snprintf(key, sizeof key, "%s_wd", group), cJSON_AddNumberToObject(j, key, wd);
    }
    return j;
}

static void write_config(const char *dir, const ModelConfig *mc, cJSON *steps) {
    cJSON *root = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(root, "model");
    char *mj = model_config_to_json(mc);
    cJSON *parsed = cJSON_Parse(mj);
    free(mj);
    cJSON *it;
    cJSON_ArrayForEach(it, parsed) cJSON_AddItemToObject(m, it->string, cJSON_Duplicate(it, 1));
    cJSON_Delete(parsed);
    cJSON_AddItemToObject(root, "steps", steps);
    cJSON_AddNumberToObject(root, "grad_accum", DUMP_G);
    char *text = cJSON_Print(root), *path = path_join(dir, "config.json");
    if (write_file_atomic(path, text, strlen(text)) != 0) die();
    free(text);
    free(path);
    cJSON_Delete(root);
}

static void save_params(const Model *m, const char *path, const float *buf, const float *loss) {
    StWriter *w = st_writer_new();
    int64_t one = 1;
    if (loss) st_add(w, "loss", ST_F32, &one, 1, loss);
    for (int i = 0; i < m->params.n; i++) {
        const ParamTensor *p = &m->params.t[i];
        int64_t shape[2] = {p->vector ? p->cols : p->rows, p->cols};
        st_add(w, p->name, ST_F32, shape, p->vector ? 1 : 2, buf + p->offset);
    }
    if (st_save(w, path) != 0) die();
    st_writer_free(w);
}

// Run `steps` optimizer steps, recording batches, step-0 gradients and the losses into dir.
static void run_steps(Model *m, Optimizer *o, DataLoader *dl, RunState *rs, int steps, int first_step,
                      const char *dir) {
    size_t per = (size_t)DUMP_G * DUMP_B * DUMP_T;
    int32_t *in = xmalloc(steps * per * sizeof *in), *tg = xmalloc(steps * per * sizeof *tg);
    float *losses = xmalloc((size_t)steps * sizeof *losses), loss0 = 0;
    cJSON *sj = cJSON_CreateArray();
    for (int s = 0; s < steps; s++) {
        model_zero_grad(m);
        double loss = 0;
        for (int g = 0; g < DUMP_G; g++) {
            int32_t *bi = in + s * per + (size_t)g * DUMP_B * DUMP_T, *bt = tg + s * per + (size_t)g * DUMP_B * DUMP_T;
            if (loader_next(dl, bi, bt) != 1) die();
            loss += model_forward(m, rs, bi, bt, DUMP_B, DUMP_T, NULL);
            model_backward(m, rs, bi, bt, 1.0f / DUMP_G);
        }
        losses[s] = (float)(loss / DUMP_G);
        if (s == 0) {
            loss0 = losses[0];
            char *p = path_join(dir, "grads.safetensors");
            save_params(m, p, m->grad, &loss0);
            free(p);
        }
        OptimSchedule sched = optim_schedule(&o->cfg, first_step + s, (double)(first_step + s) / 20);
        cJSON_AddItemToArray(sj, step_json(m, o, &sched));
        optim_step(o, m->param, m->grad, &sched);
    }
    StWriter *w = st_writer_new();
    int64_t bshape[4] = {steps, DUMP_G, DUMP_B, DUMP_T}, lshape[1] = {steps};
    st_add(w, "inputs", ST_I32, bshape, 4, in);
    st_add(w, "targets", ST_I32, bshape, 4, tg);
    char *p = path_join(dir, "batches.safetensors");
    if (st_save(w, p) != 0) die();
    st_writer_free(w);
    free(p);
    w = st_writer_new();
    st_add(w, "losses", ST_F32, lshape, 1, losses);
    p = path_join(dir, "losses.safetensors");
    if (st_save(w, p) != 0) die();
    st_writer_free(w);
    free(p);
    write_config(dir, &m->cfg, sj);
    free(in);
    free(tg);
    free(losses);
}

// The packed validation rows eval_bpb scores for max_tokens = VAL_TOKENS, and its val_bpb.
static void dump_val(Model *m, const Tokenizer *tok, char **val, int n_val, const char *dir) {
    BpbResult r;
    if (eval_bpb(m, (const char *const *)val, n_val, tok->bos_id, tok->token_bytes, 8, DUMP_T, VAL_TOKENS, &r) != 0) die();
    LoaderConfig lc = loader_defaults();
    lc.B = 1;
    lc.T = DUMP_T;
    lc.shuffle = 0;
    DataLoader *dl = loader_open((const char *const *)val, n_val, tok->bos_id, &lc);
    if (!dl) die();
    int32_t *in = xmalloc((size_t)r.rows * DUMP_T * sizeof *in), *tg = xmalloc((size_t)r.rows * DUMP_T * sizeof *tg);
    for (int64_t i = 0; i < r.rows; i++)
        if (loader_next(dl, in + i * DUMP_T, tg + i * DUMP_T) != 1) die();
    loader_free(dl);
    StWriter *w = st_writer_new();
    int64_t shape[2] = {r.rows, DUMP_T}, vshape[1] = {tok->vocab_size}, one = 1;
    st_add(w, "inputs", ST_I32, shape, 2, in);
    st_add(w, "targets", ST_I32, shape, 2, tg);
    st_add(w, "token_bytes", ST_I32, vshape, 1, tok->token_bytes);
    st_add(w, "val_bpb", ST_F64, &one, 1, &r.bpb);
    char *p = path_join(dir, "val.safetensors");
    if (st_save(w, p) != 0) die();
    st_writer_free(w);
    free(p);
    printf("val: %lld rows x %d, %lld positions, %lld scored tokens, val_bpb %.6f\n", (long long)r.rows, DUMP_T,
           (long long)r.positions, (long long)r.tokens, r.bpb);
    free(in);
    free(tg);
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "recipe"))) {
        fprintf(stderr, "usage: tool_parity_dump DATA_DIR OUT_DIR [recipe]\n");
        return 2;
    }
    const char *data = argv[1], *out = argv[2];
    char *tokdir = path_join(data, "tokenizer");
    Tokenizer *tok = tokenizer_load(tokdir);
    if (!tok) die();
    int n_train, n_val;
    char **train = shards(data, "train_", &n_train), **val = shards(data, "val_", &n_val);
    // layer 0 with a sliding window of 16 keys (of T = 64), layer 1 full: both attentions checked
    ModelConfig mc = {.depth = 2, .n_embd = 64, .n_head = 2, .n_kv_head = 1, .head_dim = 32, .seq_len = DUMP_T,
                      .vocab_size = tok->vocab_size, .mlp_ratio = 4, .rope_base = 100000.0f, .softcap = 15.0f,
                      .qk_norm = 1, .window_pattern = "S", .window = 16};
    if (argc == 4) {  // nanochat's residual-stream recipe; depth 3, so backout subtracts block 1's output
        mc.depth = 3, mc.lambdas = 1, mc.backout = 1, mc.qk_scale = 1.2f;
        mc.value_embeds = 1, mc.smear = 1, mc.bigram = 1021;  // value embeddings on layers 0 and 2
        snprintf(mc.window_pattern, sizeof mc.window_pattern, "SL");
    }
    Model m;
    if (model_build(&m, &mc) != 0) die();
    model_init_weights(&m, 1234);
    if (argc == 4) {
        // Output projections nonzero: with them zero every block is the identity, the residual is
        // a multiple of x0 that the final norm cancels, and the lambdas' true gradient is exactly
        // 0 — leaving only rounding noise, which AdamW's normalisation turns into full-size steps
        // of either sign (fp32 and fp64 then part ways at once).
        Rng r;
        rng_seed(&r, 99);
        // Likewise smear_lambda and the bigram table, which start at zero: smear's gate would get no
        // gradient, and the table would be checked only through its own.
        for (int i = 0; i < m.params.n; i++) {
            const ParamTensor *t = &m.params.t[i];
            double a = strstr(t->name, "c_proj") ? 0.02 : !strcmp(t->name, "smear_lambda") ? 0.5
                     : t->kind == PARAM_BIGRAM ? 0.1 : 0.0;
            for (size_t k = 0; a > 0 && k < t->numel; k++)
                m.param[t->offset + k] = (float)(a * (2.0 * rng_uniform(&r) - 1.0));
        }
    }
    OptimConfig oc = optim_defaults();
    oc.ref_batch_tokens = DUMP_G * DUMP_B * DUMP_T;  // batch scale 1: the learning rates are big enough to matter
    oc.warmup_steps = 2;
    Optimizer *o = optim_new(&oc, &m.params, mc.n_embd, (long long)DUMP_G * DUMP_B * DUMP_T);
    LoaderConfig lc = loader_defaults();
    lc.B = DUMP_B;
    lc.T = DUMP_T;
    lc.seed = 7;
    DataLoader *dl = loader_open((const char *const *)train, n_train, tok->bos_id, &lc);
    if (!o || !dl) die();
    RunState rs;
    runstate_build(&rs, &mc, DUMP_B, DUMP_T);
    char *d1 = path_join(out, "steps"), *d2 = path_join(out, "val");
    if (mkdir_p(d1) != 0 || mkdir_p(d2) != 0) die();
    char *p = path_join(d1, "model.safetensors");
    save_params(&m, p, m.param, NULL);
    free(p);
    run_steps(&m, o, dl, &rs, 10, 0, d1);
    // the trained model, through the real checkpoint writer
    TrainCounters ctr = {.step = 10, .tokens = 10LL * DUMP_G * DUMP_B * DUMP_T};
    size_t ls_len = loader_state_size(dl);
    void *ls = malloc(ls_len);
    loader_save_state(dl, ls);
    if (ckpt_save(d2, &m, o, ls, ls_len, &ctr, tok->id, "{}", 1) != 0) die();
    free(ls);
    dump_val(&m, tok, val, n_val, d2);
    run_steps(&m, o, dl, &rs, 1, 10, d2);  // overwrites nothing of the model: it was saved first
    printf("wrote %s and %s\n", d1, d2);
    runstate_free(&rs);
    loader_free(dl);
    optim_free(o);
    model_free(&m);
    tokenizer_free(tok);
    free_string_list(train, n_train);
    free_string_list(val, n_val);
    free(tokdir);
    free(d1);
    free(d2);
    return 0;
}
