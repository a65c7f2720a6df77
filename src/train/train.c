// train/train.c — the training loop with its budget clock (see train.h).
#include "train/train.h"
#include "train/summary.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "data/loader.h"
#include "data/mix.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "dist/dist.h"
#include "eval/bpb.h"
#include "kernels/cpu/cpu.h"
#include "model/model.h"
#include "kernels/kernels.h"
#include "profile/profile.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/faults.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/timer.h"
#include "util/json_file.h"

// ---------------------------------------------------------------------------------------------
// Setup: data, tokenizer, model, optimizer, loader (or all of it restored from a run folder)
// ---------------------------------------------------------------------------------------------

typedef struct {
    Tokenizer *tok;
    char data_dir[1024];
    char **train_shards, **val_shards;
    int n_train, n_val;
    Mix mix;            // the sources of the training data (--mix; the train shards alone without it)
    char **src_shards[MIX_MAX_SOURCES];  // (mix.n) each source's shards; train's are train_shards
    int src_n_shards[MIX_MAX_SOURCES];
    Model model;
    Optimizer *opt;
    DataLoader *loader;
    RunState rs;
    int32_t *inputs, *targets;  // (device_batch, T)
    FILE *metrics;
    TrainCounters ctr;
    int grad_accum;     // micro-batches this rank runs per step
    int micro_rows;     // rows per micro-batch on this rank (device_batch, or less to split over ranks)
    int rank, world;    // data-parallel position (dist.h); 0 of 1 without mpirun
    double comm_s;      // seconds in gradient/parameter collectives in the last step
    int lock_fd;        // the run folder's lock (rank 0; -1 when not held)
    uint8_t *lstate;    // (lstate_len) the loader's state at the start of the current step
    size_t lstate_len, lstate_cap;
    int64_t ckpt_bytes; // what one checkpoint writes
    int64_t saved_step; // the step of the newest checkpoint (-1: none yet)
} Run;

// ---------------------------------------------------------------------------------------------
// Signals: the first SIGINT/SIGTERM asks the loop to save and stop; a second one (or one outside
// the loop, where there is nothing to save) exits at once, removing the temp files being written.
// ---------------------------------------------------------------------------------------------

static volatile sig_atomic_t g_signal;   // the first signal received (0: none)
static volatile sig_atomic_t g_deferred; // 1 while the loop can stop cleanly at its next check

static void on_signal(int sig) {
    if (g_signal || !g_deferred) {
        temps_remove();
        static const char again[] = "\nfrontier: interrupted again: exiting now (the last checkpoint is kept)\n";
        static const char now[] = "\nfrontier: interrupted outside the training steps: exiting now (a checkpoint, "
                                  "if any, is kept)\n";
        if (g_signal ? write(2, again, sizeof again - 1) : write(2, now, sizeof now - 1)) {}
        _exit(128 + sig);
    }
    g_signal = sig;
    static const char msg[] = "\nfrontier: interrupted: saving a checkpoint after this micro-batch (press Ctrl-C "
                              "again to exit now and keep the last checkpoint)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {}
}

typedef struct { struct sigaction old_int, old_term; } SavedSignals;

static void signals_install(SavedSignals *saved) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    g_signal = 0, g_deferred = 0;
    sigaction(SIGINT, &sa, &saved->old_int);
    sigaction(SIGTERM, &sa, &saved->old_term);
}

static void signals_restore(const SavedSignals *saved) {
    sigaction(SIGINT, &saved->old_int, NULL);
    sigaction(SIGTERM, &saved->old_term, NULL);
    g_deferred = 0;
}

// The signal that stops the loop now, the same on every rank (the largest any rank received).
static int interrupted(const Run *r) {
    if (r->world == 1) return g_signal;
    double s = g_signal;
    dist_allreduce_max_f64(&s, 1);
    return (int)s;
}

static void snapshot_loader(Run *r) {
    r->lstate_len = loader_state_size(r->loader);
    if (r->lstate_len > r->lstate_cap) {
        free(r->lstate);
        r->lstate = xmalloc(r->lstate_cap = r->lstate_len);
    }
    loader_save_state(r->loader, r->lstate);
}

_Static_assert(TRAIN_MAX_SOURCES == MIX_MAX_SOURCES, "a summary row for every source of a mixture");

// The extra sources of a --mix mixture, each encoded with the run's tokenizer into train-only
// shards (cached: a second run finds them), and every source's shard list.
static int setup_sources(const TrainConfig *cfg, Run *r) {
    if (mix_parse(cfg->mix, default_data_root(), &r->mix) != 0) return -1;
    int rc = 0;
    for (int i = 0; i < r->mix.n && rc == 0; i++) {
        const MixSource *m = &r->mix.src[i];
        if (!strcmp(m->name, "train")) {
            r->src_shards[i] = r->train_shards, r->src_n_shards[i] = r->n_train;
            continue;
        }
        PrepareResult pr;
        // Rank 0 prepares (or finds the cache); the others then find it ready (as setup_data).
        int quiet = cfg->quiet || r->rank != 0;
        if (r->rank == 0) rc = mix_prepare_source(m, r->data_dir, cfg->cache_dir, cfg->threads, quiet, &pr);
        dist_barrier();
        if (rc == 0 && r->rank != 0) rc = mix_prepare_source(m, r->data_dir, cfg->cache_dir, cfg->threads, quiet, &pr);
        if (rc == 0 && shard_list(pr.data_dir, "train_", &r->src_shards[i], &r->src_n_shards[i]) != 0)
            rc = err_prefix("--mix source %s", m->name);
    }
    return rc;
}

