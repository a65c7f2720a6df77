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

// The shards DIR/<prefix>*.bin of a prepared data folder ("train_" or "val_"), sorted by name
// (malloc'ed list; free with free_string_list). -1 + err if there are none.
int shard_list(const char *dir, const char *prefix, char ***out, int *n);
