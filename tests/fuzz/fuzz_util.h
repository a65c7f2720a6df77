// tests/fuzz/fuzz_util.h — what the libFuzzer harnesses share (tests/fuzz/README.md).
//
// A harness feeds one input to a reader's from-memory entry point and then checks properties a
// reader must keep whatever it is given: it either fails with a message (err_msg() non-empty)
// or returns something every later use can rely on (ids in range, a round trip that agrees).
// A broken property calls FUZZ_FAIL, which aborts: libFuzzer records the input as a crash.
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fileio.h"

#define FUZZ_FAIL(...)                                                  \
    do {                                                                \
        fprintf(stderr, "fuzz property failed at %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                   \
        fprintf(stderr, "\n");                                          \
        abort();                                                        \
    } while (0)
#define FUZZ_CHECK(cond, ...) \
    do {                      \
        if (!(cond)) FUZZ_FAIL(__VA_ARGS__); \
    } while (0)

// A failed read must say why.
static inline void fuzz_expect_message(void) {
    FUZZ_CHECK(err_msg()[0] != 0, "a reader failed without an error message");
    err_clear();
}

// A NUL-terminated copy (free it).
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    return s;
}

static char fuzz_dir_path[128];
static inline void fuzz_dir_remove(void) { remove_tree(fuzz_dir_path); }

// A private folder under /dev/shm (RAM) for readers that only take paths; made once per process,
// removed when it exits.
static inline const char *fuzz_dir(void) {
    if (!fuzz_dir_path[0]) {
        snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "/dev/shm/frontier-fuzz-%d", (int)getpid());
        if (mkdir_p(fuzz_dir_path) != 0) FUZZ_FAIL("cannot make %s: %s", fuzz_dir_path, err_msg());
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir_path;
}

// Write bytes to fuzz_dir()/name; returns the path (static buffer).
static inline const char *fuzz_file(const char *name, const void *data, size_t size) {
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) FUZZ_FAIL("cannot write %s", path);
    return path;
}
