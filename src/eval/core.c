// eval/core.c — CORE scoring (see core.h).
#include "eval/core.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dist/dist.h"
#include "kernels/kernels.h"
#include "eval/pyrandom.h"
#include "util/error.h"
#include "util/mem.h"
#include "util/timer.h"

typedef struct {
    Model *m;
    const Tokenizer *tok;
    Encoder *enc;
    RunState rs;
    int rs_B, rs_T;          // what rs is sized for
    IdVec *seqs;             // (cap) token sequences of the current row's prompts
    IdVec prefix;            // LM: tokens without the continuation
    int n_seq_cap;
    int32_t *in;             // (rs_B * rs_T) the sequences' own tokens after the shared prefix
    KVPrefix kv;             // keys and values of the row's shared prefix
    int *rows;               // (rows_cap) scored positions: indices into in
    int32_t *targets;        // (rows_cap) the token each scored position must predict
    int *owner;              // (rows_cap) the sequence each scored position belongs to
    float *xbuf, *logits, *losses;  // (rows_cap, C), (rows_cap, V), (rows_cap)
    int rows_cap;
    CorePrompts prompts;     // the current row, rendered
    int64_t *avail, *shots;  // (n_rows), (k) few-shot draw scratch
    size_t *fewshot;         // (k) the row's few-shot examples
    size_t avail_cap, shots_cap;
} Scorer;

static void scorer_free(Scorer *s) {
    encoder_free(s->enc);
    if (s->rs_B) runstate_free(&s->rs);
    for (int i = 0; i < s->n_seq_cap; i++) idvec_free(&s->seqs[i]);
    free(s->seqs);
    idvec_free(&s->prefix);
    free(s->in);
    kvprefix_free(&s->kv);
    free(s->rows);
    free(s->targets);
    free(s->owner);
    free(s->xbuf);
    free(s->logits);
    free(s->losses);
    core_prompts_free(&s->prompts);
    free(s->avail);
    free(s->shots);
    free(s->fewshot);
    memset(s, 0, sizeof *s);
}

static int tokenize(Scorer *s, const char *text, IdVec *out) {
    out->len = 0;
    idvec_push(out, (uint32_t)s->tok->bos_id);
    return encoder_encode(s->enc, (const uint8_t *)text, strlen(text), out);
}

// Make room for a batch of B sequences of T tokens (grows, never shrinks). The model's context
// was extended beforehand (score_task): not here, where other threads are running the model.
static void ensure_capacity(Scorer *s, int B, int T) {
    if (B <= s->rs_B && T <= s->rs_T) return;
    int nb = B > s->rs_B ? B : s->rs_B, nt = T > s->rs_T ? T : s->rs_T;
    nt = (nt + 255) / 256 * 256;
    if (s->rs_B) runstate_free(&s->rs);
    runstate_build_forward(&s->rs, &s->m->cfg, nb, nt);
    s->rs_B = nb;
    s->rs_T = nt;
    s->in = xrealloc(s->in, (size_t)nb * nt * sizeof *s->in);
}

static void ensure_rows(Scorer *s, int M) {
    if (M <= s->rows_cap) return;
    int C = s->m->cfg.n_embd, V = s->m->cfg.vocab_size;
    s->rows_cap = M + 64;
    s->rows = xrealloc(s->rows, (size_t)s->rows_cap * sizeof *s->rows);
    s->targets = xrealloc(s->targets, (size_t)s->rows_cap * sizeof *s->targets);
    s->owner = xrealloc(s->owner, (size_t)s->rows_cap * sizeof *s->owner);
    s->losses = xrealloc(s->losses, (size_t)s->rows_cap * sizeof *s->losses);
    free(s->xbuf);
    free(s->logits);
    s->xbuf = xaligned_alloc((size_t)s->rows_cap * C * sizeof *s->xbuf);
    s->logits = xaligned_alloc((size_t)s->rows_cap * V * sizeof *s->logits);
}

// Tokens every sequence of the row shares and that no scored position needs: the first P.
// Causal attention makes their keys and values the same in each sequence, so they run once.
// A position j is scored when it predicts token j+1 of a continuation (j >= start - 1).
static int shared_prefix(Scorer *s, int n, const int *start) {
    if (n < 2) return 0;  // nothing to share
    size_t p = s->seqs[0].len;
    for (int i = 1; i < n; i++) {
        size_t k = 0;
        while (k < p && k < s->seqs[i].len && s->seqs[i].data[k] == s->seqs[0].data[k]) k++;
        p = k;
    }
    int P = (int)p;
    for (int i = 0; i < n; i++)
        if (start[i] - 1 < P) P = start[i] - 1;
    return P > 0 ? P : 0;
}

