// tests/fuzz/tool_fuzz_seeds.c — writes the fuzz seeds that come from frontier's own writers:
// tokenizers (tokenizer_save), safetensors files (st_save), a checkpoint of a tiny run
// (ckpt_save) and model configs (model_config_to_json). Run by tests/fuzz/gen_seeds.sh:
//   tool_fuzz_seeds REAL_TOKENIZER_DIR OUT_DIR
// OUT_DIR gets tokenizer/, safetensors/, ckpt/ and config/ seed files.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ckpt_model.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "optim/optim.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/safetensors.h"

static void die(const char *what) {
    fprintf(stderr, "tool_fuzz_seeds: %s: %s\n", what, err_msg());
    exit(1);
}

static void put(const char *dir, const char *name, const void *a, size_t na, const void *b, size_t nb) {
    char *path = path_join(dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) || fclose(f)) die(path);
    free(path);
}

static void copy_file(const char *from, const char *dir, const char *name) {
    size_t n;
    char *text = read_file(from, &n);
    if (!text) die(from);
    put(dir, name, text, n, NULL, 0);
    free(text);
}

// The fuzz input of fuzz_tokenizer: tokenizer.json, a NUL byte, tokenizer.tiktoken.
static void tokenizer_seed(const Tokenizer *tok, const char *tmp, const char *out, const char *name) {
    if (tokenizer_save(tok, tmp) != 0) die("tokenizer_save");
    char *mp = path_join(tmp, "tokenizer.json"), *rp = path_join(tmp, "tokenizer.tiktoken");
    size_t nm, nr;
    char *meta = read_file(mp, &nm), *ranks = read_file(rp, &nr);
    if (!meta || !ranks) die("reading the saved tokenizer");
    char *both = malloc(nm + 1 + nr);
    memcpy(both, meta, nm);
    both[nm] = 0;
    memcpy(both + nm + 1, ranks, nr);
    put(out, name, both, nm + 1 + nr, NULL, 0);
    free(both), free(meta), free(ranks), free(mp), free(rp);
}

