// tests/fuzz/fuzz_core.c — the CORE task readers of src/eval/core_tasks.c: core.yaml's task
// list, eval_meta_data.csv's baselines and the JSONL rows of each task type.
//
// Input: byte 0 picks the reader (0 core.yaml, 1 the CSV, 2 multiple-choice rows, 3 schema rows,
// 4 language-modelling rows; mod 5), byte 1 the few-shot count (mod 4), the rest is the file.
// Parsed tasks must be complete (label, dataset, delimiter); parsed rows must render: every
// row with the next rows as its few-shot examples, each pair's prefix + continuation == full.
#include "fuzz_util.h"

#include "eval/core_tasks.h"

static void check_render(const CoreTask *t) {
    CorePrompts p = {0};
    size_t shots[3];
    for (size_t row = 0; row < t->n_rows && row < 64; row++) {
        for (int k = 0; k < t->num_fewshot; k++) shots[k] = (row + 1 + (size_t)k) % t->n_rows;
        if (core_render(t, row, shots, t->num_fewshot, &p) != 0) {
            fuzz_expect_message();  // an LM prompt whose stripped form is not its prefix
            continue;
        }
        FUZZ_CHECK(p.n >= 1, "no pairs");
        for (int i = 0; i < p.n; i++) {
            size_t a = strlen(p.pairs[i].prefix), b = strlen(p.pairs[i].continuation);
            FUZZ_CHECK(strlen(p.pairs[i].full) == a + b && !memcmp(p.pairs[i].full, p.pairs[i].prefix, a) &&
                           !strcmp(p.pairs[i].full + a, p.pairs[i].continuation),
                       "row %zu pair %d: prefix + continuation != full", row, i);
        }
    }
    core_prompts_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int mode = data[0] % 5, shots = data[1] % 4;
    size_t n = size - 2;
    char *text = malloc(n ? n : 1);  // not NUL-terminated: ASan sees a read past the end
    memcpy(text, data + 2, n);
    CoreSuite *s = calloc(1, sizeof *s);
    if (mode == 0) {
        if (core_parse_tasks(s, text, n, "core.yaml") != 0) {
            FUZZ_CHECK(err_exit_code() == 2, "not a bad-input error: %s", err_msg());
            fuzz_expect_message();
        } else {
            for (int i = 0; i < s->n_tasks; i++)
                FUZZ_CHECK(s->tasks[i].label && s->tasks[i].dataset_uri && s->tasks[i].delimiter &&
                               s->tasks[i].num_fewshot >= 0 && (unsigned)s->tasks[i].type <= CORE_LM,
                           "task %d incomplete", i);
        }
    } else if (mode == 1) {
        static const char *const labels[] = {"mc", "sch\"ema", "lm", "hellaswag_zeroshot", "jeopardy"};
        s->n_tasks = 5;
        s->tasks = calloc(5, sizeof *s->tasks);
        for (int i = 0; i < 5; i++) s->tasks[i].label = strdup(labels[i]);
        if (core_parse_baselines(s, text, n, "eval_meta_data.csv") != 0) {
            FUZZ_CHECK(err_exit_code() == 2, "not a bad-input error: %s", err_msg());
            fuzz_expect_message();
        } else {
            for (int i = 0; i < 5; i++)
                FUZZ_CHECK(s->tasks[i].baseline >= 0 && s->tasks[i].baseline < 1, "baseline %g", s->tasks[i].baseline);
        }
    } else {
        s->n_tasks = 1;
        s->tasks = calloc(1, sizeof *s->tasks);
        CoreTask *t = &s->tasks[0];
        t->label = strdup("fuzz"), t->delimiter = strdup(shots == 3 ? "\nAnswer: " : " ");
        t->type = (CoreTaskType)(mode - 2), t->num_fewshot = shots, t->available = 1;
        if (core_parse_rows(t, text, n, "rows.jsonl") != 0) {
            FUZZ_CHECK(err_exit_code() == 2, "not a bad-input error: %s", err_msg());
            fuzz_expect_message();
        } else {
            FUZZ_CHECK(t->n_rows > (size_t)shots, "%zu rows for %d shots", t->n_rows, shots);
            check_render(t);
        }
    }
    core_free(s);
    free(text);
    return 0;
}
