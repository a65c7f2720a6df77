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
    OPT_FLAG,      // bool, no value: int* set to 1
    OPT_INT,       // int*
    OPT_INT64,     // int64_t*
    OPT_DOUBLE,    // double*
    OPT_STRING,    // const char** (points into argv)
    OPT_LIST,      // StringList*: repeatable, each use appends
    OPT_FLOAT,     // float* (a finite number that a float holds)
    OPT_CHARS,     // char[cap]: the value copied (at most cap - 1 characters)
    OPT_ENUM,      // int*: the index of the value in `words`
    OPT_DURATION,  // double* seconds: "90s", "5m", "1h", "300" (util/duration.h)
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
    int seen;             // set by parse_args when the option was given
    size_t cap;           // OPT_CHARS: the destination's size
    const char *const *words;  // OPT_ENUM: the values, NULL-terminated
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
// parse_args for a command with exactly one positional argument (`what` names it in the message):
// ARGS_OK with it in pos->items[0], or ARGS_HELP / ARGS_ERROR with pos freed (for a wrong count:
// "USAGE: expected one WHAT, got N arguments" and the usage line on stderr).
int args_parse_one(const char *usage, const char *summary, Option *opts, int argc, char **argv, const char *what,
                   StringList *pos);

const Option *args_find(const Option *opts, const char *name);


// Print "frontier: error: <err_msg()>" on stderr and return its exit code (err_exit_code(): 2 for
// a usage / bad-input error, else 1).
int report_error(void);
