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
// Leaving (no hangs, nothing cut short). Every command ends in dist_exit(rc). Two kinds of ending:
//  - Agreed: rc == 0, or an outcome every rank reached through a collective (the training loop
//    stopped by a signal or the budget, a diverged loss, a failed checkpoint save), marked by
//    dist_exit_together() where the agreement happens. Every rank will reach dist_exit, so each
//    waits there for all the others (rank 0 may still be writing summary.json and printing), they
//    agree on one code and all exit with it after MPI_Finalize. Without this wait a rank that
//    left first with a non-zero code made mpirun kill rank 0 before its summary was written.
//  - Local: a non-zero rc on one rank that the others do not know of (they may be blocked in a
//    collective, waiting for it). That rank aborts the job at once (MPI_Abort): nobody hangs.
// An agreed error (not 0, not a signal's 128+N) still waits at most DIST_EXIT_GRACE_S for the
// others and then aborts, so a misplaced dist_exit_together() costs seconds, never a hang. A rank
// killed by a signal is detected by the launcher, which tears the job down.
//
// Work split. A "range" is a contiguous slice [lo, hi) of a flat float buffer; the ranges of the
// ranks tile the buffer in rank order (rank 0 first), as dist_partition() produces them.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Called first thing in main(). Safe to call when not launched by MPI.
void dist_init(int *argc, char ***argv);
// Leave (see above): the agreed code (every rank returns the same: any rank's error over any
// signal's 128+N over 0), or MPI_Abort for a local failure. Returns it (for `return
// dist_exit(rc)` in main).
int dist_exit(int rc);
// From here on this process's outcome is one every rank shares: dist_exit waits for the others.
void dist_exit_together(void);
int dist_exiting_together(void);  // whether it was called (an agreed error is then said by rank 0 alone)
#define DIST_EXIT_GRACE_S 10.0

// The options of every `mpirun` frontier starts (phase 2, the planner's calibration over ranks),
// NULL-terminated:
//  - --bind-to none: each rank runs its own OpenMP threads over its share of the cores;
//  - --mca rtc_hwloc_vmhole none: Open MPI 4.1's remote daemons (orted) otherwise map a shared
//    copy of the hwloc topology into the biggest hole of their address space, which under address
//    randomisation can lie against the stack; the daemon then segfaults in
//    hwloc_shmem_topology_write before it phones home, and mpirun fails with "ORTE was unable to
//    reliably start one or more daemons" or "does not know how to route a message", at random
//    (tests/phase/test_multihost.sh; docs/distributed.md). Without the shared copy each process
//    reads the topology itself, which costs milliseconds.
extern const char *const DIST_MPIRUN_ARGS[];
// The same, joined by spaces (for launcher templates).
const char *dist_mpirun_opts(void);
// Before frontier starts `mpirun` itself: as root, Open MPI's mpirun refuses to start (exit 1,
// after a box of advice in the child's log) unless OMPI_ALLOW_RUN_AS_ROOT=1 and
// OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set. `what` names the command (e.g. "phase 2 --ranks 2").
// 0, or -1 + a usage error that says how to opt in (containers often run as root) or to run as a
// user; a launcher the user gave (--launcher) is theirs to set up and is not checked.
int dist_mpirun_preflight(const char *what);
// The code the ranks agree on, given each one's: errors (1..127) over signals (128+N) over 0; among
// codes of one kind the largest. (Pure: the one-process build and the tests use it too.)
int dist_exit_code_merge(int a, int b);

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
