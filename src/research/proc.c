// research/proc.c — a child process under a wall-clock limit, in its own group (see proc.h).
#include "research/proc.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/error.h"
#include "util/timer.h"

static volatile sig_atomic_t g_interrupted;

static void on_signal(int sig) {
    (void)sig;
    g_interrupted = 1;
}

void proc_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int proc_interrupted(void) { return g_interrupted != 0; }

// In the child: connect fd to path (or /dev/null); on failure say so on stderr and exit 127.
static void redirect(int fd, const char *path, int flags) {
    int f = open(path ? path : "/dev/null", flags, 0644);
    if (f < 0 || dup2(f, fd) < 0) {
        dprintf(2, "frontier research: cannot open %s: %s\n", path ? path : "/dev/null", strerror(errno));
        _exit(127);
    }
    if (f != fd) close(f);
}

int proc_cpus(void) {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

// In the child: keep CPUs first .. first+count-1 of the allowed set (counted in CPU order).
static void pin(int first, int count) {
    cpu_set_t all, mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof all, &all) != 0) return;
    for (int c = 0, k = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &all)) continue;
        if (k >= first && k < first + count) CPU_SET(c, &mine);
        k++;
    }
    if (CPU_COUNT(&mine) == count && sched_setaffinity(0, sizeof mine, &mine) != 0)
        dprintf(2, "frontier research: cannot pin to CPUs %d..%d: %s\n", first, first + count - 1, strerror(errno));
}

static void child(const ProcSpec *s, pid_t parent) {
    setpgid(0, 0);
    // a launcher gets SIGTERM when the research dies, so that it stops what it started
    prctl(PR_SET_PDEATHSIG, s->grace_s > 0 ? SIGTERM : SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (s->cpu_count > 0) pin(s->cpu_first, s->cpu_count);
    int out_flags = O_WRONLY | O_CREAT | (s->append ? O_APPEND : O_TRUNC);
    redirect(0, s->stdin_path, O_RDONLY);
    if (!s->inherit_output) {
        redirect(1, s->stdout_path, out_flags);
        if (s->stderr_path) redirect(2, s->stderr_path, out_flags);
        else if (dup2(1, 2) < 0) _exit(127);
    }
    if (s->fault && !strcmp(s->fault, "crash")) {
        fprintf(stderr, "frontier: error: simulated crash (FRONTIER_RESEARCH_FAULT)\n");
        _exit(1);
    }
    if (s->fault && !strcmp(s->fault, "signal")) raise(SIGKILL);
    if (s->fault && !strcmp(s->fault, "hang"))
        for (;;) pause();
    execv(s->argv[0], (char *const *)s->argv);
    dprintf(2, "frontier research: cannot run %s: %s\n", s->argv[0], strerror(errno));
    _exit(127);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);  // an early wake-up (a signal) is fine: the loop checks again
}

int proc_run(const ProcSpec *s, ProcResult *r) {
    memset(r, 0, sizeof *r);
    r->exit_code = -1;
    fflush(NULL);  // nothing buffered may be written twice
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) return err_errno("cannot start %s", s->argv[0]);
    if (pid == 0) child(s, parent);
    setpgid(pid, pid);  // also here, so a kill of the group cannot race the child's own setpgid
    double t0 = now_seconds();
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return err_errno("waiting for %s", s->argv[0]);
        int over = s->limit_s > 0 && now_seconds() - t0 > s->limit_s;
        if (over || g_interrupted) {
            r->timed_out = over && !g_interrupted, r->interrupted = g_interrupted != 0;
            if (s->grace_s > 0) {
                kill(-pid, SIGTERM);
                double t1 = now_seconds();
                while (waitpid(pid, &status, WNOHANG) == 0 && now_seconds() - t1 < s->grace_s) sleep_ms(50);
            }
            kill(-pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            break;
        }
        sleep_ms(now_seconds() - t0 < 1 ? 10 : 50);
    }
    kill(-pid, SIGKILL);  // whatever the child left running in its group (ESRCH when none)
    r->wall_s = now_seconds() - t0;
    if (WIFEXITED(status)) r->exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r->signal = WTERMSIG(status);
    return 0;
}

const char *proc_describe(const ProcResult *r) {
    static char buf[128];
    if (r->interrupted) snprintf(buf, sizeof buf, "interrupted");
    else if (r->timed_out) snprintf(buf, sizeof buf, "timed out after %.1f s", r->wall_s);
    else if (r->signal) snprintf(buf, sizeof buf, "killed by signal %d (%s)", r->signal, strsignal(r->signal));
    else snprintf(buf, sizeof buf, "exit %d", r->exit_code);
    return buf;
}
