// tests/kernels/note_variants.h — for the kernel tests whose cases loop over the variants this CPU
// runs (test_kernels_lab.c, test_same_bits.c): say which variants they leave out (tests/run.sh shows
// the notes beside the result).
#pragma once
#include "test_util.h"

#include "kernels/cpu/cpu.h"
#include "kernels/kernels.h"

static void note_variants_left_out(void) {
    if (!kernels_variant_available(KV_AVX512, NULL))
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX-512: the cases over variants leave out avx512 and avx512_bf16");
    else if (!cpu_info()->avx512_bf16)
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX512_BF16: the cases over variants leave out avx512_bf16");
    if (!kernels_variant_available(KV_AVX2, NULL))
        NOTE_SKIPPED_HARDWARE("this CPU lacks AVX2: the cases over variants leave out avx2");
    if (!kernels_amx_real())
        NOTE_SKIPPED_HARDWARE("this CPU has no AMX: the AMX kernels run on their emulator only%s",
                              cpu_info()->avx512_bf16 ? "" : ", and not at all here (the emulator needs AVX512_BF16)");
}
