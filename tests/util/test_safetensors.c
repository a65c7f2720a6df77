// tests/util/test_safetensors.c — safetensors reader/writer: round trips of every dtype (with a
// scalar and an empty tensor), header alignment, a specific error for each kind of corrupt file,
// shape/dtype checks on read, atomic saves, and interop with a numpy (+ torch) reader.
#include "test_util.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <sys/resource.h>

#include "util/safetensors.h"

#define PY "/usr/bin/python3"
#define PY_READER "tests/util/safetensors_read.py"

// ---------------------------------------------------------------------------------------------
// A sample set of tensors: every dtype, odd sizes, a scalar, an empty tensor, awkward names
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *name;
    StDtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const void *data;
    int64_t numel;
} Spec;

static float s_f32[6] = {1.5f, -2.25f, 3.0e-8f, 1.0e30f, -0.0f, 0.1f};
static double s_f64[4] = {3.141592653589793, -1e-300, 2.5e300, 1.0 / 3.0};
static int32_t s_i32[8] = {0, 1, -1, 2147483647, -2147483647 - 1, 42, -42, 7};
static int64_t s_i64[3] = {9007199254740992LL, -9007199254740992LL, 123456789012LL};  // +-2^53
static uint8_t s_u8[5] = {0, 1, 127, 128, 255};
// bf16: 1, -2, ~1/3, the largest finite, the smallest subnormal, -0
static uint16_t s_bf16[6] = {0x3F80, 0xC000, 0x3EAB, 0x7F7F, 0x0001, 0x8000};
static uint16_t s_u16[4] = {0, 1, 65535, 40000};
static uint16_t s_f16[4] = {0x3C00, 0xC000, 0x3555, 0x7BFF};  // 1, -2, ~1/3, 65504
static int8_t s_i8[3] = {-128, 0, 127};
static int16_t s_i16[2] = {-32768, 32767};
static uint32_t s_u32[2] = {0, 4294967295u};
static uint64_t s_u64[2] = {0, 9007199254740993ULL};  // 2^53 + 1 (exact only as an integer)
static uint8_t s_bool[3] = {1, 0, 1};
static float s_scalar = 2.75f;

static const Spec SPECS[] = {
    {"transformer.wte.weight", ST_F32, 2, {2, 3}, s_f32, 6},
    {"u8.odd", ST_U8, 1, {5}, s_u8, 5},  // 5 bytes: everything after it would be misaligned
    {"f64", ST_F64, 2, {2, 2}, s_f64, 4},
    {"ints/i32", ST_I32, 3, {2, 2, 2}, s_i32, 8},
    {"i64", ST_I64, 1, {3}, s_i64, 3},
    {"bf16", ST_BF16, 2, {3, 2}, s_bf16, 6},
    {"u16", ST_U16, 1, {4}, s_u16, 4},
    {"f16", ST_F16, 2, {2, 2}, s_f16, 4},
    {"i8", ST_I8, 1, {3}, s_i8, 3},
    {"i16", ST_I16, 1, {2}, s_i16, 2},
    {"u32", ST_U32, 1, {2}, s_u32, 2},
    {"u64", ST_U64, 1, {2}, s_u64, 2},
    {"bool", ST_BOOL, 1, {3}, s_bool, 3},
    {"scalar", ST_F32, 0, {0}, &s_scalar, 1},
    {"empty", ST_F32, 2, {0, 4}, NULL, 0},
    {"wéird \"name\" \\ ü", ST_F32, 1, {1}, &s_scalar, 1},
};
#define N_SPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

static const char *META[][2] = {
    {"format", "pt"},
    {"step", "1234"},
    {"note", "quote \" backslash \\ newline \n ünïcode"},
};
#define N_META ((int)(sizeof META / sizeof META[0]))

static StWriter *sample_writer(void) {
    StWriter *w = st_writer_new();
    for (int i = 0; i < N_SPECS; i++)
        assert_int_equal(st_add(w, SPECS[i].name, SPECS[i].dtype, SPECS[i].shape, SPECS[i].ndim,
                                SPECS[i].data), 0);
    st_meta(w, "format", "replaced below");
    for (int i = 0; i < N_META; i++) assert_int_equal(st_meta(w, META[i][0], META[i][1]), 0);
    return w;
}

