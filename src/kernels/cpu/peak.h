// kernels/cpu/peak.h — this machine's measured peak compute and memory bandwidth, the denominators
// of MFU and of the kernel lab's "% of peak".
//
// Compute peaks are register-resident chains of the instruction (12 independent accumulators,
// more than latency x throughput), timed with each thread's own CPU time so that other processes
// sharing the cores do not lower them; "all" runs one chain set per OpenMP thread at once and
// sums the per-thread rates (SMT siblings share a core, and each one's CPU time says so).
// Bandwidths are wall-clock, all threads, arrays far larger than the last-level cache, best of
// a few runs; triad counts STREAM's 3 x 4 bytes per element (no write-allocate traffic).
//
// The result is cached in <cache>/peak.json, keyed by CPU model and thread count, written
// atomically; measuring takes about two seconds.
#pragma once

typedef struct {
    char cpu[64];           // brand string (the cache key, with threads)
    int threads;            // OpenMP threads of the "all" figures
    char fp32_isa[8];       // "avx512", "avx2" or "scalar": the FMA width measured
    double fp32_core, fp32_all;  // FLOP/s, an FMA = 2 FLOPs
    double bf16_core, bf16_all;  // FLOP/s of AVX512_BF16 vdpbf16ps (0: not on this CPU)
    double amx_core, amx_all;    // FLOP/s of AMX tdpbf16ps (0: no AMX or not permitted)
    double triad_bw, read_bw;    // bytes/s
} MachinePeak;

// Measure now (ignores the cache). 0, or -1 + err.
int machine_peak_measure(MachinePeak *out);
// The cached figures for this CPU and thread count: 0, or -1 + err if none (or unreadable).
int machine_peak_load(const char *cache_dir, MachinePeak *out);
// Store p in <cache_dir>/peak.json (other machines' entries are kept). 0, or -1 + err.
int machine_peak_save(const char *cache_dir, const MachinePeak *p);
// The cached figures, or measure and cache them (a cache write failure is not an error).
int machine_peak_get(const char *cache_dir, MachinePeak *out);

// For MFU: the measured all-thread fp32 peak in FLOP/s (machine_peak_get on cache_dir, NULL =
// "cache"); if measuring fails, an estimate from the ISA (64/32/8 FLOPs per cycle x 3 GHz x
// logical CPUs). Measures at most once per process.
double machine_peak_fp32_flops(const char *cache_dir);
