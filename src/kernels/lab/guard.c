// kernels/lab/guard.c — guarded buffers and the memory-fault handler of the kernel lab (guard.h).
#include "kernels/lab/guard.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/error.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Guarded buffers
// ---------------------------------------------------------------------------------------------



static size_t page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

// An input whose last element is the last byte before an inaccessible page.
GBuf gb_input(size_t n, size_t elem) {
    size_t pg = page_size(), bytes = n * elem, data = (bytes + pg - 1) / pg * pg;
    if (!data) data = pg;
    GBuf b = {.n = n, .elem = elem, .len = data + pg, .is_input = 1};
    b.base = mmap(NULL, b.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b.base == MAP_FAILED) {
        fprintf(stderr, "frontier: kernels check: out of memory mapping %zu bytes\n", b.len);
        abort();
    }
    mprotect(b.base + data, pg, PROT_NONE);
    b.p = (float *)(b.base + data - bytes);
    return b;
}

void gb_seal(GBuf *b) { mprotect(b->base, b->len - page_size(), PROT_READ); }

// An output with canary bytes on both sides; misalign moves it off the 64-byte grid.
GBuf gb_output(size_t n, size_t elem, int misalign) {
    GBuf b = {.n = n, .elem = elem, .len = n * elem + (2 * CANARY_FLOATS + 1) * sizeof(float)};
    b.base = xaligned_alloc(b.len);
    memset(b.base, CANARY_BYTE, b.len);
    b.p = (float *)b.base + CANARY_FLOATS + (misalign ? 1 : 0);
    return b;
}

void gb_free(GBuf *b) {
    if (b->is_input) munmap(b->base, b->len);
    else free(b->base);
}

// Number of canary bytes changed; *where says on which side (first found).
size_t gb_damage(const GBuf *b, const char **where) {
    const unsigned char *s = (const unsigned char *)b->base, *d0 = (const unsigned char *)b->p;
    const unsigned char *d1 = d0 + b->n * b->elem, *e = s + b->len;
    size_t before = 0, after = 0;
    for (const unsigned char *q = s; q < d0; q++) before += *q != CANARY_BYTE;
    for (const unsigned char *q = d1; q < e; q++) after += *q != CANARY_BYTE;
    *where = before ? "before" : "after";
    return before + after;
}

void gb_restore_canaries(GBuf *b) {
    memset(b->base, CANARY_BYTE, (size_t)((char *)b->p - b->base));
    char *end = (char *)b->p + b->n * b->elem;
    memset(end, CANARY_BYTE, (size_t)(b->base + b->len - end));
}

// ---------------------------------------------------------------------------------------------
// Memory faults (reads past an input, writes into one): name the op and shape, then exit.
// Under AddressSanitizer its own, more detailed report is kept.
// ---------------------------------------------------------------------------------------------

#if defined(__SANITIZE_ADDRESS__)
#define LAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LAB_ASAN 1
#endif
#endif

char lab_fault_context[320];

#ifndef LAB_ASAN
static void on_fault(int sig) {
    static const char pre[] = "frontier: kernels check: memory fault in ";
    static const char post[] = ": the kernel read outside an input or wrote into one\n";
    (void)sig;
    ssize_t rc = write(2, pre, sizeof pre - 1);
    rc += write(2, lab_fault_context, strlen(lab_fault_context));
    rc += write(2, post, sizeof post - 1);
    (void)rc;
    _exit(FRONTIER_EXIT_ERROR);
}
#endif


void faults_catch(FaultHandlers *old) {
#ifndef LAB_ASAN
    struct sigaction sa = {0};
    sa.sa_handler = on_fault;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old->segv);
    sigaction(SIGBUS, &sa, &old->bus);
#else
    (void)old;
#endif
}

void faults_release(const FaultHandlers *old) {
#ifndef LAB_ASAN
    sigaction(SIGSEGV, &old->segv, NULL);
    sigaction(SIGBUS, &old->bus, NULL);
#else
    (void)old;
#endif
}

