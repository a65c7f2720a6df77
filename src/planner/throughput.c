// planner/throughput.c — the step-time model: work terms from the cost model, an NNLS fit, the
// per-layout cache.
#include "planner/throughput.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cost.h"
#include "kernels/cpu/cpu.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_file.h"

const char *const TP_TERM_NAMES[TP_NTERMS] = {"gemm_flops", "gemm_bytes", "gemm_thin", "attn_flops", "elem_bytes",
                                              "opt_flops", "layer_calls", "step", "allreduce_bytes"};

// ---------------------------------------------------------------------------------------------
// Work of one step
// ---------------------------------------------------------------------------------------------

// A linear layer y[N,out] = x[N,in] W^T over N tokens: its forward and both backward products.
static void add_linear(double *w, int N, int out, int in) {
    OpCost f = cost_matmul(N, out, in, 0), dx = cost_matmul(N, in, out, 0), dw = cost_matmul(out, in, N, 1);
    w[TP_GEMM_FLOPS] += f.flops + dx.flops + dw.flops;
    w[TP_GEMM_BYTES] += f.bytes + dx.bytes + dw.bytes;
    w[TP_GEMM_THIN] += (f.flops + dx.flops + dw.flops) / (out < in ? out : in);
}

static void add_elem(double *w, OpCost c) { w[TP_ELEM_BYTES] += c.bytes; }

// One orthogonalisation of an m x n matrix (m <= n after transposing): per iteration X X^T
// (2m²n), the polynomial in it (2m³) and its product with X (2m²n).
static double ortho_flops(double m, double n, int ns_steps) {
    if (m > n) { double t = m; m = n; n = t; }
    return ns_steps * (4.0 * m * m * n + 2.0 * m * m * m);
}

