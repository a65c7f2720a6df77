// cli/cmd_info.c — `frontier info`: the CPU and what frontier can use on it.
#include <omp.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "kernels/cpu.h"

int cmd_info(int argc, char **argv) {
    Option opts[] = {{0, 0, 0, 0, 0, 0, 0, 0}};
    int rc = parse_args("frontier info [options]",
                        "Show the CPU model, core count, the SIMD/matrix features detected at run time (cpuid + "
                        "XCR0), and whether the kernel granted AMX tile permission to this process.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : 2;
    const CpuInfo *c = cpu_info();
    const char *yn[] = {"no", "yes"};
    printf("cpu:            %s\n", c->model);
    printf("logical cpus:   %d (OpenMP threads: %d)\n", c->logical_cpus, omp_get_max_threads());
    printf("avx2:           %s\n", yn[c->avx2]);
    printf("fma:            %s\n", yn[c->fma]);
    printf("avx512f:        %s\n", yn[c->avx512f]);
    printf("avx512bw/vl:    %s/%s\n", yn[c->avx512bw], yn[c->avx512vl]);
    printf("avx512_vnni:    %s\n", yn[c->avx512_vnni]);
    printf("avx512_bf16:    %s\n", yn[c->avx512_bf16]);
    printf("amx-tile:       %s\n", yn[c->amx_tile]);
    printf("amx-bf16:       %s\n", yn[c->amx_bf16]);
    printf("amx-int8:       %s\n", yn[c->amx_int8]);
    printf("amx permission: %s\n", c->amx_tile ? (c->amx_permitted ? "granted" : "refused by the kernel")
                                               : "n/a (no AMX)");
    return 0;
}
