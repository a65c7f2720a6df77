// dist/dist.c — MPI when built with it and launched by mpirun; one process otherwise (see dist.h).
#include "dist/dist.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

static int g_rank = 0, g_world = 1;

int dist_rank(void) { return g_rank; }
int dist_world(void) { return g_world; }
int dist_active(void) { return g_world > 1; }

// ---------------------------------------------------------------------------------------------
// Work split (the same with or without MPI)
// ---------------------------------------------------------------------------------------------

void dist_partition(const double *cost, int n, int world, int *first) {
    double total = 0;
    for (int i = 0; i < n; i++) total += cost[i];
    // Group r ends at the first item whose prefix cost reaches total·(r+1)/world, rounding to
    // whichever side of that item leaves the smaller imbalance.
    first[0] = 0;
    double prefix = 0;
    int i = 0;
    for (int r = 1; r < world; r++) {
        double target = total * r / world;
        while (i < n && prefix + cost[i] <= target) prefix += cost[i++];
        if (i < n && (prefix + cost[i] - target) < (target - prefix)) prefix += cost[i++];
        first[r] = i;
    }
    first[world] = n;
}

#ifdef FRONTIER_MPI
// =============================================================================================
// MPI
// =============================================================================================
#include <mpi.h>

static int g_mpi_on;
static float *g_ring_tmp;  // (largest slice) floats: the slice being received in the reduce ring
static size_t g_ring_tmp_n;

static int launched_by_mpi(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK") ||
           getenv("MPI_LOCALNRANKS");
}

void dist_init(int *argc, char ***argv) {
    if (!launched_by_mpi()) return;
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);  // only the main thread calls MPI
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_world);
    // Errors in a collective (a peer died) must end this process, not return codes we'd ignore.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    g_mpi_on = 1;
}

int dist_exit(int rc) {
    if (!g_mpi_on) return rc;
    if (rc != 0 && g_world > 1) {
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, rc);  // kills the other ranks too: nobody waits forever
    }
    MPI_Finalize();
    free(g_ring_tmp);
    g_ring_tmp = NULL, g_ring_tmp_n = 0;
    return rc;
}

const char *dist_backend(void) {
    static char v[MPI_MAX_LIBRARY_VERSION_STRING];
    if (!v[0]) {
        int len;
        MPI_Get_library_version(v, &len);
        v[strcspn(v, ",\n")] = 0;
    }
    return v;
}

