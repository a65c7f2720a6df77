// research/proc.h — run one child process under a wall-clock limit, in its own process group.
//
// Each trial (and each proposer call) is a separate process: a crash ends only that process, a
// hang is killed — the whole process group, so a shell's children die too — when the limit
// passes (after SIGTERM and a grace period when the spec asks for one). The child also gets PR_SET_PDEATHSIG = SIGKILL, so killing the research process (even
// with kill -9) never leaves a trial training on in the background. SIGINT/SIGTERM sent to the
// research process (proc_catch_signals) kill the running child and make proc_run report
// `interrupted`, so the loop can stop without recording that trial.
#pragma once

typedef struct {
    const char *const *argv;  // argv[0]: the program's path (execv, no PATH search)
    const char *stdin_path;   // NULL: /dev/null
    const char *stdout_path;  // created/truncated; NULL: /dev/null
    const char *stderr_path;  // NULL: the same file as stdout
    int append;               // open stdout/stderr for appending instead of truncating
    double limit_s;           // kill the process group after this many seconds (<= 0: no limit)
    double grace_s;           // > 0: at the limit (or an interrupt) SIGTERM the group first and
                              // SIGKILL it only after this many seconds, so a launcher (mpirun,
                              // srun) can stop what it started on other hosts; then the
                              // death signal (research killed) is SIGTERM too
    const char *fault;        // tests only: "crash" (exit 1 with a message), "signal" (killed by
                              // SIGKILL), "hang" (sleeps forever) instead of running argv
    int inherit_output;       // 1: stdout and stderr stay this process's (the paths are ignored)
    int cpu_first, cpu_count; // cpu_count > 0: the child runs on CPUs cpu_first .. cpu_first+cpu_count-1
                              // of this process's allowed set (sched_setaffinity, kept across exec)
} ProcSpec;

// CPUs this process may run on (its affinity mask), at least 1.
int proc_cpus(void);

typedef struct {
    int exit_code;    // when it exited normally, else -1
    int signal;       // the signal that ended it, else 0
    int timed_out;    // killed at the limit
    int interrupted;  // killed because the research process got SIGINT/SIGTERM
    double wall_s;
} ProcResult;

// 0 (whatever the child did), or -1 + err when it could not be started at all.
int proc_run(const ProcSpec *spec, ProcResult *res);

// Install SIGINT/SIGTERM handlers that only set a flag (idempotent).
void proc_catch_signals(void);
int proc_interrupted(void);  // 1 once SIGINT/SIGTERM arrived

// "exit 1", "killed by signal 9 (Killed)", "timed out after 12.0 s", "interrupted" (static buffer).
const char *proc_describe(const ProcResult *r);
