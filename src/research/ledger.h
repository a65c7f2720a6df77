// research/ledger.h — DIR/results.tsv, the append-only record of every trial.
//
// One header line, then one tab-separated row per trial, in trial order (1, 2, 3, ...):
//
//   trial parent kind budget_s seed change val_bpb paired z tokens tok_per_s mfu peak_mb wall_s
//   status description batch
//
// parent: the trial whose config this one changes ("-" for the first baseline); kind: baseline,
// greedy, random, agent, rung0..rungN (successive-halving screens), final (the full-budget rung),
// seed (another seed of the candidate that is its parent), pair (the incumbent, its parent, on a
// seed it had not run, for a candidate to be paired with), twin (the incumbent, its parent,
// trained beside the candidate run that follows it, on its seed: --lanes), promote (a kept candidate, its parent,
// on a fresh seed at --promote-budget), promote-pair (the incumbent it replaced, its parent, on the
// same seed at that budget); seed: the training seed; change:
// compact JSON of the settings that differ from the parent's config (derived ones included);
// paired: the incumbent's val_bpb on the same seed (candidate rows); z: the paired test
// statistic of the candidate after this row (research/stats.h); numbers are "-" when there is
// none (a crash, a rejected proposal); status: keep, discard, pending, screen, replicate,
// transfer, no-transfer (a promotion's verdict), crash, timeout, rejected (docs/research.md). Tabs and newlines in the description become spaces.
//
// Durability: a row is written with one write() and fsync'ed before the next trial starts. A row
// cut short (the process killed mid-write: no final newline) is dropped on load and reported via
// *valid_len, so the caller can truncate the file there before appending again. Any other
// malformed row is an err_usage error (exit 2) naming file and line: the ledger is never silently
// rewritten (nor is the 13-column ledger of the earlier threshold rule read). A row is malformed
// when it has other than 17 fields (16 before the batch column), a trial number out of sequence,
// a parent that is not an earlier trial, an unknown kind or status, a change that is not a JSON
// object, a number column that is neither "-" nor a finite number, a val_bpb or paired <= 0,
// another number but z < 0, or a finished status (keep, discard, ...) without a val_bpb, or a batch
// that is neither "-" nor this or an earlier trial.
//
// batch: with --lanes, the trials that trained at the same moment (one per lane) form a batch, and
// each of their rows names the batch's first trial; "-" for a trial that trained alone. What
// --hours counts (plan_machine_s) comes from it. A ledger from before the column (16 fields, its own
// header) is still read, its twins and the rows after them taken as batches of two, and rows are
// appended to it in its own format.
#pragma once
#include <stddef.h>

typedef struct {
    int trial, parent;  // parent 0 = none
    int batch;          // the first trial of the batch it trained in, 0 = alone
    char kind[16];
    double budget_s;
    double seed;        // the training seed (NaN = "-")
    char *change;       // compact JSON object
    double val_bpb, tokens, tok_per_s, mfu, peak_mb, wall_s;  // NaN = "-"
    double paired;      // the incumbent's val_bpb on the same seed (candidate rows), NaN = "-"
    double z;           // the candidate's paired test statistic after this row, NaN = "-"
    char status[16];
    char *description;
} LedgerRow;

extern const char LEDGER_HEADER[];  // the header line, with its newline

// Load path (a missing file is an empty ledger). *rows is malloc'ed (free with ledger_free).
// *valid_len: the byte length of the well-formed part (shorter than the file after a torn row).
int ledger_load(const char *path, LedgerRow **rows, int *n, size_t *valid_len);
// Parse a ledger held in memory; origin names it in errors.
int ledger_parse(const char *text, size_t len, const char *origin, LedgerRow **rows, int *n, size_t *valid_len);
void ledger_free(LedgerRow *rows, int n);

// A ledger with no rows yet: the header line, written atomically (fsync'ed, folder too).
int ledger_create(const char *path);
// Append one row (writing the header first if the file is new or empty), fsync.
int ledger_append(const char *path, const LedgerRow *row);
// Truncate path to len bytes (dropping a torn last row), fsync.
int ledger_truncate(const char *path, size_t len);

// The row as its TSV line, with newline (malloc'ed).
char *ledger_format_row(const LedgerRow *row);

int ledger_status_ok(const char *status);  // a finished training run (has a val_bpb)