void dist_barrier(void) {
    if (g_world > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void dist_bcast_f64(double *x, int n, int root) {
    if (g_world > 1) MPI_Bcast(x, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
}

void dist_bcast_i64(int64_t *x, int n, int root) {
    if (g_world > 1) MPI_Bcast(x, n, MPI_INT64_T, root, MPI_COMM_WORLD);
}

void dist_allreduce_sum_f64(double *x, int n) {
    if (g_world > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

void dist_allreduce_sum_i64(int64_t *x, int n) {
    if (g_world > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

void dist_allreduce_max_f64(double *x, int n) {
    if (g_world > 1) MPI_Allreduce(MPI_IN_PLACE, x, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
}

// MPI counts are ints: slices must stay below 2^31 floats (8 GiB), far above our models.
static int slice_count(const size_t *bounds, int r) {
    size_t c = bounds[r + 1] - bounds[r];
    if (c > INT_MAX || bounds[r + 1] < bounds[r]) {
        fprintf(stderr, "frontier: a %zu-float slice is too large for one MPI call\n", c);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return (int)c;
}

static void counts_from_bounds(const size_t *bounds, int *counts, int *displs) {
    for (int r = 0; r < g_world; r++) {
        counts[r] = slice_count(bounds, r);
        if (bounds[r] > INT_MAX) {
            fprintf(stderr, "frontier: a buffer of %zu floats is too large for one MPI call\n", bounds[r]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        displs[r] = (int)bounds[r];
    }
}

// The gradient reduce-scatter and the parameter all-gather of every training step are rings of
// MPI_Sendrecv between neighbours, not MPI_Reduce_scatter / MPI_Allgatherv. Open MPI 4.1's
// collectives malloc temporary buffers the size of the message on every call; glibc maps those
// above 32 MiB afresh and unmaps them on free, so each step faulted them in again, at ~10 us a
// page on this machine's VM. Measured on 2 ranks over shared memory (vader): kit-d10's 238 MB
// gradient reduce-scatter took ~760 ms and its all-gather ~300 ms; these rings take ~45 and
// ~20 ms (a plain Sendrecv moves ~6 GB/s here). Telling glibc to keep freed memory instead fixed
// the collectives but moved frontier's own buffers off huge pages (cpu preset 5-11% slower). Each
// rank sends and receives (W-1)/W of the buffer in both rings, the volume MPI's rings move.

static float *ring_tmp(size_t n) {
    if (n > g_ring_tmp_n) {
        free(g_ring_tmp);
        g_ring_tmp = xmalloc(n * sizeof *g_ring_tmp);
        g_ring_tmp_n = n;
    }
    return g_ring_tmp;
}

void dist_reduce_scatter_sum_f32(float *buf, const size_t *bounds) {
    if (g_world <= 1) return;
    const int next = (g_rank + 1) % g_world, prev = (g_rank + g_world - 1) % g_world;
    size_t most = 0;
    for (int r = 0; r < g_world; r++) most = (size_t)slice_count(bounds, r) > most ? (size_t)slice_count(bounds, r) : most;
    float *tmp = ring_tmp(most ? most : 1);
    // Step s: send the partial sum of slice (rank-s-1), receive slice (rank-s-2)'s partial sum
    // from prev and add this rank's values to it. After W-1 steps slice `rank` holds the sum of all.
    for (int s = 0; s < g_world - 1; s++) {
        int send = (g_rank - s - 1 + 2 * g_world) % g_world, recv = (g_rank - s - 2 + 2 * g_world) % g_world;
        int nrecv = slice_count(bounds, recv);
        MPI_Sendrecv(buf + bounds[send], slice_count(bounds, send), MPI_FLOAT, next, 1, tmp, nrecv, MPI_FLOAT, prev, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        float *restrict dst = buf + bounds[recv];
        const float *restrict add = tmp;
#pragma omp parallel for simd schedule(static)
        for (int i = 0; i < nrecv; i++) dst[i] += add[i];
    }
}

void dist_allgather_f32(float *buf, const size_t *bounds) {
    if (g_world <= 1) return;
    const int next = (g_rank + 1) % g_world, prev = (g_rank + g_world - 1) % g_world;
    // Step s: pass on slice (rank-s), which arrived in the previous step (or is this rank's own).
    for (int s = 0; s < g_world - 1; s++) {
        int send = (g_rank - s + g_world) % g_world, recv = (g_rank - s - 1 + g_world) % g_world;
        MPI_Sendrecv(buf + bounds[send], slice_count(bounds, send), MPI_FLOAT, next, 2, buf + bounds[recv],
                     slice_count(bounds, recv), MPI_FLOAT, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

void dist_allreduce_sum_f32(float *buf, size_t n) {
    if (g_world <= 1) return;
    for (size_t i = 0; i < n; i += INT_MAX / 2) {
        size_t c = n - i < (size_t)INT_MAX / 2 ? n - i : (size_t)INT_MAX / 2;
        MPI_Allreduce(MPI_IN_PLACE, buf + i, (int)c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

void dist_gather_f32(float *buf, const size_t *bounds) {
    if (g_world <= 1) return;
    int *counts = xmalloc((size_t)g_world * sizeof *counts), *displs = xmalloc((size_t)g_world * sizeof *displs);
    counts_from_bounds(bounds, counts, displs);
    if (g_rank == 0)
        MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else
        MPI_Gatherv(buf + bounds[g_rank], counts[g_rank], MPI_FLOAT, NULL, NULL, NULL, MPI_FLOAT, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
}

#else
// =============================================================================================
// Without MPI: one process
// =============================================================================================

void dist_init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    if (getenv("OMPI_COMM_WORLD_SIZE") && atoi(getenv("OMPI_COMM_WORLD_SIZE")) > 1) {
        fprintf(stderr, "frontier: started by mpirun with %s ranks, but this build has no MPI (install "
                        "libopenmpi-dev and rebuild: make clean && make)\n", getenv("OMPI_COMM_WORLD_SIZE"));
        exit(2);
    }
}
int dist_exit(int rc) { return rc; }
const char *dist_backend(void) { return "none (built without MPI)"; }
void dist_barrier(void) {}
void dist_bcast_f64(double *x, int n, int root) { (void)x, (void)n, (void)root; }
void dist_bcast_i64(int64_t *x, int n, int root) { (void)x, (void)n, (void)root; }
void dist_allreduce_sum_f64(double *x, int n) { (void)x, (void)n; }
void dist_allreduce_sum_i64(int64_t *x, int n) { (void)x, (void)n; }
void dist_allreduce_max_f64(double *x, int n) { (void)x, (void)n; }
void dist_reduce_scatter_sum_f32(float *buf, const size_t *bounds) { (void)buf, (void)bounds; }
void dist_allgather_f32(float *buf, const size_t *bounds) { (void)buf, (void)bounds; }
void dist_allreduce_sum_f32(float *buf, size_t n) { (void)buf, (void)n; }
void dist_gather_f32(float *buf, const size_t *bounds) { (void)buf, (void)bounds; }
#endif
