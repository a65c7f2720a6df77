// planner/session.c — a planning session (see session.h).
#include "planner/session.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/prepare.h"
#include "data/shard.h"
#include "dist/dist.h"
#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"
#include "report/svg.h"
#include "tokenizer/tokenizer.h"
#include "train/settings.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/hash.h"
#include "util/json_file.h"
#include "util/mem.h"

char *plan_reference_dir(void) {
    const char *env = getenv("FRONTIER_PLAN_REFERENCE");
    if (env) return *env && strcmp(env, "none") ? xstrdup(env) : NULL;
    char *dir = shipped_path("plan");
    if (is_dir(dir)) return dir;
    free(dir);
    return NULL;
}

char *plan_path(const PlanRequest *rq, const char *name) {
    char *dir = path_join(rq->cache, "plan"), *p = path_join(dir, name);
    free(dir);
    return p;
}

void plan_layout_key(const PlanRequest *rq, char *buf, int n) {
    char kd[256];
    tp_layout_key(buf, n, rq->threads, rq->ranks, kernels_precision_name(rq->precision),
                  kernels_description(rq->precision, kd, sizeof kd));
}

// A folder name for a key: its hash, so that a CPU brand's spaces and slashes never reach a path.
static char *keyed(const PlanRequest *rq, const char *prefix, const char *key) {
    char name[96];
    snprintf(name, sizeof name, "%s-%016llx", prefix, (unsigned long long)hash_bytes(key, strlen(key)));
    return plan_path(rq, name);
}

// Before runs that go through the mpirun plan_env starts (ranks > 1 and no --launcher of the user's).
static int mpirun_ok(const PlanRequest *rq) {
    return rq->launcher || rq->ranks <= 1 ? 0 : dist_mpirun_preflight("frontier plan's runs over ranks");
}

PlanEnv plan_env(const PlanRequest *rq, const char *data_dir) {
    static char launcher[192];
    const char *l = rq->launcher;
    if (!l && rq->ranks > 1) {
        snprintf(launcher, sizeof launcher, "mpirun -np %d %s {cmd}", rq->ranks, dist_mpirun_opts());
        l = launcher;
    }
    PlanFamily f = plan_family_default();
    return (PlanEnv){.runner = {.exe = "/proc/self/exe", .launcher = l}, .data = data_dir, .cache = rq->cache,
                     .precision = kernels_precision_name(rq->precision), .threads = rq->threads, .ranks = rq->ranks,
                     .device_batch = f.device_batch, .vocab_size = f.vocab_size, .quiet = rq->quiet};
}

// The key of a data folder's tokens: its tokenizer's id and the SHA-256 of its training and
// validation shards. The loss model and the sources' worth are measured on exactly these tokens,
// so they are keyed by them; the folder's own name will not do, as its inputs key covers the text
// files' mtimes, which change whenever the same corpus is copied anew.
static int content_key(const char *dir, int seq_len, char *out, size_t cap) {
    char *mpath = path_join(dir, "manifest.json");
    cJSON *m = json_read_object(mpath, "the data folder's manifest");
    free(mpath);
    const cJSON *tid = m ? cJSON_GetObjectItemCaseSensitive(m, "tokenizer_id") : NULL;
    if (!cJSON_IsString(tid)) {
        cJSON_Delete(m);
        return m ? err_set("%s/manifest.json has no tokenizer_id (prepare it again: frontier prepare)", dir) : -1;
    }
    Sha256 *h = sha256_begin();
    enum { CHUNK = 1 << 20 };
    char *buf = xmalloc(CHUNK), sha[65];
    int rc = 0;
    static const char *const splits[] = {"train_", "val_"};
    for (int sp = 0; sp < 2 && rc == 0; sp++) {
        char **shards;
        int n;
        if (shard_list(dir, splits[sp], &shards, &n) != 0) { rc = -1; break; }
        for (int i = 0; i < n && rc == 0; i++) {
            FILE *f = fopen(shards[i], "rb");
            if (!f) { rc = err_set("cannot read %s: %s", shards[i], strerror(errno)); break; }
            size_t got;
            while ((got = fread(buf, 1, CHUNK, f)) > 0) sha256_update(h, buf, got);
            if (ferror(f)) rc = err_set("cannot read %s: %s", shards[i], strerror(errno));
            fclose(f);
        }
        free_string_list(shards, n);
    }
    sha256_end(h, sha);
    free(buf);
    snprintf(out, cap, "%.16s-%.12s-T%d", tid->valuestring, sha, seq_len);
    cJSON_Delete(m);
    return rc;
}

