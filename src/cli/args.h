// cli/args.h — declarative flag parsing shared by every subcommand.
//
// Each command lists its flags in an Option table; parse_args() fills the destinations, collects
// positional arguments, and on a bad flag or value prints an error naming the flag and returns
// ARGS_ERROR (the caller exits with code 2). `--help`/`-h` prints the table and returns ARGS_HELP.
// Both `--name value` and `--name=value` work; a one-letter option (name "n") is also `-n value`.
// Integers accept k/M/G suffixes (powers of 1000) and exponents (2e9).
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    OPT_FLAG,    // bool, no value: int* set to 1
    OPT_INT,     // int*
    OPT_INT64,   // int64_t*
    OPT_DOUBLE,  // double*
    OPT_STRING,  // const char** (points into argv)
    OPT_LIST,    // StringList*: repeatable, each use appends
} OptType;

typedef struct {
    const char **items;
    int n;
} StringList;

typedef struct {
    const char *name;     // without the leading "--"
    OptType type;
    void *dest;
    const char *metavar;  // e.g. "N", "DIR"; NULL for flags
    const char *help;     // one line; the default is printed from *dest when meaningful
    int64_t min, max;     // inclusive bounds for OPT_INT / OPT_INT64 / OPT_DOUBLE when min < max
                          // (an OPT_INT without them is held to int's range)
    int seen;             // set by parse_args / args_load_json when the option was given
} Option;

enum { ARGS_OK = 0, ARGS_HELP = 1, ARGS_ERROR = -1 };

// usage: e.g. "frontier tokenizer train [options]"; summary: a paragraph shown with --help.
int parse_args(const char *usage, const char *summary, Option *opts, int argc, char **argv,
               StringList *positional);
void print_help(const char *usage, const char *summary, const Option *opts);
// The options as a Markdown table: setting, type, range, default (the current value), meaning.
// `frontier train --settings` prints it; docs/training.md holds its output (checked by tests).
void args_print_settings(const Option *opts, FILE *f);
void string_list_free(StringList *l);
// A command's one positional argument (`what` names it): 0, or prints "USAGE: expected one WHAT,
// got N arguments" and the usage line to stderr, frees *pos and returns -1 (exit 2).
int args_expect_one(const char *usage, const char *what, StringList *pos);

// Set options from a JSON object file whose keys are option names (e.g. {"depth": 6,
// "matrix-lr": 0.02}). Options already seen on the command line win (they are skipped), so
// `--config f.json --depth 8` means "f.json, but depth 8". Values obey the command line's rules
// (types, bounds, finite numbers). A missing file, malformed JSON, unknown keys and bad values
// are bad-input errors (err_usage) naming file and key. OPT_LIST options are not settable from
// JSON. 0 or -1 + err.
int args_load_json(Option *opts, const char *path, int override_seen);
// The same for JSON text held in memory; `path` names its source in messages.
int args_load_json_text(Option *opts, const char *text, size_t len, const char *path, int override_seen);
// The current values of all non-list options as a JSON object (caller frees with cJSON_Delete).
struct cJSON *args_to_json(const Option *opts);
const Option *args_find(const Option *opts, const char *name);

// The longest duration a flag takes: a year of wall clock (longer is a typo, or 9e18, not a plan).
#define ARGS_MAX_DURATION_S (365.0 * 86400)
// "90s", "5m", "1.5m", "1h", "300" (seconds) -> seconds, >= 0 and at most ARGS_MAX_DURATION_S;
// -1 if malformed (not a finite number with one of the units s, m, min, h or none) or out of range.
double args_parse_duration(const char *s);

// Print "frontier: error: <err_msg()>" on stderr and return its exit code (err_exit_code(): 2 for
// a usage / bad-input error, else 1).
int report_error(void);
