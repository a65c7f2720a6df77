// bench/bench_encode.c — frontier's encode throughput, measured like tiktoken_bench.mjs does.
//
//   bench_encode TOKDIR [--threads N] [--repeat R] FILE...
//
// Loads the tokenizer and all documents, then times encoding every document (ids only, nothing
// written), best of R passes. Each pass starts with fresh encoders, so the per-chunk cache is
// cold and only helps within the pass — the same footing as tiktoken, which has no cache. Prints
// one JSON line: {"impl":"frontier","threads":N,"bytes":...,"seconds":...,"mb_per_s":...,"tokens":...}.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/corpus.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/timer.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_encode TOKDIR [--threads N] [--repeat R] FILE...\n");
        return 2;
    }
    int threads = 1, repeat = 3;
    const char *tokdir = argv[1];
    const char **files = xmalloc((size_t)argc * sizeof *files);
    int nf = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else files[nf++] = argv[i];
    }
    Tokenizer *tok = tokenizer_load(tokdir);
    if (!tok) { fprintf(stderr, "bench_encode: %s\n", err_msg()); return 1; }
    DocList *lists = xcalloc((size_t)nf, sizeof *lists);
    const char **texts = NULL;
    size_t *lens = NULL, bytes = 0;
    int n = 0;
    for (int f = 0; f < nf; f++) {
        if (corpus_read_file(files[f], &lists[f]) != 0) { fprintf(stderr, "bench_encode: %s\n", err_msg()); return 1; }
        texts = xrealloc(texts, (size_t)(n + lists[f].n) * sizeof *texts);
        lens = xrealloc(lens, (size_t)(n + lists[f].n) * sizeof *lens);
        for (int d = 0; d < lists[f].n; d++, n++) {
            texts[n] = doc_text(&lists[f], d);
            lens[n] = lists[f].len[d];
            bytes += lens[n];
        }
    }
    IdVec *ids = xcalloc((size_t)n, sizeof *ids);
    Encoder **enc = xmalloc((size_t)threads * sizeof *enc);
    double best = 1e30;
    size_t tokens = 0;
    for (int r = 0; r < repeat; r++) {
        for (int t = 0; t < threads; t++) enc[t] = encoder_new(tok);
        double t0 = now_seconds();
        if (encode_batch(enc, threads, texts, lens, n, ids) != 0) { fprintf(stderr, "bench_encode: %s\n", err_msg()); return 1; }
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
        for (int t = 0; t < threads; t++) encoder_free(enc[t]);
    }
    for (int d = 0; d < n; d++) tokens += ids[d].len;
    printf("{\"impl\":\"frontier\",\"threads\":%d,\"bytes\":%zu,\"seconds\":%.4f,\"mb_per_s\":%.2f,\"tokens\":%zu}\n", threads,
           bytes, best, (double)bytes / best / 1e6, tokens);
    for (int d = 0; d < n; d++) idvec_free(&ids[d]);
    for (int f = 0; f < nf; f++) doclist_free(&lists[f]);
    free(ids);
    free(enc);
    free(lists);
    free(texts);
    free(lens);
    free(files);
    tokenizer_free(tok);
    return 0;
}
