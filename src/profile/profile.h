// profile/profile.h — a timer-based profiler: nested spans on per-thread buffers, written as a
// Chrome/Perfetto trace and summarised per op with analytic FLOPs and bytes.
//
// This machine has no hardware counters under its hypervisor, so every span carries the FLOPs
// and bytes its op must do (formulas in prof_op_cost) and rates follow from wall time. When off,
// prof_begin/prof_end are one predictable branch on a global flag.
//
// Categories: "step", "phase" (forward / backward / optimizer), "layer", "op" (a kernel call),
// "data" (loading and packing: drawn on a lane of its own).
#pragma once
#include <stddef.h>

extern int prof_on;  // read by the inline fast path; set with prof_enable

void prof_enable(int on);
void prof_reset(void);  // drop everything recorded

void prof_begin_slow(const char *name, const char *cat, int index);
void prof_end_slow(double flops, double bytes);
static inline void prof_begin(const char *name, const char *cat, int index) {
    if (prof_on) prof_begin_slow(name, cat, index);
}
static inline void prof_end(double flops, double bytes) {
    if (prof_on) prof_end_slow(flops, bytes);
}
// The shape of this thread's innermost open span, between its prof_begin and prof_end (a GEMM's
// M, N, K; the ops' own dims elsewhere; 0 for an unused one): shown in the trace's args as
// "AxBxC", and the summary sums op spans per (op, shape) too.
void prof_shape_slow(int d0, int d1, int d2);
static inline void prof_shape(int d0, int d1, int d2) {
    if (prof_on) prof_shape_slow(d0, d1, d2);
}
// Page faults the profiler itself has taken growing its span buffers (all threads, since start):
// recording allocates as it goes, and train.c takes these off the step's page-fault count.
long prof_own_faults(void);
// A counter track sample (e.g. "tok/s").
void prof_counter(const char *name, double value);

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

typedef struct {
    char name[48];
    char shape[40];   // "AxBxC" in ProfSummary.shapes, "" in ops
    long calls;
    double total_s;   // self time (children excluded)
    double flops, bytes;
} ProfOpStat;

typedef struct {
    ProfOpStat *ops;  // (n_ops) sorted by total time, descending
    int n_ops;
    ProfOpStat *shapes;  // (n_shapes) op spans with a shape, per (op, shape), sorted the same way
    int n_shapes;
    double step_s;    // total time of all "step" spans
    double covered_s; // the training thread's step time that op/data spans and phases' own work account
                      // for: step_s minus the time between phases (exact, however the threads of a
                      // parallel region were delayed against each other)
    int steps;
    double layer_s[64];  // per layer index, forward + backward
    int n_layers;
    struct {
        char name[32];
        double total_s;  // wall time of this name's spans directly inside a step
    } phases[16];        // in order of first appearance: forward, head, backward, optimizer, loader, ...
    int n_phases;
} ProfSummary;

int prof_write_trace(const char *path);  // Chrome trace-event JSON; atomic
void prof_summarize(ProfSummary *s);
void prof_summary_free(ProfSummary *s);
// profile.csv: op,calls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline
int prof_write_csv(const ProfSummary *s, const char *path, double peak_flops, double peak_bw);
// profile_shapes.csv: op,shape, then the same columns, one row per (op, shape)
int prof_write_shapes_csv(const ProfSummary *s, const char *path, double peak_flops, double peak_bw);
// The per-op table, coverage, phases and layers, then the costliest `top_shapes` (op, shape) rows.
void prof_print_table(const ProfSummary *s, double peak_flops, double peak_bw, int top_shapes);