int tp_work(const TpShape *s, double w[TP_NTERMS]) {
    const ModelConfig *c = &s->model;
    memset(w, 0, sizeof(double) * TP_NTERMS);
    const int T = c->seq_len, B = s->device_batch, r = s->ranks > 0 ? s->ranks : 1;
    const int64_t micro_tokens = (int64_t)B * T;
    if (B < 1 || T < 1 || s->batch_tokens < 1 || s->batch_tokens % (micro_tokens * r) != 0)
        return err_usage("batch %lld tokens does not split into %d ranks x micro-batches of %d x %d",
                         (long long)s->batch_tokens, r, B, T);
    const double n_micro = (double)(s->batch_tokens / (micro_tokens * r));
    const int N = (int)micro_tokens, C = c->n_embd, V = c->vocab_size, H = c->n_head, Hkv = c->n_kv_head,
              D = c->head_dim, qd = H * D, kvd = Hkv * D, hid = c->mlp_ratio * C;
    double m[TP_NTERMS] = {0};  // one micro-batch
    for (int l = 0; l < c->depth; l++) {
        add_linear(m, N, qd, C);
        add_linear(m, N, kvd, C);
        add_linear(m, N, kvd, C);
        add_linear(m, N, C, qd);
        add_linear(m, N, hid, C);
        add_linear(m, N, C, hid);
        int win = model_config_layer_window(c, l);
        OpCost af = cost_attention_fwd(B, T, H, Hkv, D, win), ab = cost_attention_bwd(B, T, H, Hkv, D, win);
        m[TP_ATTN_FLOPS] += af.flops + ab.flops;
        add_elem(m, af), add_elem(m, ab);
        for (int k = 0; k < 2; k++) add_elem(m, cost_rmsnorm_fwd(N, C)), add_elem(m, cost_rmsnorm_bwd(N, C, 1));
        add_elem(m, cost_rope_rmsnorm_fwd(B, T, H, D)), add_elem(m, cost_rope_rmsnorm_bwd(B, T, H, D));
        add_elem(m, cost_rope_rmsnorm_fwd(B, T, Hkv, D)), add_elem(m, cost_rope_rmsnorm_bwd(B, T, Hkv, D));
        add_elem(m, cost_relu2_fwd((size_t)N * hid)), add_elem(m, cost_relu2_bwd((size_t)N * hid));
        m[TP_ELEM_BYTES] += 4.0 * 4 * (double)N * C;  // two residual adds, forward and backward
        if (model_config_has_ve(c, l))
            add_elem(m, cost_embedding_fwd(N, kvd)), add_elem(m, cost_embedding_bwd(N, kvd));
    }
    add_elem(m, cost_embedding_fwd(N, C)), add_elem(m, cost_embedding_bwd(N, C));
    add_elem(m, cost_rmsnorm_fwd(N, C)), add_elem(m, cost_rmsnorm_bwd(N, C, 0));
    OpCost head = cost_head_ce(N, V, C, 1, 1), hdw = cost_head_dw(N, V, C);
    m[TP_GEMM_FLOPS] += head.flops + hdw.flops;
    m[TP_GEMM_BYTES] += head.bytes + hdw.bytes;
    m[TP_GEMM_THIN] += (head.flops + hdw.flops) / (C < V ? C : V);
    for (int k = 0; k < TP_NTERMS; k++) w[k] = n_micro * m[k];
    w[TP_LAYER_CALLS] = n_micro * c->depth;
    // Per step: Muon on every block matrix, AdamW and the gradients' zeroing on everything.
    const int ns = s->ns_steps > 0 ? s->ns_steps : 5;
    double opt = ortho_flops(qd, C, ns) + 2 * ortho_flops(kvd, C, ns) + ortho_flops(C, qd, ns) +
                 ortho_flops(hid, C, ns) + ortho_flops(C, hid, ns);
    w[TP_OPT_FLOPS] = c->depth * opt;
    const double params = (double)model_config_num_params(c);
    w[TP_ELEM_BYTES] += 32.0 * params;  // weights, gradient, two moments: read and written
    w[TP_STEP] = 1;
    w[TP_ALLREDUCE] = r > 1 ? 2.0 * (r - 1) / r * params * 4 : 0;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Fit: Lawson-Hanson non-negative least squares on the relative errors
// ---------------------------------------------------------------------------------------------

// Least squares over the columns in `set` (k of them) of the n x TP_NTERMS matrix A (row-major):
// the normal equations, solved by Gaussian elimination with partial pivoting. The columns are
// scaled to unit norm beforehand by the caller, so the system is well scaled. 0, or -1 if singular.
static int ls_subset(const double *A, const double *b, int n, const int *set, int k, double *x) {
    double M[TP_NTERMS][TP_NTERMS + 1];
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++) {
            double s = 0;
            for (int r = 0; r < n; r++) s += A[r * TP_NTERMS + set[i]] * A[r * TP_NTERMS + set[j]];
            M[i][j] = s;
        }
        double s = 0;
        for (int r = 0; r < n; r++) s += A[r * TP_NTERMS + set[i]] * b[r];
        M[i][k] = s;
    }
    for (int col = 0; col < k; col++) {
        int p = col;
        for (int i = col + 1; i < k; i++)
            if (fabs(M[i][col]) > fabs(M[p][col])) p = i;
        if (fabs(M[p][col]) < 1e-12) return -1;
        for (int j = 0; j <= k; j++) { double t = M[col][j]; M[col][j] = M[p][j]; M[p][j] = t; }
        for (int i = 0; i < k; i++) {
            if (i == col) continue;
            double f = M[i][col] / M[col][col];
            for (int j = col; j <= k; j++) M[i][j] -= f * M[col][j];
        }
    }
    for (int i = 0; i < k; i++) x[i] = M[i][k] / M[i][i];
    return 0;
}

// min ||A x - b|| subject to x >= 0 (Lawson & Hanson 1974, ch. 23).
static void nnls(const double *A, const double *b, int n, double *x) {
    int passive[TP_NTERMS] = {0};
    for (int j = 0; j < TP_NTERMS; j++) x[j] = 0;
    for (int outer = 0; outer < 3 * TP_NTERMS; outer++) {
        double grad[TP_NTERMS], resid[256];
        for (int r = 0; r < n; r++) {
            double s = b[r];
            for (int j = 0; j < TP_NTERMS; j++) s -= A[r * TP_NTERMS + j] * x[j];
            resid[r] = s;
        }
        int best = -1;
        for (int j = 0; j < TP_NTERMS; j++) {
            grad[j] = 0;
            for (int r = 0; r < n; r++) grad[j] += A[r * TP_NTERMS + j] * resid[r];
            if (!passive[j] && grad[j] > 1e-10 && (best < 0 || grad[j] > grad[best])) best = j;
        }
        if (best < 0) return;
        passive[best] = 1;
        for (int inner = 0; inner < 3 * TP_NTERMS; inner++) {
            int set[TP_NTERMS], k = 0;
            for (int j = 0; j < TP_NTERMS; j++)
                if (passive[j]) set[k++] = j;
            double z[TP_NTERMS];
            if (ls_subset(A, b, n, set, k, z) != 0) {  // dependent columns: drop the newest
                passive[best] = 0;
                return;
            }
            int all_pos = 1;
            for (int i = 0; i < k; i++) all_pos &= z[i] > 0;
            if (all_pos) {
                for (int i = 0; i < k; i++) x[set[i]] = z[i];
                break;
            }
            // Step from x towards z as far as feasibility allows; drop the columns that hit 0.
            double alpha = 1;
            for (int i = 0; i < k; i++)
                if (z[i] <= 0) {
                    double a = x[set[i]] / (x[set[i]] - z[i]);
                    if (a < alpha) alpha = a;
                }
            for (int i = 0; i < k; i++) {
                x[set[i]] += alpha * (z[i] - x[set[i]]);
                if (x[set[i]] <= 1e-15) x[set[i]] = 0, passive[set[i]] = 0;
            }
        }
    }
}

