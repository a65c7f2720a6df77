// planner/worth.c — a source's discount from paired runs (see worth.h).
#include "planner/worth.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/hash.h"
#include "util/json_file.h"
#include "util/mem.h"

static double mixture_minus_alone(const ScalingLaw *l, double N, double U0, double Us, double w, double D0, double D1,
                                  double delta) {
    ScalingData d = {2, {1 - w, w}, {U0, Us}, {0, delta}, {0, 0}};
    return scaling_eval_mix(l, N, D1, &d) - scaling_eval(l, N, D0, U0);
}

double worth_solve(const ScalingLaw *l, double N, double U0, double Us, double w, double D0, double D1, double dL,
                   int *clamped) {
    double lo = PLAN_WORTH_MIN, hi = PLAN_WORTH_MAX;
    if (clamped) *clamped = 0;
    if (!(mixture_minus_alone(l, N, U0, Us, w, D0, D1, lo) < dL)) {
        if (clamped) *clamped = 1;
        return lo;
    }
    if (!(mixture_minus_alone(l, N, U0, Us, w, D0, D1, hi) > dL)) {
        if (clamped) *clamped = 1;
        return hi;
    }
    for (int it = 0; it < 100; it++) {  // the difference grows with the discount
        double mid = (lo + hi) / 2;
        if (mixture_minus_alone(l, N, U0, Us, w, D0, D1, mid) < dL) lo = mid;
        else hi = mid;
    }
    return (lo + hi) / 2;
}

// Sort the lengths by tokens (insertion: a handful); the index of the first of two lengths that
// trained the same tokens (no trend to read between them), or -1.
static int sort_lengths(WorthEntry *e) {
    for (int i = 1; i < e->n; i++)
        for (int j = i; j > 0 && e->len[j].tokens < e->len[j - 1].tokens; j--) {
            WorthLength x = e->len[j];
            e->len[j] = e->len[j - 1], e->len[j - 1] = x;
        }
    for (int i = 1; i < e->n; i++)
        if (!(e->len[i].tokens > e->len[i - 1].tokens)) return i - 1;
    return -1;
}

int worth_load(const char *path, WorthTable *t) {
    memset(t, 0, sizeof *t);
    if (!path_exists(path)) return 0;
    cJSON *j = json_read_object(path, "the sources' worth");
    if (!j) return -1;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(j, "sources"), *it;
    int rc = cJSON_IsObject(src) ? 0 : err_set("%s: no \"sources\" object (delete the file to measure again)", path);
    cJSON_ArrayForEach(it, src) {
        if (rc != 0) break;
        const cJSON *lens = cJSON_GetObjectItemCaseSensitive(it, "lengths"), *l;
        if (!lens) { t->stale++; continue; }
        if (t->n == WORTH_MAX_ENTRIES) { rc = err_set("%s: more than %d sources", path, WORTH_MAX_ENTRIES); break; }
        WorthEntry *e = &t->e[t->n];
        memset(e, 0, sizeof *e);
        snprintf(e->name, sizeof e->name, "%s", it->string);
        if (!cJSON_IsArray(lens) || cJSON_GetArraySize(lens) < 1 || cJSON_GetArraySize(lens) > WORTH_MAX_LENGTHS)
            rc = err_set("%s: source \"%s\": \"lengths\" is not an array of 1 to %d (delete the entry to measure it again)",
                         path, it->string, WORTH_MAX_LENGTHS);
        cJSON_ArrayForEach(l, lens) {
            if (rc != 0) break;
            WorthLength *x = &e->len[e->n++];
            x->budget_s = jnum(l, "budget_s"), x->tokens = jnum(l, "tokens");
            x->discount = jnum(l, "discount"), x->se = jnum(l, "se"), x->dL = jnum(l, "dL");
            // range-checked as doubles: a missing count is NaN, which no int holds
            double seeds = jnum(l, "seeds"), clamped = jnum(l, "clamped");
            if (!(x->budget_s > 0) || !(x->tokens > 0) || !isfinite(x->discount) || x->discount < PLAN_WORTH_MIN ||
                x->discount > PLAN_WORTH_MAX || !(seeds >= 1 && seeds <= 1e6) || !(clamped >= 0 && clamped <= seeds))
                rc = err_set("%s: source \"%s\", length %d: budget_s, tokens, discount, seeds or clamped missing or out "
                             "of range (delete the entry to measure it again)", path, it->string, e->n);
            else x->seeds = (int)seeds, x->clamped = (int)clamped;
        }
        if (rc != 0) break;
        if (sort_lengths(e) >= 0)
            rc = err_set("%s: source \"%s\": two lengths of the same tokens (delete the entry to measure it again)",
                         path, it->string);
        t->n++;
    }
    cJSON_Delete(j);
    return rc;
}

