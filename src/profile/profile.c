// profile/profile.c — spans, trace writer, per-op summary (see profile.h).
#include "profile/profile.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "util/csv.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/timer.h"

int prof_on;

typedef struct {
    const char *name, *cat;
    int index;          // layer index or -1
    double t0, t1;      // seconds
    double child_s;     // time in nested spans
    double flops, bytes;
    int depth;
    int team;           // threads of the OpenMP team the span ran in (1 outside parallel regions)
    int shape[3];       // prof_shape's dims; all 0 when not given
} Span;

typedef struct ThreadBuf {
    int tid;
    Span *spans;        // finished spans, in end order
    size_t n, cap;
    int stack[64];      // indices into open[] of the open spans
    Span open[64];
    int depth;
    struct ThreadBuf *next;
} ThreadBuf;

typedef struct {
    const char *name;
    double t, value;
} Counter;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static ThreadBuf *g_threads;
static int g_next_tid = 1;
static _Thread_local ThreadBuf *t_buf;
static Counter *g_counters;
static size_t g_nc, g_cc;
static double g_t_origin;

void prof_enable(int on) {
    if (on && !g_t_origin) g_t_origin = now_seconds();
    prof_on = on;
}

void prof_reset(void) {
    pthread_mutex_lock(&g_lock);
    for (ThreadBuf *b = g_threads; b; b = b->next) b->n = 0, b->depth = 0;
    g_nc = 0;
    pthread_mutex_unlock(&g_lock);
}

static ThreadBuf *thread_buf(void) {
    if (t_buf) return t_buf;
    ThreadBuf *b = xcalloc(1, sizeof *b);
    pthread_mutex_lock(&g_lock);
    b->tid = g_next_tid++;
    b->next = g_threads;
    g_threads = b;
    pthread_mutex_unlock(&g_lock);
    return t_buf = b;
}

void prof_begin_slow(const char *name, const char *cat, int index) {
    ThreadBuf *b = thread_buf();
    if (b->depth >= 64) return;
    Span *s = &b->open[b->depth++];
    *s = (Span){.name = name, .cat = cat, .index = index, .t0 = now_seconds(), .depth = b->depth - 1,
                .team = omp_in_parallel() ? omp_get_num_threads() : 1};
}

// The profiler's own page faults. Its span buffers grow while it records, and the first touch
// of each new page is a fault that train.c would count as the step's: on kit-d10 that was ~34 a
// step, enough to trip page_faults_per_step's "something allocates every step" flag. So growth
// touches the new capacity at once, between two reads of this thread's fault counter, and
// prof_own_faults() gives train.c the sum to take off.
static long g_own_faults;

static long thread_faults(void) {
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

static void grow_spans(ThreadBuf *b) {
    long f0 = thread_faults();
    size_t old = b->cap;
    GROW(b->spans, b->cap, b->n + 1);
    memset(b->spans + old, 0, (b->cap - old) * sizeof *b->spans);
    __atomic_add_fetch(&g_own_faults, thread_faults() - f0, __ATOMIC_RELAXED);
}

long prof_own_faults(void) { return __atomic_load_n(&g_own_faults, __ATOMIC_RELAXED); }

void prof_end_slow(double flops, double bytes) {
    ThreadBuf *b = thread_buf();
    if (b->depth == 0) return;
    Span s = b->open[--b->depth];
    s.t1 = now_seconds();
    s.flops = flops;
    s.bytes = bytes;
    if (b->depth > 0) b->open[b->depth - 1].child_s += s.t1 - s.t0;
    if (b->n == b->cap) grow_spans(b);
    b->spans[b->n++] = s;
}

void prof_shape_slow(int d0, int d1, int d2) {
    ThreadBuf *b = thread_buf();
    if (b->depth == 0) return;
    int *d = b->open[b->depth - 1].shape;
    d[0] = d0, d[1] = d1, d[2] = d2;
}

// "AxBxC" (the dims given; trailing zeros left out)
static void shape_str(const int d[3], char *out, size_t cap) {
    int n = d[2] ? 3 : d[1] ? 2 : d[0] ? 1 : 0;
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; i < n && at < cap; i++) at += (size_t)snprintf(out + at, cap - at, "%s%d", i ? "x" : "", d[i]);
}