int tp_fit(const double (*work)[TP_NTERMS], const double *step_s, int n, ThroughputModel *m) {
    if (n < 1 || n > 256) return err_set("throughput fit: %d calibration points (need 1 to 256)", n);
    double *A = calloc((size_t)n * TP_NTERMS, sizeof *A), b[256], scale[TP_NTERMS];
    if (!A) return err_set("throughput fit: out of memory");
    for (int r = 0; r < n; r++) {
        if (!(step_s[r] > 0)) { free(A); return err_set("throughput fit: point %d has step time %g s", r, step_s[r]); }
        for (int j = 0; j < TP_NTERMS; j++) A[r * TP_NTERMS + j] = work[r][j] / step_s[r];
        b[r] = 1;
    }
    for (int j = 0; j < TP_NTERMS; j++) {
        double s = 0;
        for (int r = 0; r < n; r++) s += A[r * TP_NTERMS + j] * A[r * TP_NTERMS + j];
        scale[j] = s > 0 ? 1 / sqrt(s) : 0;
        for (int r = 0; r < n; r++) A[r * TP_NTERMS + j] *= scale[j];
    }
    double x[TP_NTERMS];
    nnls(A, b, n, x);
    free(A);
    for (int j = 0; j < TP_NTERMS; j++) m->coef[j] = x[j] * scale[j];
    m->n_points = n;
    double ss = 0, mx = 0;
    for (int r = 0; r < n; r++) {
        double e = fabs(tp_predict_step_s(m, work[r]) / step_s[r] - 1);
        ss += e * e;
        if (e > mx) mx = e;
    }
    m->rms_rel_err = sqrt(ss / n);
    m->max_rel_err = mx;
    return 0;
}

double tp_predict_step_s(const ThroughputModel *m, const double w[TP_NTERMS]) {
    double t = 0;
    for (int k = 0; k < TP_NTERMS; k++) t += m->coef[k] * w[k];
    return t;
}

double tp_predict_tok_s(const ThroughputModel *m, const TpShape *s) {
    double w[TP_NTERMS];
    err_clear();
    if (tp_work(s, w) != 0) { err_clear(); return NAN; }
    double t = tp_predict_step_s(m, w);
    return t > 0 ? (double)s->batch_tokens / t : NAN;
}

double tp_sustained_factor(const ThroughputModel *m, double *log_sd) {
    double sum = 0, ss = 0;
    for (int i = 0; i < m->n_sustained; i++) {
        double x = log(m->sustained[i].ratio);
        sum += x, ss += x * x;
    }
    int n = m->n_sustained;
    if (log_sd) *log_sd = n > 1 ? sqrt(fmax(0, (ss - sum * sum / n) / (n - 1))) : NAN;
    return n > 0 ? exp(sum / n) : 1.0;
}

void tp_add_sustained(ThroughputModel *m, unsigned long long id, double ratio, double budget_s) {
    int i = 0;
    while (i < m->n_sustained && m->sustained[i].id != id) i++;
    if (i == m->n_sustained) {  // new: appended, the oldest dropped when full
        if (m->n_sustained == TP_MAX_SUSTAINED) {
            memmove(m->sustained, m->sustained + 1, (TP_MAX_SUSTAINED - 1) * sizeof *m->sustained);
            i = TP_MAX_SUSTAINED - 1;
        } else m->n_sustained++;
    }
    m->sustained[i] = (TpSustainedRun){id, ratio, budget_s};
}

// ---------------------------------------------------------------------------------------------
// The cache
// ---------------------------------------------------------------------------------------------

void tp_layout_key(char *buf, int n, int threads, int ranks, const char *precision, const char *kernels) {
    snprintf(buf, (size_t)n, "%s|threads=%d|ranks=%d|%s|%s", cpu_info()->model, threads, ranks, precision, kernels);
}

static char *cache_path(const char *cache_dir) { return path_join(cache_dir, "throughput.json"); }