// The data folder (prepared and cached when none is given) and its training tokens.
static int resolve_data(const PlanRequest *rq, PlanResult *res) {
    if (rq->data) {
        char *abs = realpath(rq->data, NULL);
        if (!abs) return err_usage("--data %s: no such folder", rq->data);
        snprintf(res->data_dir, sizeof res->data_dir, "%s", abs);
        free(abs);
    } else {
        PrepareConfig pc = prepare_defaults();
        pc.cache_dir = rq->cache;
        pc.quiet = 1;
        PrepareResult pr;
        if (prepare_run(&pc, &pr) != 0) return err_prefix("preparing the default corpus");
        char *abs = realpath(pr.data_dir, NULL);
        snprintf(res->data_dir, sizeof res->data_dir, "%s", abs ? abs : pr.data_dir);
        free(abs);
    }
    if (content_key(res->data_dir, res->family.seq_len, res->data_key, sizeof res->data_key) != 0)
        return err_prefix("--data %s", res->data_dir);
    char name[160];
    snprintf(name, sizeof name, "worth-%s.json", res->data_key);
    char *worth_path = plan_path(rq, name);
    int rc = worth_load(worth_path, &res->worth);
    if (rc == 0 && res->worth.stale && !rq->quiet)
        fprintf(stderr, "plan: %s: %d source%s measured without their training length (an older frontier's table) left "
                "out: `frontier plan --worth --mix auto` re-reads their runs in seconds\n", worth_path, res->worth.stale,
                res->worth.stale == 1 ? "" : "s");
    free(worth_path);
    if (rc != 0) return -1;
    const char *spec = rq->mix;
    char all[4096] = "";
    if (spec && !strcmp(spec, MIX_AUTO)) {  // every folder of text/; to choose among, those measured
        res->choose_mix = 1;
        char folders[4096];
        mix_text_folders(default_data_root(), ",", folders, sizeof folders);
        for (char *save = NULL, *t = strtok_r(folders, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (rq->worth || worth_find(&res->worth, t)) {
                size_t at = strlen(all);
                snprintf(all + at, sizeof all - at, "%s%s", at ? "," : "", t);
            }
        spec = all;
    }
    if (mix_parse(spec, default_data_root(), &res->mix) != 0) return -1;
    res->train_tokens = 0;
    res->sources.n = res->mix.n;
    for (int s = 0; s < res->mix.n; s++) {  // each source's unique tokens (an extra one prepared, cached)
        const MixSource *m = &res->mix.src[s];
        char folder[1024];
        snprintf(folder, sizeof folder, "%s", res->data_dir);
        if (strcmp(m->name, "train") != 0) {
            PrepareResult pr;
            if (mix_prepare_source(m, res->data_dir, rq->cache, rq->threads, rq->quiet, &pr) != 0) return -1;
            snprintf(folder, sizeof folder, "%s", pr.data_dir);
        }
        char **shards = NULL;
        int n = 0, rc = 0;
        if (shard_list(folder, "train_", &shards, &n) != 0) return err_prefix("--data %s", folder);
        double U = 0;
        for (int i = 0; i < n && rc == 0; i++) {
            size_t t;
            if ((rc = shard_count(shards[i], &t)) == 0) U += (double)t;
        }
        free_string_list(shards, n);
        if (rc != 0) return -1;
        res->sources.U[s] = U;
        res->train_tokens += U;
        const WorthEntry *e = strcmp(m->name, "train") ? worth_find(&res->worth, m->name) : NULL;
        if (e) {  // priced per candidate by its length (PlanQuery.curves); here at the longest measured
            res->curves[s] = worth_curve(e);
            plan_discount_at(&res->curves[s], e->len[e->n - 1].tokens, &res->sources.discount[s],
                             &res->sources.discount_se[s], NULL);
        }
    }
    for (int s = 0; s < res->mix.n; s++)  // natural shares: in proportion to the tokens
        res->sources.w[s] = res->mix.weighted ? res->mix.src[s].weight : res->sources.U[s] / res->train_tokens;
    char *tokdir = path_join(res->data_dir, "tokenizer");
    Tokenizer *tok = tokenizer_load(tokdir);
    free(tokdir);
    if (!tok) return err_prefix("--data %s", res->data_dir);
    res->family.vocab_size = tok->vocab_size;
    tokenizer_free(tok);
    return 0;
}

int plan_session(const PlanRequest *rq, PlanResult *res) {
    memset(res, 0, sizeof *res);
    res->family = plan_family_default();
    if (resolve_data(rq, res) != 0) return -1;
    char key[sizeof res->tp.key];
    plan_layout_key(rq, key, sizeof key);
    int got = rq->calibrate ? 1 : tp_load(rq->cache, key, &res->tp);
    if (got < 0) return -1;
    if (got == 1) {
        if (mpirun_ok(rq) != 0) return -1;
        if (!rq->quiet)
            fprintf(stderr, "plan: no throughput model for this machine and layout yet (%s): measuring %d short runs "
                    "(~%.0f s each; cached in %s/throughput.json)\n", key, PLAN_N_CAL, PLAN_CAL_BUDGET_S + 6, rq->cache);
        PlanEnv env = plan_env(rq, res->data_dir);
        env.vocab_size = res->family.vocab_size;
        char *dir = keyed(rq, "calibrate", key);
        int rc = plan_calibrate(&env, dir, &res->tp);
        free(dir);
        if (rc != 0) return -1;
        snprintf(res->tp.key, sizeof res->tp.key, "%s", key);
        if (tp_save(rq->cache, &res->tp) != 0) return -1;
    }
    char name[160];
    snprintf(name, sizeof name, "scaling-%s.json", res->data_key);
    char *fit_path = plan_path(rq, name);
    if (!path_exists(fit_path)) {  // this machine has not fitted these tokens: the shipped reference, if any
        char *ref = plan_reference_dir();
        if (ref && !is_dir(ref)) {
            err_usage("FRONTIER_PLAN_REFERENCE=%s: no such folder (name a folder of reference fits, or none)", ref);
            free(ref), free(fit_path);
            return -1;
        }
        char *p = ref ? path_join(ref, name) : NULL;
        free(ref);
        if (p && path_exists(p)) free(fit_path), fit_path = p, res->fit_reference = 1;
        else free(p);
    }
    if (path_exists(fit_path)) {
        cJSON *j = json_read_object(fit_path, res->fit_reference ? "the reference loss model" : "the loss model");
        int rc = j ? scaling_fit_from_json(j, fit_path, &res->fit) : -1;
        cJSON_Delete(j);
        if (rc != 0) { free(fit_path); return -1; }
        res->have_fit = 1;
        snprintf(res->fit_path, sizeof res->fit_path, "%s", fit_path);
    }
    free(fit_path);
    res->peak_flops = machine_peak_flops_for(rq->precision) * rq->ranks;
    PlanQuery q = {res->family, rq->budget_s, rq->ranks, res->peak_flops, res->train_tokens, &res->tp,
                   res->have_fit ? &res->fit : NULL, &res->sources, res->choose_mix, res->curves};
    res->n = plan_rank(&q, res->cand, PLAN_MAX_CANDIDATES);
    for (int i = 0; i < res->n; i++) {  // each candidate's mixture as a spec: its sources' shares
        PlanCandidate *c = &res->cand[i];
        c->mix[0] = 0;
        if (!res->choose_mix) {
            if (rq->mix && mix_is_mixture(&res->mix)) snprintf(c->mix, sizeof c->mix, "%s", rq->mix);
            continue;
        }
        for (int s = 1; s < c->data.n; s++)
            if (c->data.w[s] > 0) {
                size_t at = strlen(c->mix);
                snprintf(c->mix + at, sizeof c->mix - at, "%s%s=%.4g", at ? "," : "", res->mix.src[s].name, c->data.w[s]);
            }
    }
    return res->n < 0 ? -1 : 0;
}

typedef struct {
    const PlanRequest *rq;
    ThroughputModel *tp;
    char kernels[256];  // kernels_description of this machine at rq->precision: what a run must match
    int learned, other_layout, short_or_stopped;
} SustainedCtx;

static void learn_sustained(const char *run, const TrainConfig *c, const TrialResult *r, const cJSON *summary, void *ctx) {
    SustainedCtx *x = ctx;
    const cJSON *rk = cJSON_GetObjectItemCaseSensitive(summary, "ranks");
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(summary, "stopped_by");
    const int ranks = cJSON_IsNumber(rk) ? rk->valueint : 1;
    const double budget_s = jnum(summary, "budget_s");
    // A layout's model holds for one CPU and kernel set (tp_layout_key): a run trained elsewhere, or
    // whose summary does not say where, would teach it another machine's rate.
    const cJSON *hw = cJSON_GetObjectItemCaseSensitive(summary, "hardware");
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(hw, "cpu"), *kern = cJSON_GetObjectItemCaseSensitive(hw, "kernels");
    if (ranks != x->rq->ranks || c->threads != x->rq->threads || c->precision != x->rq->precision || !cJSON_IsString(cpu) ||
        strcmp(cpu->valuestring, cpu_info()->model) != 0 || !cJSON_IsString(kern) || strcmp(kern->valuestring, x->kernels) != 0) {
        x->other_layout++;
        return;
    }
    if (!(budget_s >= TP_SUSTAINED_MIN_S) || !cJSON_IsString(stop) || strcmp(stop->valuestring, "budget") != 0 ||
        !(r->tok_per_s > 0)) {
        x->short_or_stopped++;
        return;
    }
    TpShape s = {c->model, c->batch_tokens, c->device_batch, ranks, c->optim.ns_steps};
    const double pred = tp_predict_tok_s(x->tp, &s);
    if (!(pred > 0)) { x->other_layout++; return; }
    char *abs = realpath(run, NULL);
    const char *p = abs ? abs : run;
    tp_add_sustained(x->tp, hash_bytes(p, strlen(p)), r->tok_per_s / pred, budget_s);
    free(abs);
    x->learned++;
    if (!x->rq->quiet)
        fprintf(stderr, "plan: sustained: %s: %.0f tok/s over %.0f s, predicted %.0f: x%.3f\n", run, r->tok_per_s, budget_s,
                pred, r->tok_per_s / pred);
}

int plan_learn_sustained(const PlanRequest *rq, ThroughputModel *tp, const char *const *dirs, int n_dirs) {
    SustainedCtx x = {.rq = rq, .tp = tp};
    kernels_description(rq->precision, x.kernels, sizeof x.kernels);
    for (int i = 0; i < n_dirs; i++) plan_each_run(dirs[i], learn_sustained, &x);
    if (!rq->quiet)
        fprintf(stderr, "plan: sustained throughput: %d run%s of at least %.0f s on this layout learned from (%d on another "
                "layout or CPU, %d shorter or stopped before their budget: passed over)\n", x.learned, x.learned == 1 ? "" : "s",
                TP_SUSTAINED_MIN_S, x.other_layout, x.short_or_stopped);
    return x.learned > 0 ? tp_save(rq->cache, tp) : 0;
}

int plan_worth(const PlanRequest *rq, const PlanResult *res, double budget_s, int seeds) {
    if (mpirun_ok(rq) != 0) return -1;
    if (!res->have_fit)
        return err_usage("plan --worth: a source's worth is read off the fitted loss model, and there is none for %s yet: "
                         "add --fit (the ladder, about an hour, resumable)", res->data_key);
    PlanEnv env = plan_env(rq, res->data_dir);
    env.vocab_size = res->family.vocab_size;
    char name[160];
    snprintf(name, sizeof name, "worth-%s", res->data_key);
    char *dir = plan_path(rq, name);
    snprintf(name, sizeof name, "worth-%s.json", res->data_key);
    char *table = plan_path(rq, name);
    WorthTable *t = xmalloc(sizeof *t);
    *t = res->worth;
    if (!rq->quiet)
        fprintf(stderr, "plan: measuring the worth of %d source%s: %d runs of %s (the corpus alone and each source at %.0f%% "
                "of the tokens, %d seed%s), resumable in %s\n", res->mix.n - 1, res->mix.n == 2 ? "" : "s",
                res->mix.n * seeds, trial_budget_text(budget_s), 100 * PLAN_WORTH_WEIGHT, seeds, seeds == 1 ? "" : "s", dir);
    int rc = worth_measure(&env, &res->family, &res->fit, &res->mix, &res->sources, dir, table, budget_s, seeds, t,
                           rq->quiet ? NULL : stderr);
    if (rc == 0 && !rq->quiet) fprintf(stderr, "plan: the sources' worth is in %s\n", table);
    free(t), free(dir), free(table);
    return rc;
}

static void human(double v, char *buf, size_t n) {
    if (v >= 1e9) snprintf(buf, n, "%.2fG", v / 1e9);
    else if (v >= 1e6) snprintf(buf, n, "%.2fM", v / 1e6);
    else if (v >= 1e3) snprintf(buf, n, "%.1fk", v / 1e3);
    else snprintf(buf, n, "%.0f", v);
}

void plan_print(const PlanResult *res, const PlanRequest *rq, FILE *f) {
    char budget[32], U[32], threads[32];
    duration_format(rq->budget_s, budget, sizeof budget);
    human(res->train_tokens, U, sizeof U);
    if (rq->threads > 0) snprintf(threads, sizeof threads, "%d threads", rq->threads);
    else snprintf(threads, sizeof threads, "all cores");
    fprintf(f, "plan: %s on %d rank%s x %s, %s; data %s (%s training tokens)\n", budget, rq->ranks,
            rq->ranks > 1 ? "s" : "", threads, kernels_precision_name(rq->precision), res->data_dir, U);
    fprintf(f, "throughput model: %d calibration runs, step time within %.1f%% rms (%.1f%% max) of them\n",
            res->tp.n_points, 100 * res->tp.rms_rel_err, 100 * res->tp.max_rel_err);
    if (res->tp.n_sustained > 0) {
        double sd, k = tp_sustained_factor(&res->tp, &sd);
        char spread[64] = "";
        if (isfinite(sd)) snprintf(spread, sizeof spread, ", one run's spread x%.2f", exp(sd));
        fprintf(f, "sustained: finished runs of >= %.0f min on this layout ran at x%.3f the predicted tok/s (%d run%s%s); "
                "%s\n", TP_SUSTAINED_MIN_S / 60, k, res->tp.n_sustained, res->tp.n_sustained == 1 ? "" : "s", spread,
                rq->budget_s >= TP_SUSTAINED_MIN_S ? "the table's tok/s and tokens include it"
                                                   : "not applied to a budget this short");
    } else if (rq->budget_s >= TP_SUSTAINED_MIN_S)
        fprintf(f, "sustained: no finished long run on this layout yet: tok/s as the short calibration runs measured (long "
                "runs on a shared machine sustain up to ~25%% less; `--reuse RUN_DIR` learns from finished ones)\n");
    if (res->have_fit) {
        fprintf(f, "loss model: L = %.3f + %.3g/N^%.3f + %.3g/D'^%.3f, R* %.1f%s; %d runs, rms residual %.4f bpb\n",
                res->fit.law.E, res->fit.law.A, res->fit.law.alpha, res->fit.law.B, res->fit.law.beta, res->fit.law.rstar,
                res->fit.rstar_fitted ? "" : " (the prior: no run repeated its data)", res->fit.n_points, res->fit.rms_resid);
        if (res->fit_reference)
            fprintf(f, "loss model from %s: the reference fit shipped for these tokens, fitted on the reference machine "
                       "(plan/README.md: val_bpb against parameters and tokens does not depend on the machine's speed); "
                       "`frontier plan --fit` fits this machine's own\n", res->fit_path);
    } else
        fprintf(f, "\n*** NO LOSS MODEL FITTED ON THIS MACHINE, and no reference fit shipped for these tokens: the "
                   "candidates are ranked by the tokens:params rule (D'/N closest to %.0f, repeated tokens discounted with "
                   "R* = %.1f), not by a predicted val_bpb. Run `frontier plan --fit` (about an hour, resumable) for a "
                   "ranking by predicted val_bpb. ***\n\n",
                PLAN_TOKENS_PER_PARAM, SCALING_RSTAR_PRIOR);
    fprintf(f, "| rank | depth | width | params | N | MFLOP/tok | tok/s | MFU | tokens | epochs | tokens:N | batch | wd | "
               "val_bpb |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < res->n; i++) {
        const PlanCandidate *c = &res->cand[i];
        char p[32], N[32], tok[32], L[48];
        human(c->params, p, sizeof p), human(c->N, N, sizeof N), human(c->tokens, tok, sizeof tok);
        if (isfinite(c->L)) snprintf(L, sizeof L, "%.4f +- %.4f", c->L, isfinite(c->L_sd) ? c->L_sd : 0.0);
        else snprintf(L, sizeof L, "-");
        char rank[48];
        if (c->memorises) snprintf(rank, sizeof rank, "- (memorises: U < %g x params)", SCALING_MIN_UNIQUE_PER_PARAM);
        else snprintf(rank, sizeof rank, "%d", i + 1);
        fprintf(f, "| %s | %d | %d | %s | %s | %.1f | %.0f | %.0f%% | %s | %.2f | %.1f | %lld | %.3g | %s |\n", rank,
                c->depth, c->model.n_embd, p, N, c->flops_token / 1e6, c->tok_s, 100 * c->mfu, tok, c->epochs,
                c->ratio, (long long)c->rules.batch_tokens, c->rules.weight_decay, L);
    }
    if (res->n > 0 && res->cand[0].memorises)
        fprintf(f, "\n*** EVERY CANDIDATE MEMORISES: each reads its data more than once with fewer than %g unique tokens "
                   "per parameter, where the loss model does not hold; add data (--mix) or shorten the budget ***\n",
                SCALING_MIN_UNIQUE_PER_PARAM);
    if (res->n > 0 && res->cand[0].regularise)
        fprintf(f, "\nthe pick reads its data %.1f times (>= %.0f) and memorises it: the plan adds the levers that helped "
                   "most when a model memorises, --ema-steps %.0f --ema-blend %.1f --dropout %.1f --wd-per-epoch %.0f "
                   "(docs/training.md)\n",
                res->cand[0].epochs_max, PLAN_REPEAT_EPOCHS, PLAN_REPEAT_EMA_STEPS, PLAN_REPEAT_EMA_BLEND,
                PLAN_REPEAT_DROPOUT, PLAN_REPEAT_WD_PER_EPOCH);
    else if (res->n > 0 && res->cand[0].average)
        fprintf(f, "\nthe pick reads its data %.1f times (>= %.0f): the plan reads out the weight average, --ema-steps %.0f "
                   "--ema-blend %.1f; no dropout or decay growth, which hurt where a model does not memorise "
                   "(docs/training.md)\n",
                res->cand[0].epochs_max, PLAN_REPEAT_EPOCHS, PLAN_REPEAT_EMA_STEPS, PLAN_REPEAT_EMA_BLEND);
    if (res->choose_mix && !res->have_fit)
        fprintf(f, "\n--mix auto: no loss model to price a mixture by: the corpus alone (run `frontier plan --fit`, then "
                   "`--worth --mix auto` to measure the sources)\n");
    else if (res->choose_mix && !mix_is_mixture(&res->mix)) {
        char folders[1024];
        mix_text_folders(default_data_root(), ", ", folders, sizeof folders);
        fprintf(f, "\n--mix auto: no source's worth is measured yet (%s): the corpus alone. `frontier plan --worth --mix "
                   "auto` measures them (%d runs of %.0f s)\n", folders[0] ? folders : "no folders in text/",
                PLAN_WORTH_SEEDS, PLAN_WORTH_BUDGET_S);
    }
    if (mix_is_mixture(&res->mix) && res->n > 0) {  // each source's share, worth and how often the pick reads it
        const PlanCandidate *c = &res->cand[0];
        if (res->choose_mix)
            fprintf(f, "\nmixture chosen for the pick (--mix auto, among the sources whose worth is measured): %s\n",
                    c->mix[0] ? c->mix : "the corpus alone (no source's share gains)");
        int guessed = 0, guessed_any = 0;  // a chosen (any) source priced outside its measured lengths
        for (int s = 1; s < c->data.n; s++) {
            int where = 0;
            double d, se;
            if (res->curves[s].n == 0) continue;
            plan_discount_at(&res->curves[s], c->tokens, &d, &se, &where);
            int outside = res->curves[s].n == 1 || where != 0;
            guessed |= c->data.w[s] > 0 && outside, guessed_any |= outside;
        }
        if (res->choose_mix && c->mix[0] && guessed)  // the worth model's record, docs/planning.md
            fprintf(f, "caution: the pick trains outside the lengths at which a chosen source's worth was measured, and a "
                       "source's worth changes with training length (the novels: from 1.42 corpus tokens at 2 minutes to "
                       "harmful at 30, docs/planning.md): validate this mixture against the corpus alone on paired seeds, "
                       "or measure the worth at a longer length (`frontier plan --worth --mix auto --worth-budget 5m`)\n");
        else if (res->choose_mix && !c->mix[0] && guessed_any)
            fprintf(f, "note: the sources are priced outside the lengths their worth was measured at (below): the choice "
                       "of the corpus alone follows the measured trend; a longer `--worth-budget` checks it\n");
        else if (!res->choose_mix) fprintf(f, "\nmixture (--mix %s), the pick's reads of each source:\n", rq->mix);
        for (int s = 0; s < c->data.n; s++) {
            char u[32], dt[32], worth[600];
            human(c->data.U[s], u, sizeof u);
            human(c->tokens, dt, sizeof dt);
            const WorthEntry *e = worth_find(&res->worth, res->mix.src[s].name);
            if (s == 0 && !strcmp(res->mix.src[0].name, "train")) snprintf(worth, sizeof worth, "the loss model's own");
            else if (res->curves[s].n > 0 && e) {
                PlanDiscountCurve raw = res->curves[s];
                raw.lo = -INFINITY, raw.hi = INFINITY;
                int where;
                double d, se;
                plan_discount_at(&raw, c->tokens, &d, &se, &where);
                int at = snprintf(worth, sizeof worth, "worth %.2f +- %.2f of a corpus token at the pick's %s tokens",
                                  1 - c->data.discount[s], c->data.discount_se[s], dt);
                if (d != c->data.discount[s])
                    at += snprintf(worth + at, sizeof worth - at, " (the measurements say %.2f: priced within [%.2f, %.2f])",
                                   1 - d, 1 - res->curves[s].hi, 1 - res->curves[s].lo);
                at += snprintf(worth + at, sizeof worth - at, "; %s", e->n == 1 ? "measured at one length only," :
                               where == 0 ? "interpolated between" : "extrapolated from");
                for (int k = 0; k < e->n && at < (int)sizeof worth - 60; k++) {
                    char lt[32], bt[32];
                    human(e->len[k].tokens, lt, sizeof lt);
                    duration_format(e->len[k].budget_s, bt, sizeof bt);
                    at += snprintf(worth + at, sizeof worth - at, "%s %s: %.2f at %s", k ? "," : "", bt,
                                   1 - e->len[k].discount, lt);
                }
            } else snprintf(worth, sizeof worth, "worth not measured: counted as a corpus token (`plan --worth`)");
            fprintf(f, "  %-20s %.3f of the tokens, %s unique, %.2f epochs; %s\n", res->mix.src[s].name, c->data.w[s], u,
                    c->data.U[s] > 0 ? c->data.w[s] * c->tokens / c->data.U[s] : 0, worth);
        }
    }
}

void plan_candidate_settings(const PlanResult *res, const PlanRequest *rq, const PlanCandidate *c, TrainConfig *raw,
                             unsigned char *given) {
    (void)res;
    *raw = train_settings_defaults();
    memset(given, 0, TRAIN_MAX_SETTINGS);
    raw->model = c->model;
    raw->batch_tokens = c->rules.batch_tokens;
    raw->device_batch = c->device_batch;
    raw->optim.muon_wd = (float)c->rules.weight_decay;
    raw->budget_s = rq->budget_s;
    raw->precision = rq->precision;
    static const char *const names[] = {"depth", "n-embd", "n-head", "n-kv-head", "head-dim", "seq-len", "vocab-size",
                                        "batch-tokens", "device-batch", "weight-decay", "budget", "precision"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) train_setting_give(given, names[i]);
    if (rq->threads > 0) raw->threads = rq->threads, train_setting_give(given, "threads");
    if (rq->data) raw->data_dir = res->data_dir, train_setting_give(given, "data");
    if (c->mix[0]) raw->mix = c->mix, train_setting_give(given, "mix");
    if (c->average) {
        raw->optim.ema_steps = PLAN_REPEAT_EMA_STEPS, train_setting_give(given, "ema-steps");
        raw->optim.ema_blend = PLAN_REPEAT_EMA_BLEND, train_setting_give(given, "ema-blend");
    }
    if (c->regularise) {
        raw->dropout = PLAN_REPEAT_DROPOUT, train_setting_give(given, "dropout");
        raw->wd_per_epoch = PLAN_REPEAT_WD_PER_EPOCH, train_setting_give(given, "wd-per-epoch");
    }
}

int plan_write_json(const PlanResult *res, const PlanRequest *rq, const PlanCandidate *c, const char *path) {
    TrainConfig raw;
    unsigned char given[TRAIN_MAX_SETTINGS];
    plan_candidate_settings(res, rq, c, &raw, given);
    cJSON *j = train_settings_to_json_given(&raw, given);
    int rc = json_write_atomic(path, j);
    cJSON_Delete(j);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// The loss model's fit and its page
// ---------------------------------------------------------------------------------------------

static int by_n(const void *a, const void *b) {
    const ScalingPoint *x = a, *y = b;
    return (x->N > y->N) - (x->N < y->N) ?: (x->D > y->D) - (x->D < y->D);
}

// scaling-<data>.html: val_bpb against log10 tokens, the law's curve for each model size on the
// whole corpus, the fitted runs as points, and a table of every run with its prediction and
// residual; p[n..n+n_out) are the runs left out of the fit (outside the law's domain), listed apart.
static int write_fit_page(const char *path, const ScalingFit *fit, ScalingPoint *p, int n, int n_out, double corpus) {
    qsort(p, (size_t)n, sizeof *p, by_n);
    qsort(p + n, (size_t)n_out, sizeof *p, by_n);
    StrBuf b = {0};
    sb_puts(&b, "<!doctype html><meta charset=utf-8><title>frontier plan: the loss model</title>"
                "<style>body{font:14px sans-serif;max-width:900px;margin:2em auto}td,th{padding:2px 8px;text-align:right}"
                "</style><h1>The loss model</h1>");
    sb_printf(&b, "<p>L = %.4f + %.4g / N<sup>%.4f</sup> + %.4g / D'<sup>%.4f</sup>, R* = %.2f%s; %d runs, rms "
                  "residual %.4f bpb, %d bootstrap fits.</p>", fit->law.E, fit->law.A, fit->law.alpha, fit->law.B,
              fit->law.beta, fit->law.rstar, fit->rstar_fitted ? "" : " (the prior)", fit->n_points, fit->rms_resid,
              fit->n_boot);
    enum { K = 40 };
    SvgSeries s[2 * 16];
    double xs[16][K], ys[16][K], px[16][64], py[16][64];
    int ns = 0, groups = 0;
    static const char *const colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    char names[16][48];
    for (int i = 0; i < n && groups < 16;) {
        int j = i, m = 0;
        double dlo = p[i].D, dhi = p[i].D;
        while (j < n && p[j].N == p[i].N) {
            if (m < 64) px[groups][m] = log10(p[j].D), py[groups][m] = p[j].L, m++;
            dlo = fmin(dlo, p[j].D), dhi = fmax(dhi, p[j].D);
            j++;
        }
        for (int k = 0; k < K; k++) {
            double ld = log10(dlo / 2) + (log10(dhi * 2) - log10(dlo / 2)) * k / (K - 1);
            xs[groups][k] = ld, ys[groups][k] = scaling_eval(&fit->law, p[i].N, pow(10, ld), corpus);
        }
        snprintf(names[groups], sizeof names[groups], "N %.3gM", p[i].N / 1e6);
        const char *col = colors[groups % 8];
        s[ns++] = (SvgSeries){xs[groups], ys[groups], K, names[groups], col, 2, 0, 0, 0};
        s[ns++] = (SvgSeries){px[groups], py[groups], m, NULL, col, 2, 0, 0, 1};
        groups++;
        i = j;
    }
    SvgLineChart c = {.id = "fit", .title = "val_bpb against tokens trained (lines: the law on the whole corpus)",
                      .x_label = "log10 tokens trained", .y_label = "val_bpb", .width = 820, .height = 420,
                      .series = s, .n_series = ns};
    svg_line_chart(&b, &c);
    sb_puts(&b, "<h2>Runs</h2><table><tr><th>N</th><th>tokens D</th><th>unique U</th><th>epochs</th><th>D'</th>"
                "<th>val_bpb</th><th>law</th><th>residual</th></tr>");
    for (int i = 0; i < n + n_out; i++) {
        if (i == n)
            sb_printf(&b, "<tr><th colspan=8 style=text-align:left>Left out of the fit: read more than once with fewer "
                          "than %g unique tokens per parameter (memorising; the law does not model it)</th></tr>",
                      SCALING_MIN_UNIQUE_PER_PARAM);
        double pred = scaling_eval(&fit->law, p[i].N, p[i].D, p[i].U);
        sb_printf(&b, "<tr><td>%.3gM</td><td>%.3gM</td><td>%.3gM</td><td>%.2f</td><td>%.3gM</td><td>%.4f</td><td>%.4f</td>"
                      "<td>%+.4f</td></tr>", p[i].N / 1e6, p[i].D / 1e6, p[i].U / 1e6, p[i].U > 0 ? p[i].D / p[i].U : 0,
                  scaling_effective_data(p[i].D, p[i].U, fit->law.rstar) / 1e6, p[i].L, pred, p[i].L - pred);
    }
    sb_puts(&b, "</table>\n");
    int rc = write_file_atomic(path, b.s, b.len);
    sb_free(&b);
    return rc;
}

int plan_fit(const PlanRequest *rq, const PlanResult *res, double max_minutes, const char *const *reuse, int n_reuse) {
    if (mpirun_ok(rq) != 0) return -1;
    enum { CAP = 512 };
    ScalingPoint *pts = xmalloc(CAP * sizeof *pts);
    PlanEnv env = plan_env(rq, res->data_dir);
    env.vocab_size = res->family.vocab_size;
    char name[160];
    snprintf(name, sizeof name, "ladder-%s", res->data_key);
    char *dir = plan_path(rq, name);
    int n = plan_ladder(&env, &res->family, &res->tp, dir, 60 * max_minutes, res->train_tokens, pts, CAP);
    free(dir);
    if (n < 0) { free(pts); return -1; }
    int own = n;
    for (int i = 0; i < n_reuse; i++) plan_reuse_points(reuse[i], res->family.seq_len, pts, &n, CAP);
    int n_out = scaling_split_domain(pts, n);
    n -= n_out;
    if (!rq->quiet) {
        fprintf(stderr, "plan: fitting the loss model to %d runs (%d of the ladder, %d reused)\n", n, own,
                n + n_out - own);
        for (int i = n; i < n + n_out; i++)
            fprintf(stderr, "plan: left out a run that memorises (%.3gM parameters, %.3gM unique tokens read %.1f times, "
                            "val_bpb %.4f): under %g unique tokens per parameter the law does not hold\n",
                    (pts[i].P > 0 ? pts[i].P : pts[i].N) / 1e6, pts[i].U / 1e6, pts[i].D / pts[i].U, pts[i].L,
                    SCALING_MIN_UNIQUE_PER_PARAM);
    }
    ScalingFit *fit = xmalloc(sizeof *fit);
    int rc = scaling_fit(pts, n, 1, fit);
    if (rc == 0) {
        snprintf(name, sizeof name, "scaling-%s.json", res->data_key);
        char *path = plan_path(rq, name);
        cJSON *j = scaling_fit_to_json(fit);
        rc = json_write_atomic(path, j);
        cJSON_Delete(j);
        snprintf(name, sizeof name, "scaling-%s.html", res->data_key);
        char *page = plan_path(rq, name);
        if (rc == 0) rc = write_fit_page(page, fit, pts, n, n_out, res->train_tokens);
        if (rc == 0 && !rq->quiet) fprintf(stderr, "plan: the loss model is in %s, its page %s\n", path, page);
        free(path), free(page);
    }
    free(fit);
    free(pts);
    return rc;
}

int plan_check(const PlanRequest *rq, const PlanResult *res, FILE *f) {
    if (mpirun_ok(rq) != 0) return -1;
    PlanEnv env = plan_env(rq, res->data_dir);
    env.vocab_size = res->family.vocab_size;
    char key[sizeof res->tp.key];
    plan_layout_key(rq, key, sizeof key);
    char *dir = keyed(rq, "heldout", key);
    double(*work)[TP_NTERMS] = xcalloc((size_t)PLAN_N_HELDOUT, sizeof *work), *step_s = xcalloc((size_t)PLAN_N_HELDOUT, sizeof(double));
    int which[64];
    int n = plan_step_times(&env, dir, PLAN_HELDOUT_POINTS, PLAN_N_HELDOUT, 1, 1, work, step_s, which);
    free(dir);
    if (n >= 0) {
        fprintf(f, "| held-out shape | batch | measured tok/s | predicted tok/s | error |\n|---|---|---|---|---|\n");
        double ss = 0, mx = 0;
        for (int k = 0; k < n; k++) {
            const PlanPoint *p = &PLAN_HELDOUT_POINTS[which[k]];
            double meas = p->batch_tokens / step_s[k], pred = p->batch_tokens / tp_predict_step_s(&res->tp, work[k]);
            double e = pred / meas - 1;
            ss += e * e, mx = fmax(mx, fabs(e));
            fprintf(f, "| d%d C%d hd%d T%d | %lld | %.0f | %.0f | %+.1f%% |\n", p->depth, p->n_embd, p->head_dim,
                    p->seq_len, (long long)p->batch_tokens, meas, pred, 100 * e);
        }
        if (n > 0) fprintf(f, "held-out: %d shapes, rms error %.1f%%, max %.1f%%\n", n, 100 * sqrt(ss / n), 100 * mx);
    }
    free(work), free(step_s);
    return n < 0 ? -1 : 0;
}