// A tokenizer of the first n ranks of tok (its merges are in rank order, so any prefix is one).
static Tokenizer *prefix_tokenizer(const Tokenizer *tok, int n, const char *pattern) {
    const uint8_t **t = malloc((size_t)n * sizeof *t);
    uint32_t *l = malloc((size_t)n * sizeof *l);
    for (int i = 0; i < n; i++) t[i] = tok->bytes + tok->tok_off[i], l[i] = tok->tok_len[i];
    Tokenizer *p = tokenizer_build(t, l, n, pattern);
    if (!p) die("tokenizer_build");
    free(t), free(l);
    return p;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tool_fuzz_seeds REAL_TOKENIZER_DIR OUT_DIR\n");
        return 2;
    }
    const char *out = argv[2];
    char *tmp = path_join(out, "tmp");
    const char *sub[] = {"tokenizer", "safetensors", "ckpt", "config"};
    char *dirs[4];
    for (int i = 0; i < 4; i++)
        if (mkdir_p(dirs[i] = path_join(out, sub[i])) != 0) die(dirs[i]);

    // tokenizers: the real one's first 300 and 260 ranks (its pattern), the bytes alone with a
    // simple pattern, one with training provenance
    Tokenizer *real = tokenizer_load(argv[1]);
    if (!real) die(argv[1]);
    Tokenizer *t300 = prefix_tokenizer(real, 300, real->pattern);
    t300->doc_cap = 10000, t300->max_chars = 2000000000, t300->train_chars = 123456, t300->train_docs = 78;
    tokenizer_seed(t300, tmp, dirs[0], "real_300_ranks");
    Tokenizer *t260 = prefix_tokenizer(real, 260, real->pattern);
    tokenizer_seed(t260, tmp, dirs[0], "real_260_ranks");
    Tokenizer *t256 = prefix_tokenizer(real, 256, "[a-z]+| ?[^a-z ]+|\\s+");
    tokenizer_seed(t256, tmp, dirs[0], "bytes_simple_pattern");
    tokenizer_free(t300), tokenizer_free(t260), tokenizer_free(t256), tokenizer_free(real);

    // safetensors: every dtype, a scalar, an empty tensor, 8 dims, metadata
    StWriter *w = st_writer_new();
    static const double f64[3] = {1.5, -2, 1e300};
    static const float f32[6] = {1, 2, 3, 4, 5, 6};
    static const uint16_t u16[4] = {1, 0x3f80, 0xffff, 0};
    static const uint8_t u8[5] = {0, 1, 1, 0, 255};
    static const int64_t i64[2] = {-1, 1LL << 62};
    int64_t s23[] = {2, 3}, s3[] = {3}, s4[] = {4}, s5[] = {5}, s2[] = {2}, s0[] = {0, 4}, s8[] = {1, 1, 1, 1, 1, 1, 1, 2};
    st_add(w, "w.f32", ST_F32, s23, 2, f32);
    st_add(w, "w.f64", ST_F64, s3, 1, f64);
    st_add(w, "w.bf16", ST_BF16, s4, 1, u16);
    st_add(w, "w.f16", ST_F16, s2, 1, u16);
    st_add(w, "w.u8", ST_U8, s5, 1, u8);
    st_add(w, "w.bool", ST_BOOL, s4, 1, u8);
    st_add(w, "w.i64", ST_I64, s2, 1, i64);
    st_add(w, "scalar", ST_F32, NULL, 0, f32);
    st_add(w, "empty", ST_F32, s0, 2, NULL);
    st_add(w, "eight_dims", ST_U8, s8, 8, u8);
    st_meta(w, "format", "pt");
    st_meta(w, "note", "tabs\tand \"quotes\" and unicode \xc3\xa9");
    char *p = path_join(dirs[1], "dtypes.safetensors");
    if (st_save(w, p) != 0) die(p);
    free(p);
    st_writer_free(w);
    w = st_writer_new();  // the smallest file: an empty header
    p = path_join(dirs[1], "empty.safetensors");
    if (st_save(w, p) != 0) die(p);
    free(p);
    st_writer_free(w);

    // a checkpoint of the tiny run fuzz_ckpt restores into, after 2 batches
    if (kernels_init() != 0) die("kernels_init");
    ModelConfig mc = fuzz_ckpt_config();
    Model m;
    if (model_build(&m, &mc) != 0) die("model_build");
    model_init_weights(&m, 1);
    OptimConfig oc = optim_defaults();
    Optimizer *o = optim_new(&oc, &m.params, mc.n_embd, 16);
    if (!o) die("optim_new");
    LoaderConfig lc = fuzz_ckpt_loader_config();
    DataLoader *dl = loader_open_tokens(FUZZ_CKPT_TOKENS, sizeof FUZZ_CKPT_TOKENS / 2, "fuzz", FUZZ_CKPT_BOS, &lc);
    if (!dl) die("loader");
    int32_t in[16], tg[16];
    loader_next(dl, in, tg);
    loader_next(dl, in, tg);
    TrainCounters c = {.step = 2, .tokens = 32, .timed_s = 0.5, .startup_s = 0.25, .n_step_times = 2};
    c.step_times[0] = 0.2, c.step_times[1] = 0.3;
    o->step = 2;
    size_t ls_len = loader_state_size(dl);
    void *ls = malloc(ls_len);
    loader_save_state(dl, ls);
    if (ckpt_save(tmp, &m, o, ls, ls_len, &c, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  "{\"depth\": 1, \"seed\": 1}", 1) != 0)
        die("ckpt_save");
    free(ls);
    char *mp = path_join(tmp, "model.safetensors"), *sp = path_join(tmp, "train_state.safetensors");
    copy_file(mp, dirs[2], "model.safetensors");
    copy_file(sp, dirs[2], "train_state.safetensors");
    copy_file(mp, dirs[1], "tiny_model.safetensors");
    free(mp), free(sp);
    loader_free(dl), optim_free(o), model_free(&m);

    // model configs as checkpoints store them: the presets, the tiny run's, a sliding window
    const char *presets[] = {"cpu", "kit-d10"};
    for (int i = 0; i < 3; i++) {
        ModelConfig x = fuzz_ckpt_config();
        if (i < 2) model_config_preset(presets[i], &x);
        if (i == 1) snprintf(x.window_pattern, sizeof x.window_pattern, "SSSL");
        char *j = model_config_to_json(&x), name[32];
        snprintf(name, sizeof name, "model_config_%d.json", i);
        put(dirs[3], name, j, strlen(j), NULL, 0);
        free(j);
    }
    remove_tree(tmp);
    free(tmp);
    for (int i = 0; i < 4; i++) free(dirs[i]);
    return 0;
}
