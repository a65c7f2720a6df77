// data/prepare.h — corpus -> tokenizer -> token shards, cached.
//
// prepare_run() resolves the train and val inputs, obtains a tokenizer (loads --tokenizer, or
// trains one on the train inputs, cached under CACHE/tokenizers/<key> where the key covers the
// input files' paths, sizes and mtimes and the training settings), then encodes both splits into
// llm.c shards under CACHE/shards/<tokenizer id>-<inputs key>/. That folder is built under a
// temporary name and renamed into place when complete, with manifest.json written last, so a
// crash never leaves a half-built dataset that looks finished; a second run finds it and does
// nothing. The folder also holds a copy of the tokenizer, so it is self-contained.
//
// train_only (an extra training source of a --mix mixture): the train inputs alone are encoded,
// with the tokenizer given (required); the val split is empty (no val_*.bin, "val" in the manifest
// with no shards). The val inputs, when given, are not encoded but still checked to be other files
// than the train inputs: a source must never hold the validation set. The cache key says
// train-only, so such a folder is never taken for a full dataset of the same train inputs.
//
// Shard folder layout:
//   manifest.json          tokenizer id, inputs, per split: shards, docs, tokens, bytes
//   tokenizer/             tokenizer.tiktoken + tokenizer.json
//   train_000000.bin ...   shards of at most shard_tokens tokens (documents never straddle)
//   val_000000.bin ...
#pragma once
#include <stdint.h>

#include "tokenizer/bpe_train.h"

typedef struct {
    const char *const *train;  // files or folders (.jsonl / .txt)
    int n_train;
    const char *const *val;
    int n_val;
    const char *tokenizer_dir;  // use this tokenizer; NULL = train one (cached)
    const char *cache_dir;      // root of the cache (default "cache")
    BpeTrainConfig bpe;         // settings when training
    int64_t shard_tokens;       // max tokens per shard (default 100M, like llm.c)
    int threads;                // 0 = OpenMP default
    int quiet;
    int train_only;             // 1: encode the train inputs only (above); needs tokenizer_dir
} PrepareConfig;

typedef struct {
    int64_t docs, tokens, bytes;  // tokens include one <|bos|> per document
    int shards;
} SplitStats;

typedef struct {
    char data_dir[1024];       // the shard folder
    char tokenizer_dir[1024];  // data_dir/tokenizer
    char tokenizer_id[65];
    int vocab_size;
    int cached;                // 1 if everything was already there
    SplitStats train, val;
} PrepareResult;

PrepareConfig prepare_defaults(void);

// Train a tokenizer on corpus files (documents in file order) with a progress line.
Tokenizer *tokenizer_train_files(char **files, int n_files, const BpeTrainConfig *cfg, int quiet);
int prepare_run(const PrepareConfig *cfg, PrepareResult *res);

// Default corpus locations, relative to the project root (or $FRONTIER_DATA/text/...).
const char *default_data_root(void);  // ../shared/data, or $FRONTIER_DATA
const char *default_train_path(void);
const char *default_val_path(void);