static int setup_data(const TrainConfig *cfg, Run *r) {
    if (cfg->data_dir) {
        snprintf(r->data_dir, sizeof r->data_dir, "%s", cfg->data_dir);
    } else {
        PrepareConfig pc = prepare_defaults();
        pc.cache_dir = cfg->cache_dir ? cfg->cache_dir : "cache";
        pc.bpe.vocab_size = cfg->model.vocab_size;
        pc.threads = cfg->threads;
        pc.quiet = cfg->quiet || r->rank != 0;
        PrepareResult pr;
        // Rank 0 prepares (or finds the cache); the others then find it ready. (Across machines
        // without a shared file system each rank would build its own identical copy: pass --data.)
        if (r->rank == 0 && prepare_run(&pc, &pr) != 0) return -1;
        dist_barrier();
        if (r->rank != 0 && prepare_run(&pc, &pr) != 0) return -1;
        snprintf(r->data_dir, sizeof r->data_dir, "%s", pr.data_dir);
    }
    char *tokdir = path_join(r->data_dir, "tokenizer");
    r->tok = tokenizer_load(tokdir);
    free(tokdir);
    if (!r->tok) return err_prefix("data %s", r->data_dir);
    if (r->tok->vocab_size != cfg->model.vocab_size)
        return err_usage("the tokenizer of %s has vocab %d but the model has --vocab-size %d: they must match (prepare "
                       "with --vocab-size %d, or train with --vocab-size %d)", r->data_dir, r->tok->vocab_size,
                       cfg->model.vocab_size, cfg->model.vocab_size, r->tok->vocab_size);
    if (shard_list(r->data_dir, "train_", &r->train_shards, &r->n_train) != 0) return -1;
    if (shard_list(r->data_dir, "val_", &r->val_shards, &r->n_val) != 0) return -1;
    // The validation shards are read only after training: a bad one is found now, not then.
    for (int i = 0; i < r->n_val; i++) {
        uint16_t *t = NULL;
        size_t n = 0;
        int bad = shard_read(r->val_shards[i], &t, &n) != 0 ||
                  shard_check_tokens(t, n, cfg->model.vocab_size, r->val_shards[i]) != 0;
        free(t);
        if (bad) return err_prefix("validation data");
    }
    // The shards must have been made with this tokenizer: manifest.json records its id.
    char *mpath = path_join(r->data_dir, "manifest.json");
    size_t len;
    char *text = read_file(mpath, &len);
    int rc = 0;
    if (text) {
        cJSON *m = cJSON_ParseWithLength(text, len);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "tokenizer_id");
        if (!cJSON_IsString(id) || strcmp(id->valuestring, r->tok->id) != 0)
            rc = err_set("%s: the shards were made with tokenizer %.16s but %s/tokenizer is %.16s; re-run `frontier "
                         "prepare`", mpath, cJSON_IsString(id) ? id->valuestring : "?", r->data_dir, r->tok->id);
        cJSON_Delete(m);
    } else {
        rc = err_prefix("data folder %s (run `frontier prepare`)", r->data_dir);
    }
    free(text);
    free(mpath);
    if (rc == 0) rc = setup_sources(cfg, r);
    return rc;
}

// The step's rows are split over the ranks: rank r trains rows [r·R/W, (r+1)·R/W) of the R rows
// of each step, in micro-batches of at most --device-batch rows (fewer if that is what divides
// the rank's share: then a note says so).
static int plan_micro_batches(const TrainConfig *cfg, Run *r) {
    const int64_t T = cfg->model.seq_len;
    if (r->world == 1 && cfg->batch_tokens % ((int64_t)cfg->device_batch * T) != 0)
        return err_usage("--batch-tokens %lld is not a multiple of --device-batch %d x --seq-len %d = %lld tokens per "
                       "micro-batch", (long long)cfg->batch_tokens, cfg->device_batch, cfg->model.seq_len,
                       (long long)cfg->device_batch * T);
    if (cfg->batch_tokens % (T * r->world) != 0)
        return err_usage("--batch-tokens %lld is not a multiple of %d ranks x --seq-len %lld: the step's rows cannot be "
                       "split evenly over the ranks", (long long)cfg->batch_tokens, r->world, (long long)T);
    int64_t rows = cfg->batch_tokens / T / r->world;  // this rank's rows per step
    if (rows > INT32_MAX / 2)
        return err_usage("--batch-tokens %lld is %lld rows of --seq-len %lld a step: more than a step can count "
                         "(%d); lower it", (long long)cfg->batch_tokens, (long long)rows, (long long)T, INT32_MAX / 2);
    int64_t b = cfg->device_batch < rows ? cfg->device_batch : rows;
    while (rows % b) b--;
    r->micro_rows = (int)b;
    r->grad_accum = (int)(rows / b);
    if (r->world > 1 && r->rank == 0 && !cfg->quiet && b != cfg->device_batch)
        fprintf(stderr, "train: %d ranks x %lld rows per step: micro-batches of %lld rows per rank (--device-batch %d)\n",
                r->world, (long long)rows, (long long)b, cfg->device_batch);
    return 0;
}

static int64_t shard_tokens(char *const *paths, int n) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t k = 0;
        if (shard_count(paths[i], &k) == 0) total += (int64_t)k;
    }
    return total;
}

// The run's peak memory on this rank, predicted before the big allocations: weights and their
// gradients, the optimizer's state, packed copies of the weights for the products (at most two
// fp32 layouts), the token data, and then the larger of training's activations and evaluation's
// (training frees its own before evaluating).
static int64_t estimate_memory(const TrainConfig *cfg, const Run *r, int64_t *train_rs, int64_t *eval_rs) {
    const int T = cfg->model.seq_len;
    int64_t P = (int64_t)r->model.params.total;
    int64_t fixed = P * 4 * 2 + (int64_t)r->opt->n_state_own * 4 + P * 4 * 2;
    int64_t data = 0;  // tokens (2 bytes) + the document index, of every source
    for (int i = 0; i < r->mix.n; i++) data += shard_tokens(r->src_shards[i], r->src_n_shards[i]) * 3;
    int eb = cfg->eval_batch > 0 ? cfg->eval_batch : cfg->device_batch;
    *train_rs = (int64_t)runstate_bytes(&cfg->model, r->micro_rows, T, 0);
    *eval_rs = cfg->profile_steps > 0 ? 0 : (int64_t)runstate_bytes(&cfg->model, eb, T, 1) +
                                                shard_tokens(r->val_shards, r->n_val) * 3;
    return fixed + data + (*train_rs > *eval_rs ? *train_rs : *eval_rs);
}

// Refused before training when the config cannot fit: an allocation failing later would lose
// the run (evaluation runs after training).
static int check_memory(const TrainConfig *cfg, Run *r, int64_t *estimate) {
    int64_t train_rs, eval_rs;
    *estimate = estimate_memory(cfg, r, &train_rs, &eval_rs);
    int64_t avail = mem_available();
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");  // ranks sharing this machine's memory
    int per_host = local && atoi(local) > 0 ? atoi(local) : 1;
    if (avail < 0 || *estimate * per_host <= avail) return 0;
    const double G = 1 << 30;
    return err_usage("this run needs ~%.2f GiB of memory%s (training's activations %.2f GiB for micro-batches of "
                     "%d x %d, evaluation's %.2f GiB for --eval-batch %d) but %.2f GiB are available: lower "
                     "--device-batch or --eval-batch, or train a smaller model", *estimate / G,
                     per_host > 1 ? " per rank" : "", train_rs / G, r->micro_rows, cfg->model.seq_len, eval_rs / G,
                     cfg->eval_batch > 0 ? cfg->eval_batch : cfg->device_batch, avail / G / per_host);
}

