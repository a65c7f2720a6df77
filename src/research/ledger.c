// research/ledger.c — results.tsv: format, parse, durable append (see ledger.h).
#include "research/ledger.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

const char LEDGER_HEADER[] =
    "trial\tparent\tkind\tbudget_s\tseed\tchange\tval_bpb\tpaired\tz\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\tstatus\t"
    "description\tbatch\n";
// The ledger before lanes had batches (16 columns): read, and appended to in its own format, with
// each twin and the row after it taken as one batch (--lanes 2, the only batches it could hold).
static const char V16_HEADER[] =
    "trial\tparent\tkind\tbudget_s\tseed\tchange\tval_bpb\tpaired\tz\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\tstatus\t"
    "description\n";
// The ledger of the threshold rule (before paired seeds): refused with a message that says so.
static const char OLD_HEADER[] =
    "trial\tparent\tkind\tbudget_s\tchange\tval_bpb\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\tstatus\tdescription\n";

enum { N_COLS = 17, COL_CHANGE = 5, COL_STATUS = 14, COL_DESC = 15, COL_BATCH = 16 };

static const char *const STATUSES[] = {"keep",  "discard", "pending", "screen",   "replicate", "transfer",
                                       "no-transfer", "crash",   "timeout", "rejected", NULL};

int ledger_status_ok(const char *status) {
    return !strcmp(status, "keep") || !strcmp(status, "discard") || !strcmp(status, "pending") ||
           !strcmp(status, "screen") || !strcmp(status, "replicate") || !strcmp(status, "transfer") ||
           !strcmp(status, "no-transfer");
}

