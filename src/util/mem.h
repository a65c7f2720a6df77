// util/mem.h — allocation helpers. Running out of memory is the one error we do not propagate:
// these print what was being allocated and abort, since no caller could do better.
#pragma once
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
// 64-byte aligned (cache line / AVX-512 register), zeroed; release with free(). Blocks of 2 MiB
// or more are 2 MiB aligned and advised to transparent huge pages (see mem.c).
void *xaligned_alloc(size_t n);

// Buffers kept between calls (packing buffers, workspaces), so that a hot path allocates nothing:
// freed and allocated again, a block of megabytes is faulted in again page by page whenever
// glibc has handed it back to the kernel (~10 us a page on a VM). A pool is n slots, each claimed
// with an atomic flag, so it is safe from any thread or nested parallel region; a static pool
// stays reachable, so leak checkers do not flag it.
typedef struct {
    atomic_int busy;
    void *mem;
    size_t bytes;
} KeptBuf;

// A free slot of pool[0, n) grown to hold `bytes` (xaligned_alloc; contents left from earlier
// use), its index in *slot; when all n are busy, a block of its own for this caller (*slot = -1).
void *kept_claim(KeptBuf *pool, int n, size_t bytes, int *slot);
void kept_release(KeptBuf *pool, void *mem, int slot);

// Grow *buf (element size elem) so it holds at least `need` elements; *cap is updated.
void grow_array(void **buf, size_t *cap, size_t need, size_t elem);
#define GROW(arr, cap, need) grow_array((void **)&(arr), &(cap), (need), sizeof *(arr))

// Memory this machine can still give, in bytes: /proc/meminfo's MemAvailable, or less under a
// cgroup v2 limit (memory.max - memory.current). -1 when neither can be read.
int64_t mem_available(void);