// Continuation span [start, end) of each sequence, nanochat's rules.
static int spans(const CoreTask *t, Scorer *s, int n, int *start, int *end) {
    if (t->type == CORE_LM) {
        const IdVec *w = &s->prefix, *f = &s->seqs[0];
        if (w->len > f->len || memcmp(w->data, f->data, w->len * sizeof *w->data) != 0)
            return err_set("task %s: the prompt's tokens are not a prefix of the prompt with its continuation", t->label);
        start[0] = (int)w->len;
        end[0] = (int)f->len;
        return 0;
    }
    if (t->type == CORE_MC) {  // common token prefix of all choices
        size_t p = s->seqs[0].len;
        for (int i = 1; i < n; i++) {
            size_t k = 0;
            while (k < p && k < s->seqs[i].len && s->seqs[i].data[k] == s->seqs[0].data[k]) k++;
            p = k;
        }
        for (int i = 0; i < n; i++) start[i] = (int)p, end[i] = (int)s->seqs[i].len;
        return 0;
    }
    size_t q = s->seqs[0].len;  // schema: common token suffix of all options
    for (int i = 1; i < n; i++) {
        size_t k = 0, a = s->seqs[0].len, b = s->seqs[i].len;
        while (k < q && k < b && s->seqs[i].data[b - 1 - k] == s->seqs[0].data[a - 1 - k]) k++;
        q = k;
    }
    for (int i = 0; i < n; i++) end[i] = (int)s->seqs[i].len, start[i] = end[i] - (int)q;
    return 0;
}

// Score one rendered row: 1 if the model gets it right.
static int score_row(const CoreTask *t, Scorer *s, const CorePrompts *p, int gold, long long *tokens) {
    int n = p->n, T = 0;
    if (n > s->n_seq_cap) {
        s->seqs = xrealloc(s->seqs, (size_t)n * sizeof *s->seqs);
        memset(s->seqs + s->n_seq_cap, 0, (size_t)(n - s->n_seq_cap) * sizeof *s->seqs);
        s->n_seq_cap = n;
    }
    for (int i = 0; i < n; i++) {
        if (tokenize(s, p->pairs[i].full, &s->seqs[i]) != 0) return -1;
        if ((int)s->seqs[i].len > T) T = (int)s->seqs[i].len;
    }
    if (t->type == CORE_LM && tokenize(s, p->pairs[0].prefix, &s->prefix) != 0) return -1;
    int *start = xmalloc((size_t)n * sizeof *start), *end = xmalloc((size_t)n * sizeof *end);
    if (spans(t, s, n, start, end) != 0) { free(start); free(end); return -1; }
    if (T > s->m->cfg.seq_len) {  // cannot happen: tokens <= bytes + 1 (extend_for_task)
        free(start), free(end);
        return err_set("task %s: a prompt of %d tokens exceeds the extended context %d", t->label, T, s->m->cfg.seq_len);
    }
    int P = shared_prefix(s, n, start), S = T - P, M = 0;
    ensure_capacity(s, n, T);
    for (int i = 0; i < n; i++) {  // right-pad with <|bos|>; padding is never scored
        const IdVec *q = &s->seqs[i];
        for (int j = 0; j < S; j++) s->in[i * S + j] = P + j < (int)q->len ? (int32_t)q->data[P + j] : s->tok->bos_id;
        M += end[i] - start[i];
    }
    ensure_rows(s, M);
    M = 0;
    for (int i = 0; i < n; i++)
        for (int j = start[i] - 1; j < end[i] - 1; j++, M++) {
            s->rows[M] = i * S + (j - P);
            s->targets[M] = (int32_t)s->seqs[i].data[j + 1];
            s->owner[M] = i;
        }
    int32_t *prefix = xmalloc((size_t)(P ? P : 1) * sizeof *prefix);
    for (int j = 0; j < P; j++) prefix[j] = (int32_t)s->seqs[0].data[j];
    model_prefill(s->m, &s->rs, &s->kv, prefix, P);
    free(prefix);
    model_forward_hidden(s->m, &s->rs, &s->kv, s->in, n, S);
    model_logits_rows(s->m, &s->rs, s->rows, M, s->xbuf, s->logits);
    *tokens += P + (long long)n * S;
    int V = s->m->cfg.vocab_size, correct;
    if (t->type == CORE_LM) {  // greedy argmax must reproduce every continuation token
        correct = M > 0;
        for (int r = 0; r < M && correct; r++) {
            const float *z = s->logits + (size_t)r * V;
            int best = 0;
            for (int v = 1; v < V; v++)
                if (z[v] > z[best]) best = v;
            correct = best == s->targets[r];
        }
    } else {  // lowest mean continuation loss
        kernels()->softcap_ce(s->losses, NULL, s->logits, s->targets, M, V, s->m->cfg.softcap, 0.0f);
        double *sum = xcalloc((size_t)n, sizeof *sum);
        int *cnt = xcalloc((size_t)n, sizeof *cnt);
        for (int r = 0; r < M; r++) sum[s->owner[r]] += s->losses[r], cnt[s->owner[r]]++;
        int pred = 0;
        double best = INFINITY;
        for (int i = 0; i < n; i++) {
            double mean = cnt[i] ? sum[i] / cnt[i] : INFINITY;
            if (mean < best) best = mean, pred = i;
        }
        free(sum);
        free(cnt);
        correct = pred == gold;
    }
    free(start);
    free(end);
    return correct;
}