void prof_counter(const char *name, double value) {
    if (!prof_on) return;
    pthread_mutex_lock(&g_lock);
    GROW(g_counters, g_cc, g_nc + 1);
    g_counters[g_nc++] = (Counter){name, now_seconds(), value};
    pthread_mutex_unlock(&g_lock);
}

// ---------------------------------------------------------------------------------------------
// Chrome / Perfetto trace-event JSON
// ---------------------------------------------------------------------------------------------

#define DATA_LANE 1000  // "data" spans are drawn on a lane of their own

int prof_write_trace(const char *path) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return -1;
    FILE *f = af.f;
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fprintf(f, "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"frontier train\"}}");
    fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"data (loading, packing)\"}}",
            DATA_LANE);
    for (ThreadBuf *b = g_threads; b; b = b->next) {
        fprintf(f, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"thread %d%s\"}}",
                b->tid, b->tid, b->tid == 1 ? " (main; ops fork-join over all OpenMP threads)" : "");
        for (size_t i = 0; i < b->n; i++) {
            const Span *s = &b->spans[i];
            int tid = !strcmp(s->cat, "data") ? DATA_LANE : b->tid;
            double dur = s->t1 - s->t0;
            fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"name\":\"%s\",\"cat\":\"%s\",\"ts\":%.3f,\"dur\":%.3f,\"args\":{",
                    tid, s->name, s->cat, (s->t0 - g_t_origin) * 1e6, dur * 1e6);
            int comma = 0;
            if (s->index >= 0) fprintf(f, "\"index\":%d", s->index), comma = 1;
            if (s->shape[0]) {
                char sh[40];
                shape_str(s->shape, sh, sizeof sh);
                fprintf(f, "%s\"shape\":\"%s\"", comma ? "," : "", sh), comma = 1;
            }
            if (s->flops > 0 || s->bytes > 0)
                fprintf(f, "%s\"gflop\":%.6g,\"gbyte\":%.6g,\"gflops_per_s\":%.4g", comma ? "," : "", s->flops / 1e9,
                        s->bytes / 1e9, dur > 0 ? s->flops / dur / 1e9 : 0.0);
            fprintf(f, "}}");
        }
    }
    for (size_t i = 0; i < g_nc; i++)
        fprintf(f, ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"%s\",\"ts\":%.3f,\"args\":{\"%s\":%.6g}}", g_counters[i].name,
                (g_counters[i].t - g_t_origin) * 1e6, g_counters[i].name, g_counters[i].value);
    fprintf(f, "\n]}\n");
    return atomic_commit(&af);
}

// ---------------------------------------------------------------------------------------------
// Per-op summary: self times of op and data spans inside steps
//
// An op called inside a parallel region runs side by side with the same op on the team's other
// threads (Muon's matrices, one per thread): its span counts 1/team of its time, its wall-clock
// share, so that the table adds up to the step (kit-d10's optimizer otherwise made it 123%) and
// its GFLOP/s is the team's aggregate rate, comparable with the all-thread peak.
// ---------------------------------------------------------------------------------------------

static ProfOpStat *find_or_add_in(ProfOpStat **list, int *n, const char *name, const char *shape) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i].name, name) && !strcmp((*list)[i].shape, shape)) return &(*list)[i];
    *list = xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
    ProfOpStat *o = &(*list)[(*n)++];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    snprintf(o->shape, sizeof o->shape, "%s", shape);
    return o;
}

static ProfOpStat *find_or_add(ProfSummary *s, const char *name) { return find_or_add_in(&s->ops, &s->n_ops, name, ""); }

static void add_to(ProfOpStat *o, double share, const Span *sp) {
    o->calls++;
    o->total_s += share;
    o->flops += sp->flops;
    o->bytes += sp->bytes;
}

static int by_time(const void *a, const void *b) {
    double x = ((const ProfOpStat *)a)->total_s, y = ((const ProfOpStat *)b)->total_s;
    return x < y ? 1 : x > y ? -1 : 0;
}

