// util/mem.h — allocation helpers. Running out of memory is the one error we do not propagate:
// these print what was being allocated and abort, since no caller could do better.
#pragma once
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
// 64-byte aligned (cache line / AVX-512 register), zeroed; release with free(). Blocks of 2 MiB
// or more are 2 MiB aligned and advised to transparent huge pages (see mem.c).
void *xaligned_alloc(size_t n);

// Grow *buf (element size elem) so it holds at least `need` elements; *cap is updated.
void grow_array(void **buf, size_t *cap, size_t need, size_t elem);
#define GROW(arr, cap, need) grow_array((void **)&(arr), &(cap), (need), sizeof *(arr))
