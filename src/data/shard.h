// data/shard.h — token shards in llm.c's format.
//
// A shard is a 256 x int32 header (magic 20240520, version 1, token count, rest zero) followed by
// the tokens as little-endian uint16. Every document is prefixed with <|bos|>. Written atomically.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "util/fileio.h"

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256

typedef struct {
    AtomicFile af;
    uint64_t n_tokens;
} ShardWriter;

int shard_writer_open(ShardWriter *w, const char *path);
int shard_writer_append(ShardWriter *w, const uint16_t *tokens, size_t n);
int shard_writer_close(ShardWriter *w);  // writes the header, fsyncs, renames into place
void shard_writer_abort(ShardWriter *w);

// Read a whole shard; checks magic, version and that the size matches the header.
int shard_read(const char *path, uint16_t **tokens, size_t *n_tokens);
// Token count from the header (the size is checked too).
int shard_count(const char *path, size_t *n_tokens);

// Validate a shard's header (the first SHARD_HEADER_INTS int32s, hdr_len bytes of them present)
// for a file of file_size bytes; origin names the file in errors. The one header check that
// shard_read, shard_count and shard_parse all use. -1 + err_usage (a bad input file) on error.
int shard_parse_header(const void *hdr, size_t hdr_len, uint64_t file_size, const char *origin, size_t *n_tokens);
// A whole shard held in memory (len bytes, as on disk): *tokens points into data, which must be
// 2-byte aligned. -1 + err_usage on a bad header or size.
int shard_parse(const void *data, size_t len, const char *origin, const uint16_t **tokens, size_t *n_tokens);
// Every token id must be < vocab_size: an id past the vocabulary would index past the embedding
// and the cross-entropy rows. 0, or -1 + err_usage naming origin, the first bad token's index and
// byte offset in the file, its id and the vocab size. One vectorised pass: 12 ms for the default
// corpus's 44.4M training tokens on one core (3.7 Gtok/s; reading that shard takes ~130 ms).
int shard_check_tokens(const uint16_t *tokens, size_t n, int vocab_size, const char *origin);

// The shards DIR/<prefix>*.bin of a prepared data folder ("train_" or "val_"), sorted by name
// (malloc'ed list; free with free_string_list). -1 + err if there are none.
int shard_list(const char *dir, const char *prefix, char ***out, int *n);
