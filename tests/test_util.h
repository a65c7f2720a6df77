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
