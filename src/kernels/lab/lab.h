// kernels/lab/lab.h — the kernel lab: check kernel tables against the reference, benchmark them.
//
// Checking (`frontier kernels check`): for one op of a table, a grid of shapes — M=1, N=1,
// extents that are not multiples of any vector or block size, grouped-query attention, small
// and model-sized — each run with every thread count of the options, and:
//   - inputs sit at the very end of a mapping followed by an inaccessible page and are made
//     read-only, so reading past them or writing into them faults (reported, then exit 1);
//   - outputs are pre-filled with NaN (or with the values an accumulating op adds to) and are
//     surrounded by canary bytes checked after every call;
//   - the result is compared with an oracle: matmuls with a float64 product, error measured
//     relative to sum_k |a_ik||b_kj| (+|c| when accumulating); other ops with the ref kernel,
//     error |y - y_ref| / (|y_ref| + rms(y_ref)) per element;
//   - the outputs of every thread count must be bitwise identical.
// Benchmarking (`frontier kernels bench`): every op on the shapes a model preset runs.
#pragma once
#include <stdio.h>

#include "kernels/kernels.h"
#include "kernels/cpu/peak.h"

typedef struct {
    int quick;            // the small grid (well under a second per op)
    const int *threads;   // OpenMP thread counts compared for invariance; NULL = {1, 2, 3} ({1, 2} quick)
    int n_threads;
    double tol;           // error tolerance; 0 = the op's default (lab_default_tol)
    int bf16_operands;    // a bf16 matmul table: the oracle rounds both operands to bf16 first, so
                          // only the fp32 accumulation is judged (at the fp32 matmuls' tolerance)
} LabCheckOpts;

typedef struct {
    double max_err;       // worst error over the grid and the op's outputs (an output judged at a
                          // tolerance of its own, e.g. bf16 attention's 4e-3, counts in units of
                          // the op's tol: max_err <= tol is pass either way)
    double tol;           // the tolerance applied
    int cases, failures;  // shape cases run, cases failed (error, NaN, canary, thread invariance)
    char first_failure[448];  // "" if none
} LabOpResult;

// Default tolerance of op's error metric: 1e-5 (matmuls relative to sum |a||b|), except the
// ops whose fast versions legitimately reorder long sums or use polynomial exp/tanh (see lab.c).
double lab_default_tol(int op);

// Check op `op` (index in KERNEL_OP_NAMES) of table k. Returns 0 if every case passed.
int lab_check_op(const Kernels *k, int op, const LabCheckOpts *o, LabOpResult *res);

// The check line of one op: "  matmul_nt      avx512   max err 2.1e-07  tol 1e-05  26 cases  PASS".
void lab_print_result(FILE *f, const char *op, const char *variant, const LabOpResult *r);

// The model shape whose products and row ops are timed (the caller takes it from a preset).
typedef struct {
    int n_embd, mlp_ratio;       // C; MLP hidden = mlp_ratio * C
    int n_head, n_kv_head, head_dim;
    int seq_len, vocab_size;     // T, V
    int window;                  // keys an S layer of --window-pattern attends to (0: none timed)
} LabShape;

typedef struct {
    const char *preset;   // the name of the shape, for the table's title
    LabShape shape;
    int rows;             // tokens per step (B*T); 0 = 4096 (at least one sequence)
    const char *op;       // only this op (NULL: all)
    double seconds;       // target time per (shape, variant); 0 = 0.3 s
    int bf16;             // also the AVX512_BF16 matmuls (when the CPU has them)
    int amx;              // also AMX's bf16 GEMMs (when the CPU has AMX), against the AMX peak
    int cold;             // evict the caches before every timed call (operands come from memory, as in training)
    const MachinePeak *peak;  // for the % of peak columns (NULL: not shown)
} LabBenchOpts;

// Benchmark each op on the preset's shapes with each of the n tables (labels: their variant
// names); identical functions are timed once. Prints a markdown table to f. 0, or -1 + err.
int lab_bench(const Kernels *const *tables, const char *const *labels, int n, const LabBenchOpts *o, FILE *f);
