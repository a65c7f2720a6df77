// kernels/gemm/amx_tile_kernel.h — the AMX micro-kernel, written once over a set of tile macros and
// included twice by amx_matmul.c: with the real tile instructions and with the emulator's
// (see amx_matmul.h). No include guard, on purpose.
//
// The includer defines:
//   AMX_NAME(x)             the name of this build's function x (amx_x / amx_emu_x)
//   AMX_FN                  the attributes of the functions that touch tiles
//   TILE_CONFIG(cfg)        load the 64-byte tile configuration
//   TILE_RELEASE()          return the tiles to their initial (unconfigured) state
//   TILE_ZERO(t)            tile t = 0
//   TILE_LOAD(t, p, s)      tile t = the rows at p, s bytes apart
//   TILE_STORE(t, p, s)     the rows of tile t to p, s bytes apart
//   TILE_DP(c, a, b)        tile c += a · b (TDPBF16PS)
// Tile numbers are literal constants (the instructions encode them).
//
// Tiles: 0-3 C (rows 0-15 / 16-31 x columns 0-15 / 16-31), 4-5 A (rows 0-15 / 16-31), 6-7 B
// (columns 0-15 / 16-31); all 16 rows x 64 bytes.

// Load the configuration (palette 1, every tile 16 x 64 bytes). Once per thread and product
// (GemmImpl.begin): loading it also zeroes the tiles, so it is not done per micro-tile.
static AMX_FN void AMX_NAME(begin)(void) { TILE_CONFIG(AMX_TILE_CONFIG); }
static AMX_FN void AMX_NAME(end)(void) { TILE_RELEASE(); }

// C (+)= A · B over `chunks` 32-deep steps for the tiles of the 32 x 32 micro-tile that hold
// any of its rows (two_rows: rows 16-31 too) and columns (two_cols), C at c with row stride ldc
// floats. A's tile rows are `as` bytes apart (rows 16-31 start 16 rows on) and each step's A
// `ac` bytes after the last: a packed strip (64, 2048) or bf16 rows read in place (their stride,
// 64). Not inlined: the tile loads and stores reach memory through pointers the compiler cannot
// see them use.
static AMX_FN __attribute__((noinline)) void AMX_NAME(tiles)(int chunks, const char *ap, size_t as, size_t ac,
                                                               const char *bp, float *c, size_t ldc, int two_rows,
                                                               int two_cols, int load_c) {
    const size_t cs = ldc * sizeof(float);
    if (load_c) {
        TILE_LOAD(0, c, cs);
        if (two_cols) TILE_LOAD(1, c + 16, cs);
        if (two_rows) TILE_LOAD(2, c + 16 * ldc, cs);
        if (two_rows && two_cols) TILE_LOAD(3, c + 16 * ldc + 16, cs);
    } else {
        TILE_ZERO(0);
        TILE_ZERO(1);
        TILE_ZERO(2);
        TILE_ZERO(3);
    }
    for (int kb = 0; kb < chunks; kb++, ap += ac, bp += AMX_B_CHUNK) {
        TILE_LOAD(4, ap, as);
        TILE_LOAD(6, bp, AMX_B_ROW);
        if (two_cols) TILE_LOAD(7, bp + 64, AMX_B_ROW);
        if (two_rows) TILE_LOAD(5, ap + 16 * as, as);
        TILE_DP(0, 4, 6);
        if (two_cols) TILE_DP(1, 4, 7);
        if (two_rows) TILE_DP(2, 5, 6);
        if (two_rows && two_cols) TILE_DP(3, 5, 7);
    }
    TILE_STORE(0, c, cs);
    if (two_cols) TILE_STORE(1, c + 16, cs);
    if (two_rows) TILE_STORE(2, c + 16 * ldc, cs);
    if (two_rows && two_cols) TILE_STORE(3, c + 16 * ldc + 16, cs);
}

