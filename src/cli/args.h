// cli/args.h — declarative flag parsing shared by every subcommand.
//
// Each command lists its flags in an Option table; parse_args() fills the destinations, collects
// positional arguments, and on a bad flag or value prints an error naming the flag and returns
// ARGS_ERROR (the caller exits with code 2). `--help`/`-h` prints the table and returns ARGS_HELP.
// Both `--name value` and `--name=value` work. Integers accept k/M/G suffixes (powers of 1000)
// and exponents (2e9).
#pragma once
#include <stdint.h>

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
    int64_t min, max;     // bounds for OPT_INT / OPT_INT64 when min < max
} Option;

enum { ARGS_OK = 0, ARGS_HELP = 1, ARGS_ERROR = -1 };

// usage: e.g. "frontier tokenizer train [options]"; summary: a paragraph shown with --help.
int parse_args(const char *usage, const char *summary, const Option *opts, int argc, char **argv,
               StringList *positional);
void print_help(const char *usage, const char *summary, const Option *opts);
void string_list_free(StringList *l);

// Print "frontier: error: <err_msg()>" on stderr and return FRONTIER_EXIT_ERROR (1).
int report_error(void);
