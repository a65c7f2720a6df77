// util/safetensors.h — read and write safetensors files (the format of Hugging Face's
// `safetensors` library, which PyTorch checkpoints and nanochat's exports use).
//
// Format: an 8-byte little-endian u64 N, then N bytes of JSON header
//   {"__metadata__": {"key": "value", ...},                      (optional, strings only)
//    "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the data buffer; offsets are relative to the buffer start, tensors are row-major,
// little-endian. The header is padded with spaces so the buffer starts at a multiple of 8.
//
// Writer: tensors are referenced (not copied) until st_save. The header lists them in the
// order added; in the buffer they are laid out by element size, largest first (ties in the
// order added), so every tensor starts at a multiple of its element size — like the reference
// implementation, which also sorts by alignment. The buffer is contiguous (no gaps), as the
// reference requires. st_save writes atomically (temp file, fsync, rename): a failed save never
// replaces an existing file.
//
// Reader: st_open maps the file read-only and validates it as strictly as the reference
// (tensors tile the buffer exactly: no overlaps, no gaps, nothing after the last one). A
// StTensor's data points into the mapping and is valid until st_close; it is aligned to the
// element size for files written by this writer or the reference, but not necessarily for
// other files — st_read / st_read_f32 copy with memcpy and work regardless.
//
// Errors follow util/error.h: -1 / NULL with a message naming the file and the tensor.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8

typedef enum {
    ST_BOOL,  // 1 byte, 0 or 1
    ST_U8,
    ST_I8,
    ST_U16,
    ST_I16,
    ST_F16,
    ST_BF16,
    ST_U32,
    ST_I32,
    ST_F32,
    ST_U64,
    ST_I64,
    ST_F64,
    ST_NUM_DTYPES
} StDtype;

const char *st_dtype_name(StDtype dtype);  // "F32", "BF16", ... ("?" if out of range)
size_t st_dtype_size(StDtype dtype);       // bytes per element (0 if out of range)
// The dtype for a header string ("F32"); -1 if unknown.
int st_dtype_parse(const char *name);

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

typedef struct StWriter StWriter;

StWriter *st_writer_new(void);
// Add a tensor: `shape` has `ndim` dims (0..ST_MAX_DIMS; ndim 0 is a scalar with one element),
// `data` holds numel * st_dtype_size(dtype) bytes (may be NULL when that is 0) and must stay
// valid until st_save. The name and shape are copied. Returns 0, or -1 with err_set (duplicate
// or empty name, "__metadata__", bad dtype/ndim, negative dim, size overflow); the writer then
// remembers the error and st_save fails with it, so checking only st_save's result is enough.
int st_add(StWriter *w, const char *name, StDtype dtype, const int64_t *shape, int ndim,
           const void *data);
// Set a metadata string (both copied); setting a key again replaces its value. Returns 0 / -1.
int st_meta(StWriter *w, const char *key, const char *value);
// Write the file atomically. Returns 0, or -1 with err_set naming the path. The writer can be
// saved again (e.g. to another path) and must still be freed.
int st_save(StWriter *w, const char *path);
void st_writer_free(StWriter *w);

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char *name;
    StDtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];  // shape[0..ndim)
    int64_t numel;               // product of the shape (1 for a scalar, 0 for an empty tensor)
    const void *data;            // into the mapped file; valid until st_close
    size_t nbytes;               // numel * st_dtype_size(dtype)
    size_t offset;               // where the data starts in the buffer (data_offsets[0])
} StTensor;

typedef struct StFile StFile;

// Open and validate. NULL with err_set on any problem (naming the path and the tensor).
StFile *st_open(const char *path);
// The same on a file's bytes held in memory (len bytes; origin names it in errors). The tensors
// point into data, which must stay valid until st_close. st_open maps the file and calls this.
StFile *st_open_mem(const void *data, size_t len, const char *origin);
void st_close(StFile *f);

const char *st_path(const StFile *f);
int st_count(const StFile *f);                     // number of tensors
const StTensor *st_tensor(const StFile *f, int i); // i in [0, st_count): header order
const StTensor *st_get(const StFile *f, const char *name);  // NULL if absent (no error set)
const char *st_get_meta(const StFile *f, const char *key);  // NULL if absent
int st_meta_count(const StFile *f);
// The i-th metadata entry (header order); returns its key and sets *value.
const char *st_meta_at(const StFile *f, int i, const char **value);

// Copy tensor `name` into dst after checking it exists, has `dtype` and exactly the shape
// expect_shape[0..ndim). dst must hold the tensor's nbytes. Returns 0, or -1 with e.g.
// "model.safetensors: tensor transformer.h.0.attn.c_q.weight has shape (256, 256), the config
//  expects (384, 384)".
int st_read(const StFile *f, const char *name, StDtype dtype, void *dst,
            const int64_t *expect_shape, int ndim);
// st_read with ST_F32.
int st_read_f32(const StFile *f, const char *name, float *dst, const int64_t *expect_shape,
                int ndim);

// Format a shape Python-style into buf: "()", "(5,)", "(2, 3)". Returns buf.
char *st_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap);
