// tokenizer/split.c — the regex pre-splitter (see split.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/split.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/mem.h"

struct Splitter {
    pcre2_code *code;
    char *pattern;
};

// Unicode White_Space (the set Rust's regex and Python's `regex` use for \s), as class items.
static const char WHITE_SPACE_ITEMS[] =
    "\\t\\n\\x0B\\f\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

// Rewrite \s and \S: inside a class `\s` becomes the items; outside, `[items]` / `[^items]`.
// (`\S` inside a class has no simple item form; the pattern does not use it and we reject it.)
static char *rewrite_whitespace(const char *pat) {
    size_t n = strlen(pat), cap = n * 8 + 256, k = 0;
    char *out = xmalloc(cap);
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = pat[i];
        if (c == '\\' && i + 1 < n) {
            char d = pat[i + 1];
            if (d == 's' || d == 'S') {
                if (in_class && d == 'S') { free(out); err_set("\\S inside a character class is not supported"); return NULL; }
                if (!in_class) out[k++] = '[';
                if (!in_class && d == 'S') out[k++] = '^';
                memcpy(out + k, WHITE_SPACE_ITEMS, sizeof WHITE_SPACE_ITEMS - 1);
                k += sizeof WHITE_SPACE_ITEMS - 1;
                if (!in_class) out[k++] = ']';
            } else {
                out[k++] = c;
                out[k++] = d;
            }
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = 1;
            out[k++] = c;
            if (pat[i + 1] == '^') out[k++] = pat[++i];
            if (pat[i + 1] == ']') out[k++] = pat[++i];  // a leading ']' is a literal
            continue;
        }
        if (in_class && c == ']') in_class = 0;
        out[k++] = c;
    }
    out[k] = 0;
    return out;
}

Splitter *splitter_new(const char *pattern) {
    char *rewritten = rewrite_whitespace(pattern);
    if (!rewritten) return NULL;
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)rewritten, PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &errcode, &erroff, NULL);
    free(rewritten);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(errcode, msg, sizeof msg);
        err_set("bad split pattern: %s (near offset %zu of the rewritten pattern)", (char *)msg, (size_t)erroff);
        return NULL;
    }
    // JIT is an optimisation: without it (e.g. an exotic platform) matching still works.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    Splitter *sp = xmalloc(sizeof *sp);
    sp->code = code;
    sp->pattern = xstrdup(pattern);
    return sp;
}

void splitter_free(Splitter *sp) {
    if (!sp) return;
    pcre2_code_free(sp->code);
    free(sp->pattern);
    free(sp);
}

const char *splitter_pattern(const Splitter *sp) { return sp->pattern; }

void split_iter_init(SplitIter *it, const Splitter *sp) {
    memset(it, 0, sizeof *it);
    it->sp = sp;
    it->match_data = pcre2_match_data_create_from_pattern(sp->code, NULL);
    // Long runs (1 MB of one letter) must not overflow the JIT's default 32 KiB stack.
    it->jit_stack = pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, NULL);
    it->match_context = pcre2_match_context_create(NULL);
    if (!it->match_data || !it->jit_stack || !it->match_context) {
        fprintf(stderr, "frontier: out of memory creating PCRE2 match state\n");
        abort();
    }
    pcre2_jit_stack_assign(it->match_context, NULL, it->jit_stack);
}

void split_iter_free(SplitIter *it) {
    pcre2_match_data_free(it->match_data);
    pcre2_match_context_free(it->match_context);
    pcre2_jit_stack_free(it->jit_stack);
    memset(it, 0, sizeof *it);
}

void split_iter_reset(SplitIter *it, const uint8_t *text, size_t len) {
    it->text = text;
    it->len = len;
    it->pos = 0;
    it->has_pending = 0;
}

int split_next(SplitIter *it, size_t *start, size_t *end) {
    if (it->has_pending) {
        it->has_pending = 0;
        *start = it->pending_start;
        *end = it->pos = it->pending_end;
        return 1;
    }
    if (it->pos >= it->len) return 0;
    int rc = pcre2_match(it->sp->code, it->text, it->len, it->pos, 0, it->match_data, it->match_context);
    if (rc == PCRE2_ERROR_NOMATCH) {  // only invalid bytes remain
        *start = it->pos;
        *end = it->pos = it->len;
        return 1;
    }
    if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return err_set("split: PCRE2 match failed at byte %zu: %s", it->pos, (char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(it->match_data);
    size_t ms = ov[0], me = ov[1];
    if (me <= ms) return err_set("split: empty match at byte %zu (the pattern must not match empty)", ms);
    if (ms > it->pos) {  // a gap of invalid bytes before the match: return it first
        *start = it->pos;
        *end = ms;
        it->pending_start = ms;
        it->pending_end = me;
        it->has_pending = 1;
        it->pos = ms;
        return 1;
    }
    *start = ms;
    *end = it->pos = me;
    return 1;
}
