// tokenizer/bpe_train.h — BPE training with nanochat/rustbpe semantics.
//
// Documents are cropped to their first `doc_cap` characters (Unicode code points), split with
// the pattern, and the distinct chunks counted (in parallel). Merging then starts from the UTF-8
// bytes of each distinct chunk (id b = byte b) and repeatedly merges the most frequent adjacent
// pair, ties broken by the smallest pair (a, b); the new token gets the next id. Pair counts are
// updated incrementally from each merge's local changes, with a lazy max-heap — the corpus is
// never rescanned. The result is deterministic (thread count does not matter).
#pragma once
#include <stdint.h>

#include "tokenizer/tokenizer.h"

typedef struct {
    int vocab_size;     // total, incl. the 9 special tokens (default 8192 -> 7927 merges)
    int64_t doc_cap;    // characters kept per document (default 10,000)
    int64_t max_chars;  // stop after this many characters in total (default 2e9)
    int threads;        // 0 = OpenMP default
    int verbose;        // progress lines on stderr
} BpeTrainConfig;

BpeTrainConfig bpe_train_defaults(void);

typedef struct BpeTrainer BpeTrainer;

// NULL + err on a bad config (vocab_size < 256 + 9 or > 65536) or pattern.
BpeTrainer *bpe_trainer_new(const char *pattern, const BpeTrainConfig *cfg);
void bpe_trainer_free(BpeTrainer *t);
// Count the chunks of a batch of documents. Returns 1 once max_chars is reached (feed no more),
// 0 to continue, -1 on error.
int bpe_trainer_feed(BpeTrainer *t, const char *const *docs, const size_t *lens, int n_docs);
// Characters and documents taken so far.
int64_t bpe_trainer_chars(const BpeTrainer *t);
int64_t bpe_trainer_docs(const BpeTrainer *t);
// Run the merges and return the tokenizer. NULL + err if the corpus has too few distinct pairs
// for the requested vocabulary. The trainer can be freed afterwards.
Tokenizer *bpe_trainer_finish(BpeTrainer *t);