static int setup_model(const TrainConfig *cfg, Run *r, int64_t *mem_estimate) {
    if (plan_micro_batches(cfg, r) != 0) return -1;
    if (model_build(&r->model, &cfg->model) != 0) return -1;
    model_init_weights(&r->model, cfg->seed);  // the same seed on every rank: the same weights
    r->model.dropout = cfg->dropout;
    r->opt = optim_new_shard(&cfg->optim, &r->model.params, cfg->model.n_embd, cfg->batch_tokens, r->rank, r->world);
    if (!r->opt) return -1;
    if (check_memory(cfg, r, mem_estimate) != 0) return -1;
    // Every rank reads the same stream of packed rows (one loader, world 1) and trains its share
    // of each step: the run is then independent of the rank count (a checkpoint resumes on any
    // number of ranks, and W ranks follow the one-process trajectory).
    LoaderConfig lc = loader_defaults();
    lc.B = r->micro_rows;
    lc.T = cfg->model.seq_len;
    lc.seed = cfg->seed;
    lc.shuffle = 1;
    lc.vocab_size = cfg->model.vocab_size;  // every token id checked once, as the shards load
    lc.max_tokens = cfg->train_tokens;
    lc.subset_first = cfg->train_subset == TRAIN_SUBSET_FIRST;
    lc.fixed_rows = cfg->data_order == DATA_ORDER_ROWS;
    lc.same_order = cfg->epoch_order == EPOCH_ORDER_SAME;
    lc.discard_crops = cfg->crop_rest == CROP_REST_DROP;
    LoaderSource src[MIX_MAX_SOURCES];
    for (int i = 0; i < r->mix.n; i++)
        src[i] = (LoaderSource){.name = r->mix.src[i].name, .shards = (const char *const *)r->src_shards[i],
                                .n_shards = r->src_n_shards[i], .weight = r->mix.weighted ? r->mix.src[i].weight : 0};
    r->loader = loader_open_mix(src, r->mix.n, r->tok->bos_id, &lc);
    if (!r->loader) return err_prefix("training data");
    if (mix_is_mixture(&r->mix) && r->rank == 0 && !cfg->quiet) {
        fprintf(stderr, "mix: %d source%s, shares of the training tokens:", r->mix.n, r->mix.n == 1 ? "" : "s");
        for (int i = 0; i < r->mix.n; i++) {
            LoaderSourceStats st = loader_source_stats(r->loader, i);
            fprintf(stderr, "%s %s %.4g (%.2fM tokens)", i ? "," : "", st.name, st.share, st.n_tokens / 1e6);
        }
        fprintf(stderr, "%s\n", r->mix.weighted ? "" : " (natural: by token count)");
    }
    runstate_build(&r->rs, &cfg->model, r->micro_rows, cfg->model.seq_len);
    size_t n = (size_t)r->micro_rows * cfg->model.seq_len;
    r->inputs = xmalloc(n * sizeof *r->inputs);
    r->targets = xmalloc(n * sizeof *r->targets);
    return 0;
}

// Every rank resumes from the checkpoint rank 0 finds newest (its step is broadcast): they agree
// even if a save were to land in between.
static int restore(const TrainConfig *cfg, Run *r) {
    int64_t agreed[2] = {0, 0};  // {ok, step}
    char *dir = r->rank == 0 ? ckpt_latest(cfg->resume, &agreed[1]) : NULL;
    agreed[0] = dir != NULL;
    dist_bcast_i64(agreed, 2, 0);
    if (!agreed[0]) {
        free(dir);
        return r->rank == 0 ? -1 : err_set("rank 0 found no checkpoint to resume in %s", cfg->resume);
    }
    if (r->rank != 0) {
        int64_t mine = -1;
        dir = ckpt_latest(cfg->resume, &mine);
        if (dir && mine != agreed[1])
            err_set("rank %d found the checkpoint at step %lld in %s, rank 0 the one at step %lld: the ranks must see "
                    "the same run folder (a shared file system)", r->rank, (long long)mine, cfg->resume,
                    (long long)agreed[1]), free(dir), dir = NULL;
        if (!dir) return -1;
    }
    ModelConfig saved;
    char tid[65];
    int64_t step;
    char *mp = path_join(dir, "model.safetensors");
    int rc = ckpt_read_meta(mp, &saved, tid, &step);
    if (rc == 0 && step != agreed[1])
        rc = err_usage("%s: saved at step %lld, but its folder says step %lld: the run folder was edited", mp,
                       (long long)step, (long long)agreed[1]);
    if (rc == 0) {
        const char *diff = model_config_diff(&saved, &cfg->model);
        if (diff) rc = err_usage("%s: the checkpoint's model differs from the config in \"%s\"", mp, diff);
        else if (strcmp(tid, r->tok->id) != 0)
            rc = err_usage("%s: made with tokenizer %.16s, but the data uses %.16s", mp, tid, r->tok->id);
    }
    if (rc == 0) rc = ckpt_load_model(mp, &r->model);
    if (rc == 0) rc = ckpt_load_state(dir, r->opt, r->loader, &r->ctr, step, cfg->batch_tokens);
    if (rc == 0) r->saved_step = step;
    if (rc == 0 && r->rank == 0 && !cfg->quiet)
        fprintf(stderr, "train: resuming %s from its checkpoint at step %lld (%.1f s of %s timed)\n", cfg->resume,
                (long long)step, r->ctr.timed_s, cfg->steps ? "the run" : "the budget");
    free(mp);
    free(dir);
    return rc;
}

static void free_run(Run *r) {
    tokenizer_free(r->tok);
    free_string_list(r->train_shards, r->n_train);
    free_string_list(r->val_shards, r->n_val);
    for (int i = 0; i < r->mix.n; i++)
        if (r->src_shards[i] != r->train_shards) free_string_list(r->src_shards[i], r->src_n_shards[i]);
    if (r->model.param) model_free(&r->model);
    optim_free(r->opt);
    loader_free(r->loader);
    if (r->rs.layer) runstate_free(&r->rs);
    free(r->inputs);
    free(r->targets);
    free(r->lstate);
    if (r->metrics) fclose(r->metrics);
    dir_unlock(r->lock_fd);
}

// ---------------------------------------------------------------------------------------------
// One optimizer step: G micro-batches of forward + backward, then the update
// ---------------------------------------------------------------------------------------------

// --wd-per-epoch: 1 + G x (epochs read before this step - 1), at least 1. The loader's count is
// in the checkpoint, so a resume continues the same factors.
static float wd_epoch_factor(const TrainConfig *cfg, const Run *r) {
    if (cfg->wd_per_epoch <= 0) return 1.0f;
    double epochs = (double)loader_tokens_consumed(r->loader) / (double)r->loader->n_tokens;
    return (float)(1.0 + cfg->wd_per_epoch * (epochs > 1 ? epochs - 1 : 0));
}

