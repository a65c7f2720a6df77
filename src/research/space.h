// research/space.h — the search space of `frontier research` and the config algebra on it.
//
// A config is a JSON object of `frontier train` settings (keys = flag names without "--", the
// format of `frontier train --config` and of a run's config.json). A change is a smaller object
// of the same kind; applying it to a parent config gives the child config.
//
// The space file (research/space.json; docs/research.md has the full format):
//
//   {"description": "...",
//    "params": {"matrix-lr": {"type": "float", "min": 0.005, "max": 0.08, "log": true},
//               "depth":     {"type": "int", "min": 1, "max": 4},
//               "n-embd":    {"type": "choice", "values": [64, 128, 192, 256]},
//               "normuon":   {"type": "bool"}, ...},
//    "derive": {"n-head": {"div": ["n-embd", "head-dim"]}, "n-kv-head": "n-head"},
//    "constraints": [{"divides": ["head-dim", "n-embd"]},
//                    {"le": [{"mul": ["device-batch", "seq-len"]}, 8192]}]}
//
// int/float: min <= max, optional "log" (sampled log-uniformly; min > 0) and "step" (values on
// the grid min + k*step). choice: "values", a non-empty list of distinct numbers/strings/bools.
// bool: written as 0/1 when the base config holds a number (the trainer's 0|1 toggles), as
// true/false when it holds a boolean. Each param may carry a "description".
//
// Expressions (derive, constraints): a number, a setting name, or {"div"|"mul"|"min"|"max":
// [expr, expr]}; "div" must divide exactly (else the config is infeasible).
// A derived setting is recomputed when a setting its expression reads has changed and the change
// does not set it itself (spreadsheet semantics: n-embd 128 -> 256 with head-dim 128 makes n-head
// 2). Constraints are checked when a setting they read has changed, so a base config that breaks
// an unrelated constraint does not block every proposal.
//
// Contract: functions return 0 / a new object, or -1 / NULL with err_set(); parse errors name the
// file and the key path ("space.json: params.depth.min: must be a number").
#pragma once
#include <stdint.h>

#include "util/rng.h"

struct cJSON;

typedef enum { PARAM_INT, PARAM_FLOAT, PARAM_CHOICE, PARAM_BOOL } ParamType;

typedef struct Expr Expr;

typedef struct {
    char *name;              // the train flag, without "--"
    ParamType type;
    double min, max, step;   // int/float; step 0 = none
    int log;
    struct cJSON *values;    // choice: a JSON array (owned)
    int bool_as_json_bool;   // bool: emit true/false (else 0/1); set by space_check_base
} Param;

typedef struct {
    char *target;
    Expr *expr;
} Derive;

typedef enum { CONS_DIVIDES, CONS_LE } ConsKind;

typedef struct {
    ConsKind kind;
    Expr *a, *b;  // divides: b is a multiple of a; le: a <= b
} Constraint;

typedef struct {
    char *origin;  // file name for messages
    Param *params;
    int n_params;
    Derive *derive;
    int n_derive;
    Constraint *cons;
    int n_cons;
    struct cJSON *json;  // the file as parsed (for the proposer bundle and research.json)
} Space;

// Parse and validate a space from JSON text; origin names it in errors.
int space_parse(Space *s, const char *text, const char *origin);
int space_load(Space *s, const char *path);
void space_free(Space *s);
const Param *space_find(const Space *s, const char *name);

// Check the space against a full base config: every param, derive target and expression name is
// a setting of the base; a choice's values have the base value's JSON type. Also decides how
// bools are written. Errors name the key path.
int space_check_base(Space *s, const struct cJSON *base);
// Check the space against `frontier train`'s settings table (train/settings.h): every param and
// derive target is a setting; an int, float or choice param's numbers lie inside the setting's
// range, so that no trial is refused for a value the space allows; a bool is a 0|1 setting or a
// flag. Errors name the key path and the range.
int space_check_settings(const Space *s);

// Is v a valid value of p? -1 + err like "matrix-lr: 0.5 is above the maximum 0.08".
int space_check_value(const Param *p, const struct cJSON *v);

// child = parent with `change` applied, derived settings recomputed and values and constraints
// checked. On success *child (and *diff: every setting that differs from parent, derived ones
// included; may be NULL) are new objects. -1 + err saying why the change is infeasible.
int space_apply(const Space *s, const struct cJSON *parent, const struct cJSON *change, struct cJSON **child,
                struct cJSON **diff);

// An agent's change: a non-empty object whose keys are params of the space with valid values
// (derived settings are refused with a hint). Does not check constraints (space_apply does).
int space_validate_change(const Space *s, const struct cJSON *change);

// A random value for every param (choice/bool uniform, int/float uniform or log-uniform on the
// step grid, floats rounded to 3 significant digits). Returns a change object.
struct cJSON *space_sample(const Space *s, Rng *r);
// One param moved from its value in `parent`: a local step (x/÷ a factor on log scales, a fraction
// of the range otherwise) or, one time in five, a fresh uniform draw; bools flip, choices switch.
// May return a change equal to the parent's value when nothing else is possible (space_apply
// then reports no difference).
struct cJSON *space_mutate(const Space *s, Rng *r, const struct cJSON *parent);
// The same move for param k (index in s->params) instead of a random one.
struct cJSON *space_mutate_param(const Space *s, Rng *r, const struct cJSON *parent, int k);

// The settings of child whose values differ from parent's (a new object).
struct cJSON *space_config_diff(const struct cJSON *parent, const struct cJSON *child);

// "matrix-lr 0.02 -> 0.0283, n-head 1 -> 2" for the settings in diff (malloc'ed).
char *space_describe_diff(const struct cJSON *parent, const struct cJSON *diff);
// A JSON value as short text: 0.0283, 128, "newton-schulz" -> newton-schulz, true (malloc'ed).
char *json_value_text(const struct cJSON *v);