static char *save_sample(const char *dir, const char *file) {
    char *path = path_join(dir, file);
    StWriter *w = sample_writer();
    if (st_save(w, path) != 0) fail_msg("st_save: %s", err_msg());
    st_writer_free(w);
    return path;
}

static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

// Element i of a sample tensor as a double (what a reader on the other side should see).
static double elem(const Spec *s, int64_t i) {
    const void *d = s->data;
    switch (s->dtype) {
    case ST_F32: return ((const float *)d)[i];
    case ST_F64: return ((const double *)d)[i];
    case ST_I32: return ((const int32_t *)d)[i];
    case ST_I64: return (double)((const int64_t *)d)[i];
    case ST_U8: case ST_BOOL: return ((const uint8_t *)d)[i];
    case ST_I8: return ((const int8_t *)d)[i];
    case ST_I16: return ((const int16_t *)d)[i];
    case ST_U16: return ((const uint16_t *)d)[i];
    case ST_U32: return ((const uint32_t *)d)[i];
    case ST_U64: return (double)((const uint64_t *)d)[i];
    case ST_F16: return half_to_double(((const uint16_t *)d)[i]);
    case ST_BF16: {
        uint32_t bits = (uint32_t)((const uint16_t *)d)[i] << 16;
        float f;
        memcpy(&f, &bits, 4);
        return f;
    }
    default: fail_msg("dtype %d", s->dtype);
    }
    return 0;
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

// ---------------------------------------------------------------------------------------------
// Round trip and layout
// ---------------------------------------------------------------------------------------------

static void test_roundtrip_all_dtypes(void **state) {
    (void)state;
    char *dir = test_tmpdir("st"), *path = save_sample(dir, "m.safetensors");
    StFile *f = st_open(path);
    if (!f) fail_msg("st_open: %s", err_msg());
    assert_string_equal(st_path(f), path);
    assert_int_equal(st_count(f), N_SPECS);
    for (int i = 0; i < N_SPECS; i++) {
        const Spec *s = &SPECS[i];
        const StTensor *t = st_tensor(f, i);  // header order == order added
        assert_string_equal(t->name, s->name);
        assert_ptr_equal(st_get(f, s->name), t);
        assert_int_equal(t->dtype, s->dtype);
        assert_int_equal(t->ndim, s->ndim);
        for (int d = 0; d < s->ndim; d++) assert_int_equal(t->shape[d], s->shape[d]);
        assert_int_equal(t->numel, s->numel);
        assert_int_equal(t->nbytes, (size_t)s->numel * st_dtype_size(s->dtype));
        if (t->nbytes) assert_memory_equal(t->data, s->data, t->nbytes);
        // aligned to the element size: the buffer starts at a multiple of 8 in a page-aligned
        // mapping, and the writer lays tensors out largest element first
        assert_int_equal((uintptr_t)t->data % st_dtype_size(t->dtype), 0);
    }
    assert_null(st_tensor(f, N_SPECS));
    assert_null(st_get(f, "absent"));
    // the scalar and the empty tensor
    const StTensor *sc = st_get(f, "scalar"), *em = st_get(f, "empty");
    assert_int_equal(sc->ndim, 0);
    assert_int_equal(sc->numel, 1);
    assert_true(*(const float *)sc->data == 2.75f);
    assert_int_equal(em->numel, 0);
    assert_int_equal(em->nbytes, 0);
    // typed reads
    float f32[6], scalar = 0;
    int64_t shape23[] = {2, 3}, shape04[] = {0, 4};
    assert_int_equal(st_read_f32(f, "transformer.wte.weight", f32, shape23, 2), 0);
    assert_memory_equal(f32, s_f32, sizeof f32);
    assert_int_equal(st_read_f32(f, "scalar", &scalar, NULL, 0), 0);
    assert_true(scalar == 2.75f);
    assert_int_equal(st_read_f32(f, "empty", NULL, shape04, 2), 0);
    int64_t i64[3], shape3[] = {3};
    assert_int_equal(st_read(f, "i64", ST_I64, i64, shape3, 1), 0);
    assert_memory_equal(i64, s_i64, sizeof i64);
    // metadata: all keys, the replaced value, escapes survive
    assert_int_equal(st_meta_count(f), N_META);
    for (int i = 0; i < N_META; i++) {
        const char *v = NULL;
        assert_string_equal(st_meta_at(f, i, &v), META[i][0]);
        assert_string_equal(v, META[i][1]);
        assert_string_equal(st_get_meta(f, META[i][0]), META[i][1]);
    }
    assert_null(st_get_meta(f, "absent"));
    st_close(f);

    // a file with no tensors and no metadata is valid too
    StWriter *w = st_writer_new();
    assert_int_equal(st_save(w, path), 0);
    st_writer_free(w);
    f = st_open(path);
    if (!f) fail_msg("st_open (empty file): %s", err_msg());
    assert_int_equal(st_count(f), 0);
    assert_int_equal(st_meta_count(f), 0);
    st_close(f);
    remove_tree(dir);
    free(dir);
    free(path);
}

static void test_header_padded_to_8(void **state) {
    (void)state;
    char *dir = test_tmpdir("stalign"), *path = path_join(dir, "a.safetensors");
    int pads_seen = 0;  // bit p set when the JSON needed p spaces of padding
    for (int len = 1; len <= 16; len++) {
        char name[32];
        memset(name, 'x', (size_t)len);
        name[len] = 0;
        double v[3] = {1, 2, 3};
        int64_t shape[] = {3};
        StWriter *w = st_writer_new();
        assert_int_equal(st_add(w, name, ST_F64, shape, 1, v), 0);
        assert_int_equal(st_save(w, path), 0);
        st_writer_free(w);
        size_t n;
        char *raw = read_file(path, &n);
        uint64_t hl;
        memcpy(&hl, raw, 8);
        assert_int_equal((8 + hl) % 8, 0);  // the data starts at a multiple of 8
        assert_int_equal(n, 8 + hl + sizeof v);
        size_t json_end = 8 + hl;
        while (raw[json_end - 1] == ' ') json_end--;
        assert_int_equal(raw[json_end - 1], '}');
        assert_true(8 + hl - json_end < 8);
        pads_seen |= 1 << (8 + hl - json_end);
        assert_memory_equal(raw + 8 + hl, v, sizeof v);
        free(raw);
        StFile *f = st_open(path);
        if (!f) fail_msg("st_open: %s", err_msg());
        assert_int_equal((uintptr_t)st_get(f, name)->data % 8, 0);
        st_close(f);
    }
    assert_int_equal(pads_seen, 0xff);  // every padding amount 0..7 occurred
    remove_tree(dir);
    free(dir);
    free(path);
}

// ---------------------------------------------------------------------------------------------
// Corrupt files: each a specific error naming the file (and the tensor)
// ---------------------------------------------------------------------------------------------

// Write "8-byte length, header, data" to path. For readability the header is written with
// single quotes, which become double quotes.
static void write_raw(const char *path, const char *header, const void *data, size_t dlen) {
    uint64_t n = strlen(header);
    size_t len = 8 + n + dlen;
    char *buf = malloc(len);
    memcpy(buf, &n, 8);
    for (uint64_t i = 0; i < n; i++) buf[8 + i] = header[i] == '\'' ? '"' : header[i];
    if (dlen) memcpy(buf + 8 + n, data, dlen);
    test_write_file(path, buf, len);
    free(buf);
}

#define EXPECT_OPEN_ERROR(path, needle, needle2)                                 \
    do {                                                                         \
        StFile *f_ = st_open(path);                                              \
        if (f_) {                                                                \
            st_close(f_);                                                        \
            fail_msg("st_open accepted a bad file; expected \"%s\"", (needle));  \
        }                                                                        \
        assert_error_contains(path);                                             \
        assert_error_contains(needle);                                           \
        assert_error_contains(needle2);  /* "" when there is no second needle */ \
    } while (0)

#define EXPECT_HEADER_ERROR(path, header, dlen, needle, needle2)  \
    do {                                                          \
        write_raw(path, header, zeros, dlen);                     \
        EXPECT_OPEN_ERROR(path, needle, needle2);                 \
    } while (0)

// st_open_mem is what st_open runs on the mapped file: the same tensors, from caller memory.
static void test_open_from_memory(void **state) {
    (void)state;
    char *dir = test_tmpdir("stmem"), *path = path_join(dir, "m.safetensors");
    float w[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    StWriter *wr = st_writer_new();
    st_add(wr, "w", ST_F32, shape, 2, w);
    st_meta(wr, "k", "v");
    assert_int_equal(st_save(wr, path), 0);
    st_writer_free(wr);
    size_t len;
    char *bytes = read_file(path, &len);
    StFile *f = st_open_mem(bytes, len, "mem.safetensors");
    assert_non_null(f);
    assert_string_equal(st_path(f), "mem.safetensors");
    const StTensor *t = st_get(f, "w");
    assert_non_null(t);
    assert_ptr_equal(t->data, bytes + 8 + (len - 8 - sizeof w));
    float back[6];
    assert_int_equal(st_read_f32(f, "w", back, shape, 2), 0);
    assert_memory_equal(back, w, sizeof w);
    assert_string_equal(st_get_meta(f, "k"), "v");
    st_close(f);
    assert_null(st_open_mem(bytes, 7, "mem.safetensors"));
    assert_error_contains("mem.safetensors: the file is only 7 bytes");
    assert_null(st_open_mem(bytes, len - 1, "mem.safetensors"));
    assert_error_contains("mem.safetensors");
    free(bytes);
    remove_tree(dir);
    free(path);
    free(dir);
}

static void test_corrupt_files(void **state) {
    (void)state;
    static const char zeros[64];
    char *dir = test_tmpdir("stbad"), *path = path_join(dir, "bad.safetensors");

    // missing file, folder
    char *missing = path_join(dir, "nope.safetensors");
    EXPECT_OPEN_ERROR(missing, "cannot open", "No such file");
    EXPECT_OPEN_ERROR(dir, "is a folder", "");
    // too short for the length field
    test_write_file(path, "\x10\0\0\0\0", 5);
    EXPECT_OPEN_ERROR(path, "only 5 bytes, too short", "");
    // header length beyond the file; absurd header length
    uint8_t hdr[20] = {0xe8, 0x03};  // 1000
    test_write_file(path, hdr, sizeof hdr);
    EXPECT_OPEN_ERROR(path, "header length field says 1000 bytes, but only 12", "truncated");
    memset(hdr, 0xff, 8);
    test_write_file(path, hdr, sizeof hdr);
    EXPECT_OPEN_ERROR(path, "header length field says 18446744073709551615", "");
    // not JSON / not an object / trailing bytes
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': ", 0, "is not valid JSON", "");
    EXPECT_HEADER_ERROR(path, "[1, 2]", 0, "does not start with '{'", "");
    EXPECT_HEADER_ERROR(path, "{} x", 0, "extra bytes after the JSON object", "");
    EXPECT_HEADER_ERROR(path, "{'w': 3}", 0, "tensor w: its header entry is not a JSON object", "");
    // a metadata key twice: st_get_meta would read the first, Python's reader (a dict) the last
    // (tests/fuzz/corpus/safetensors/duplicate_metadata_key.safetensors)
    EXPECT_HEADER_ERROR(path, "{'__metadata__': {'format': 'frontier', 'step': '2', 'format': 'x'}}", 0,
                        "metadata key \"format\" appears twice", "");
    // entries missing a field, or with bad values
    EXPECT_HEADER_ERROR(path, "{'w': {'shape': [1], 'data_offsets': [0, 4]}}", 4,
                        "tensor w has no \"dtype\"", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'data_offsets': [0, 4]}}", 4,
                        "tensor w has no \"shape\"", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [1]}}", 4,
                        "tensor w has no \"data_offsets\"", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F8_E4M3', 'shape': [1], 'data_offsets': [0, 1]}}",
                        1,
                        "tensor w has dtype \"F8_E4M3\", which is not supported", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [-1], 'data_offsets': [0, 4]}}", 4,
                        "tensor w: shape entry 0 is not a non-negative integer", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [1,1,1,1,1,1,1,1,1], "
                              "'data_offsets': [0, 4]}}", 4, "tensor w has 9 dimensions", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0.5, 4]}}", 4,
                        "tensor w: data_offsets must be [begin, end]", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [1], 'data_offsets': [4, 0]}}", 4,
                        "tensor w: data_offsets must be [begin, end]", "");
    // offsets out of range (truncated data)
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]}}", 4,
                        "tensor w: data_offsets [0, 8] are out of range",
                        "buffer has only 4 bytes");
    // size does not match dtype and shape
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [2, 2], 'data_offsets': [0, 12]}}",
                        12,
                        "tensor w is F32 with shape (2, 2), which takes 16 bytes, but its "
                        "data_offsets [0, 12] span 12 bytes", "");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'BF16', 'shape': [3], 'data_offsets': [0, 3]}}", 3,
                        "tensor w is BF16 with shape (3,), which takes 6 bytes", "");
    // overlapping tensors; a gap; trailing bytes
    EXPECT_HEADER_ERROR(path, "{'a': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]}, "
                              "'b': {'dtype': 'F32', 'shape': [1], 'data_offsets': [4, 8]}}", 8,
                        "tensors a (bytes [0, 8]) and b (bytes [4, 8]) overlap", "");
    EXPECT_HEADER_ERROR(path, "{'a': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0, 4]}, "
                              "'b': {'dtype': 'F32', 'shape': [1], 'data_offsets': [8, 12]}}", 12,
                        "bytes [4, 8) of the data buffer belong to no tensor",
                        "a gap before tensor b");
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0, 4]}}", 12,
                        "8 bytes after the last tensor w belong to no tensor", "");
    // duplicate names; bad metadata
    EXPECT_HEADER_ERROR(path, "{'w': {'dtype': 'U8', 'shape': [1], 'data_offsets': [0, 1]}, "
                              "'w': {'dtype': 'U8', 'shape': [1], 'data_offsets': [1, 2]}}", 2,
                        "tensor w appears twice", "");
    EXPECT_HEADER_ERROR(path, "{'__metadata__': {'step': 5}}", 0,
                        "key \"step\" has a non-string value", "");
    EXPECT_HEADER_ERROR(path, "{'__metadata__': [1]}", 0, "\"__metadata__\" must be an object", "");
    // a good hand-made file opens (the checks above are not just refusing everything), with
    // trailing spaces after the JSON, an empty tensor and a scalar
    write_raw(path, "{'__metadata__': {'k': 'v'}, 'w': {'dtype': 'F32', 'shape': [1], "
                    "'data_offsets': [0, 4]}, 'e': {'dtype': 'F32', 'shape': [0], "
                    "'data_offsets': [4, 4]}, 's': {'dtype': 'I32', 'shape': [], "
                    "'data_offsets': [4, 8]}}  ", zeros, 8);
    StFile *f = st_open(path);
    if (!f) fail_msg("st_open: %s", err_msg());
    assert_string_equal(st_get_meta(f, "k"), "v");
    assert_int_equal(st_count(f), 3);
    assert_int_equal(st_get(f, "s")->ndim, 0);
    st_close(f);

    // a real file cut short
    char *good = save_sample(dir, "good.safetensors");
    size_t n;
    char *raw = read_file(good, &n);
    test_write_file(path, raw, n - 3);
    EXPECT_OPEN_ERROR(path, "are out of range", "truncated");
    free(raw);
    free(good);
    free(missing);
    remove_tree(dir);
    free(dir);
    free(path);
}

