// eval/core_tasks.h — the CORE benchmark's tasks: loading and nanochat-exact prompt rendering.
//
// Contract:
//   core_load(dir) reads <dir>/core.yaml (libyaml), <dir>/eval_meta_data.csv and every task's
//   <dir>/eval_data/<dataset_uri> (JSONL, cJSON). It returns NULL with err_set() on any error; the
//   message names file:line (YAML: the line of the offending node/mark, 1-based) and says how to
//   fix it. A task whose data file does not exist is kept with available = 0 and no rows (coqa in
//   our bundle); that is not an error. Blank lines in a JSONL file are skipped.
//   Rows are kept in file order. nanochat shuffles them with random.Random(1337) and may truncate
//   (max_per_task); apply that permutation with core_task_permute() before rendering, so that row
//   and few-shot indices refer to the shuffled list exactly as in nanochat.
//
//   core_render(task, row, fewshot, k, out) renders what nanochat's core_eval.py renders
//   (render_prompts_mc / _schema / _lm, Jinja templates reproduced to the byte):
//     MC     shots "{query}{delim}{choices[gold]}\n\n"..., then "{query}{delim}{choice}":
//            one pair per choice; prefix = shots+query+delim, continuation = choice.
//     schema shots "{context_options[gold]}{delim}{continuation}\n\n"..., then
//            "{option}{delim}{continuation}": one pair per context option; prefix =
//            shots+option+delim, continuation = the row's continuation.
//     LM     shots "{context|trim}{delim}{continuation}\n\n"..., then "{context|trim}{delim}";
//            one pair: prefix = that text .strip()ed (nanochat's prompt_without; Python's
//            str.strip(), Unicode whitespace included), full = the text + continuation
//            (prompt_with, not stripped), continuation = full minus prefix (so it starts with the
//            delimiter's stripped whitespace, e.g. " Paris" or "\nAnswer: " -> " Paris").
//   In every pair prefix + continuation == full, byte for byte; `full` is exactly the string
//   nanochat tokenizes. NOTE for the scorer: nanochat does not tokenize prefix and continuation
//   separately. MC: score tokens after the common token prefix of all choices' `full`; schema:
//   the common token suffix of all options' `full`; LM: tokens of `full` past those of `prefix`
//   (nanochat asserts the prefix tokens are a prefix). BOS is prepended by the caller.
//   `fewshot` holds k row indices (nanochat: random.Random(1234+row).sample(others, k)); they must
//   be < n_rows and different from `row` is not checked (nanochat never draws row itself).
//   Returns 0, or -1 with err_set() (unavailable task, index out of range). Free with
//   core_prompts_free(); a CorePrompts may be reused (it is freed and refilled).
#pragma once
#include <stddef.h>

typedef enum { CORE_MC = 0, CORE_SCHEMA = 1, CORE_LM = 2 } CoreTaskType;

typedef struct {
    char *text;          // MC: query; LM: context; schema: NULL
    char *continuation;  // schema and LM: continuation; MC: NULL
    char **options;      // MC: choices; schema: context_options; LM: NULL
    int n_options;
    int gold;            // MC / schema: index into options; LM: -1
} CoreRow;

typedef struct {
    char *label;         // e.g. "hellaswag_zeroshot"
    char *dataset_uri;   // relative to <dir>/eval_data/
    char *path;          // <dir>/eval_data/<dataset_uri>
    CoreTaskType type;
    int num_fewshot;     // first (only) element of core.yaml's num_fewshot list
    char *delimiter;     // continuation_delimiter, default " "
    double baseline;     // random baseline as a fraction (CSV percent / 100)
    int available;       // 0: data file missing (no rows)
    CoreRow *rows;
    size_t n_rows;
} CoreTask;

typedef struct {
    char *dir;
    CoreTask *tasks;     // in core.yaml order
    int n_tasks;
} CoreSuite;

typedef struct {
    char *prefix;        // the prompt the continuation is conditioned on
    char *continuation;  // the scored text
    char *full;          // prefix + continuation: what nanochat tokenizes
} CorePair;

typedef struct {
    CorePair *pairs;
    int n;
} CorePrompts;

CoreSuite *core_load(const char *core_dir);
// The readers core_load runs on each file's contents, for text held in memory (need not be
// NUL-terminated; origin names it in errors). 0, or -1 + err_usage naming origin:line.
//   core_parse_tasks: core.yaml's icl_tasks into s->tasks (s->n_tasks set; s starts zeroed)
//   core_parse_baselines: eval_meta_data.csv's random baselines for the tasks of s
//   core_parse_rows: a task's JSONL rows, of t->type, appended to t->rows (t->num_fewshot checked)
int core_parse_tasks(CoreSuite *s, const char *text, size_t len, const char *origin);
int core_parse_baselines(CoreSuite *s, const char *text, size_t len, const char *origin);
int core_parse_rows(CoreTask *t, const char *text, size_t len, const char *origin);
void core_free(CoreSuite *s);
const CoreTask *core_find(const CoreSuite *s, const char *label);  // NULL if absent
const char *core_type_name(CoreTaskType t);  // "multiple_choice", "schema", "language_modeling"

// Reorder (and truncate) a task's rows: new row i = old row perm[i], for i < n (n <= n_rows; perm
// entries distinct). Rows not kept are freed. Returns 0, or -1 with err_set() on a bad perm.
int core_task_permute(CoreTask *t, const size_t *perm, size_t n);

int core_render(const CoreTask *t, size_t row, const size_t *fewshot, int n_fewshot, CorePrompts *out);
void core_prompts_free(CorePrompts *p);

// Python's str.strip() on UTF-8 text: returns the stripped span [*start, *start + *len) of s[0..n).
void core_py_strip(const char *s, size_t n, size_t *start, size_t *len);
