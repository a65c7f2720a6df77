// util/mem.c — allocation helpers (see mem.h).
#include "util/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void oom(size_t n) {
    fprintf(stderr, "frontier: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *xcalloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) oom(count * size);
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

// Large blocks (activations, logits, packed weights) go on 2 MiB transparent huge pages where
// the kernel allows it (THP "madvise" mode, Debian's default, gives none without asking). The
// GEMMs pack A strips from rows 32 KiB apart (the (tokens, vocab) dlogits): with 4 KiB pages
// every row of a strip is a TLB miss (docs/perf.md, "Moved from code comments"). Where THP is off,
// madvise fails harmlessly.
#define HUGE_PAGE ((size_t)2 << 20)

void *xaligned_alloc(size_t n) {
    size_t align = n >= HUGE_PAGE ? HUGE_PAGE : 64;
    size_t rounded = (n + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded ? rounded : 64);
    if (!p) oom(n);
    if (align == HUGE_PAGE) madvise(p, rounded, MADV_HUGEPAGE);
    memset(p, 0, rounded);
    return p;
}

void *kept_claim(KeptBuf *pool, int n, size_t bytes, int *slot) {
    for (int i = 0; i < n; i++) {
        if (atomic_exchange(&pool[i].busy, 1)) continue;
        if (pool[i].bytes < bytes) {
            free(pool[i].mem);
            pool[i].mem = xaligned_alloc(bytes);
            pool[i].bytes = bytes;
        }
        *slot = i;
        return pool[i].mem;
    }
    *slot = -1;
    return xaligned_alloc(bytes);
}

void kept_release(KeptBuf *pool, void *mem, int slot) {
    if (slot < 0) free(mem);
    else atomic_store(&pool[slot].busy, 0);
}

void grow_array(void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    *buf = xrealloc(*buf, c * elem);
    *cap = c;
}

int64_t mem_available(void) {
    int64_t avail = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) avail = (int64_t)kb * 1024;
    if (f) fclose(f);
    long long max = -1, cur = -1;
    if ((f = fopen("/sys/fs/cgroup/memory.max", "r"))) {
        if (fscanf(f, "%lld", &max) != 1) max = -1;  // "max": no limit
        fclose(f);
    }
    if (max > 0 && (f = fopen("/sys/fs/cgroup/memory.current", "r"))) {
        if (fscanf(f, "%lld", &cur) == 1 && (avail < 0 || max - cur < avail)) avail = max - cur;
        fclose(f);
    }
    return avail;
}