// The labels the shared data bundle does not ship, by its README (../shared/data/README.md:
// coqa "not available: report CORE over the 21 labels present and say so"). Anything else missing
// is a damaged or incomplete bundle.
static const char *const KNOWN_ABSENT[] = {"coqa", NULL};

int core_known_absent(const char *label) {
    for (int i = 0; KNOWN_ABSENT[i]; i++)
        if (!strcmp(KNOWN_ABSENT[i], label)) return 1;
    return 0;
}

static int wanted(const CoreConfig *c, const char *label) {
    if (!c->only) return 1;
    for (int i = 0; i < c->n_only; i++)
        if (!strcmp(c->only[i], label)) return 1;
    return 0;
}

// nanochat: Random(1337).shuffle(rows), then keep the first max_per_task.
static int shuffle_rows(CoreTask *t, int max_per_task) {
    size_t n = t->n_rows, keep = max_per_task > 0 && (size_t)max_per_task < n ? (size_t)max_per_task : n;
    int64_t *perm = xmalloc((n ? n : 1) * sizeof *perm);
    for (size_t i = 0; i < n; i++) perm[i] = (int64_t)i;
    PyRandom r;
    pyrandom_seed(&r, 1337);
    pyrandom_shuffle(&r, perm, n);
    size_t *p = xmalloc((keep ? keep : 1) * sizeof *p);
    for (size_t i = 0; i < keep; i++) p[i] = (size_t)perm[i];
    int rc = core_task_permute(t, p, keep);
    free(perm);
    free(p);
    return rc;
}

// Row idx of t rendered into s->prompts, with its few-shot examples:
// Random(1234 + idx).sample([i for i in range(n) if i != idx], k).
static int render_row(const CoreTask *t, size_t idx, Scorer *s) {
    size_t n = t->n_rows, k = (size_t)t->num_fewshot;
    if (k > 0) {
        GROW(s->avail, s->avail_cap, n);
        GROW(s->shots, s->shots_cap, k);
        s->fewshot = xrealloc(s->fewshot, k * sizeof *s->fewshot);
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (i != idx) s->avail[m++] = (int64_t)i;
        PyRandom pr;
        pyrandom_seed(&pr, 1234 + (uint64_t)idx);
        if (pyrandom_sample(&pr, s->avail, m, k, s->shots) != 0) return -1;
        for (size_t j = 0; j < k; j++) s->fewshot[j] = (size_t)s->shots[j];
    }
    return core_render(t, idx, s->fewshot, (int)k, &s->prompts);
}

