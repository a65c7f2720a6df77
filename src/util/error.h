// util/error.h — error reporting with context.
//
// Contract: library code never exits. A function that fails calls err_set() with a message that
// says what is wrong, where (file:line, tensor name, flag) and how to fix it, then returns -1 (or
// NULL). The caller may add context in front with err_prefix(). Only main.c prints err_msg() and
// chooses the exit code: 1 for a runtime failure (I/O, a diverged run, out of memory), 2 for a
// usage error (a bad flag value) or bad input (a malformed file the user handed over). The message
// and its kind are thread-local; err_prefix keeps the kind, err_set/err_errno reset it to runtime.
#pragma once
#include <stdarg.h>

#define FRONTIER_EXIT_ERROR 1
#define FRONTIER_EXIT_USAGE 2

// Replace the current error message. Always returns -1, so `return err_set(...)` reads naturally.
int err_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Like err_set, but marks the error as a usage / bad-input error (exit code 2).
int err_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Like err_set, with ": strerror(errno)" appended.
int err_errno(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Put "<context>: " in front of the current message. Returns -1.
int err_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// The current message ("" if none).
const char *err_msg(void);
// The exit code the current error calls for: FRONTIER_EXIT_USAGE or FRONTIER_EXIT_ERROR.
int err_exit_code(void);
// Mark the current error (whatever set it) as a usage / bad-input error. Returns -1.
int err_mark_usage(void);
void err_clear(void);
