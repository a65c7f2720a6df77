// dist/dist.h — data-parallel plumbing over MPI: who am I, how many of us, and the handful of
// collectives the trainer and the evaluators need.
//
// Built with MPI when the Makefile finds `mpicc` (FRONTIER_MPI defined); otherwise every function
// here is the one-process version (rank 0 of 1, collectives are no-ops), so the rest of the code
// never needs an #ifdef.
//
// MPI is initialised only when the process was started by an MPI launcher (mpirun/mpiexec/srun
// set OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK): a plain `./frontier train` never pays for, or
// prints anything from, MPI's start-up.
//
// Failure policy (no hangs): a rank that fails calls dist_exit() with a non-zero code, which
// aborts the whole job (MPI_Abort), so ranks blocked in a collective are killed rather than left
// waiting; a rank killed by a signal is detected by the launcher, which tears the job down.
//
// Work split. A "range" is a contiguous slice [lo, hi) of a flat float buffer; the ranges of the
// ranks tile the buffer in rank order (rank 0 first), as dist_partition() produces them.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Called first thing in main(). Safe to call when not launched by MPI.
void dist_init(int *argc, char ***argv);
// Leave: rc == 0 finalises MPI normally; rc != 0 with more than one rank aborts every rank (so
// none hangs in a collective). Returns rc (for `return dist_exit(rc)` in main).
int dist_exit(int rc);

int dist_rank(void);   // 0 .. world-1
int dist_world(void);  // 1 when not launched by MPI (or built without it)
int dist_active(void); // world > 1
const char *dist_backend(void);  // "OpenMPI x.y" / "MPICH ..." or "none (built without MPI)"

// Collectives over every rank (no-ops with one rank).
void dist_barrier(void);
void dist_bcast_f64(double *x, int n, int root);
void dist_bcast_i64(int64_t *x, int n, int root);
void dist_allreduce_sum_f64(double *x, int n);
void dist_allreduce_sum_i64(int64_t *x, int n);
void dist_allreduce_max_f64(double *x, int n);

// buf (all ranks' ranges, bounds[0] = 0 ... bounds[world] = end): afterwards the slice
// [bounds[rank], bounds[rank+1]) holds the sum over ranks of that slice; the rest of buf is
// unspecified. (A ring of MPI_Sendrecv, half the traffic of an all-reduce; dist.c says why not
// MPI_Reduce_scatter.)
void dist_reduce_scatter_sum_f32(float *buf, const size_t *bounds);
// Every rank contributes its slice [bounds[rank], bounds[rank+1]); afterwards every rank holds
// every slice (MPI_Allgatherv in place).
void dist_allgather_f32(float *buf, const size_t *bounds);
// Rank 0 receives every rank's slice of buf (in place); others send theirs.
void dist_gather_f32(float *buf, const size_t *bounds);

// Split n items with costs cost[i] into world contiguous groups of about equal total cost:
// group r = items [first[r], first[r+1]), first[0] = 0, first[world] = n. Deterministic.
void dist_partition(const double *cost, int n, int world, int *first);