// The whole file as an object (an empty one when it does not exist). NULL + err when unreadable.
static cJSON *load_all(const char *path) {
    if (!path_exists(path)) return cJSON_CreateObject();
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return NULL;
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        err_set("%s: not a JSON object: delete it (frontier plan --calibrate measures again)", path);
        return NULL;
    }
    return j;
}

int tp_load(const char *cache_dir, const char *key, ThroughputModel *m) {
    char *path = cache_path(cache_dir);
    cJSON *all = load_all(path);
    if (!all) { free(path); return -1; }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(all, key);
    int rc = 1;
    if (cJSON_IsObject(e)) {
        memset(m, 0, sizeof *m);
        snprintf(m->key, sizeof m->key, "%s", key);
        rc = 0;
        for (int k = 0; k < TP_NTERMS; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "coef"), TP_TERM_NAMES[k]);
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0)) {
                rc = err_set("%s: entry '%s' lacks a non-negative coef.%s: delete the entry and calibrate again", path,
                             key, TP_TERM_NAMES[k]);
                break;
            }
            m->coef[k] = v->valuedouble;
        }
        const cJSON *np = cJSON_GetObjectItemCaseSensitive(e, "n_points");
        const cJSON *rms = cJSON_GetObjectItemCaseSensitive(e, "rms_rel_err");
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(e, "max_rel_err");
        m->n_points = cJSON_IsNumber(np) ? np->valueint : 0;
        m->rms_rel_err = cJSON_IsNumber(rms) ? rms->valuedouble : NAN;
        m->max_rel_err = cJSON_IsNumber(mx) ? mx->valuedouble : NAN;
        const cJSON *sus = cJSON_GetObjectItemCaseSensitive(e, "sustained"), *r;
        cJSON_ArrayForEach(r, sus) {
            if (rc != 0) break;
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "run");
            const cJSON *ratio = cJSON_GetObjectItemCaseSensitive(r, "ratio"), *b = cJSON_GetObjectItemCaseSensitive(r, "budget_s");
            char *end = NULL;
            unsigned long long v = cJSON_IsString(id) ? strtoull(id->valuestring, &end, 16) : 0;
            if (!end || *end || !cJSON_IsNumber(ratio) || !(ratio->valuedouble > 0 && isfinite(ratio->valuedouble)) ||
                !cJSON_IsNumber(b) || m->n_sustained == TP_MAX_SUSTAINED)
                rc = err_set("%s: entry '%s': a \"sustained\" run without a hex \"run\", a positive \"ratio\" and "
                             "\"budget_s\" (or more than %d): delete \"sustained\" and give the runs again with --reuse",
                             path, key, TP_MAX_SUSTAINED);
            else m->sustained[m->n_sustained++] = (TpSustainedRun){v, ratio->valuedouble, b->valuedouble};
        }
    }
    cJSON_Delete(all);
    free(path);
    return rc;
}

int tp_save(const char *cache_dir, const ThroughputModel *m) {
    if (mkdir_p(cache_dir) != 0) return -1;
    char *path = cache_path(cache_dir);
    cJSON *all = load_all(path);
    if (!all) { free(path); return -1; }
    cJSON *e = cJSON_CreateObject(), *coef = cJSON_AddObjectToObject(e, "coef");
    for (int k = 0; k < TP_NTERMS; k++) cJSON_AddNumberToObject(coef, TP_TERM_NAMES[k], m->coef[k]);
    cJSON_AddNumberToObject(e, "n_points", m->n_points);
    cJSON_AddNumberToObject(e, "rms_rel_err", m->rms_rel_err);
    cJSON_AddNumberToObject(e, "max_rel_err", m->max_rel_err);
    if (m->n_sustained > 0) {
        cJSON *sus = cJSON_AddArrayToObject(e, "sustained");
        for (int i = 0; i < m->n_sustained; i++) {
            cJSON *r = cJSON_CreateObject();
            char id[20];
            snprintf(id, sizeof id, "%016llx", m->sustained[i].id);
            cJSON_AddStringToObject(r, "run", id);
            cJSON_AddNumberToObject(r, "ratio", m->sustained[i].ratio);
            cJSON_AddNumberToObject(r, "budget_s", m->sustained[i].budget_s);
            cJSON_AddItemToArray(sus, r);
        }
    }
    cJSON_DeleteItemFromObjectCaseSensitive(all, m->key);
    cJSON_AddItemToObject(all, m->key, e);
    int rc = json_write_atomic(path, all);
    cJSON_Delete(all);
    free(path);
    return rc;
}
