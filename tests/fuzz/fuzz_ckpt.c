// tests/fuzz/fuzz_ckpt.c — the checkpoint readers of src/train/checkpoint.c: ckpt_read_meta,
// ckpt_load_model and ckpt_load_state (they take paths: the input is written to /dev/shm).
//
// Input: a safetensors file, used as model.safetensors and as train_state.safetensors. As a
// model: its config is read and, when it is small enough to build here, a model of that config
// is built and loaded from it. As a state: it is restored into the tiny run of fuzz_ckpt_model.h
// (the step it must match is taken from its own metadata, so the fuzzer gets past that check),
// and the restored data loader must go on giving batches of ids inside the vocabulary.
#include <math.h>

#include "fuzz_util.h"

#include "fuzz_ckpt_model.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/checkpoint.h"
#include "util/safetensors.h"

static Model g_model;
static Optimizer *g_opt;
static LoaderConfig g_lc;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (kernels_init() != 0) FUZZ_FAIL("kernels_init: %s", err_msg());
    ModelConfig mc = fuzz_ckpt_config();
    if (model_build(&g_model, &mc) != 0) FUZZ_FAIL("model_build: %s", err_msg());
    OptimConfig oc = optim_defaults();
    if (!(g_opt = optim_new(&oc, &g_model.params, mc.n_embd, 16))) FUZZ_FAIL("optim_new: %s", err_msg());
    g_lc = fuzz_ckpt_loader_config();
    return 0;
}

// A config this process can build in a few MB (the fuzzer writes any numbers).
static int small(const ModelConfig *c) {
    double params = 2.0 * c->vocab_size * c->n_embd +
                    (double)c->depth * ((double)c->n_embd * c->n_head * c->head_dim * 2 +
                                        2.0 * c->n_embd * c->n_kv_head * c->head_dim + 2.0 * c->mlp_ratio * c->n_embd * c->n_embd);
    return model_config_validate(c) == 0 && params < 1 << 18 && c->depth <= 8 && c->seq_len <= 256 &&
           (double)c->n_head * c->head_dim <= 4096 && c->mlp_ratio <= 16;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_file("model.safetensors", data, size);
    const char *state_path = fuzz_file("train_state.safetensors", data, size);
    (void)state_path;
    char model_path[256];
    snprintf(model_path, sizeof model_path, "%s/model.safetensors", fuzz_dir());

    // The state: restored into the tiny run, at the step its own metadata names.
    StFile *f = st_open_mem(data, size, "train_state.safetensors");
    const char *s = f ? st_get_meta(f, "step") : NULL;
    int64_t expect = s ? strtoll(s, NULL, 10) : 0;
    st_close(f);
    err_clear();

    ModelConfig cfg;
    char tid[65];
    int64_t step;
    if (ckpt_read_meta(fuzz_dir(), &cfg, tid, &step) != 0) {
        fuzz_expect_message();
    } else if (small(&cfg)) {
        Model m;
        FUZZ_CHECK(model_build(&m, &cfg) == 0, "model_build of a valid config: %s", err_msg());
        if (ckpt_load_model(model_path, &m) != 0) fuzz_expect_message();
        model_free(&m);
    }

    DataLoader *dl = loader_open_tokens(FUZZ_CKPT_TOKENS, sizeof FUZZ_CKPT_TOKENS / 2, "fuzz", FUZZ_CKPT_BOS, &g_lc);
    FUZZ_CHECK(dl, "loader: %s", err_msg());
    TrainCounters c;
    if (ckpt_load_state(fuzz_dir(), g_opt, dl, &c, expect, (int64_t)g_lc.B * g_lc.T) != 0) {
        fuzz_expect_message();
    } else {
        int32_t in[16], tg[16];
        for (int b = 0; b < 4; b++) {
            FUZZ_CHECK(loader_next(dl, in, tg) == 1, "a restored loader stopped: %s", err_msg());
            for (int i = 0; i < 16; i++)
                FUZZ_CHECK(in[i] >= 0 && in[i] < 32 && tg[i] >= -1 && tg[i] < 32, "restored batch id %d/%d", in[i],
                           tg[i]);
        }
    }
    loader_free(dl);
    return 0;
}