int worth_save(const char *path, const WorthTable *t) {
    cJSON *j = cJSON_CreateObject(), *src = cJSON_AddObjectToObject(j, "sources");
    cJSON *ref = cJSON_AddObjectToObject(j, "measured_with");
    cJSON_AddNumberToObject(ref, "depth", PLAN_WORTH_DEPTH);
    cJSON_AddNumberToObject(ref, "weight", PLAN_WORTH_WEIGHT);
    for (int i = 0; i < t->n; i++) {
        const WorthEntry *e = &t->e[i];
        cJSON *lens = cJSON_AddArrayToObject(cJSON_AddObjectToObject(src, e->name), "lengths");
        for (int k = 0; k < e->n; k++) {
            const WorthLength *x = &e->len[k];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(lens, o);
            cJSON_AddNumberToObject(o, "budget_s", x->budget_s);
            cJSON_AddNumberToObject(o, "tokens", x->tokens);
            cJSON_AddNumberToObject(o, "discount", x->discount);
            if (isfinite(x->se)) cJSON_AddNumberToObject(o, "se", x->se);
            else cJSON_AddNullToObject(o, "se");
            cJSON_AddNumberToObject(o, "seeds", x->seeds);
            cJSON_AddNumberToObject(o, "clamped", x->clamped);
            cJSON_AddNumberToObject(o, "dL", x->dL);
        }
    }
    int rc = json_write_atomic(path, j);
    cJSON_Delete(j);
    return rc;
}

PlanDiscountCurve worth_curve(const WorthEntry *e) {
    PlanDiscountCurve c = {.n = e->n, .lo = PLAN_WORTH_PRICE_MIN, .hi = PLAN_WORTH_MAX};
    for (int k = 0; k < e->n; k++)
        c.D[k] = e->len[k].tokens, c.delta[k] = e->len[k].discount, c.se[k] = isfinite(e->len[k].se) ? e->len[k].se : 0;
    return c;
}

const WorthEntry *worth_find(const WorthTable *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->e[i].name, name)) return &t->e[i];
    return NULL;
}

// One run of the reference shape, seed k, on the data alone (mix NULL) or a mixture, in dir/id k.
static int measure_one(const PlanEnv *env, const PlanFamily *f, const char *dir, int k, const char *mix, double budget_s,
                       TrialResult *r) {
    ModelConfig m = plan_shape(f, PLAN_WORTH_DEPTH);
    const int64_t min_batch = (int64_t)f->device_batch * f->seq_len * env->ranks;
    PlanPoint p = {PLAN_WORTH_DEPTH, m.n_embd, m.head_dim, f->seq_len, plan_rules(PLAN_RULE_D_REF, min_batch).batch_tokens,
                   budget_s, 0, 0, mix, PLAN_WORTH_SEED0 + k - 1};
    if (plan_measure(env, dir, k, &p, 2, 0, r) != 0) return -1;
    if (r->interrupted) return err_set("plan: interrupted while measuring the sources' worth (run it again to continue)");
    if (!r->ok || !(r->tokens > 0))
        return err_set("plan: the run %s/%04d failed: %s (its train.log says more)", dir, k, r->error);
    return 0;
}