// Prompts longer than the training context run with extended RoPE tables. The threads share the
// model, so its context is extended once per task, before any row runs, to a bound on every
// prompt of the rows [rank, n) step world: tokens <= bytes + 1 (<|bos|>), every token being at
// least one byte. Rendering the rows twice costs little next to running them.
static int extend_for_task(const CoreTask *t, Scorer *s, int rank, int world) {
    size_t longest = 0;
    for (size_t idx = (size_t)rank; idx < t->n_rows; idx += (size_t)world) {
        if (render_row(t, idx, s) != 0) return -1;
        for (int i = 0; i < s->prompts.n; i++) {
            size_t len = strlen(s->prompts.pairs[i].full);
            if (len > longest) longest = len;
        }
    }
    if (longest >= (1u << 24)) return err_set("task %s: a prompt of %zu bytes is too long to score", t->label, longest);
    model_extend_context(s->m, (int)longest + 1);
    return 0;
}

// Rows are shared out between the ranks (rank r scores rows r, r+W, ...) and then between the
// threads: each thread scores whole rows with its own Scorer, and the kernels run single-threaded
// inside (nested parallel regions are inactive). A row is computed the same way whichever thread
// takes it, so the counts do not depend on the thread count; they are summed below.
static int score_task(CoreTask *t, Scorer *sc, int nt, const CoreConfig *cfg, CoreTaskResult *r) {
    double t0 = now_seconds();
    if (shuffle_rows(t, cfg->max_per_task) != 0) return -1;
    size_t n = t->n_rows;
    int k = t->num_fewshot;
    if (k > 0 && n <= (size_t)k)
        return err_set("task %s: %zu rows, too few for %d few-shot examples", t->label, n, k);
    const int rank = dist_rank(), world = dist_world();
    if (extend_for_task(t, &sc[0], rank, world) != 0) return err_prefix("CORE task %s", t->label);
    long long mine = n > (size_t)rank ? (long long)((n - (size_t)rank + (size_t)world - 1) / (size_t)world) : 0;
    long long correct = 0, rows = 0, tokens = 0;
    atomic_int failed = 0;
    atomic_llong done = 0, done_correct = 0;
    char why[1024] = "";
    int show = !cfg->quiet && isatty(2);
#pragma omp parallel num_threads(nt) reduction(+ : correct, rows, tokens)
    {
        Scorer *s = &sc[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
        for (long long i = 0; i < mine; i++) {
            if (atomic_load(&failed)) continue;
            size_t idx = (size_t)rank + (size_t)i * (size_t)world;
            int ok = render_row(t, idx, s) == 0 ? score_row(t, s, &s->prompts, t->rows[idx].gold, &tokens) : -1;
            if (ok < 0) {  // err_msg() is per thread: keep the first failure's for the caller
                if (!atomic_exchange(&failed, 1)) snprintf(why, sizeof why, "%s", err_msg());
                continue;
            }
            correct += ok;
            rows++;
            long long d = atomic_fetch_add(&done, 1) + 1, c = atomic_fetch_add(&done_correct, ok) + ok;
            if (show && omp_get_thread_num() == 0 && (d % 16 == 0 || d == mine))
                fprintf(stderr, "\r\033[Kcore: %-34s %6lld/%lld  acc %.3f", t->label, d, mine, (double)c / d);
        }
    }
    if (failed) return err_set("CORE task %s: %s", t->label, why);
    int64_t counts[3] = {correct, rows, tokens};
    dist_allreduce_sum_i64(counts, 3);
    r->correct = (int)counts[0], r->rows = (int)counts[1], r->tokens = counts[2];
    r->accuracy = r->rows ? (double)r->correct / r->rows : 0;
    r->centered = (r->accuracy - r->baseline) / (1.0 - r->baseline);
    r->seconds = now_seconds() - t0;
    if (!cfg->quiet) {
        if (isatty(2)) fprintf(stderr, "\r\033[K");
        fprintf(stderr, "core: %-34s acc %.4f  centered %+.4f  (%d rows, %.1fs)\n", t->label, r->accuracy,
                r->centered, r->rows, r->seconds);
    }
    return 0;
}

// Append to a fixed buffer, truncating quietly once it is full.
__attribute__((format(printf, 4, 5))) static void list_add(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
    if (*used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (k > 0) *used = *used + (size_t)k < cap ? *used + (size_t)k : cap - 1;
}

// Before anything runs: every --tasks label exists, and every selected task without data is
// known absent (or allowed missing). Errors list all offenders at once.
static int check_selection(const CoreSuite *suite, const CoreConfig *cfg) {
    char list[2048] = "";
    size_t used = 0;
    int bad = 0;
    for (int i = 0; cfg->only && i < cfg->n_only; i++)
        if (!core_find(suite, cfg->only[i])) list_add(list, sizeof list, &used, "%s'%s'", bad++ ? ", " : "", cfg->only[i]);
    if (bad)
        return err_usage("--tasks: %s %s not in %s/core.yaml (labels are e.g. hellaswag_zeroshot, copa, jeopardy)", list,
                         bad > 1 ? "are" : "is", suite->dir);
    for (int i = 0; i < suite->n_tasks; i++) {
        const CoreTask *t = &suite->tasks[i];
        if (!wanted(cfg, t->label) || t->available || core_known_absent(t->label)) continue;
        list_add(list, sizeof list, &used, "%s%s (%s)", bad++ ? ", " : "", t->label, t->path);
    }
    if (bad && !cfg->allow_missing)
        return err_usage("CORE task data missing: %s; a CORE over fewer tasks does not compare with a full one: restore "
                         "the file%s (or give --core-dir a complete bundle), or pass --allow-missing-tasks to score the "
                         "rest with the missing tasks listed in the result", list, bad > 1 ? "s" : "");
    return 0;
}

int core_evaluate(Model *m, const Tokenizer *tok, CoreSuite *suite, const CoreConfig *cfg, CoreResult *res) {
    memset(res, 0, sizeof *res);
    res->n_total = suite->n_tasks;
    if (check_selection(suite, cfg) != 0) return -1;
    int n_with_data = 0;
    for (int i = 0; i < suite->n_tasks; i++) n_with_data += wanted(cfg, suite->tasks[i].label) && suite->tasks[i].available;
    if (n_with_data == 0)
        return err_usage("CORE: none of the %s selected has data in %s: nothing to score",
                         cfg->only ? "tasks" : "tasks of core.yaml", suite->dir);
    double t0 = now_seconds();
    // Every thread takes whole rows (score_task). A row's prompts are a few hundred tokens;
    // split between threads, every op ended in a barrier, and 2 threads on one row were slower
    // than 2 rows at once: cpu preset 1.2x (fp32) and 1.5-2x (bf16), kit-d10 1.45x (fp32) and
    // 1.15-1.27x (bf16). Each thread keeps a forward-only state (runstate_build_forward).
    int nt = omp_get_max_threads(), levels = omp_get_max_active_levels();
    Scorer *sc = xcalloc((size_t)nt, sizeof *sc);
    for (int i = 0; i < nt; i++) sc[i] = (Scorer){.m = m, .tok = tok, .enc = encoder_new(tok)};
    if (nt > 1) omp_set_max_active_levels(1);  // the kernels inside a row run on its thread alone
    model_pin_weights(m, 0);  // read-only here; short prompts would otherwise repack them per product
    res->tasks = xcalloc((size_t)(suite->n_tasks ? suite->n_tasks : 1), sizeof *res->tasks);
    int rc = 0;
    double sum = 0;
    for (int i = 0; i < suite->n_tasks && rc == 0; i++) {
        CoreTask *t = &suite->tasks[i];
        if (!wanted(cfg, t->label)) continue;
        CoreTaskResult *r = &res->tasks[res->n++];
        snprintf(r->label, sizeof r->label, "%s", t->label);
        snprintf(r->type, sizeof r->type, "%s", core_type_name(t->type));
        r->available = t->available;
        r->known_absent = !t->available && core_known_absent(t->label);
        snprintf(r->path, sizeof r->path, "%s", t->path ? t->path : "");
        r->baseline = t->baseline;
        if (!t->available) {
            res->n_missing++;
            continue;
        }
        if ((rc = score_task(t, sc, nt, cfg, r)) != 0) break;
        sum += r->centered;
        res->n_scored++;
        res->tokens += r->tokens;
    }
    res->core = res->n_scored ? sum / res->n_scored : 0;
    res->seconds = now_seconds() - t0;
    model_unpin_weights();
    if (nt > 1) omp_set_max_active_levels(levels);
    for (int i = 0; i < nt; i++) scorer_free(&sc[i]);
    free(sc);
    return rc;
}

void core_result_free(CoreResult *r) {
    free(r->tasks);
    memset(r, 0, sizeof *r);
}