// The spans directly inside a step (depth 1 on the training thread: phases, the loader, MPI's
// collectives) summed by name: where the step goes, including the optimizer's products, which
// the op rows merge with the model's.
static void add_phase(ProfSummary *s, const char *name, double dur) {
    int i = 0;
    while (i < s->n_phases && strcmp(s->phases[i].name, name)) i++;
    if (i == s->n_phases) {
        if (i == (int)(sizeof s->phases / sizeof *s->phases)) return;
        snprintf(s->phases[i].name, sizeof s->phases[i].name, "%s", name);
        s->n_phases++;
    }
    s->phases[i].total_s += dur;
}

void prof_summarize(ProfSummary *s) {
    memset(s, 0, sizeof *s);
    for (ThreadBuf *b = g_threads; b; b = b->next) {
        int steps_here = 0;  // the training thread's lane (worker threads' spans start at depth 0)
        for (size_t i = 0; i < b->n && !steps_here; i++) steps_here = !strcmp(b->spans[i].cat, "step");
        for (size_t i = 0; i < b->n; i++) {
            const Span *sp = &b->spans[i];
            double dur = sp->t1 - sp->t0, self = dur - sp->child_s;
            if (steps_here && sp->depth == 1) add_phase(s, sp->name, dur);
            if (!strcmp(sp->cat, "step")) {
                s->step_s += dur;
                s->steps++;
                // time in the step that no phase/op accounts for
                ProfOpStat *o = find_or_add(s, "(step, unattributed)");
                o->calls++;
                o->total_s += self;
            } else if (!strcmp(sp->cat, "op") || !strcmp(sp->cat, "data")) {
                double share = self / (sp->team > 1 ? sp->team : 1);
                add_to(find_or_add(s, sp->name), share, sp);
                if (sp->shape[0]) {
                    char sh[40];
                    shape_str(sp->shape, sh, sizeof sh);
                    add_to(find_or_add_in(&s->shapes, &s->n_shapes, sp->name, sh), share, sp);
                }
                // The coverage is the training thread's timeline: its own op spans at their whole
                // self time (the phase around a parallel region holds its wait for the other
                // threads), never the shares, which drift apart under load when a team's threads
                // are delayed unevenly. (Worker threads' spans add nothing to it.)
                if (steps_here) s->covered_s += self;
            } else if (!strcmp(sp->cat, "phase") || !strcmp(sp->cat, "layer")) {
                if (!strcmp(sp->cat, "layer") && sp->index >= 0 && sp->index < 64) {
                    s->layer_s[sp->index] += dur;
                    if (sp->index + 1 > s->n_layers) s->n_layers = sp->index + 1;
                }
                if (self > 0) {  // e.g. the optimizer's elementwise work between its matmuls
                    char nm[48];
                    snprintf(nm, sizeof nm, "%s (other)", sp->name);
                    ProfOpStat *o = find_or_add(s, nm);
                    o->calls++;
                    o->total_s += self;
                    s->covered_s += self;
                }
            }
        }
    }
    qsort(s->ops, (size_t)s->n_ops, sizeof *s->ops, by_time);
    if (s->n_shapes) qsort(s->shapes, (size_t)s->n_shapes, sizeof *s->shapes, by_time);
}

void prof_summary_free(ProfSummary *s) {
    free(s->ops);
    free(s->shapes);
    memset(s, 0, sizeof *s);
}

static void op_rates(const ProfOpStat *o, double peak_flops, double peak_bw, double *gflops, double *gbps,
                     double *ai, double *pct_roof) {
    *gflops = o->total_s > 0 ? o->flops / o->total_s / 1e9 : 0;
    *gbps = o->total_s > 0 ? o->bytes / o->total_s / 1e9 : 0;
    *ai = o->bytes > 0 ? o->flops / o->bytes : 0;
    double roof = *ai * peak_bw < peak_flops ? *ai * peak_bw : peak_flops;  // FLOP/s attainable
    *pct_roof = roof > 0 && o->flops > 0 ? 100.0 * *gflops * 1e9 / roof : 0;
}

