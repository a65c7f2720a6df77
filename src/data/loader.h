// data/loader.h — batches of token rows from llm.c shards, nanochat's BOS-aligned best-fit packing.
//
// Documents are the <|bos|>-delimited runs of the shards' tokens: a document is its <|bos|> plus
// the tokens up to the next <|bos|> (or the end of its shard). Each row holds T+1 tokens and is
// built like nanochat's `tokenizing_distributed_data_loader_with_state_bos_bestfit`:
//
//   pos = 0
//   while pos < T+1:
//       while buffer holds < buffer_docs documents: append the next refill_docs from the stream
//       if one or more buffered documents fit in the T+1-pos free slots:
//           take the LARGEST of them (the first in buffer order on ties), whole
//       else:
//           take the SHORTEST buffered document (first on ties), copy its first T+1-pos tokens,
//           discard the rest
//   inputs = row[:-1], targets = row[1:]
//
// A taken document leaves the buffer and the rest keep their order (Python's list.pop), so every
// row starts with <|bos|> and documents are never split across rows (only cropped). Cropping
// discards the rest of a document: on the default corpus (~5,000 tokens a document) that is 67%
// of the tokens at T = 2048 (nanochat: ~35% on its web text).
//
// The document stream, per rank r of W:
//   training (shuffle=1): epoch e (1, 2, ...) visits every document of every shard once, in the
//     order of loader_permutation(seed, e), and rank r takes the documents at positions
//     r, r+W, r+2W, ... of it; the stream never ends (epoch e+1 follows with a new permutation;
//     with same_order, every epoch repeats epoch 1's).
//   fixed rows (fixed_rows=1, training or validation): instead of documents, the stream visits
//     the windows of the token data cut once, in file order, into rows of T+1 tokens that overlap
//     by one (window k = tokens[kT, kT+T], so every token but the first is a target exactly once;
//     the last (n_tokens-1) % T tokens are never targets). Each row is one window, whatever the
//     document boundaries: rows start mid-document and hold the end of one document and the
//     start of the next. The windows are shuffled per epoch as documents are. This is llm.c's and
//     nanoGPT's data order ("row-level" shuffling); the default, documents shuffled then packed,
//     is "document-level".
//   validation (shuffle=0): documents in file order (the shards in the order given), rank r
//     takes documents r, r+W, ...; one pass. When the stream and the buffer run dry, the row being
//     built is left short: its unfilled target positions are -1 (ignore) and rows not started at
//     all are all -1; loader_next() returns that batch, then 0. dl->rows says how many rows of
//     the last batch are real. Ranks may see different numbers of val batches.
//
// A mixture (loader_open_mix, training only): S sources, each a group of shards with a weight
// w_s (its share of the tokens). Each source has the stream above of its own: its documents (or,
// with fixed_rows, its own windows: a window never spans two sources), its own epochs and
// cursor, rank r taking positions r, r+W, ... of each of its epochs, in the order of
// loader_permutation(seed_s, e) with seed_0 = seed and seed_s = mix(seed + s * golden) for s > 0
// (mix = splitmix64's finaliser, golden = 0x9e3779b97f4a7c15). Deficit scheduling on tokens
// decides which source the buffer's next unit comes from:
//   pick the s maximising w_s * P - P_s (ties: the lowest s), where P_s = the tokens of the
//   units source s has given (a document's length; T a window) and P = the sum of them,
// so P_s / P converges to w_s: the picked source is never ahead of its share (the deficits add up
// to 0), so w_s P - P_s stays between -L and (S-1) L, L = the largest unit's tokens. The same rule
// on the tokens placed into rows (U_s, U) decides the source of each row: a row is packed from
// that source's buffered documents only, starting with its kept rests if it has any (best fit
// among them, then among its whole documents as above), and from the next source in that order
// when it has nothing that may go into the row; if no source has, refill_docs more units are
// drawn past buffer_docs, so a mixture's training rows are always full. The shares of the tokens
// trained on then track the weights within a few rows. (Best fit over every source's documents
// would place the sources with the shortest documents first, for as long as the buffer holds
// them; and rests, which may only start a row, would pile up behind longer whole documents.) With
// fixed_rows a row is the unit pulled. Weights are compared as integers (w_s x 2^40, or each
// source's token count for natural shares), so the choices are exact and the same on every
// machine. A mixture is packed differently from its sources concatenated, even with natural shares.
// One source (loader_open, loader_open_tokens) is exactly the stream above.
//
// The whole token data is held in memory (uint16, ~2 bytes a token) plus a small document index.
// Determinism: the stream depends only on the shards, the weights, the config and the seed
// (integer arithmetic only, so it is the same on every machine), and loader_save_state()/
// loader_load_state() resume it exactly.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define LOADER_BUFFER_DOCS 1000  // nanochat's buffer_size
#define LOADER_REFILL_DOCS 128   // nanochat's tokenizer_batch_size: documents appended per refill
#define LOADER_SUBSET_SEED 0x5ab5e7ULL // the permutation that samples a max_tokens subset
#define LOADER_MAX_SOURCES 64     // sources of a mixture

