// bench/bench_collectives.c — the training step's two collectives (src/dist/dist.c) and the
// alternatives, at the flat gradient buffer's size of the cpu preset and of kit-d10 (the figures
// in docs/distributed.md and in dist.c's comments).
//
//   mpirun -np 2 build/release/bench/bench_collectives [FLOATS ...]
//
// Per size (default 2,494,464 and 59,637,760 floats, split in equal slices), rank 0 prints the
// median of 5 timed calls after 2 warm-ups, each call started together (barrier), for:
//   ring reduce-scatter                        dist_reduce_scatter_sum_f32 (training's)
//   MPI_Reduce_scatter, fresh receive buffer   what dist.c did before (malloc and free per call)
//   MPI_Reduce_scatter, kept receive buffer
//   MPI_Allgatherv in place                    dist_allgather_f32 (training's)
//   MPI_Sendrecv of one slice                  the transport alone
// Open MPI's message-sized temporaries are faulted in on every call when glibc maps them afresh;
// adding `-x MALLOC_MMAP_THRESHOLD_=4294967296 -x MALLOC_TRIM_THRESHOLD_=8589934592` to mpirun
// (with both variables exported) shows the same collectives with glibc keeping freed memory.
#include <stdio.h>
#include <stdlib.h>

#include "dist/dist.h"

#ifndef FRONTIER_MPI
int main(void) {
    fprintf(stderr, "bench_collectives: built without MPI (install libopenmpi-dev and rebuild)\n");
    return 2;
}
#else
#include <mpi.h>

enum { WARMUP = 2, TIMED = 5 };

typedef struct {
    float *buf, *recv;  // (n) the flat buffer; (largest slice) a kept receive buffer
    size_t *bounds;     // (world + 1) equal slices
    int *counts;        // (world)
} Bufs;

typedef void (*Op)(Bufs *b);

static void ring_rs(Bufs *b) { dist_reduce_scatter_sum_f32(b->buf, b->bounds); }

static void mpi_rs_fresh(Bufs *b) {
    float *recv = malloc((size_t)b->counts[dist_rank()] * sizeof *recv);
    MPI_Reduce_scatter(b->buf, recv, b->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    free(recv);
}

static void mpi_rs_kept(Bufs *b) {
    MPI_Reduce_scatter(b->buf, b->recv, b->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void all_gather(Bufs *b) { dist_allgather_f32(b->buf, b->bounds); }

static void sendrecv(Bufs *b) {
    int w = dist_world(), me = dist_rank(), next = (me + 1) % w, prev = (me + w - 1) % w;
    MPI_Sendrecv(b->buf + b->bounds[me], b->counts[me], MPI_FLOAT, next, 3, b->recv, b->counts[prev], MPI_FLOAT, prev,
                 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// Median over TIMED calls of the slowest rank's time (each call starts at a barrier).
static double time_op(Op op, Bufs *b) {
    double t[TIMED];
    for (int i = 0; i < WARMUP + TIMED; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        op(b);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= WARMUP) t[i - WARMUP] = dt;
    }
    qsort(t, TIMED, sizeof *t, cmp_double);
    return t[TIMED / 2];
}

static void bench_size(size_t n) {
    int w = dist_world();
    Bufs b = {.buf = malloc(n * sizeof(float)), .bounds = malloc((size_t)(w + 1) * sizeof(size_t)),
              .counts = malloc((size_t)w * sizeof(int))};
    for (int r = 0; r <= w; r++) b.bounds[r] = n * (size_t)r / (size_t)w;
    for (int r = 0; r < w; r++) b.counts[r] = (int)(b.bounds[r + 1] - b.bounds[r]);
    b.recv = malloc((size_t)b.counts[0] * sizeof(float) + sizeof(float));  // slice 0 is the largest or equal
    for (size_t i = 0; i < n; i++) b.buf[i] = 1.0f;
    static const struct { const char *name; Op op; } ops[] = {
        {"ring reduce-scatter (dist.c)", ring_rs},
        {"MPI_Reduce_scatter, fresh receive buffer", mpi_rs_fresh},
        {"MPI_Reduce_scatter, kept receive buffer", mpi_rs_kept},
        {"MPI_Allgatherv in place (dist.c)", all_gather},
        {"MPI_Sendrecv of one slice", sendrecv},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        double s = time_op(ops[i].op, &b);
        if (dist_rank() == 0)
            printf("%zu floats (%.1f MB), %d ranks: %-42s %9.2f ms\n", n, 4e-6 * (double)n, w, ops[i].name, 1e3 * s);
    }
    free(b.buf), free(b.recv), free(b.bounds), free(b.counts);
}

int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    if (dist_world() < 2) {
        fprintf(stderr, "usage: mpirun -np 2 bench_collectives [FLOATS ...] (needs at least 2 ranks)\n");
        return dist_exit(2);
    }
    if (argc > 1)
        for (int i = 1; i < argc; i++) bench_size((size_t)strtoull(argv[i], NULL, 10));
    else {
        bench_size(2494464);   // the cpu preset's flat buffer (parameters + alignment)
        bench_size(59637760);  // kit-d10's
    }
    return dist_exit(0);
}
#endif