// 0: a step done; 1: abandoned after a signal (one process: nothing was updated, and the loader's
// state at the step's start is in r->lstate); -1 + err.
static int train_step(const TrainConfig *cfg, Run *r, const OptimSchedule *sched, double *loss_out) {
    model_zero_grad(&r->model);
    const int G = r->grad_accum, W = r->world;
    double loss = 0;
    // The step's micro-batches in stream order; this rank trains numbers [rank·G, (rank+1)·G).
    for (int g = 0; g < G * W; g++) {
        if (W == 1 && g_signal) return 1;  // under MPI the ranks stop together, after the step
        prof_begin("loader", "data", -1);
        int got = loader_next(r->loader, r->inputs, r->targets);
        prof_end(0, 0);
        if (got != 1) return err_prefix("training data");
        if (g / G != r->rank) continue;
        model_dropout_batch(&r->model, cfg->seed, r->ctr.step, (int64_t)g * r->micro_rows, cfg->model.seq_len);
        float scale = 1.0f / (float)(G * W);
        loss += model_forward_train(&r->model, &r->rs, r->inputs, r->targets, r->micro_rows, cfg->model.seq_len, scale);
        model_backward(&r->model, &r->rs, r->inputs, r->targets, scale);
    }
    r->comm_s = 0;
    if (W > 1) {
        double t0 = now_seconds();
        prof_begin("reduce-scatter grads", "comm", -1);
        dist_allreduce_sum_f64(&loss, 1);
        dist_reduce_scatter_sum_f32(r->model.grad, r->opt->param_bounds);
        prof_end(0, 0);
        r->comm_s += now_seconds() - t0;
    }
    loss /= G * W;
    *loss_out = loss;
    if (!isfinite(loss)) {  // the same loss on every rank: they all stop here together
        dist_exit_together();
        return err_set("loss is %s at step %lld: training diverged. The last good checkpoint (if any) is kept; "
                       "try a lower learning rate", isnan(loss) ? "NaN" : "infinite", (long long)r->ctr.step);
    }
    // Every pinned copy is marked stale before the update; the optimizer packs each weight it
    // updates again right away (kernels_repack_weight), and the weights other ranks update, which
    // arrive in the all-gather, are packed by the next step's products.
    kernels_weights_changed();
    prof_begin("optimizer", "phase", -1);
    optim_step(r->opt, r->model.param, r->model.grad, sched);
    prof_end(0, 0);
    if (W > 1) {
        double t0 = now_seconds();
        prof_begin("all-gather params", "comm", -1);
        dist_allgather_f32(r->model.param, r->opt->param_bounds);
        prof_end(0, 0);
        r->comm_s += now_seconds() - t0;
    }
    return 0;
}

static double max_recent_step(const TrainCounters *c) {
    double mx = 0;
    int n = c->n_step_times < STEP_TIME_WINDOW ? c->n_step_times : STEP_TIME_WINDOW;
    for (int i = 0; i < n; i++) mx = c->step_times[i] > mx ? c->step_times[i] : mx;
    return mx;
}

static void print_progress(const TrainConfig *cfg, const TrainCounters *c, double loss, double tok_s, double mfu) {
    if (cfg->quiet) return;
    // On a terminal the line is redrawn every step; in a log, one line every 10 s is plenty.
    static double last_line;
    double now = now_seconds();
    if (!isatty(2) && now - last_line < 10.0 && c->step > 1) return;
    last_line = now;
    double rate = c->timed_s > 0 && c->step > cfg->excluded_steps ? (c->step - cfg->excluded_steps) / c->timed_s : 0;
    char eta[32] = "?";
    if (cfg->steps > 0 && rate > 0) snprintf(eta, sizeof eta, "%.0fs", (cfg->steps - c->step) / rate);
    else if (cfg->steps == 0) snprintf(eta, sizeof eta, "%.0fs", cfg->budget_s - c->timed_s);
    fprintf(stderr, "%sstep %5lld  loss %.4f  %7.0f tok/s  MFU %5.2f%%  %6.1fs/%s  ETA %s%s", isatty(2) ? "\r\033[K" : "",
            (long long)c->step, loss, tok_s, 100 * mfu, c->timed_s,
            cfg->steps ? "steps" : "budget", eta, isatty(2) ? "" : "\n");
    if (cfg->steps == 0 && isatty(2)) fprintf(stderr, " ");
}

// ---------------------------------------------------------------------------------------------
// The loop
// ---------------------------------------------------------------------------------------------

// Page faults of this process so far (minor + major), less the profiler's own (its span buffers
// grow as it records): summary.json's page_faults_per_step.
static long page_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt + ru.ru_majflt - prof_own_faults();
}

// A budget that buys only a few steps is almost always a mistake in the command: kit-d10's
// 2^19-token batch is ~6 minutes a step on 2 cores (~1,400 tok/s), so its `--budget 30m` ran ~12
// minutes of uncounted warm-up and then ~5 steps. Said once, early, while there is still time to stop: after
// the second step, or already after the first when that took 10 s or more (the first step's
// first touches of every buffer make a short one several times slower than the rest: the cpu
// preset's 0.4 s against 0.08 s; a long one is mostly the step itself). Returns 1 once said.
#define FEW_STEPS 10

// `warm`: the uncounted warm-up steps of this process (none left when a resumed run is past them).
static int warn_if_few_steps(const TrainConfig *cfg, int64_t steps_done, int warm, int64_t tokens_per_step,
                             double step_s) {
    if (cfg->steps > 0 || step_s <= 0 || (steps_done < 2 && step_s < 10.0)) return 0;
    double buys = cfg->budget_s / step_s;
    if (buys >= FEW_STEPS) return 1;
    char warmup[96] = "";
    if (warm > 0)
        snprintf(warmup, sizeof warmup, ", after %d warm-up step%s (~%.3g s) that it does not count", warm,
                 warm == 1 ? "" : "s", warm * step_s);
    fprintf(stderr,
            "%strain: warning: a step takes %.3g s here (%lld tokens), so the %g s budget buys only ~%.0f step%s%s. "
            "For more steps, lower --batch-tokens (the learning rates scale with sqrt(batch / --lr-batch-ref)) or "
            "raise --budget.\n",
            isatty(2) ? "\r\033[K" : "", step_s, (long long)tokens_per_step, cfg->budget_s, buys < 1 ? 1 : buys,
            buys < 1.5 ? "" : "s", warmup);
    return 1;
}

static int should_stop(const TrainConfig *cfg, const TrainCounters *c, int *why) {
    if (cfg->stop_after > 0 && c->step >= cfg->stop_after) { *why = STOP_AFTER; return 1; }
    if (cfg->steps > 0) { *why = STOP_STEPS; return c->step >= cfg->steps; }
    *why = STOP_BUDGET;
    return c->step >= cfg->excluded_steps && c->timed_s + max_recent_step(c) >= cfg->budget_s;
}

