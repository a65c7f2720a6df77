// data/corpus.h — reading documents from a corpus file.
//
// Two formats: JSON Lines with a string field "text" per line (blank lines are skipped), or a
// `.txt` file that is one document. Errors name file:line and say what was expected; errors in a
// file's contents are bad-input errors (err_usage: exit 2).
//
// NUL bytes: a document holding one (a raw NUL byte in a .txt or .jsonl line, or a \u0000 escape
// in a "text" value) is refused, naming file:line, byte offset and column; it is never cut short
// or passed on. The corpus is UTF-8 text, in which a NUL means damage to fix at the source.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *arena;    // all document texts back to back (each NUL-terminated)
    size_t *off;    // (n) start of each document in arena
    size_t *len;    // (n) byte length of each document
    int n;
    size_t bytes;   // total text bytes
    size_t arena_len, arena_cap, slots;
} DocList;

// Read all documents of one file (replacing the contents of *docs). 0, or -1 + err.
int corpus_read_file(const char *path, DocList *docs);
void doclist_free(DocList *docs);
static inline const char *doc_text(const DocList *d, int i) { return d->arena + d->off[i]; }

// File extensions accepted in a corpus folder.
extern const char *const CORPUS_EXTS[];
