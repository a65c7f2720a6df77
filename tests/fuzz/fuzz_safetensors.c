// tests/fuzz/fuzz_safetensors.c — the safetensors reader (st_open_mem, what st_open runs).
//
// Input: a file's bytes. Every tensor of a file that opens is looked up by name and read with
// its own dtype and shape (st_read copies all its bytes), its data must lie inside the input,
// and writing the tensors and metadata back (st_save) and opening that gives the same file
// contents: names, dtypes, shapes, bytes and metadata.
#include "fuzz_util.h"

#include "util/safetensors.h"

static int same_file(const StFile *a, const StFile *b) {
    if (st_count(a) != st_count(b) || st_meta_count(a) != st_meta_count(b)) return 0;
    for (int i = 0; i < st_count(a); i++) {
        const StTensor *x = st_tensor(a, i), *y = st_get(b, x->name);
        if (!y || x->dtype != y->dtype || x->ndim != y->ndim || x->nbytes != y->nbytes ||
            memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof *x->shape) ||
            (x->nbytes && memcmp(x->data, y->data, x->nbytes)))
            return 0;
    }
    for (int i = 0; i < st_meta_count(a); i++) {
        const char *v, *k = st_meta_at(a, i, &v), *w = st_get_meta(b, k);
        if (!w || strcmp(v, w)) return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);  // exactly size bytes: ASan sees a read past the end
    memcpy(copy, data, size);
    StFile *f = st_open_mem(copy, size, "fuzz.safetensors");
    if (!f) {
        fuzz_expect_message();
        free(copy);
        return 0;
    }
    StWriter *w = st_writer_new();
    for (int i = 0; i < st_count(f); i++) {
        const StTensor *t = st_tensor(f, i);
        FUZZ_CHECK(st_get(f, t->name) == t, "st_get(%s) finds another tensor", t->name);
        FUZZ_CHECK((const uint8_t *)t->data >= copy && t->nbytes <= size &&
                       (const uint8_t *)t->data - copy <= (ptrdiff_t)(size - t->nbytes),
                   "tensor %s lies outside the file", t->name);
        FUZZ_CHECK(t->nbytes == (size_t)t->numel * st_dtype_size(t->dtype), "tensor %s: nbytes", t->name);
        void *dst = malloc(t->nbytes ? t->nbytes : 1);
        FUZZ_CHECK(st_read(f, t->name, t->dtype, dst, t->shape, t->ndim) == 0, "st_read(%s): %s", t->name, err_msg());
        FUZZ_CHECK(!t->nbytes || !memcmp(dst, t->data, t->nbytes), "st_read(%s) copied other bytes", t->name);
        free(dst);
        char shape[256];
        st_shape_str(t->shape, t->ndim, shape, sizeof shape);
        st_add(w, t->name, t->dtype, t->shape, t->ndim, t->data);
    }
    for (int i = 0; i < st_meta_count(f); i++) {
        const char *v, *k = st_meta_at(f, i, &v);
        FUZZ_CHECK(st_get_meta(f, k), "metadata %s not found", k);
        st_meta(w, k, v);
    }
    // Names the writer refuses (empty, "__metadata__" cannot occur) leave nothing to compare.
    const char *path = fuzz_file("rt.safetensors", "", 0);
    if (st_save(w, path) == 0) {
        StFile *g = st_open(path);
        FUZZ_CHECK(g, "st_open of st_save's own file failed: %s", err_msg());
        FUZZ_CHECK(same_file(f, g), "the file written back differs");
        st_close(g);
    } else {
        fuzz_expect_message();
    }
    st_writer_free(w);
    st_close(f);
    free(copy);
    return 0;
}