// A resumed run that would stop before its first step is a mistake in the command, not a run:
// refused before the run folder is touched (the summary would otherwise be rewritten with no
// step's loss).
static int nothing_to_resume(const TrainConfig *cfg, const TrainCounters *c) {
    int why = 0;
    if (!should_stop(cfg, c, &why)) return 0;
    if (why == STOP_AFTER)
        return err_usage("--stop-after %lld is not after step %lld, where the run in %s stopped: nothing to resume; "
                       "give a later --stop-after, or none", (long long)cfg->stop_after, (long long)c->step, cfg->resume);
    if (why == STOP_STEPS)
        return err_usage("the run in %s already ran its %lld steps: nothing to resume; give a larger --steps to train on",
                       cfg->resume, (long long)cfg->steps);
    return err_usage("the run in %s already used its %.0f s budget (%.1f s timed): nothing to resume; give a larger "
                   "--budget to train on", cfg->resume, cfg->budget_s, c->timed_s);
}


// For the failure tests (tests/dist): FRONTIER_FAULT=RANK:STEP makes that rank fail with an
// error of its own before that step (the others are then inside the step's collectives);
// FRONTIER_FAULT=RANK:STEP:TERM (or :INT) sends that rank SIGTERM (SIGINT) there, as a `kill`
// from outside would, at a step the test knows in advance.
static int injected_fault(const Run *r) {
    const char *f = getenv("FRONTIER_FAULT");
    int rank, step;
    char sig[8] = "";
    if (!f || sscanf(f, "%d:%d:%7s", &rank, &step, sig) < 2 || rank != r->rank || step != r->ctr.step) return 0;
    if (!strcmp(sig, "TERM") || !strcmp(sig, "INT")) {
        raise(!strcmp(sig, "TERM") ? SIGTERM : SIGINT);
        return 0;
    }
    return err_set("FRONTIER_FAULT=%s: injected failure on rank %d before step %d", f, rank, step);
}

// Before anything else (rank 0): the run folder exists, is this process's alone (its lock), holds
// no other run unless resuming or overwriting, and is clear of what a killed process left.
static int claim_run_folder(const TrainConfig *cfg, Run *r) {
    if (cfg->resume && !is_dir(cfg->resume))
        return err_usage("--resume %s: no such run folder", cfg->resume);
    if (mkdir_p(cfg->run_dir) != 0 || dir_lock(cfg->run_dir, &r->lock_fd) != 0) return -1;
    if (!cfg->resume && ckpt_run_exists(cfg->run_dir)) {
        if (!cfg->overwrite)
            return err_usage("%s holds a run already: continue it with `frontier train --resume %s`, or replace it "
                             "with --overwrite (its checkpoints, metrics and summary are deleted)", cfg->run_dir,
                             cfg->run_dir);
        if (ckpt_remove_run(cfg->run_dir) != 0) return err_prefix("--overwrite %s", cfg->run_dir);
    }
    return ckpt_sweep(cfg->run_dir);
}

// metrics.jsonl of a resumed run: cut back to its length at the checkpoint, so the steps redone
// after it are not listed twice (and a line torn by a kill is gone).
static FILE *open_metrics(const char *path, const TrainCounters *c, int resume, int quiet) {
    if (!resume) return fopen(path, "w");
    int64_t size = 0;
    if (c->metrics_bytes >= 0 && path_exists(path) && file_stat(path, &size, NULL) == 0) {
        if (size >= c->metrics_bytes) {
            if (truncate(path, c->metrics_bytes) != 0) return NULL;
        } else if (!quiet) {
            fprintf(stderr, "train: warning: %s is shorter (%lld bytes) than at the checkpoint (%lld): appending\n",
                    path, (long long)size, (long long)c->metrics_bytes);
        }
    }
    return fopen(path, "a");
}

// config.json, tokenizer/ and metrics.jsonl (rank 0 only).
static int open_run_folder(const TrainConfig *cfg, Run *r) {
    // a resumed run is not finished: the summary of an earlier stop would be stale
    char *spath = path_join(cfg->run_dir, "summary.json");
    int gone = unlink(spath) == 0 || errno == ENOENT;
    if (!gone) err_errno("cannot remove the stale %s", spath);
    free(spath);
    if (!gone) return -1;
    // nor is a weight average read out at its end (eval would take it for the run's)
    char *apath = path_join(cfg->run_dir, "model_avg.safetensors");
    gone = unlink(apath) == 0 || errno == ENOENT;
    if (!gone) err_errno("cannot remove the stale %s", apath);
    free(apath);
    if (!gone) return -1;
    char *tdir = path_join(cfg->run_dir, "tokenizer");  // the run folder is self-contained
    int rc = tokenizer_save(r->tok, tdir);
    free(tdir);
    if (rc) return rc;
    const char *json = cfg->config_json ? cfg->config_json : "{}";
    char *cpath = path_join(cfg->run_dir, "config.json");
    rc = write_file_atomic(cpath, json, strlen(json));
    free(cpath);
    if (rc) return rc;
    char *mpath = path_join(cfg->run_dir, "metrics.jsonl");
    r->metrics = open_metrics(mpath, &r->ctr, cfg->resume != NULL, cfg->quiet);
    if (!r->metrics) rc = err_errno("cannot write %s", mpath);
    else r->ctr.metrics_bytes = ftell(r->metrics);
    free(mpath);
    return rc;
}

// One line of metrics.jsonl; a failed write is an error (the last checkpoint stays the newest).
static int write_metrics(const TrainConfig *cfg, Run *r, double loss, const OptimSchedule *sched, double dt,
                         double tok_s, double mfu, int timed, double progress) {
    if (!r->metrics) return 0;
    int n = fprintf(r->metrics,
            "{\"step\":%lld,\"loss\":%.6f,\"lr_mult\":%.6g,\"muon_momentum\":%.6g,\"muon_wd\":%.6g,\"dt_s\":%.4f,"
            "\"tok_per_s\":%.1f,\"mfu\":%.5f,\"tokens\":%lld,\"timed\":%s,\"timed_s\":%.3f,\"progress\":%.5f,"
            "\"comm_s\":%.4f}\n",
            (long long)r->ctr.step, loss, sched->lr_mult, sched->muon_momentum, sched->muon_wd, dt, tok_s, mfu,
            (long long)r->ctr.tokens, timed ? "true" : "false", r->ctr.timed_s, progress, r->comm_s);
    if (n < 0 || fault_fails("metrics") || fflush(r->metrics) != 0)
        return r->saved_step < 0
                   ? err_errno("cannot write %s/metrics.jsonl (disk full?): training stops at step %lld, before its "
                               "first checkpoint", cfg->run_dir, (long long)r->ctr.step)
                   : err_errno("cannot write %s/metrics.jsonl (disk full?): training stops at step %lld; the "
                               "checkpoint at step %lld is intact (`frontier train --resume %s`)", cfg->run_dir,
                               (long long)r->ctr.step, (long long)r->saved_step, cfg->run_dir);
    r->ctr.metrics_bytes = ftell(r->metrics);
    return 0;
}

