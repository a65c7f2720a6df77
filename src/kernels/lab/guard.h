// kernels/lab/guard.h — the kernel lab's guarded buffers (ggml's test-backend-ops style): an input
// ends at the last byte before an inaccessible page and is sealed read-only, so a kernel that
// reads past it or writes into it faults; an output has canary bytes on both sides, checked after
// every call. The fault handler names the op and shape (lab_fault_context) and exits 1; under
// AddressSanitizer its own report is kept instead.
#pragma once
#include <signal.h>
#include <stddef.h>

#define CANARY_FLOATS 64
#define CANARY_BYTE 0xA5

typedef struct {
    float *p;      // the data (bf16 buffers: uint16 storage)
    size_t n;      // elements
    size_t elem;   // bytes per element: 4 (fp32), 2 (bf16)
    char *base;    // the whole allocation
    size_t len;
    int is_input;  // mapped (guard page after, sealed read-only) vs heap with canaries
} GBuf;

GBuf gb_input(size_t n, size_t elem);              // n elements of elem bytes, a guard page after
void gb_seal(GBuf *b);                             // make an input read-only
GBuf gb_output(size_t n, size_t elem, int misalign);  // canaries around; misalign: off the 64-byte grid
void gb_free(GBuf *b);
size_t gb_damage(const GBuf *b, const char **where);  // canary bytes changed; *where: "before"/"after"
void gb_restore_canaries(GBuf *b);

// What the fault handler names: the op, variant, shape and thread count of the call running.
extern char lab_fault_context[320];
typedef struct {
    struct sigaction segv, bus;
} FaultHandlers;
void faults_catch(FaultHandlers *old);
void faults_release(const FaultHandlers *old);
