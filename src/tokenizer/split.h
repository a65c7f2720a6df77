// tokenizer/split.h — the regex pre-splitter (PCRE2, UTF + UCP, JIT).
//
// Text is cut into chunks with the pattern's leftmost, non-overlapping matches, exactly as
// tiktoken's find_iter does; BPE then never merges across chunk boundaries.
//
// Two deliberate details, both for agreement with tiktoken (Rust regex) and Python's `regex`:
// - `\s`/`\S` are rewritten to the Unicode White_Space set before compiling. PCRE2's own \s
//   (with UCP) is \p{Z} ∪ \h ∪ \v, which differs (it includes U+180E).
// - Input need not be valid UTF-8 (PCRE2_MATCH_INVALID_UTF): invalid bytes never match, and each
//   run of bytes between two matches is returned as a chunk of its own, so every byte of the
//   input lands in exactly one chunk and decode(encode(x)) == x for any bytes.
#pragma once
#include <stddef.h>
#include <stdint.h>

// nanochat's split pattern (GPT-4's, with \p{N}{1,2} instead of {1,3}).
#define NANOCHAT_SPLIT_PATTERN                                                                  \
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,2}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|" \
    "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"

typedef struct Splitter Splitter;  // compiled pattern; read-only after creation, share it freely

Splitter *splitter_new(const char *pattern);  // NULL + err_set() on a bad pattern
void splitter_free(Splitter *sp);
const char *splitter_pattern(const Splitter *sp);  // the pattern as given

// Per-thread iteration state (owns PCRE2 match data and a JIT stack).
typedef struct {
    const Splitter *sp;
    void *match_data;     // pcre2_match_data_8 *
    void *match_context;  // pcre2_match_context_8 *
    void *jit_stack;      // pcre2_jit_stack_8 *
    const uint8_t *text;
    size_t len, pos;
    size_t pending_start, pending_end;  // a match found after a gap, returned next
    int has_pending;
} SplitIter;

void split_iter_init(SplitIter *it, const Splitter *sp);
void split_iter_free(SplitIter *it);
void split_iter_reset(SplitIter *it, const uint8_t *text, size_t len);
// Next chunk [*start, *end); returns 1, or 0 at the end of the text, or -1 on a PCRE2 error.
int split_next(SplitIter *it, size_t *start, size_t *end);
