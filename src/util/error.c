// util/error.c — thread-local error message buffer (see error.h).
#include "util/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[4096];
static _Thread_local int g_usage;  // the current error is a usage / bad-input one

int err_set(const char *fmt, ...) {
    g_usage = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    return -1;
}

int err_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    g_usage = 1;
    return -1;
}

int err_errno(const char *fmt, ...) {
    int saved = errno;
    g_usage = 0;
    char head[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    snprintf(g_msg, sizeof g_msg, "%s: %s", head, strerror(saved));
    return -1;
}

int err_prefix(const char *fmt, ...) {
    char old[sizeof g_msg];
    memcpy(old, g_msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(g_msg, sizeof g_msg, fmt, ap);
    va_end(ap);
    if (k < 0) k = 0;
    size_t used = (size_t)k < sizeof g_msg - 1 ? (size_t)k : sizeof g_msg - 1;
    size_t room = sizeof g_msg - 1 - used, n_old = strlen(old);
    if (room >= 2) {  // append ": " + old, truncated to fit
        memcpy(g_msg + used, ": ", 2);
        used += 2;
        room -= 2;
        if (n_old > room) n_old = room;
        memcpy(g_msg + used, old, n_old);
        used += n_old;
    }
    g_msg[used] = 0;
    return -1;
}

const char *err_msg(void) { return g_msg; }
void err_clear(void) { g_msg[0] = 0, g_usage = 0; }
int err_exit_code(void) { return g_usage ? FRONTIER_EXIT_USAGE : FRONTIER_EXIT_ERROR; }
int err_mark_usage(void) { g_usage = 1; return -1; }
