// tokenizer/tokenizer.h — a byte-level BPE tokenizer with tiktoken semantics.
//
// Ids 0..255 are the raw bytes; ids 256..n_ranks-1 are merged tokens in merge order (the rank);
// the special tokens follow (`<|bos|>` first). Encoding pre-splits the text (split.h) and, per
// chunk, repeatedly merges the adjacent pair whose concatenated bytes have the lowest rank
// (leftmost on ties) — tiktoken's algorithm, so the same ranks give the same ids as tiktoken.
// Special tokens are never parsed out of text.
//
// On disk a tokenizer is a folder with two files:
//   tokenizer.tiktoken  `base64(token bytes) rank` per line (tiktoken's mergeable-ranks format)
//   tokenizer.json      pattern, special tokens and ids, vocab size, id, training settings
// The id is the SHA-256 of the ranks file, the pattern and the special tokens; it names caches.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/split.h"
#include "util/hash.h"

#define TOKENIZER_N_SPECIAL 9
extern const char *const TOKENIZER_SPECIAL_NAMES[TOKENIZER_N_SPECIAL];  // `<|bos|>` first

typedef struct {
    int n_ranks;          // mergeable tokens: 256 bytes + merges
    int vocab_size;       // n_ranks + TOKENIZER_N_SPECIAL
    int bos_id;           // id of <|bos|> (= n_ranks)
    char *pattern;        // the split pattern as written in tokenizer.json
    char id[65];          // SHA-256 hex content id
    uint8_t *bytes;       // all token bytes back to back (mergeable tokens, then special names)
    uint64_t *tok_off;    // (vocab_size) offset of each token's bytes in `bytes`
    uint32_t *tok_len;    // (vocab_size) byte length (for specials: length of the name)
    int32_t *token_bytes; // (vocab_size) bytes a token stands for in text; 0 for specials
    BytesMap ranks;       // token bytes -> rank, for the mergeable tokens
    Splitter *splitter;   // compiled pattern
    // Training provenance, saved in tokenizer.json (0 / "" when unknown).
    int64_t doc_cap, max_chars, train_chars, train_docs;
} Tokenizer;

// Build from mergeable token byte strings in rank order (tokens[i] has rank i; 0..255 must be
// the single bytes). Computes the id. NULL + err on invalid input (duplicate tokens, ...).
Tokenizer *tokenizer_build(const uint8_t *const *tokens, const uint32_t *lens, int n_ranks, const char *pattern);
void tokenizer_free(Tokenizer *tok);

int tokenizer_save(const Tokenizer *tok, const char *dir);  // atomic per file; creates dir
Tokenizer *tokenizer_load(const char *dir);                 // validates both files and the id
// tokenizer_load on the two files' contents held in memory (need not be NUL-terminated);
// meta_origin and ranks_origin name them in errors. A malformed file is an err_usage error
// (exit 2) naming file:line or the key; tokenizer_load reads the files and calls this.
Tokenizer *tokenizer_parse(const char *meta_text, size_t meta_len, const char *meta_origin, const char *ranks_text,
                           size_t ranks_len, const char *ranks_origin);

// ---------------------------------------------------------------------------------------------
// Encoding and decoding
// ---------------------------------------------------------------------------------------------
typedef struct {
    uint32_t *data;
    size_t len, cap;
} IdVec;
void idvec_push(IdVec *v, uint32_t id);
void idvec_free(IdVec *v);

// Per-thread encoding state: split iterator, chunk cache, scratch. One per thread.
typedef struct Encoder Encoder;
Encoder *encoder_new(const Tokenizer *tok);
void encoder_free(Encoder *enc);
// Append the ids of text[0..len) to out (no BOS). -1 + err only on an internal regex failure.
int encoder_encode(Encoder *enc, const uint8_t *text, size_t len, IdVec *out);
// Encode n documents in parallel (OpenMP, dynamic schedule), one Encoder per thread:
// out[i] receives the ids of texts[i] (cleared first). 0, or -1 + err.
int encode_batch(Encoder *const *enc, int n_threads, const char *const *texts, const size_t *lens, int n, IdVec *out);
// For tests: force the O(n log n) heap merge for every chunk (default: only long chunks).
void encoder_force_heap_merge(Encoder *enc, int on);

// Append the bytes of ids to *out (specials decode to their names). -1 + err on an id >= vocab.
int tokenizer_decode(const Tokenizer *tok, const uint32_t *ids, size_t n, uint8_t **out, size_t *out_len,
                     size_t *out_cap);