static int known_kind(const char *k) {
    static const char *const kinds[] = {"baseline", "greedy", "random", "agent", "final",
                                        "seed",     "pair",   "twin",    "promote", "promote-pair", NULL};
    for (int i = 0; kinds[i]; i++)
        if (!strcmp(k, kinds[i])) return 1;
    if (strncmp(k, "rung", 4) || !k[4]) return 0;
    for (const char *p = k + 4; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

// ---------------------------------------------------------------------------------------------
// Formatting
// ---------------------------------------------------------------------------------------------

static void put_num(char *buf, size_t n, double v, const char *fmt) {
    if (isfinite(v)) snprintf(buf, n, fmt, v);
    else snprintf(buf, n, "-");
}

// Tabs, newlines and other control characters would break the row: spaces instead.
static char *clean_field(const char *s) {
    char *c = xstrdup(s ? s : "");
    for (char *p = c; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' ';
    return c;
}

static char *format_row(const LedgerRow *r, int cols) {
    char parent[16], batch[16], budget[32], seed[32], val[32], paired[32], z[32], tok[32], tps[32], mfu[32], mem[32], wall[32];
    if (r->parent > 0) snprintf(parent, sizeof parent, "%d", r->parent);
    else snprintf(parent, sizeof parent, "-");
    if (r->batch > 0) snprintf(batch, sizeof batch, "\t%d", r->batch);
    else snprintf(batch, sizeof batch, "\t-");
    if (cols < N_COLS) batch[0] = 0;
    put_num(budget, sizeof budget, r->budget_s, "%.6g");
    put_num(seed, sizeof seed, r->seed, "%.0f");
    put_num(val, sizeof val, r->val_bpb, "%.6f");
    put_num(paired, sizeof paired, r->paired, "%.6f");
    put_num(z, sizeof z, r->z, "%.3f");
    put_num(tok, sizeof tok, r->tokens, "%.0f");
    put_num(tps, sizeof tps, r->tok_per_s, "%.1f");
    put_num(mfu, sizeof mfu, r->mfu, "%.5f");
    put_num(mem, sizeof mem, r->peak_mb, "%.1f");
    put_num(wall, sizeof wall, r->wall_s, "%.1f");
    char *change = clean_field(r->change && *r->change ? r->change : "{}"), *desc = clean_field(r->description);
    size_t n = strlen(change) + strlen(desc) + 512;
    char *line = xmalloc(n);
    snprintf(line, n, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", r->trial, parent, r->kind,
             budget, seed, change, val, paired, z, tok, tps, mfu, mem, wall, r->status, desc, batch);
    free(change);
    free(desc);
    return line;
}

char *ledger_format_row(const LedgerRow *r) { return format_row(r, N_COLS); }

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

static int parse_num(const char *s, double *out, int allow_dash) {
    if (allow_dash && !strcmp(s, "-")) { *out = NAN; return 0; }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int parse_row(char *line, LedgerRow *r, int expect_trial, int ncols, const char *origin, int lineno) {
    char *f[N_COLS];
    int n = 0;
    for (char *p = line;;) {
        if (n < ncols) f[n] = p;
        n++;
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = 0;
        p = tab + 1;
    }
    if (n != ncols) return err_usage("%s:%d: expected %d tab-separated fields, got %d", origin, lineno, ncols, n);
    memset(r, 0, sizeof *r);
    double trial, parent = 0;
    if (parse_num(f[0], &trial, 0) != 0 || trial != expect_trial)
        return err_usage("%s:%d: trial \"%s\", expected %d (rows are numbered 1, 2, 3, ... without gaps)", origin, lineno, f[0], expect_trial);
    if (strcmp(f[1], "-") && (parse_num(f[1], &parent, 0) != 0 || parent < 1 || parent >= trial || parent != floor(parent)))
        return err_usage("%s:%d: parent \"%s\" must be \"-\" or an earlier trial", origin, lineno, f[1]);
    if (!known_kind(f[2]) || strlen(f[2]) >= sizeof r->kind) return err_usage("%s:%d: unknown kind \"%s\"", origin, lineno, f[2]);
    int st = -1;
    for (int i = 0; STATUSES[i]; i++)
        if (!strcmp(f[COL_STATUS], STATUSES[i])) st = i;
    if (st < 0) return err_usage("%s:%d: unknown status \"%s\"", origin, lineno, f[COL_STATUS]);
    cJSON *ch = cJSON_Parse(f[COL_CHANGE]);
    int bad_change = !cJSON_IsObject(ch);
    cJSON_Delete(ch);
    if (bad_change) return err_usage("%s:%d: change \"%.60s\" is not a JSON object", origin, lineno, f[COL_CHANGE]);
    double *nums[] = {&r->budget_s, &r->seed, &r->val_bpb, &r->paired, &r->z, &r->tokens, &r->tok_per_s, &r->mfu,
                      &r->peak_mb, &r->wall_s};
    const int cols[] = {3, 4, 6, 7, 8, 9, 10, 11, 12, 13};
    static const char *const names[] = {"budget_s", "seed", "val_bpb", "paired", "z", "tokens", "tok_per_s", "mfu",
                                        "peak_mb", "wall_s"};
    for (int i = 0; i < 10; i++) {
        if (parse_num(f[cols[i]], nums[i], 1) != 0)
            return err_usage("%s:%d: %s \"%s\" is not a finite number (or \"-\" for none)", origin, lineno, names[i],
                             f[cols[i]]);
        // A bits-per-byte of 0 or below, or a negative count or time, cannot come from a trial: a row
        // that says so was edited or written by something else, and would steer the search.
        // (z, a test statistic, has either sign)
        int bpb = nums[i] == &r->val_bpb || nums[i] == &r->paired;
        if (nums[i] != &r->z && (*nums[i] < 0 || (bpb && *nums[i] == 0)))
            return err_usage("%s:%d: %s %s is not %s; fix or remove the row", origin, lineno, names[i], f[cols[i]],
                             bpb ? "a bits-per-byte (it must be > 0)" : "a count, seed or time (it must be >= 0)");
    }
    if (ledger_status_ok(f[COL_STATUS]) && !isfinite(r->val_bpb))
        return err_usage("%s:%d: status %s needs a val_bpb", origin, lineno, f[COL_STATUS]);
    double batch = 0;
    if (ncols > COL_BATCH && strcmp(f[COL_BATCH], "-") &&
        (parse_num(f[COL_BATCH], &batch, 0) != 0 || batch < 1 || batch > trial || batch != floor(batch)))
        return err_usage("%s:%d: batch \"%s\" must be \"-\" or the trial that began the row's batch (this one or an earlier one)",
                         origin, lineno, f[COL_BATCH]);
    r->trial = (int)trial, r->parent = (int)parent, r->batch = (int)batch;
    snprintf(r->kind, sizeof r->kind, "%s", f[2]);
    snprintf(r->status, sizeof r->status, "%s", f[COL_STATUS]);
    r->change = xstrdup(f[COL_CHANGE]);
    r->description = xstrdup(f[COL_DESC]);
    return 0;
}

int ledger_parse(const char *text, size_t len, const char *origin, LedgerRow **rows_out, int *n_out, size_t *valid_len) {
    LedgerRow *rows = NULL;
    size_t cap = 0;
    int n = 0, lineno = 0, rc = 0;
    size_t pos = 0, good = 0;
    int cols = N_COLS;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (!nl) break;  // a torn last row: dropped, reported through valid_len
        size_t ll = (size_t)(nl - (text + pos));
        char *line = xmalloc(ll + 1);
        memcpy(line, text + pos, ll);
        line[ll] = 0;
        lineno++;
        if (lineno == 1) {
            if (ll + 1 == sizeof OLD_HEADER - 1 && memcmp(text + pos, OLD_HEADER, ll + 1) == 0)
                rc = err_usage("%s:1: a ledger of the threshold keep rule (13 columns, before paired seeds): its "
                               "decisions cannot be replayed by the paired rule; start a new research with "
                               "another --out (the old folder's report still reads)", origin);
            else if (ll + 1 == sizeof V16_HEADER - 1 && memcmp(text + pos, V16_HEADER, ll + 1) == 0)
                cols = N_COLS - 1;
            else if (ll + 1 != sizeof LEDGER_HEADER - 1 || memcmp(text + pos, LEDGER_HEADER, ll + 1) != 0)
                rc = err_usage("%s:1: not a frontier research ledger (the header line differs)", origin);
        } else {
            GROW(rows, cap, (size_t)n + 1);
            rc = parse_row(line, &rows[n], n + 1, cols, origin, lineno);
            if (rc == 0) n++;
        }
        free(line);
        if (rc != 0) break;
        pos += ll + 1;
        good = pos;
    }
    if (rc != 0) {
        ledger_free(rows, n);
        return -1;
    }
    for (int i = 0; cols < N_COLS && i + 1 < n; i++)
        if (!strcmp(rows[i].kind, "twin") && strcmp(rows[i + 1].kind, "twin"))
            rows[i].batch = rows[i + 1].batch = rows[i].trial, i++;
    *rows_out = rows, *n_out = n;
    if (valid_len) *valid_len = good;
    return 0;
}

int ledger_load(const char *path, LedgerRow **rows, int *n, size_t *valid_len) {
    *rows = NULL, *n = 0;
    if (valid_len) *valid_len = 0;
    if (!path_exists(path)) return 0;
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return -1;
    int rc = ledger_parse(text, len, path, rows, n, valid_len);
    free(text);
    return rc;
}

void ledger_free(LedgerRow *rows, int n) {
    for (int i = 0; i < n; i++) free(rows[i].change), free(rows[i].description);
    free(rows);
}

// ---------------------------------------------------------------------------------------------
// Appending
// ---------------------------------------------------------------------------------------------

static int write_all(int fd, const char *s, size_t n, const char *path) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return err_errno("cannot write %s", path);
        s += w, n -= (size_t)w;
    }
    return 0;
}

int ledger_create(const char *path) { return write_file_atomic(path, LEDGER_HEADER, sizeof LEDGER_HEADER - 1); }

int ledger_append(const char *path, const LedgerRow *row) {
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return err_errno("cannot open %s", path);
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : err_errno("cannot stat %s", path);
    if (rc == 0 && st.st_size == 0) rc = write_all(fd, LEDGER_HEADER, sizeof LEDGER_HEADER - 1, path);
    char head[sizeof V16_HEADER];  // a ledger from before batches gets rows in its own format
    int v16 = rc == 0 && st.st_size >= (off_t)sizeof V16_HEADER - 1 &&
              pread(fd, head, sizeof V16_HEADER - 1, 0) == (ssize_t)sizeof V16_HEADER - 1 &&
              !memcmp(head, V16_HEADER, sizeof V16_HEADER - 1);
    char *line = format_row(row, v16 ? N_COLS - 1 : N_COLS);
    if (rc == 0) rc = write_all(fd, line, strlen(line), path);  // one write: a kill leaves all or a torn tail
    free(line);
    if (rc == 0 && fsync(fd) != 0) rc = err_errno("fsync %s", path);
    close(fd);
    if (rc == 0 && st.st_size == 0) {  // a new file: make its directory entry durable too
        char *dir = xstrdup(path), *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        rc = fsync_dir(slash ? dir : ".");
        free(dir);
    }
    return rc;
}

int ledger_truncate(const char *path, size_t len) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return err_errno("cannot open %s", path);
    int rc = ftruncate(fd, (off_t)len) == 0 && fsync(fd) == 0 ? 0 : err_errno("cannot truncate %s", path);
    close(fd);
    return rc;
}
