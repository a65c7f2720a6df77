// util/csv.h — CSV as RFC 4180 defines it: written here, read with libcsv.
//
// A field is written as it is unless it holds a comma, a double quote, CR or LF (or starts or ends
// with a space or tab, which readers trim from unquoted fields): then it is put in double quotes
// with every inner quote doubled ("(step, unattributed)", "say ""hi"""). Records end with LF.
//
// csv_read() parses a whole file's text strictly: a quote inside an unquoted field, text after a
// closing quote, or a quoted field that never closes is an error naming path:line. Quoted fields
// may span lines; blank lines between records are skipped. Each record goes to a callback with
// the line it starts on.
#pragma once
#include <stddef.h>
#include <stdio.h>

// One field, quoted when it must be (see above). Returns 0, or -1 when the stream fails.
int csv_put_field(FILE *f, const char *s);

// Called once per record with its fields (NUL-terminated copies, valid during the call) and the
// 1-based line the record starts on. Returns 0 to go on, or -1 + err to stop csv_read.
typedef int (*CsvRecordFn)(char **fields, int n_fields, int line, void *ctx);

// Parse `len` bytes of `text` (the contents of `path`, named in errors). 0, or -1 + err.
int csv_read(const char *path, const char *text, size_t len, CsvRecordFn fn, void *ctx);
