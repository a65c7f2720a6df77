// tests/test_util.h — shared helpers for the cmocka unit tests (header-only).
//
// Tests run from the project root (tests/run.sh sees to it). Data comes from $FRONTIER_DATA or
// ../shared/data, fixtures from tests/fixtures/. Temporary folders live under /tmp and are
// removed by the test that made them.
#pragma once
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/error.h"
#include "util/fileio.h"

// Skipping. A case that cannot run its subject here prints why and calls cmocka's skip():
// tests/run.sh shows the reason next to the binary's PASS. "SKIP hardware:" is for a CPU that lacks
// an instruction set (still a skip under CI=true: no setup installs hardware); any other "SKIP:"
// reason (SKIP_CASE) fails the binary under CI=true, where scripts/setup.sh has installed everything. A part
// of a case that cannot run (a variant this CPU lacks, in a loop over variants) is noted with
// NOTE_SKIPPED_HARDWARE. A binary whose whole subject is missing returns test_exit_skip(): exit
// 77, which tests/run.sh reports as SKIP rather than PASS.
#define SKIP_HARDWARE(...)                              \
    do {                                                \
        print_message("SKIP hardware: " __VA_ARGS__);   \
        print_message("\n");                            \
        skip();                                         \
    } while (0)
#define SKIP_CASE(...)                                  \
    do {                                                \
        print_message("SKIP: " __VA_ARGS__);            \
        print_message("\n");                            \
        skip();                                         \
    } while (0)
#define NOTE_SKIPPED_HARDWARE(...)                      \
    do {                                                \
        print_message("SKIP hardware: " __VA_ARGS__);   \
        print_message("\n");                            \
    } while (0)
static inline int test_exit_skip(int hardware, const char *why) {
    printf("SKIP%s: %s\n", hardware ? " hardware" : "", why);
    fflush(stdout);
    return 77;
}

static inline const char *test_data_root(void) {
    const char *env = getenv("FRONTIER_DATA");
    return env && *env ? env : "../shared/data";
}

// A fresh empty folder under /tmp (malloc'ed path).
static inline char *test_tmpdir(const char *tag) {
    char tmpl[256];
    snprintf(tmpl, sizeof tmpl, "/tmp/frontier-test-%s-XXXXXX", tag);
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static inline void test_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

// The current error message contains `needle`.
#define assert_error_contains(needle)                                                 \
    do {                                                                              \
        if (!strstr(err_msg(), (needle))) {                                           \
            print_error("error message \"%s\" lacks \"%s\"\n", err_msg(), (needle)); \
            fail();                                                                   \
        }                                                                             \
    } while (0)
