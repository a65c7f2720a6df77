// eval/core.h — scoring a model on the CORE benchmark (nanochat's core_eval.py).
//
// Per task: rows shuffled with Python's random.Random(1337) and cut to max_per_task; for row idx,
// few-shot examples random.Random(1234 + idx).sample(other rows, k) (eval/pyrandom.h); prompts
// rendered per task type (eval/core_tasks.h); each prompt tokenized with <|bos|> in front.
// Continuation spans: multiple choice — after the common token prefix of all choices; schema —
// the common token suffix of all options; language modelling — the tokens of the prompt with
// the continuation past those without it. All prompts of a row go through the model as one batch
// (right-padded with <|bos|>); MC and schema pick the option with the lowest mean continuation
// loss, LM needs the greedy argmax to equal every continuation token. Prompts longer than the
// training context are not cropped: the RoPE tables are extended (model_extend_context).
// accuracy per task; centered = (acc - b) / (1 - b); CORE = mean centered over the tasks scored.
//
// Missing task data. A task of core.yaml whose data file is absent is an error (a usage / bad-input
// error naming every such task and its path, before anything is scored) unless
// CoreConfig.allow_missing; then it is left out and the result says so. The exception is a task
// the shared data bundle is known to lack (core_known_absent: coqa, which its README declares
// unavailable, "report CORE over the 21 labels present and say so"): it is left out and reported,
// never an error, so the default bundle scores as it is.
#pragma once
#include "eval/core_tasks.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    int max_per_task;            // <= 0: all rows
    const char *const *only;     // task labels to score (NULL = all available)
    int n_only;
    int quiet;                   // no progress line
    int allow_missing;           // leave out tasks whose data file is missing instead of failing
} CoreConfig;

typedef struct {
    char label[64];
    char type[24];            // "multiple_choice", "schema", "language_modeling"
    int available;               // 0: no data file (not scored)
    int known_absent;            // no data, and the bundle is known to lack it (core_known_absent)
    char path[512];              // the task's data file
    int rows;                    // rows scored
    int correct;
    double accuracy, centered, baseline;
    long long tokens;            // tokens through the model
    double seconds;
} CoreTaskResult;

typedef struct {
    CoreTaskResult *tasks;       // (n) in core.yaml order: the tasks selected (all, or CoreConfig.only)
    int n;
    int n_total;                 // tasks in core.yaml
    int n_scored;
    int n_missing;               // selected tasks without data (known absent or allowed missing)
    double core;                 // mean centered over the tasks scored
    long long tokens;
    double seconds;
} CoreResult;

// 1 for a task label the shared data bundle is known not to ship (see above).
int core_known_absent(const char *label);

int core_evaluate(Model *m, const Tokenizer *tok, CoreSuite *suite, const CoreConfig *cfg, CoreResult *res);
void core_result_free(CoreResult *r);
