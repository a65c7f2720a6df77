// dist/dist.c — MPI when built with it and launched by mpirun; one process otherwise (see dist.h).
#include "dist/dist.h"

#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/mem.h"

const char *const DIST_MPIRUN_ARGS[] = {"--bind-to", "none", "--mca", "rtc_hwloc_vmhole", "none", NULL};

const char *dist_mpirun_opts(void) {
    static char joined[128];
    if (!joined[0])
        for (int i = 0; DIST_MPIRUN_ARGS[i]; i++)
            snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", i ? " " : "", DIST_MPIRUN_ARGS[i]);
    return joined;
}

int dist_mpirun_preflight(const char *what) {
    if (geteuid() != 0) return 0;
    const char *a = getenv("OMPI_ALLOW_RUN_AS_ROOT"), *c = getenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
    if (a && c && !strcmp(a, "1") && !strcmp(c, "1")) return 0;
    return err_usage("%s starts mpirun, and Open MPI's mpirun refuses to run as root: run as a user, or opt in with "
                     "`export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1` (a container's root is "
                     "the usual case)", what);
}

static int g_rank = 0, g_world = 1;
static int g_together;  // dist_exit_together() was called

void dist_exit_together(void) { g_together = 1; }
int dist_exiting_together(void) { return g_together; }

// The exit codes in one order, so that one MPI_MAX merges them: errors over signals over 0.
static int exit_rank_key(int rc) { return rc == 0 ? 0 : rc >= 128 ? (1 << 16) + rc : (2 << 16) + rc; }
static int exit_code_of_key(int key) { return key & 0xffff; }

int dist_exit_code_merge(int a, int b) {
    int ka = exit_rank_key(a), kb = exit_rank_key(b);
    return exit_code_of_key(ka > kb ? ka : kb);
}

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
static MPI_Comm g_exit_comm;  // a duplicate of COMM_WORLD for the exit agreement alone (see agree_exit)
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
    MPI_Comm_dup(MPI_COMM_WORLD, &g_exit_comm);
    g_mpi_on = 1;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Every rank's code merged into one (dist_exit_code_merge), once all ranks have arrived. A
// communicator of its own: a rank that gives up waiting (below) may leave others inside a
// collective on COMM_WORLD, and a second, unmatched collective on that communicator would be an
// erroneous program. An agreed error waits DIST_EXIT_GRACE_S at most; 0 and signals wait for as
// long as the others take (they have work of their own to finish, rank 0 its summary).
static int agree_exit(int rc) {
    int key = exit_rank_key(rc), merged = 0, done = 0;
    MPI_Request req;
    MPI_Iallreduce(&key, &merged, 1, MPI_INT, MPI_MAX, g_exit_comm, &req);
    int bounded = rc != 0 && rc < 128;
    double t0 = mono_s();
    struct timespec pause = {0, 1000000};  // 1 ms: the others are writing files, not spinning
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) return exit_code_of_key(merged);
        if (bounded && mono_s() - t0 > DIST_EXIT_GRACE_S) {
            fprintf(stderr, "frontier: rank %d: the other ranks did not reach the end within %.0f s: ending the job\n",
                    g_rank, DIST_EXIT_GRACE_S);
            MPI_Abort(MPI_COMM_WORLD, rc);
        }
        nanosleep(&pause, NULL);
    }
}

int dist_exit(int rc) {
    if (!g_mpi_on) return rc;
    fflush(stdout);
    fflush(stderr);
    // A failure only this rank knows of: the others may be blocked in a collective waiting for it.
    if (rc != 0 && !g_together && g_world > 1) MPI_Abort(MPI_COMM_WORLD, rc);
    if (g_world > 1) rc = agree_exit(rc);
    MPI_Comm_free(&g_exit_comm);
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

// The gradient reduce-scatter of every training step is a ring of MPI_Sendrecv between neighbours,
// not MPI_Reduce_scatter. Open MPI 4.1's reduce-scatter mallocs temporaries the size of the
// message on every call; glibc maps those above 32 MiB afresh and unmaps them on free, so every
// step faulted them in again, at ~10 us a page on a VM: the ring is ~60x faster on kit-d10's
// gradients (bench/bench_collectives.c; docs/perf.md, "Moved from code comments"). Telling glibc
// to keep freed memory would fix MPI's too but moves frontier's own buffers off huge pages. Each
// rank sends and receives (W-1)/W of the buffer, the volume of MPI's own ring.
static float *ring_tmp(size_t n) {
    if (n > g_ring_tmp_n) {
        free(g_ring_tmp);
        g_ring_tmp = xmalloc(n * sizeof *g_ring_tmp);
        g_ring_tmp_n = n;
    }
    return g_ring_tmp;
}

// The rank, and so the slice, `back` places before this one in the ring (-1: the next rank).
static int ring_back(int back) { return ((g_rank - back) % g_world + g_world) % g_world; }

void dist_reduce_scatter_sum_f32(float *buf, const size_t *bounds) {
    if (g_world <= 1) return;
    size_t most = 1;
    for (int r = 0; r < g_world; r++) {
        size_t c = (size_t)slice_count(bounds, r);
        most = c > most ? c : most;
    }
    float *tmp = ring_tmp(most);
    // Step s: send the partial sum of slice (rank-s-1) to the next rank, receive slice
    // (rank-s-2)'s from the previous one and add this rank's values to it. After W-1 steps slice
    // `rank` holds the sum over all ranks.
    for (int s = 0; s < g_world - 1; s++) {
        int send = ring_back(s + 1), recv = ring_back(s + 2), nrecv = slice_count(bounds, recv);
        MPI_Sendrecv(buf + bounds[send], slice_count(bounds, send), MPI_FLOAT, ring_back(-1), 1, tmp, nrecv, MPI_FLOAT,
                     ring_back(1), 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        float *restrict dst = buf + bounds[recv];
        const float *restrict add = tmp;
#pragma omp parallel for simd schedule(static)
        for (int i = 0; i < nrecv; i++) dst[i] += add[i];
    }
}

void dist_allgather_f32(float *buf, const size_t *bounds) {
    if (g_world <= 1) return;
    int *counts = xmalloc((size_t)g_world * sizeof *counts), *displs = xmalloc((size_t)g_world * sizeof *displs);
    counts_from_bounds(bounds, counts, displs);
    // In place, MPI_Allgatherv allocates nothing the size of the message: kit-d10's 238 MB in
    // 17-18 ms on 2 ranks, as fast as a ring of MPI_Sendrecv (bench/bench_collectives.c).
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
    free(counts);
    free(displs);
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
void dist_gather_f32(float *buf, const size_t *bounds) { (void)buf, (void)bounds; }
#endif
