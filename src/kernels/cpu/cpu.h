// kernels/cpu/cpu.h — what this CPU can do, detected at run time.
//
// cpuid gives what the processor implements; XCR0 (xgetbv) says which register states the OS
// saves, so AVX-512 counts only with opmask/ZMM state enabled. AMX tiles additionally need the
// kernel to grant the process the XTILEDATA state: arch_prctl(ARCH_REQ_XCOMP_PERM, 18).
#pragma once

typedef struct {
    char model[64];      // brand string
    int logical_cpus;    // online CPUs
    int avx2, fma;
    int avx512f, avx512bw, avx512vl, avx512_bf16, avx512_vnni;
    int amx_tile, amx_bf16, amx_int8;  // implemented and enabled in XCR0
    int amx_permitted;   // the kernel granted XTILEDATA to this process
    int avx512_emulated; // the AVX-512 and AVX512_BF16 flags are the emulation build's
                         // (FRONTIER_EMULATE_AVX512, kernels/simd/isa_avx512.h), not the CPU's
} CpuInfo;

// Detects once (thread-safe enough: idempotent) and returns the cached result. The AMX
// permission request is made on first call.
const CpuInfo *cpu_info(void);