typedef struct {
    int B;            // rows per batch (> 0)
    int T;            // tokens per input row (> 0); a packed row holds T+1
    int rank, world;  // this process reads documents rank, rank+world, ... (0 <= rank < world)
    uint64_t seed;    // shuffle seed (training mode)
    int shuffle;      // 1: training (shuffled per epoch, endless); 0: validation (file order, one pass)
    int buffer_docs;  // keep at least this many documents buffered; 0 = LOADER_BUFFER_DOCS
    int refill_docs;  // documents appended per refill; 0 = LOADER_REFILL_DOCS
    int discard_crops;  // 1: nanochat exactly — the rest of a cropped document is thrown away;
                        // 0 (default): the rest stays in the buffer (starting with the last token
                        // placed, so every token is a target exactly once) and continues in a later
                        // row. Our documents average ~5,000 tokens: discarding would drop ~90% of
                        // the tokens at T = 512 and score val_bpb on document openings only.
    int fixed_rows;     // 1: the stream visits fixed windows of T+1 tokens, not documents (above)
    int same_order;     // 1 (training): every epoch in epoch 1's order; 0: a new order each epoch
    int64_t max_tokens;  // > 0: a fixed subset of whole documents whose tokens add up to at most this
                         // many (at least one document), read again each epoch (one source only);
                         // which documents:
    int subset_first;    // 1: the first documents in file order; 0: a fixed random sample of the whole
                         // data (loader_permutation(LOADER_SUBSET_SEED, 1) visits the documents and
                         // takes each that still fits), kept in file order. The sample is the same for
                         // every seed, so seeds and arms of an experiment train on the same subset,
                         // and it spans the corpus: the file-order prefix is one or two books, a
                         // narrow domain that measures the domain's distance from the validation set
                         // more than repetition.
    int vocab_size;   // > 0: every token of every shard must be < vocab_size (checked once per shard
                      // as it is loaded; an error naming the shard, the token's offset and id).
                      // 0: not checked. Training and evaluation always pass the model's vocab:
                      // an id past it would index past the embedding and the loss rows.
} LoaderConfig;

// B = T = 0 (set them), rank 0 of 1, seed 0, shuffle 1, buffer and refill at nanochat's values,
// vocab_size 0 (set it).
LoaderConfig loader_defaults(void);

// One source of a mixture, as given to loader_open_mix().
typedef struct {
    const char *name;            // names it in errors and loader_source_stats() ("train", "extra_wiki")
    const char *const *shards;   // (n_shards) its llm.c shards, read in this order
    int n_shards;
    const uint16_t *tokens;      // instead of shards when not NULL: one shard's tokens in memory (copied)
    size_t n_tokens;
    double weight;               // its share of the tokens pulled, in (0, 1]; shares are weight / the sum
                                 // of the weights. 0 in every source: natural shares (each source's
                                 // token count), i.e. the sources' tokens in proportion, as if concatenated
} LoaderSource;

// A source's stream inside the loader (read-only for callers; loader_source_stats() says it).
typedef struct {
    char *name;
    int64_t tok_lo, n_tokens;  // its token data: tokens[tok_lo, tok_lo + n_tokens)
    int64_t doc_lo, n_docs;    // its documents: ids doc_lo .. doc_lo + n_docs - 1
    int64_t n_units;           // what its stream visits each epoch: n_docs, or its windows with fixed_rows
    int64_t rank_units;        // this rank's units per epoch: ceil((n_units - rank) / world)
    int64_t weight;            // its weight as an integer (w x 2^40, or n_tokens for natural shares)
    uint64_t seed;             // of its permutations: cfg.seed for source 0, derived for the others
    int32_t *perm;             // (n_units) this epoch's order (training mode; NULL otherwise)
    int64_t epoch;             // 1-based epoch of the last unit taken from it
    int64_t cursor;            // next position of its stream in perm (training) or in file order (val)
    int64_t tokens_pulled;     // tokens of the units taken from its stream (what the schedule balances)
    int64_t tokens_used;       // its tokens placed into rows
} LoaderStream;

