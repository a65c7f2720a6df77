// kernels/cpu/cpu.c — run-time CPU feature detection (see cpu.h).
#include "kernels/cpu/cpu.h"

#include <cpuid.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static unsigned long long read_xcr0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}

static void brand_string(char out[64]) {
    unsigned int r[12];
    if ((unsigned int)__get_cpuid_max(0x80000000, NULL) < 0x80000004u) { strcpy(out, "unknown"); return; }
    for (unsigned int i = 0; i < 3; i++) __get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
    memcpy(out, r, 48);
    out[48] = 0;
    char *s = out;  // trim leading spaces
    while (*s == ' ') s++;
    memmove(out, s, strlen(s) + 1);
    for (size_t n = strlen(out); n && out[n - 1] == ' ';) out[--n] = 0;
}

static void detect(CpuInfo *c) {
    memset(c, 0, sizeof *c);
    brand_string(c->model);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->logical_cpus = n > 0 ? (int)n : 1;
    unsigned int a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d)) return;
    int osxsave = (cx >> 27) & 1;
    c->fma = (cx >> 12) & 1;
    unsigned long long xcr0 = osxsave ? read_xcr0() : 0;
    int ymm_ok = (xcr0 & 0x6) == 0x6;             // SSE + AVX state
    int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0;  // opmask + ZMM_Hi256 + Hi16_ZMM
    int amx_ok = (xcr0 & (3ULL << 17)) == (3ULL << 17);  // XTILECFG + XTILEDATA
    c->fma &= ymm_ok;
    if ((unsigned int)__get_cpuid_max(0, NULL) < 7u) return;
    __cpuid_count(7, 0, a, b, cx, d);
    c->avx2 = ymm_ok && ((b >> 5) & 1);
    c->avx512f = zmm_ok && ((b >> 16) & 1);
    c->avx512bw = zmm_ok && ((b >> 30) & 1);
    c->avx512vl = zmm_ok && ((b >> 31) & 1);
    c->avx512_vnni = zmm_ok && ((cx >> 11) & 1);
    c->amx_bf16 = amx_ok && ((d >> 22) & 1);
    c->amx_tile = amx_ok && ((d >> 24) & 1);
    c->amx_int8 = amx_ok && ((d >> 25) & 1);
    __cpuid_count(7, 1, a, b, cx, d);
    c->avx512_bf16 = zmm_ok && ((a >> 5) & 1);
    if (c->amx_tile) c->amx_permitted = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#ifdef FRONTIER_EMULATE_AVX512
    // The AVX-512 kernels run on SIMDe's portable intrinsics, which need only AVX2 + FMA here.
    if (!c->avx512f && c->avx2 && c->fma) {
        c->avx512f = c->avx512bw = c->avx512vl = c->avx512_bf16 = 1;
        c->avx512_emulated = 1;
    }
#endif
}

// Detected once, under pthread_once: the first calls can come from several OpenMP threads at once
// (Muon's matrices run side by side, each thread resolving the kernel table). With a plain
// flag, a second thread re-ran detect() — whose memset zeroes the struct — while the first read
// it, saw no AVX-512 and picked another table: one run in ~100 of tests/dist's sharded-optimizer
// test had its first matrix ±1 ulp off (with OMP_NUM_THREADS=3).
static CpuInfo info;
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void detect_info(void) { detect(&info); }

const CpuInfo *cpu_info(void) {
    pthread_once(&info_once, detect_info);
    return &info;
}