// ---------------------------------------------------------------------------------------------
// Reading with expectations: missing tensor, wrong shape, wrong dtype
// ---------------------------------------------------------------------------------------------

static void test_read_checks(void **state) {
    (void)state;
    char *dir = test_tmpdir("stread"), *path = path_join(dir, "model.safetensors");
    float q[16] = {0};
    double d[2] = {1, 2};
    int64_t s44[] = {4, 4}, s2[] = {2};
    StWriter *w = st_writer_new();
    assert_int_equal(st_add(w, "transformer.h.0.attn.c_q.weight", ST_F32, s44, 2, q), 0);
    assert_int_equal(st_add(w, "d", ST_F64, s2, 1, d), 0);
    assert_int_equal(st_save(w, path), 0);
    st_writer_free(w);
    StFile *f = st_open(path);
    if (!f) fail_msg("st_open: %s", err_msg());
    float out[64];
    int64_t s88[] = {8, 8}, s16[] = {16};

    assert_int_equal(st_read_f32(f, "transformer.h.0.attn.c_k.weight", out, s44, 2), -1);
    assert_error_contains(path);
    assert_error_contains("no tensor transformer.h.0.attn.c_k.weight (the file has 2 tensors");

    assert_int_equal(st_read_f32(f, "transformer.h.0.attn.c_q.weight", out, s88, 2), -1);
    char want[512];
    snprintf(want, sizeof want, "%s: tensor transformer.h.0.attn.c_q.weight has shape (4, 4), the "
             "config expects (8, 8)", path);
    assert_error_contains(want);
    assert_int_equal(st_read_f32(f, "transformer.h.0.attn.c_q.weight", out, s16, 1), -1);
    assert_error_contains("has shape (4, 4), the config expects (16,)");

    assert_int_equal(st_read_f32(f, "d", out, s2, 1), -1);
    assert_error_contains(path);
    assert_error_contains("tensor d has dtype F64, expected F32");
    double dd[2];
    assert_int_equal(st_read(f, "d", ST_F64, dd, s2, 1), 0);
    assert_memory_equal(dd, d, sizeof d);
    st_close(f);
    remove_tree(dir);
    free(dir);
    free(path);
}

