// tests/fuzz/fuzz_ledger.c — the research ledger (results.tsv: ledger_parse, what ledger_load runs).
//
// Input: a results.tsv. A ledger that parses must hold what the loop relies on (trials 1..n in
// order, parents earlier, val_bpb > 0 or "-", a finished status with a val_bpb), valid_len must
// stop at a line end, and the rows written back by ledger_format_row must parse again to the same
// rows: the research never writes a row that its next start refuses.
#include <math.h>

#include "fuzz_util.h"

#include "research/ledger.h"

static void check_rows(const LedgerRow *r, int n) {
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(r[i].trial == i + 1, "row %d is trial %d", i, r[i].trial);
        FUZZ_CHECK(r[i].parent >= 0 && r[i].parent < r[i].trial, "trial %d has parent %d", r[i].trial, r[i].parent);
        FUZZ_CHECK(isnan(r[i].val_bpb) || (isfinite(r[i].val_bpb) && r[i].val_bpb > 0), "val_bpb %g", r[i].val_bpb);
        FUZZ_CHECK(!ledger_status_ok(r[i].status) || isfinite(r[i].val_bpb), "status %s without a val_bpb",
                   r[i].status);
        FUZZ_CHECK(r[i].change && r[i].description, "NULL fields");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1);  // not NUL-terminated: ASan sees a read past the end
    memcpy(text, data, size);
    LedgerRow *rows;
    int n;
    size_t valid;
    if (ledger_parse(text, size, "results.tsv", &rows, &n, &valid) != 0) {
        FUZZ_CHECK(err_exit_code() == 2, "a bad ledger is not a bad-input error: %s", err_msg());
        fuzz_expect_message();
        free(text);
        return 0;
    }
    FUZZ_CHECK(valid <= size && (valid == 0 || text[valid - 1] == '\n'), "valid_len %zu of %zu", valid, size);
    check_rows(rows, n);
    // Written back: the header and every row, then parsed again.
    size_t cap = strlen(LEDGER_HEADER) + 1, len = 0;
    char *out = malloc(cap);
    len = (size_t)sprintf(out, "%s", LEDGER_HEADER);
    for (int i = 0; i < n; i++) {
        char *line = ledger_format_row(&rows[i]);
        size_t k = strlen(line);
        out = realloc(out, cap += k);
        memcpy(out + len, line, k + 1);
        len += k;
        free(line);
    }
    LedgerRow *back;
    int m;
    size_t valid2;
    FUZZ_CHECK(ledger_parse(out, len, "rewritten.tsv", &back, &m, &valid2) == 0, "a formatted ledger is refused: %s",
               err_msg());
    FUZZ_CHECK(m == n && valid2 == len, "%d rows written, %d read back", n, m);
    for (int i = 0; i < n; i++) {
        FUZZ_CHECK(back[i].parent == rows[i].parent && !strcmp(back[i].kind, rows[i].kind) &&
                       !strcmp(back[i].status, rows[i].status),
                   "row %d changed when written back", i + 1);
        FUZZ_CHECK(isnan(back[i].val_bpb) == isnan(rows[i].val_bpb), "row %d: val_bpb changed", i + 1);
    }
    ledger_free(back, m);
    free(out);
    ledger_free(rows, n);
    free(text);
    return 0;
}