// The peak of every core training: each rank's measured peak for its OpenMP threads, summed over
// the ranks (so 1 rank x 2 threads and 2 ranks x 1 thread are held to the same standard).
static double run_peak_flops(KernelPrecision precision) {
    double peak = machine_peak_flops_for(precision);
    dist_allreduce_sum_f64(&peak, 1);
    return peak;
}

// Free disk space for the next checkpoint (rank 0): known in advance, so a full disk is an error
// before anything is written, and the last checkpoint stays the newest.
static int check_disk(const TrainConfig *cfg, const Run *r) {
    int64_t free_b = ckpt_free_bytes(cfg->run_dir);
    if (free_b < 0 || free_b >= r->ckpt_bytes) return 0;
    return err_set("not enough disk space in %s for the checkpoint at step %lld: it needs %.1f MiB, %.1f MiB are free",
                   cfg->run_dir, (long long)r->ctr.step, r->ckpt_bytes / 1048576.0, free_b / 1048576.0);
}

// What a failed save leaves: the message says which checkpoint is still the newest and how to go on.
static int save_failed(const TrainConfig *cfg, const Run *r) {
    if (r->saved_step < 0)
        return err_prefix("the checkpoint at step %lld was not saved and the run has none (free some space or fix "
                          "the cause, then start it again)", (long long)r->ctr.step);
    return err_prefix("the checkpoint at step %lld was not saved; the one at step %lld is intact (free some space or "
                      "fix the cause, then `frontier train --resume %s`)", (long long)r->ctr.step,
                      (long long)r->saved_step, cfg->run_dir);
}

// Checkpoint: the optimizer shards are gathered on rank 0, which writes the files (atomically);
// the barrier after it means no rank runs ahead of a save that might still fail. The loader's
// state is r->lstate (snapshot_loader).
static int save_checkpoint(const TrainConfig *cfg, Run *r) {
    const Optimizer *o = r->opt;
    Optimizer full = *o;
    float *all = NULL;
    if (r->world > 1) {
        all = xaligned_alloc((o->n_state ? o->n_state : 1) * sizeof *all);
        memcpy(all + o->state_lo, o->state, o->n_state_own * sizeof *all);
        dist_gather_f32(all, o->state_bounds);
        full.state = all, full.state_lo = 0, full.n_state_own = o->n_state;
    }
    int rc = 0;
    if (r->rank == 0) {
        rc = check_disk(cfg, r);
        if (rc == 0)
            rc = ckpt_save(cfg->run_dir, &r->model, &full, r->lstate, r->lstate_len, &r->ctr, r->tok->id,
                           cfg->config_json, cfg->keep_checkpoints);
        if (rc != 0) save_failed(cfg, r);
    }
    free(all);
    // Every rank waits for rank 0's verdict (so none runs ahead of a save that might still fail)
    // and learns it: a failed save stops all ranks together, each with the error, one exit code.
    int64_t failed = rc != 0;
    dist_bcast_i64(&failed, 1, 0);
    if (failed) {
        dist_exit_together();
        if (r->rank != 0) err_set("rank 0 could not save the checkpoint at step %lld (its message says why)", (long long)r->ctr.step);
        return -1;
    }
    r->saved_step = r->ctr.step;
    return 0;
}

// The weight average's update, the last part of a step begun at t0 (so its time is on the budget
// clock and in the profile's step): a phase of its own, one streaming pass over this rank's
// weights (read θ and ema, write ema). With --ema-seconds the step's seconds so far, rank 0's,
// give the decay.
static void ema_step(const TrainConfig *cfg, Run *r, double t0, double progress) {
    double dt = now_seconds() - t0;
    if (cfg->optim.ema_seconds > 0) dist_bcast_f64(&dt, 1, 0);
    double n = (double)(r->opt->param_bounds[r->rank + 1] - r->opt->param_bounds[r->rank]);
    prof_begin("ema", "phase", -1);
    prof_begin("ema_update", "op", -1);
    optim_ema_update(r->opt, r->model.param, optim_ema_decay(&cfg->optim, r->opt->step, dt, progress));
    prof_end(3 * n, 12 * n);
    prof_end(0, 0);
}

static int save_due(const TrainConfig *cfg, const Run *r, double last_save) {
    if (cfg->save_every_steps > 0 && r->ctr.step % cfg->save_every_steps == 0) return 1;
    return cfg->save_every_s > 0 && now_seconds() - last_save >= cfg->save_every_s;
}