// Fields are read-only for callers.
typedef struct {
    LoaderConfig cfg;     // as given, with the 0 = default fields filled in
    int bos_id;
    // the data: every source's, concatenated in the order given
    uint16_t *tokens;     // (n_tokens) every shard's tokens, concatenated in the order given
    int64_t n_tokens;
    int64_t *doc_start;   // (n_docs) index in tokens of each document's <|bos|>
    int32_t *doc_len;     // (n_docs) tokens in each document, its <|bos|> included
    int64_t n_docs;       // in all shards
    int64_t n_units;      // what the streams visit each epoch, summed over the sources
    int64_t rank_docs;    // this rank's units per epoch, summed over the sources
    uint64_t data_hash;   // FNV-1a of n_docs and doc_len; ties a saved state to its data
    // the document streams
    LoaderStream *src;    // (n_src) one per source, in the order given
    int n_src;
    int64_t weight_sum;   // of src[].weight
    // the buffer
    int32_t *buf;         // (buf_cap) buffered document ids, in arrival order
    int32_t *buf_skip;    // (buf_cap) tokens of that document already consumed (0 = a whole document)
    int64_t buf_n, buf_cap;
    int32_t *row;         // (T+1) the row being built
    // progress
    int rows;             // real rows in the last batch: B, or fewer at the end of validation
    int64_t batches;      // batches produced
    int64_t tokens_used;  // document tokens placed into rows
    int64_t tokens_cropped;  // document tokens discarded by cropping
} DataLoader;

// Load the shards (llm.c format, each starting with <|bos|>) and set up the stream. NULL with
// err_set() on a bad config or no documents for this rank, err_usage() on a bad shard (header,
// size, first token, a token id >= cfg->vocab_size).
DataLoader *loader_open(const char *const *shard_paths, int n, int bos_id, const LoaderConfig *cfg);
// The same on one shard's tokens already in memory (copied; origin names them in errors).
DataLoader *loader_open_tokens(const uint16_t *tokens, size_t n_tokens, const char *origin, int bos_id,
                               const LoaderConfig *cfg);
// A mixture of n sources (training mode; 1 <= n <= LOADER_MAX_SOURCES; max_tokens only with one
// source). The same errors, naming the source; a source without documents (or, with fixed_rows,
// without a window of T+1 tokens) is an error.
DataLoader *loader_open_mix(const LoaderSource *sources, int n, int bos_id, const LoaderConfig *cfg);
void loader_free(DataLoader *dl);

// Next batch into inputs (B,T) and targets (B,T), row-major. Returns 1 (a batch; dl->rows of its
// rows are real, the others have all targets -1 and inputs <|bos|>), 0 when validation data has
// run out (nothing written), -1 on error (bad arguments).
int loader_next(DataLoader *dl, int32_t *inputs, int32_t *targets);

// Back to the start of the stream (epoch 1, empty buffer, counters zero), e.g. to evaluate the
// validation set again; the shards are not re-read.
void loader_reset(DataLoader *dl);

// 1-based epoch of the stream position: of source 0's stream in a mixture (loader_source_stats
// gives the others').
int64_t loader_epoch(const DataLoader *dl);
// Document tokens used up so far: placed into rows plus discarded by cropping.
int64_t loader_tokens_consumed(const DataLoader *dl);

// Where one source of the loader stands (0 <= s < dl->n_src).
typedef struct {
    const char *name;        // as given (owned by the loader)
    double share;            // its weight / the sum of the weights: its share of the tokens pulled
    int64_t n_tokens, n_docs;  // its data
    int64_t epoch;           // 1-based epoch of its stream position
    int64_t tokens_pulled;   // tokens of the units taken from its stream so far
    int64_t tokens_used;     // of its tokens, those placed into rows so far
} LoaderSourceStats;
LoaderSourceStats loader_source_stats(const DataLoader *dl, int s);

// Exact resume. The state is a versioned little-endian blob of int64s: a header (magic, version,
// world, rank, seed, shuffle, data hash, the data order), the stream position (source 0's epoch
// and cursor), the counters, then (version 4) the number of sources and per source its document
// and unit counts, weight, epoch, cursor and tokens pulled and used, and the buffered document
// ids. Version 2 states (before fixed_rows and same_order) load as the default order; version 2
// and 3 states (before mixtures) load into a loader of one source only. Save it between
// loader_next() calls; loading it into a loader opened on the same sources (shards and weights)
// with the same rank, world, seed, mode and data order continues the identical batch stream (B, T
// and the buffer size may differ: then the stream resumes at the same data position but packs
// differently; with fixed_rows, T may not, since it cuts the windows). A state of another mixture
// (the number of sources, a source's documents or weight) is refused. Loading checks everything
// and leaves the loader untouched on error.
size_t loader_state_size(const DataLoader *dl);  // bytes of the current state (it varies)
size_t loader_save_state(const DataLoader *dl, void *buf);  // writes loader_state_size() bytes
int loader_load_state(DataLoader *dl, const void *buf, size_t len);

// The document order of epoch e (>= 1) for n documents: Fisher-Yates (i = n-1 down to 1, swap
// perm[i] with perm[j], j uniform in [0, i]) on the identity, driven by splitmix64 started at
// mix(seed ^ mix(e)) (mix = splitmix64's finaliser); j by Lemire's multiply-shift with rejection,
// so unbiased. The same on every machine.
void loader_permutation(uint64_t seed, int64_t epoch, int32_t *perm, int64_t n);
