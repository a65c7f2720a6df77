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

#define MAX_SIGINTS 4
static Fault g_crash, g_fail, g_sigint[MAX_SIGINTS];

// One "NAME[:K]" of the variable, the text [v, end).
static void parse_one(Fault *f, const char *v, const char *end) {
    f->parsed = 1;
    const char *colon = memrchr(v, ':', (size_t)(end - v));
    size_t n = (size_t)((colon ? colon : end) - v);
    if (n == 0 || n >= sizeof f->name) return;
    memcpy(f->name, v, n);
    f->name[n] = 0;
    f->at = colon ? strtol(colon + 1, NULL, 10) : 1;
    f->armed = f->at > 0;
}

static void parse(Fault *f, const char *env) {
    f->parsed = 1;
    const char *v = getenv(env);
    if (v && *v) parse_one(f, v, v + strlen(v));
}

static int hit(Fault *f, const char *env, const char *name) {
    if (!f->parsed) parse(f, env);
    return f->armed && !strcmp(f->name, name) && ++f->hits == f->at;
}

static void sigint_points(const char *name) {
    static int parsed;
    if (!parsed) {
        parsed = 1;
        const char *v = getenv("FRONTIER_SIGINT_AT");
        for (int i = 0; v && *v && i < MAX_SIGINTS; i++) {
            const char *comma = strchr(v, ',');
            parse_one(&g_sigint[i], v, comma ? comma : v + strlen(v));
            v = comma ? comma + 1 : NULL;
        }
    }
    for (int i = 0; i < MAX_SIGINTS; i++)
        if (g_sigint[i].armed && !strcmp(g_sigint[i].name, name) && ++g_sigint[i].hits == g_sigint[i].at) raise(SIGINT);
}

void fault_point(const char *name) {
    sigint_points(name);
    if (!hit(&g_crash, "FRONTIER_CRASH_AT", name)) return;
    fprintf(stderr, "frontier: FRONTIER_CRASH_AT=%s: killing this process (SIGKILL)\n", name);
    raise(SIGKILL);
}

int fault_fails(const char *name) {
    if (!hit(&g_fail, "FRONTIER_FAIL_AT", name)) return 0;
    errno = ENOSPC;
    return 1;
}