// The training loop proper: steps until the budget, the step count or a signal stops it, with
// periodic checkpoints. 0 (res->stopped_by says why), or -1 + err.
static int train_loop(const TrainConfig *cfg, Run *r, double flops_tok, double peak, double *loss_out, int *why,
                      double *faults_out) {
    const int64_t tok_step = cfg->batch_tokens;
    double loss = NAN;
    // page faults when the timed steps began: after the excluded steps, and after this process's
    // first step (a resumed run's first step allocates what the warm-up would have)
    long faults_at_timing = -1;
    int64_t step_at_timing = 0, first_step = r->ctr.step;
    int budget_checked = 0;  // warn_if_few_steps has looked
    double last_save = now_seconds();
    int rc = 0;
    g_deferred = 1;
    while (!should_stop(cfg, &r->ctr, why)) {
        double progress = cfg->steps > 0 ? (double)r->ctr.step / cfg->steps : r->ctr.timed_s / cfg->budget_s;
        OptimSchedule sched = optim_schedule(&cfg->optim, (int)r->ctr.step, progress > 1 ? 1 : progress);
        sched.muon_wd *= wd_epoch_factor(cfg, r);
        if (cfg->profile_steps > 0 && r->rank == 0 && r->ctr.step == cfg->excluded_steps) {  // warm-up done: record
            prof_enable(1);
            kernels_set_profiling(1);
        }
        if ((rc = injected_fault(r)) != 0) break;
        if (faults_at_timing < 0 && r->ctr.step >= cfg->excluded_steps && r->ctr.step > first_step)
            faults_at_timing = page_faults(), step_at_timing = r->ctr.step;
        fault_point("step");
        double t0 = now_seconds();
        prof_begin("step", "step", (int)r->ctr.step);
        int step_rc = train_step(cfg, r, &sched, &loss);
        if (step_rc == 0 && optim_ema_on(&cfg->optim)) ema_step(cfg, r, t0, progress);
        prof_end(0, 0);
        if (step_rc < 0) { rc = -1; break; }
        if (step_rc == 1) { *why = STOP_SIGNAL; break; }  // abandoned: r->lstate is the step's start
        double dt = now_seconds() - t0;
        dist_bcast_f64(&dt, 1, 0);  // one clock: rank 0's, so every rank's schedule and stop agree
        prof_counter("tok/s", tok_step / dt);
        int timed = r->ctr.step >= cfg->excluded_steps;
        if (timed) {
            r->ctr.timed_s += dt;
            r->ctr.step_times[r->ctr.n_step_times++ % STEP_TIME_WINDOW] = dt;
        } else {
            r->ctr.excluded_s += dt;
        }
        r->ctr.step++;
        r->ctr.tokens += tok_step;
        double tok_s = tok_step / dt, mfu = flops_tok * tok_s / peak;
        if ((rc = write_metrics(cfg, r, loss, &sched, dt, tok_s, mfu, timed, progress)) != 0) break;
        print_progress(cfg, &r->ctr, loss, tok_s, mfu);
        if (!budget_checked && r->rank == 0)
            budget_checked = warn_if_few_steps(cfg, r->ctr.step - first_step,
                                               first_step < cfg->excluded_steps ? cfg->excluded_steps - (int)first_step : 0,
                                               tok_step, dt);
        snapshot_loader(r);  // a step boundary: what any checkpoint from here on (or of an abandoned next step) holds
        if (interrupted(r)) { *why = STOP_SIGNAL; break; }
        if (save_due(cfg, r, last_save) && !should_stop(cfg, &r->ctr, why)) {  // the last step's save comes after
            double t1 = now_seconds();
            if ((rc = save_checkpoint(cfg, r)) != 0) break;
            r->ctr.checkpoints++;
            r->ctr.checkpoint_s += now_seconds() - t1;
            last_save = now_seconds();
        }
    }
    if (!cfg->quiet && isatty(2)) fprintf(stderr, "\n");
    int64_t counted = faults_at_timing >= 0 ? r->ctr.step - step_at_timing : 0;
    double faults = counted > 0 ? (double)(page_faults() - faults_at_timing) / counted : 0;
    if (rc == 0) dist_allreduce_max_f64(&faults, 1);
    *faults_out = faults;
    *loss_out = loss;
    return rc;
}

// val_bpb of r's weights as they are now (fp32) into res.
static int evaluate_run(const TrainConfig *cfg, Run *r, TrainResult *res) {
    BpbResult b;
    int eb = cfg->eval_batch > 0 ? cfg->eval_batch : cfg->device_batch;
    if (eval_bpb(&r->model, (const char *const *)r->val_shards, r->n_val, r->tok->bos_id, r->tok->token_bytes, eb,
                 cfg->model.seq_len, cfg->eval_tokens, &b) != 0)
        return -1;
    res->val_bpb = b.bpb;
    res->eval_tokens = b.tokens;
    res->eval_positions = b.positions;
    res->eval_T = b.T;
    return 0;
}

// The end of a run with a weight average: the model's weights become its readout (each rank
// reads out its shard, then all gather) and rank 0 writes them to RUN_DIR/model_avg.safetensors;
// the last checkpoint keeps the weights and the average apart. Every rank learns rank 0's verdict.
static int read_out_average(const TrainConfig *cfg, Run *r) {
    optim_ema_readout(r->opt, r->model.param);
    if (r->world > 1) dist_allgather_f32(r->model.param, r->opt->param_bounds);
    int rc = r->rank == 0 ? ckpt_save_average(cfg->run_dir, &r->model, r->ctr.step, r->tok->id, cfg->config_json) : 0;
    int64_t failed = rc != 0;
    dist_bcast_i64(&failed, 1, 0);
    if (failed) {
        dist_exit_together();
        if (r->rank != 0) err_set("rank 0 could not save the weight average (its message says why)");
        else err_prefix("saving the weight average of %s (the last checkpoint, which holds it, is intact)", cfg->run_dir);
        return -1;
    }
    return 0;
}