// ---------------------------------------------------------------------------------------------
// Writer errors and atomic saves
// ---------------------------------------------------------------------------------------------

static void test_writer_errors(void **state) {
    (void)state;
    char *dir = test_tmpdir("stwerr"), *path = path_join(dir, "w.safetensors");
    float x[4] = {0};
    int64_t s4[] = {4}, neg[] = {-1}, big[] = {INT64_MAX, 4}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    StWriter *w = st_writer_new();
    assert_int_equal(st_add(w, "x", ST_F32, s4, 1, x), 0);
    assert_int_equal(st_add(w, "x", ST_F32, s4, 1, x), -1);
    assert_error_contains("tensor x added twice");
    assert_int_equal(st_add(w, "__metadata__", ST_F32, s4, 1, x), -1);
    assert_error_contains("reserved");
    assert_int_equal(st_add(w, "", ST_F32, s4, 1, x), -1);
    assert_error_contains("non-empty name");
    assert_int_equal(st_add(w, "n", ST_F32, neg, 1, x), -1);
    assert_error_contains("tensor n has shape (-1,)");
    assert_int_equal(st_add(w, "big", ST_F32, big, 2, x), -1);
    assert_error_contains("tensor big has shape");
    assert_int_equal(st_add(w, "nine", ST_F32, s9, 9, x), -1);
    assert_error_contains("tensor nine has 9 dimensions");
    assert_int_equal(st_add(w, "null", ST_F32, s4, 1, NULL), -1);
    assert_error_contains("tensor null has 16 bytes but no data");
    assert_int_equal(st_add(w, "dt", (StDtype)99, s4, 1, x), -1);
    assert_error_contains("tensor dt has an invalid dtype");
    // st_save fails with the first error, and writes nothing
    assert_int_equal(st_save(w, path), -1);
    assert_error_contains(path);
    assert_error_contains("tensor x added twice");
    assert_int_equal(count_entries(dir), 0);
    st_writer_free(w);
    remove_tree(dir);
    free(dir);
    free(path);
}