int worth_measure(const PlanEnv *env, const PlanFamily *f, const ScalingFit *fit, const Mix *m, const ScalingData *d,
                  const char *dir, const char *table_path, double budget_s, int seeds, WorthTable *t, FILE *log) {
    if (seeds < 1) return err_usage("plan --worth: at least 1 seed");
    if (m->n < 1 || strcmp(m->src[0].name, "train") != 0 || d->n != m->n)
        return err_usage("plan --worth: the mixture must hold train, the corpus the others are measured against");
    if (m->n < 2) return err_usage("plan --worth: no source to measure besides train: name them with --mix (or --mix auto)");
    const ModelConfig ref = plan_shape(f, PLAN_WORTH_DEPTH);
    const double N = (double)model_config_scaling_params(&ref);
    double *L0 = calloc((size_t)seeds, sizeof *L0), *D0 = calloc((size_t)seeds, sizeof *D0);
    char sub[32];
    snprintf(sub, sizeof sub, "%.0fs", budget_s);
    char *bdir = budget_s == PLAN_WORTH_BUDGET_S ? xstrdup(dir) : path_join(dir, sub);
    char *base = path_join(bdir, "train");
    int rc = 0;
    for (int k = 1; k <= seeds && rc == 0; k++) {
        TrialResult r;
        if ((rc = measure_one(env, f, base, k, NULL, budget_s, &r)) == 0) L0[k - 1] = r.val_bpb, D0[k - 1] = r.tokens;
    }
    for (int s = 1; s < m->n && rc == 0; s++) {
        const char *name = m->src[s].name;
        char key[40], spec[300];
        snprintf(key, sizeof key, "s-%016llx", (unsigned long long)hash_bytes(name, strlen(name)));
        snprintf(spec, sizeof spec, "%s=%g", name, PLAN_WORTH_WEIGHT);
        char *sdir = path_join(bdir, key);
        double sum = 0, ss = 0, dsum = 0, tsum = 0;
        int clamped = 0;
        for (int k = 1; k <= seeds && rc == 0; k++) {
            TrialResult r;
            if ((rc = measure_one(env, f, sdir, k, spec, budget_s, &r)) != 0) break;
            double dL = r.val_bpb - L0[k - 1];
            int c;
            double delta = worth_solve(&fit->law, N, d->U[0], d->U[s], PLAN_WORTH_WEIGHT, D0[k - 1], r.tokens, dL, &c);
            sum += delta, ss += delta * delta, dsum += dL, tsum += r.tokens, clamped += c;
        }
        free(sdir);
        if (rc != 0) break;
        WorthLength x = {.budget_s = budget_s, .tokens = tsum / seeds, .seeds = seeds, .clamped = clamped,
                         .discount = sum / seeds, .dL = dsum / seeds, .se = NAN};
        if (seeds > 1) x.se = sqrt(fmax(0, (ss - sum * sum / seeds) / (seeds - 1)) / seeds);
        WorthEntry *at = (WorthEntry *)worth_find(t, name);
        if (!at) {
            if (t->n == WORTH_MAX_ENTRIES) { rc = err_set("%s: more than %d sources", table_path, WORTH_MAX_ENTRIES); break; }
            at = &t->e[t->n++];
            memset(at, 0, sizeof *at);
            snprintf(at->name, sizeof at->name, "%s", name);
        }
        int k = 0;  // this budget's length, replaced; else a new one
        while (k < at->n && at->len[k].budget_s != budget_s) k++;
        if (k == at->n) {
            if (at->n == WORTH_MAX_LENGTHS) {
                rc = err_set("%s: source %s: more than %d lengths (delete a budget's entry)", table_path, name,
                             WORTH_MAX_LENGTHS);
                break;
            }
            at->n++;
        }
        at->len[k] = x;
        const int same = sort_lengths(at);
        if (same >= 0) {
            rc = err_usage("plan --worth: source %s: the %.0f-s and %.0f-s runs trained the same tokens; measure "
                           "lengths apart (--worth-budget)", name, at->len[same].budget_s, at->len[same + 1].budget_s);
            break;
        }
        if ((rc = worth_save(table_path, t)) != 0) break;
        char bt[32];
        duration_format(budget_s, bt, sizeof bt);
        if (log)
            fprintf(log, "plan: worth of %s at %s (%.1fM tokens): discount %.3f +- %.3f (a token worth %.2f of the "
                         "corpus's own), val_bpb %+.4f at %.0f%% of the tokens over %d seed%s%s\n", name,
                    bt, x.tokens / 1e6, x.discount, isfinite(x.se) ? x.se : 0.0,
                    1 - x.discount, x.dL, 100 * PLAN_WORTH_WEIGHT, seeds, seeds == 1 ? "" : "s",
                    clamped ? " (some seeds past the range the law can price: clamped)" : "");
    }
    free(base), free(bdir), free(L0), free(D0);
    return rc;
}