int train_run(const TrainConfig *cfg, TrainResult *res) {
    memset(res, 0, sizeof *res);
    double t_start = now_seconds();
    if (cfg->threads > 0) omp_set_num_threads(cfg->threads);
    if (cfg->steps <= 0 && !(cfg->budget_s > 0))
        return err_usage("--budget must be positive (got %g s); or give --steps N", cfg->budget_s);
    if (!cfg->run_dir) return err_usage("no run folder given (--run-dir)");
    Run r = {.rank = dist_rank(), .world = dist_world(), .lock_fd = -1, .saved_step = -1};
    TrainConfig local = *cfg;  // rank 0 speaks and writes; the other ranks compute quietly
    if (r.rank != 0) local.quiet = 1;
    cfg = &local;
    SavedSignals saved_signals;
    signals_install(&saved_signals);
    int rc = -1, why = 0;
    int64_t ok = r.rank != 0 || claim_run_folder(cfg, &r) == 0;
    dist_bcast_i64(&ok, 1, 0);
    if (!ok) {
        if (r.rank != 0) err_set("rank 0 could not claim the run folder %s", cfg->run_dir);
        goto done;
    }
    if (setup_data(cfg, &r) != 0 || setup_model(cfg, &r, &res->memory_estimate_bytes) != 0) goto done;
    if (cfg->resume && (restore(cfg, &r) != 0 || nothing_to_resume(cfg, &r.ctr) != 0)) goto done;
    snapshot_loader(&r);  // the loader's state at the first step's start
    r.ckpt_bytes = ckpt_bytes(&r.model, r.opt, r.lstate_len);
    if (r.rank == 0 && cfg->run_dir) {  // a disk too small for the checkpoints is said before training
        int64_t free_b = ckpt_free_bytes(cfg->run_dir);
        int want = cfg->keep_checkpoints + 1;  // the kept ones and the one being written
        if (free_b >= 0 && free_b < r.ckpt_bytes) {
            err_set("not enough disk space in %s for one checkpoint: it needs %.1f MiB, %.1f MiB are free; free some "
                    "space or choose another --run-dir", cfg->run_dir, r.ckpt_bytes / 1048576.0, free_b / 1048576.0);
            goto done;
        }
        if (free_b >= 0 && free_b < want * r.ckpt_bytes)
            fprintf(stderr, "train: warning: %.1f MiB free in %s, less than the %d checkpoints of %.1f MiB it may hold "
                    "(--keep-checkpoints %d, and one being written): a save may fail for lack of space\n",
                    free_b / 1048576.0, cfg->run_dir, want, r.ckpt_bytes / 1048576.0, cfg->keep_checkpoints);
    }
    if (r.rank == 0 && open_run_folder(cfg, &r) != 0) goto done;
    if (kernels_precision_check(cfg->precision) != 0) goto done;
    r.model.precision = r.opt->precision = cfg->precision;  // the steps' products; evaluation's are fp32
    // every weight packed once per step, not per product: 2G products read each between updates
    model_pin_weights(&r.model, 1);

    double flops_tok = model_config_flops_per_token(&cfg->model);
    double peak = cfg->peak_flops > 0 ? cfg->peak_flops : run_peak_flops(cfg->precision);
    int64_t tok_step = cfg->batch_tokens;
    if (!cfg->resume) r.ctr.startup_s = now_seconds() - t_start;
    dist_bcast_f64(&r.ctr.startup_s, 1, 0);
    char kdesc[sizeof res->kernels];
    if (!cfg->quiet)
        fprintf(stderr, "train: %zu params, %.1f MFLOP/token, batch %lld tokens = %d x %d x %d accum%s, %s %s, "
                "kernels %s, memory ~%.0f MiB, start-up %.1fs\n",
                model_config_num_params(&cfg->model), flops_tok / 1e6, (long long)tok_step, r.micro_rows,
                cfg->model.seq_len, r.grad_accum, r.world > 1 ? " x ranks" : "", cfg->steps ? "steps" : "budget",
                cfg->steps ? "fixed" : "wall-clock", kernels_description(cfg->precision, kdesc, sizeof kdesc),
                res->memory_estimate_bytes / 1048576.0, r.ctr.startup_s);
    if (!cfg->quiet && r.world > 1)
        fprintf(stderr, "train: %d ranks (%s); optimizer state %.1f MiB per rank instead of %.1f MiB (ZeRO-1)\n",
                r.world, dist_backend(), r.opt->n_state_own * 4.0 / (1 << 20), r.opt->n_state * 4.0 / (1 << 20));
    double loss = NAN;
    if (train_loop(cfg, &r, flops_tok, peak, &loss, &why, &res->faults_per_step) != 0) goto done;
    g_deferred = 0;  // from here on a signal exits at once: the checkpoint below is the run's state
    int64_t timed_steps = r.ctr.step > cfg->excluded_steps ? r.ctr.step - cfg->excluded_steps : 0;
    if (save_checkpoint(cfg, &r) != 0) goto done;

    res->steps = r.ctr.step;
    res->tokens = r.ctr.tokens;
    res->unique_tokens = r.loader->n_tokens;
    res->n_sources = r.loader->n_src;
    int64_t placed = 0;  // by every source: each one's tokens_trained is its part of them
    for (int i = 0; i < r.loader->n_src; i++) placed += loader_source_stats(r.loader, i).tokens_used;
    for (int i = 0; i < r.loader->n_src; i++) {
        LoaderSourceStats st = loader_source_stats(r.loader, i);
        TrainSourceResult *o = &res->sources[i];
        snprintf(o->name, sizeof o->name, "%s", st.name);
        o->weight = r.mix.weighted ? r.mix.src[i].weight : st.share;  // as written (the loader's is rounded to 2^-40)
        o->unique_tokens = st.n_tokens;
        o->tokens_pulled = st.tokens_pulled;
        o->tokens_trained = placed > 0 ? llround((double)r.ctr.tokens * st.tokens_used / placed) : 0;
        o->stream_epoch = st.epoch;
    }
    res->timed_s = r.ctr.timed_s;
    res->startup_s = r.ctr.startup_s;
    res->excluded_s = r.ctr.excluded_s;
    res->checkpoints = r.ctr.checkpoints;
    res->checkpoint_s = r.ctr.checkpoint_s;
    res->tok_per_s = r.ctr.timed_s > 0 ? (double)timed_steps * tok_step / r.ctr.timed_s : 0;
    res->mfu = flops_tok * res->tok_per_s / peak;
    res->peak_flops = peak;
    res->final_loss = loss;
    res->params = model_config_num_params(&cfg->model);
    res->flops_per_token = flops_tok;
    res->stopped_by = why;
    res->signal = why == STOP_SIGNAL ? interrupted(&r) : 0;
    kernels_description(cfg->precision, res->kernels, sizeof res->kernels);
    model_unpin_weights();  // evaluation pins what it reads (and frees the backward's copies)
    r.model.precision = KP_FP32;  // evaluate the fp32 master weights in fp32, whatever trained them
    if (cfg->profile_steps > 0 && r.rank == 0 && train_write_profile(cfg, res->faults_per_step) != 0) goto done;
    runstate_free(&r.rs);  // training is over: evaluation builds its own, and both at once doubled the peak memory
    // interrupted and profiling runs are not evaluated; a finished run's weight average is read out
    // (after the weights themselves are scored) and saved beside the last checkpoint
    int finished = why != STOP_AFTER && why != STOP_SIGNAL, evaluate = finished && cfg->profile_steps == 0;
    int average = finished && optim_ema_on(&cfg->optim);
    res->val_bpb_raw = NAN;
    if (evaluate && average) {
        if (!cfg->quiet) fprintf(stderr, "eval: val_bpb of the weights (without the average)...\n");
        if (evaluate_run(cfg, &r, res) != 0) goto done;
        res->val_bpb_raw = res->val_bpb;
    }
    if (average && read_out_average(cfg, &r) != 0) goto done;
    if (evaluate) {
        if (!cfg->quiet) fprintf(stderr, "eval: val_bpb%s on %s...\n", average ? " of the weight average" : "",
                                 cfg->eval_tokens ? "part of the validation set" : "the whole validation set");
        if (evaluate_run(cfg, &r, res) != 0) goto done;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    res->peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
    int64_t rss = res->peak_rss_bytes;  // the largest rank's
    double rss_d = (double)rss;
    dist_allreduce_max_f64(&rss_d, 1);
    res->peak_rss_bytes = (int64_t)rss_d;
    res->ranks = r.world;
    res->optim_state_bytes = (int64_t)r.opt->n_state * 4;
    res->optim_state_bytes_per_rank = (int64_t)r.opt->n_state_own * 4;
    double own = (double)res->optim_state_bytes_per_rank;
    dist_allreduce_max_f64(&own, 1);
    res->optim_state_bytes_per_rank = (int64_t)own;
    // The last collective: every rank now only leaves, rank 0 after the summary below. Each waits
    // for the others in dist_exit (an interrupted run's 143 included), so that no rank's early
    // exit makes the launcher end rank 0 before summary.json is written.
    dist_exit_together();
    res->total_s = now_seconds() - t_start;
    rc = r.rank == 0 ? train_write_summary(cfg, res, r.tok->id) : 0;
done:
    signals_restore(&saved_signals);
    model_unpin_weights();  // before the weights are freed: a later allocation at the same address must not match
    free_run(&r);
    return rc;
}
