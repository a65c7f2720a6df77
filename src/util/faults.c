// util/faults.c — named fault points (see faults.h).
#include "util/faults.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int parsed, armed;
    char name[128];
    long at, hits;
} Fault;

static Fault g_crash, g_fail;

static void parse(Fault *f, const char *env) {
    f->parsed = 1;
    const char *v = getenv(env);
    if (!v || !*v) return;
    const char *colon = strrchr(v, ':');
    size_t n = colon ? (size_t)(colon - v) : strlen(v);
    if (n >= sizeof f->name) return;
    memcpy(f->name, v, n);
    f->name[n] = 0;
    f->at = colon ? strtol(colon + 1, NULL, 10) : 1;
    f->armed = f->at > 0;
}

static int hit(Fault *f, const char *env, const char *name) {
    if (!f->parsed) parse(f, env);
    return f->armed && !strcmp(f->name, name) && ++f->hits == f->at;
}

void fault_point(const char *name) {
    if (!hit(&g_crash, "FRONTIER_CRASH_AT", name)) return;
    fprintf(stderr, "frontier: FRONTIER_CRASH_AT=%s: killing this process (SIGKILL)\n", name);
    raise(SIGKILL);
}

int fault_fails(const char *name) {
    if (!hit(&g_fail, "FRONTIER_FAIL_AT", name)) return 0;
    errno = ENOSPC;
    return 1;
}
