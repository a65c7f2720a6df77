// tests/kernels/test_first_use.c — the kernel table and the CPU features are resolved lazily, on
// first use, and that first use can come from several threads at once (Muon's matrices run side
// by side, one per OpenMP thread). Each trial is a fresh child process (forked before anything
// here touches the kernels) whose threads all call kernels() and cpu_info() at the same moment:
// every thread must get the best variant's matmul, read at once. cpu_info() and kernels() were
// lazily initialised without synchronisation (a second thread could re-run detection, which
// zeroes the struct, while the first read it); both now use pthread_once. This test pins the
// contract; it did not reproduce the old race (its window is a few microseconds), which showed
// only as rare ±1-ulp failures of tests/dist (see the commit that added this file).
#include "test_util.h"

#include <pthread.h>
#include <sys/wait.h>

#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"

enum { THREADS = 8, TRIALS = 40 };

static pthread_barrier_t start;
typedef void (*MatmulFn)(float *, const float *, const float *, int, int, int, int);
static MatmulFn seen[THREADS];  // the matmul each thread would call, read at once (a later read
static int avx512f_seen[THREADS];  // would see the table after every thread has settled it)

static void *first_use(void *arg) {
    int t = (int)(intptr_t)arg;
    pthread_barrier_wait(&start);
    seen[t] = kernels()->matmul_nt;
    avx512f_seen[t] = cpu_info()->avx512f;
    return NULL;
}

// One trial in this (fresh) process: 0 if every thread saw the same resolved table.
static int trial(void) {
    pthread_t th[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, first_use, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    const Kernels *best = kernels_variant(kernels_best_variant());
    for (int t = 0; t < THREADS; t++) {
        if (avx512f_seen[t] != cpu_info()->avx512f) return 1;
        if (seen[t] != best->matmul_nt) return 2;
    }
    return 0;
}

static void test_concurrent_first_use_resolves_once(void **state) {
    (void)state;
    unsetenv("FRONTIER_KERNELS");
    int bad = 0;
    for (int i = 0; i < TRIALS; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) _exit(trial());
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
    }
    if (bad) print_error("%d of %d trials saw different or unresolved kernel tables\n", bad, TRIALS);
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_first_use_resolves_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