// The micro-tile's C (rows [0, mr), columns [0, nr)) (+)= chunks steps of A (as in tiles) · B: a
// whole micro-tile straight in C; an edge tile through a 32 x 32 scratch tile, so that nothing
// of C outside those rows and columns is read or written.
static void AMX_NAME(product)(int chunks, const char *ap, size_t as, size_t ac, const char *bp, float *c, size_t ldc,
                              int mr, int nr, int load_c) {
    if (mr == AMX_MR && nr == AMX_NR) {
        AMX_NAME(tiles)(chunks, ap, as, ac, bp, c, ldc, 1, 1, load_c);
        return;
    }
    _Alignas(64) float t[AMX_MR * AMX_NR];
    if (load_c) {
        memset(t, 0, sizeof t);
        for (int r = 0; r < mr; r++) memcpy(t + r * AMX_NR, c + (size_t)r * ldc, (size_t)nr * sizeof *t);
    }
    AMX_NAME(tiles)(chunks, ap, as, ac, bp, t, AMX_NR, mr > 16, nr > 16, load_c);
    for (int r = 0; r < mr; r++) memcpy(c + (size_t)r * ldc, t + r * AMX_NR, (size_t)nr * sizeof *t);
}

// GemmKernel: A packed.
static void AMX_NAME(kernel)(int kc, const void *ap, const void *bp, float *c, size_t ldc, int mr, int nr,
                             int load_c) {
    AMX_NAME(product)((kc + AMX_DEPTH - 1) / AMX_DEPTH, ap, AMX_A_ROW, AMX_A_CHUNK, bp, c, ldc, mr, nr, load_c);
}

// GemmKernelRows16: A as bf16 rows (row r's k at a[r·lda + k]), which are already a tile's rows
// (k pairs side by side): whole 32-deep steps of 16 or 32 rows are loaded where they lie. A depth
// tail (kc % 32) goes through a packed scratch step, since a tile row would read past kc (values
// that might be NaN, and might not exist); so do strips of other heights, whose last tile would
// read rows past mr. Each element stays one ascending-k chain (C passes through memory exactly
// between the parts), so the bits are those of the packed kernel.
#define AMX_ROWS16_PIECE 256  // depth packed at a time for the other heights (16 KiB of stack)
static void AMX_NAME(kernel_rows16)(int kc, const uint16_t *a, size_t lda, const void *bp, float *c, size_t ldc,
                                    int mr, int nr, int load_c) {
    _Alignas(64) uint16_t t[AMX_ROWS16_PIECE / AMX_DEPTH * AMX_MR * AMX_DEPTH];
    const char *b = bp;
    if (mr != AMX_MR && mr != 16) {
        for (int k0 = 0; k0 < kc; k0 += AMX_ROWS16_PIECE) {
            int d = kc - k0 < AMX_ROWS16_PIECE ? kc - k0 : AMX_ROWS16_PIECE;
            pack_a16_rows(t, a + k0, lda, mr, d);
            AMX_NAME(kernel)(d, t, b + (size_t)(k0 / AMX_DEPTH) * AMX_B_CHUNK, c, ldc, mr, nr, load_c || k0 > 0);
        }
        return;
    }
    int whole = kc / AMX_DEPTH, rest = kc % AMX_DEPTH;
    if (whole) AMX_NAME(product)(whole, (const char *)a, lda * sizeof *a, AMX_DEPTH * sizeof *a, b, c, ldc, mr, nr, load_c);
    if (rest) {
        pack_a16_rows(t, a + (size_t)whole * AMX_DEPTH, lda, mr, rest);
        AMX_NAME(kernel)(rest, t, b + (size_t)whole * AMX_B_CHUNK, c, ldc, mr, nr, load_c || whole);
    }
}

static const GemmImpl AMX_NAME(impl) = {.mr = AMX_MR, .nr = AMX_NR, .kstep = AMX_DEPTH, .elem = sizeof(uint16_t),
                                        .pack_a = amx_pack_a, .pack_b = amx_pack_b, .kernel = AMX_NAME(kernel),
                                        .pack_a16 = amx_pack_a16, .kernel_rows16 = AMX_NAME(kernel_rows16),
                                        .pack_a_pairs = amx_pack_a_pairs, .relu2_rows = avx512_relu2_rows,
                                        .relu2_grad_rows = avx512_relu2_grad_rows,
                                        .mirror_upper = avx512_mirror_upper, .begin = AMX_NAME(begin),
                                        .end = AMX_NAME(end)};

GEMM_DEFINE_ENTRY_POINTS(AMX_PREFIX, AMX_NAME(impl))

// The GemmImpl itself, for the fused head and attention on these tiles (head/amx_head.c,
// attention/amx_attention.c: the AVX512_BF16 code around it).
const GemmImpl *AMX_NAME(gemm_impl)(void) { return &AMX_NAME(impl); }
