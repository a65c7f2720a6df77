// eval/core.h — scoring a model on the CORE benchmark (SPEC §5, nanochat's core_eval.py).
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
#pragma once
#include "eval/core_tasks.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    int max_per_task;            // <= 0: all rows
    const char *const *only;     // task labels to score (NULL = all available)
    int n_only;
    int quiet;                   // no progress line
} CoreConfig;

typedef struct {
    char label[64];
    char type[24];            // "multiple_choice", "schema", "language_modeling"
    int available;               // 0: no data (coqa)
    int rows;                    // rows scored
    int correct;
    double accuracy, centered, baseline;
    long long tokens;            // tokens through the model
    double seconds;
} CoreTaskResult;

typedef struct {
    CoreTaskResult *tasks;       // (n) in core.yaml order
    int n;
    int n_scored;
    double core;                 // mean centered over the tasks scored
    long long tokens;
    double seconds;
} CoreResult;

int core_evaluate(Model *m, const Tokenizer *tok, CoreSuite *suite, const CoreConfig *cfg, CoreResult *res);
void core_result_free(CoreResult *r);