// rows of `list`, with the op's shape as a second column when `shapes`
static int write_stats_csv(const ProfSummary *s, const ProfOpStat *list, int n, int shapes, const char *path,
                           double peak_flops, double peak_bw) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return -1;
    fprintf(af.f, "op,%scalls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline\n",
            shapes ? "shape," : "");
    // Names are quoted where RFC 4180 needs it: "(step, unattributed)" holds a comma.
    for (int i = 0; i < n; i++) {
        const ProfOpStat *o = &list[i];
        double g, b, ai, pr;
        op_rates(o, peak_flops, peak_bw, &g, &b, &ai, &pr);
        csv_put_field(af.f, o->name);
        if (shapes) fputc(',', af.f), csv_put_field(af.f, o->shape);
        fprintf(af.f, ",%ld,%.3f,%.2f,%.6g,%.6g,%.4g,%.4g,%.4g,%.2f\n", o->calls, o->total_s * 1e3,
                s->step_s > 0 ? 100 * o->total_s / s->step_s : 0, o->flops / 1e9, o->bytes / 1e9, g, b, ai, pr);
    }
    if (ferror(af.f)) {
        err_errno("cannot write %s", path);
        atomic_abort(&af);
        return -1;
    }
    return atomic_commit(&af);
}

int prof_write_csv(const ProfSummary *s, const char *path, double peak_flops, double peak_bw) {
    return write_stats_csv(s, s->ops, s->n_ops, 0, path, peak_flops, peak_bw);
}

int prof_write_shapes_csv(const ProfSummary *s, const char *path, double peak_flops, double peak_bw) {
    return write_stats_csv(s, s->shapes, s->n_shapes, 1, path, peak_flops, peak_bw);
}

// One table row: name (and shape) then calls, time, share of the step and the rates.
static void print_header(const char *first, int width) {
    printf("\n%-*s %7s %10s %7s %9s %8s %8s %8s\n", width, first, "calls", "total ms", "% step", "GFLOP/s", "GB/s",
           "FLOP/B", "% roof");
}

static void print_row(const ProfSummary *s, const ProfOpStat *o, const char *label, int width, double peak_flops,
                      double peak_bw) {
    double g, b, ai, pr;
    op_rates(o, peak_flops, peak_bw, &g, &b, &ai, &pr);
    printf("%-*s %7ld %10.1f %6.1f%% %9.1f %8.1f %8.2f %7.1f%%\n", width, label, o->calls, o->total_s * 1e3,
           s->step_s > 0 ? 100 * o->total_s / s->step_s : 0, g, b, ai, pr);
}

void prof_print_table(const ProfSummary *s, double peak_flops, double peak_bw, int top_shapes) {
    print_header("op (self time)", 28);
    for (int i = 0; i < s->n_ops; i++) print_row(s, &s->ops[i], s->ops[i].name, 28, peak_flops, peak_bw);
    printf("ops and data cover %.1f%% of %d steps (%.1f ms/step)\n", s->step_s > 0 ? 100 * s->covered_s / s->step_s : 0,
           s->steps, s->steps ? 1e3 * s->step_s / s->steps : 0);
    if (s->n_phases) {
        printf("time per phase:");
        for (int i = 0; i < s->n_phases; i++)
            printf("%s %s %.1f ms (%.1f%%)", i ? "," : "", s->phases[i].name,
                   1e3 * s->phases[i].total_s / (s->steps ? s->steps : 1),
                   s->step_s > 0 ? 100 * s->phases[i].total_s / s->step_s : 0);
        printf(" per step\n");
    }
    if (s->n_layers) {
        printf("time per layer (forward + backward):");
        for (int l = 0; l < s->n_layers; l++) printf(" L%d %.1f ms", l, 1e3 * s->layer_s[l] / (s->steps ? s->steps : 1));
        printf(" per step\n");
    }
    if (top_shapes > 0 && s->n_shapes) {
        print_header("costliest shapes (self time)", 38);
        for (int i = 0; i < s->n_shapes && i < top_shapes; i++) {
            char label[96];
            snprintf(label, sizeof label, "%s %s", s->shapes[i].name, s->shapes[i].shape);
            print_row(s, &s->shapes[i], label, 38, peak_flops, peak_bw);
        }
    }
}