static void test_failed_save_keeps_existing_file(void **state) {
    (void)state;
    char *dir = test_tmpdir("statomic"), *path = save_sample(dir, "m.safetensors");
    size_t n0;
    char *before = read_file(path, &n0);

    // into a missing folder
    char *nowhere = path_join(dir, "missing/m.safetensors");
    StWriter *w = sample_writer();
    assert_int_equal(st_save(w, nowhere), -1);
    assert_error_contains(nowhere);
    st_writer_free(w);

    // over the good file, failing halfway: a file-size limit makes write() fail with EFBIG
    // (like a full disk); the good file must survive and no temp file may be left
    static float bigbuf[16384];
    int64_t shape[] = {16384};
    w = st_writer_new();
    assert_int_equal(st_add(w, "big", ST_F32, shape, 1, bigbuf), 0);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 8192;
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = st_save(w, path);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(rc, -1);
    assert_error_contains(path);
    st_writer_free(w);
    size_t n1;
    char *after = read_file(path, &n1);
    assert_int_equal(n1, n0);
    assert_memory_equal(after, before, n0);
    assert_int_equal(count_entries(dir), 1);  // no m.safetensors.tmp-* left
    StFile *f = st_open(path);
    if (!f) fail_msg("st_open: %s", err_msg());
    assert_int_equal(st_count(f), N_SPECS);
    st_close(f);

    free(before);
    free(after);
    free(nowhere);
    remove_tree(dir);
    free(dir);
    free(path);
}

// ---------------------------------------------------------------------------------------------
// Interop: a numpy reader (and torch.from_numpy, when torch is there) sees the same file
// ---------------------------------------------------------------------------------------------

static char *run_capture(const char *cmd, int *status) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got; (got = fread(buf + n, 1, cap - 1 - n, p)) > 0;) {
        n += got;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    *status = pclose(p);
    return buf;
}

static void test_python_reader_interop(void **state) {
    (void)state;
    if (access(PY, X_OK) != 0) {
        print_message("SKIP: %s not found; install python3 and python3-numpy to run the "
                      "safetensors interop check\n", PY);
        skip();
    }
    if (system(PY " -c 'import numpy' >/dev/null 2>&1") != 0) {
        print_message("SKIP: numpy is missing for %s; install python3-numpy to run the "
                      "safetensors interop check\n", PY);
        skip();
    }
    assert_int_equal(access(PY_READER, R_OK), 0);
    char *dir = test_tmpdir("stpy"), *path = save_sample(dir, "m.safetensors");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, PY " " PY_READER " '%s'", path);
    int status;
    char *out = run_capture(cmd, &status);
    if (status != 0) fail_msg("%s failed (status %d); its stderr is above", cmd, status);
    cJSON *root = cJSON_Parse(out);
    if (!root) fail_msg("%s printed no JSON: %.500s", cmd, out);

    uint64_t hl = (uint64_t)cJSON_GetObjectItem(root, "header_len")->valuedouble;
    assert_int_equal((8 + hl) % 8, 0);
    // metadata: same keys and values
    cJSON *meta = cJSON_GetObjectItem(root, "metadata");
    assert_int_equal(cJSON_GetArraySize(meta), N_META);
    for (int i = 0; i < N_META; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, META[i][0]);
        assert_true(cJSON_IsString(v));
        assert_string_equal(v->valuestring, META[i][1]);
    }
    // tensors: header order, names, dtypes, shapes, every value exactly
    cJSON *tensors = cJSON_GetObjectItem(root, "tensors");
    assert_int_equal(cJSON_GetArraySize(tensors), N_SPECS);
    int i = 0;
    for (cJSON *t = tensors->child; t; t = t->next, i++) {
        const Spec *s = &SPECS[i];
        assert_string_equal(cJSON_GetObjectItem(t, "name")->valuestring, s->name);
        assert_string_equal(cJSON_GetObjectItem(t, "dtype")->valuestring, st_dtype_name(s->dtype));
        cJSON *shape = cJSON_GetObjectItem(t, "shape");
        assert_int_equal(cJSON_GetArraySize(shape), s->ndim);
        int d = 0;
        for (cJSON *x = shape->child; x; x = x->next, d++)
            assert_int_equal((int64_t)x->valuedouble, s->shape[d]);
        cJSON *vals = cJSON_GetObjectItem(t, "values");
        assert_int_equal(cJSON_GetArraySize(vals), s->numel);
        int64_t k = 0;
        for (cJSON *v = vals->child; v; v = v->next, k++) {
            double want = elem(s, k);
            double got = cJSON_IsBool(v) ? (cJSON_IsTrue(v) ? 1 : 0) : v->valuedouble;
            if (!(got == want) || signbit(got) != signbit(want))
                fail_msg("tensor %s element %lld: python reads %.17g, wrote %.17g", s->name,
                         (long long)k, got, want);
        }
    }
    // the u64 beyond 2^53 compares equal as a double above; its exact digits are in the output
    assert_non_null(strstr(out, "9007199254740993"));
    const char *torch = cJSON_GetObjectItem(root, "torch")->valuestring;
    print_message("python reader: %s; torch check: %s\n", PY_READER, torch);
    assert_true(strncmp(torch, "ok", 2) == 0 || strncmp(torch, "absent", 6) == 0);
    cJSON_Delete(root);
    free(out);

    // and the Python reader refuses a corrupt file (it really checks)
    size_t n;
    char *raw = read_file(path, &n);
    test_write_file(path, raw, n - 1);
    free(raw);
    snprintf(cmd, sizeof cmd, PY " " PY_READER " '%s' 2>/dev/null", path);
    out = run_capture(cmd, &status);
    assert_int_not_equal(status, 0);
    free(out);
    remove_tree(dir);
    free(dir);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_dtypes),
        cmocka_unit_test(test_header_padded_to_8),
        cmocka_unit_test(test_open_from_memory),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_read_checks),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_failed_save_keeps_existing_file),
        cmocka_unit_test(test_python_reader_interop),
    };
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
