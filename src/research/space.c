// research/space.c — the search space: parsing and validation, expressions, applying a change
// (derive + checks), sampling and mutation (see space.h).
#include "research/space.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/settings.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

// ---------------------------------------------------------------------------------------------
// Expressions: a number, a setting name, or {"div"|"mul"|"min"|"max": [a, b]}
// ---------------------------------------------------------------------------------------------

typedef enum { E_NUM, E_NAME, E_DIV, E_MUL, E_MIN, E_MAX } ExprOp;

struct Expr {
    ExprOp op;
    double num;
    char *name;
    Expr *a, *b;
};

static const char *const OP_NAMES[] = {"", "", "div", "mul", "min", "max"};

static void expr_free(Expr *e) {
    if (!e) return;
    free(e->name);
    expr_free(e->a);
    expr_free(e->b);
    free(e);
}

static Expr *expr_parse(const cJSON *j, const char *origin, const char *path) {
    Expr *e = xcalloc(1, sizeof *e);
    if (cJSON_IsNumber(j)) {
        e->op = E_NUM, e->num = j->valuedouble;
        return e;
    }
    if (cJSON_IsString(j) && j->valuestring[0]) {
        e->op = E_NAME, e->name = xstrdup(j->valuestring);
        return e;
    }
    free(e);
    const cJSON *args = cJSON_IsObject(j) && cJSON_GetArraySize(j) == 1 ? j->child : NULL;
    int op = -1;
    for (int k = E_DIV; args && k <= E_MAX; k++)
        if (!strcmp(args->string, OP_NAMES[k])) op = k;
    if (op < 0 || !cJSON_IsArray(args) || cJSON_GetArraySize(args) != 2) {
        err_set("%s: %s: expected a number, a setting name, or {\"div\"|\"mul\"|\"min\"|\"max\": [a, b]}", origin, path);
        return NULL;
    }
    char sub[512];
    snprintf(sub, sizeof sub, "%s.%s[0]", path, OP_NAMES[op]);
    Expr *a = expr_parse(args->child, origin, sub);
    if (!a) return NULL;
    snprintf(sub, sizeof sub, "%s.%s[1]", path, OP_NAMES[op]);
    Expr *b = expr_parse(args->child->next, origin, sub);
    if (!b) { expr_free(a); return NULL; }
    e = xcalloc(1, sizeof *e);
    e->op = (ExprOp)op, e->a = a, e->b = b;
    return e;
}

// "n-embd/head-dim", "min(16, batch-tokens/seq-len)" for messages (malloc'ed).
static char *expr_text(const Expr *e) {
    char *out = NULL, *a = NULL, *b = NULL;
    int k;
    switch (e->op) {
    case E_NUM: k = asprintf(&out, "%g", e->num); break;
    case E_NAME: k = asprintf(&out, "%s", e->name); break;
    default:
        a = expr_text(e->a), b = expr_text(e->b);
        if (e->op == E_DIV || e->op == E_MUL) k = asprintf(&out, "%s%s%s", a, e->op == E_DIV ? "/" : "*", b);
        else k = asprintf(&out, "%s(%s, %s)", OP_NAMES[e->op], a, b);
    }
    free(a);
    free(b);
    return k < 0 ? xstrdup("?") : out;
}

static int expr_reads(const Expr *e, const char *name) {
    if (!e) return 0;
    if (e->op == E_NAME) return !strcmp(e->name, name);
    return expr_reads(e->a, name) || expr_reads(e->b, name);
}

// Every name read by e is a key of cfg with a number or bool value.
static int expr_check_names(const Expr *e, const cJSON *cfg, const char *origin, const char *path) {
    if (!e) return 0;
    if (e->op == E_NAME) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, e->name);
        if (!v) return err_set("%s: %s: \"%s\" is not a setting of frontier train (see frontier train --help)", origin, path, e->name);
        if (!cJSON_IsNumber(v) && !cJSON_IsBool(v)) return err_set("%s: %s: \"%s\" is not numeric", origin, path, e->name);
        return 0;
    }
    if (expr_check_names(e->a, cfg, origin, path) != 0) return -1;
    return expr_check_names(e->b, cfg, origin, path);
}

static int expr_eval(const Expr *e, const cJSON *cfg, double *out) {
    double a, b;
    switch (e->op) {
    case E_NUM: *out = e->num; return 0;
    case E_NAME: {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, e->name);
        if (cJSON_IsBool(v)) { *out = cJSON_IsTrue(v); return 0; }
        if (!cJSON_IsNumber(v)) return err_set("\"%s\" is not a numeric setting of the config", e->name);
        *out = v->valuedouble;
        return 0;
    }
    default: break;
    }
    if (expr_eval(e->a, cfg, &a) != 0 || expr_eval(e->b, cfg, &b) != 0) return -1;
    switch (e->op) {
    case E_MUL: *out = a * b; return 0;
    case E_MIN: *out = fmin(a, b); return 0;
    case E_MAX: *out = fmax(a, b); return 0;
    default: break;
    }
    if (b == 0 || fmod(a, b) != 0) {
        char *t = expr_text(e);
        err_set("%s: %g is not a multiple of %g", t, a, b);
        free(t);
        return -1;
    }
    *out = a / b;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

static int allowed_keys(const cJSON *obj, const char *const *keys, const char *origin, const char *path) {
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        int ok = 0;
        for (int k = 0; keys[k]; k++) ok |= !strcmp(it->string, keys[k]);
        if (!ok) {
            char list[256] = "";
            for (int k = 0; keys[k]; k++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", keys[k]);
            return err_set("%s: %s: unknown field \"%s\" (expected %s)", origin, path, it->string, list);
        }
    }
    return 0;
}

static int get_number(const cJSON *obj, const char *key, double *out, int required, const char *origin, const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) return required ? err_set("%s: %s: missing \"%s\"", origin, path, key) : 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return err_set("%s: %s.%s: must be a number", origin, path, key);
    *out = v->valuedouble;
    return 0;
}

static int parse_numeric(Param *p, const cJSON *j, const char *origin, const char *path) {
    static const char *const keys[] = {"type", "min", "max", "log", "step", "description", NULL};
    if (allowed_keys(j, keys, origin, path) != 0) return -1;
    if (get_number(j, "min", &p->min, 1, origin, path) || get_number(j, "max", &p->max, 1, origin, path) ||
        get_number(j, "step", &p->step, 0, origin, path))
        return -1;
    const cJSON *lg = cJSON_GetObjectItemCaseSensitive(j, "log");
    if (lg && !cJSON_IsBool(lg)) return err_set("%s: %s.log: must be true or false", origin, path);
    p->log = cJSON_IsTrue(lg);
    if (p->min > p->max) return err_set("%s: %s: min %g is greater than max %g", origin, path, p->min, p->max);
    if (p->log && p->min <= 0) return err_set("%s: %s: a log scale needs min > 0, got %g", origin, path, p->min);
    if (p->step < 0) return err_set("%s: %s.step: must be positive, got %g", origin, path, p->step);
    if (p->type == PARAM_INT) {
        if (p->min != floor(p->min) || p->max != floor(p->max) || p->step != floor(p->step))
            return err_set("%s: %s: an int param needs integer min, max and step", origin, path);
        if (p->step == 0) p->step = 1;
    }
    return 0;
}

static int parse_choice(Param *p, const cJSON *j, const char *origin, const char *path) {
    static const char *const keys[] = {"type", "values", "description", NULL};
    if (allowed_keys(j, keys, origin, path) != 0) return -1;
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(j, "values");
    if (!cJSON_IsArray(vals) || cJSON_GetArraySize(vals) == 0)
        return err_set("%s: %s.values: must be a non-empty list", origin, path);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, vals) {
        if (!cJSON_IsNumber(v) && !cJSON_IsString(v) && !cJSON_IsBool(v))
            return err_set("%s: %s.values[%d]: must be a number, a string or a bool", origin, path, i);
        int k = 0;
        for (const cJSON *w = vals->child; w != v; w = w->next, k++)
            if (cJSON_Compare(v, w, 1)) return err_set("%s: %s.values[%d]: repeats values[%d]", origin, path, i, k);
        i++;
    }
    p->values = cJSON_Duplicate(vals, 1);
    return 0;
}

static int parse_param(Param *p, const cJSON *j, const char *origin) {
    char path[300];
    snprintf(path, sizeof path, "params.%s", j->string);
    p->name = xstrdup(j->string);
    if (!cJSON_IsObject(j)) return err_set("%s: %s: must be an object like {\"type\": \"float\", \"min\": 0, \"max\": 1}", origin, path);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    if (!cJSON_IsString(t)) return err_set("%s: %s.type: missing (int, float, choice or bool)", origin, path);
    const char *ty = t->valuestring;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "description");
    if (d && !cJSON_IsString(d)) return err_set("%s: %s.description: must be a string", origin, path);
    if (!strcmp(ty, "int") || !strcmp(ty, "float")) {
        p->type = ty[0] == 'i' ? PARAM_INT : PARAM_FLOAT;
        return parse_numeric(p, j, origin, path);
    }
    if (!strcmp(ty, "choice")) {
        p->type = PARAM_CHOICE;
        return parse_choice(p, j, origin, path);
    }
    if (!strcmp(ty, "bool")) {
        static const char *const keys[] = {"type", "description", NULL};
        p->type = PARAM_BOOL;
        return allowed_keys(j, keys, origin, path);
    }
    return err_set("%s: %s.type: unknown type \"%s\" (int, float, choice or bool)", origin, path, ty);
}

static int parse_params(Space *s, const cJSON *params) {
    if (!cJSON_IsObject(params) || !params->child)
        return err_set("%s: params: must be a non-empty object of settings (flag names of frontier train)", s->origin);
    s->params = xcalloc((size_t)cJSON_GetArraySize(params), sizeof *s->params);
    const cJSON *j;
    cJSON_ArrayForEach(j, params) {
        for (int k = 0; k < s->n_params; k++)
            if (!strcmp(s->params[k].name, j->string)) return err_set("%s: params.%s: given twice", s->origin, j->string);
        if (parse_param(&s->params[s->n_params++], j, s->origin) != 0) return -1;
    }
    return 0;
}

static int parse_derive(Space *s, const cJSON *derive) {
    if (!derive) return 0;
    if (!cJSON_IsObject(derive)) return err_set("%s: derive: must be an object {setting: expression}", s->origin);
    s->derive = xcalloc((size_t)cJSON_GetArraySize(derive) + 1, sizeof *s->derive);
    const cJSON *j;
    cJSON_ArrayForEach(j, derive) {
        char path[300];
        snprintf(path, sizeof path, "derive.%s", j->string);
        Expr *e = expr_parse(j, s->origin, path);
        if (!e) return -1;
        if (expr_reads(e, j->string)) { expr_free(e); return err_set("%s: %s: reads itself", s->origin, path); }
        s->derive[s->n_derive++] = (Derive){xstrdup(j->string), e};
    }
    return 0;
}

static int parse_constraints(Space *s, const cJSON *cons) {
    if (!cons) return 0;
    if (!cJSON_IsArray(cons)) return err_set("%s: constraints: must be a list", s->origin);
    s->cons = xcalloc((size_t)cJSON_GetArraySize(cons) + 1, sizeof *s->cons);
    const cJSON *j;
    int i = 0;
    cJSON_ArrayForEach(j, cons) {
        char path[300];
        snprintf(path, sizeof path, "constraints[%d]", i++);
        const cJSON *args = cJSON_IsObject(j) && cJSON_GetArraySize(j) == 1 ? j->child : NULL;
        int divides = args && !strcmp(args->string, "divides"), le = args && !strcmp(args->string, "le");
        if ((!divides && !le) || !cJSON_IsArray(args) || cJSON_GetArraySize(args) != 2)
            return err_set("%s: %s: expected {\"divides\": [a, b]} (b is a multiple of a) or {\"le\": [a, b]} (a <= b)",
                           s->origin, path);
        char sub[320];
        snprintf(sub, sizeof sub, "%s.%s[0]", path, args->string);
        Expr *a = expr_parse(args->child, s->origin, sub);
        if (!a) return -1;
        snprintf(sub, sizeof sub, "%s.%s[1]", path, args->string);
        Expr *b = expr_parse(args->child->next, s->origin, sub);
        if (!b) { expr_free(a); return -1; }
        s->cons[s->n_cons++] = (Constraint){divides ? CONS_DIVIDES : CONS_LE, a, b};
    }
    return 0;
}

// Derive targets that are also params are fine (a change may set them); a target read by an
// earlier rule would be stale, so derive rules must come after what they read.
static int check_derive_order(const Space *s) {
    for (int i = 0; i < s->n_derive; i++)
        for (int k = 0; k < i; k++)
            if (expr_reads(s->derive[k].expr, s->derive[i].target))
                return err_set("%s: derive.%s: must come before derive.%s, which reads it", s->origin,
                               s->derive[i].target, s->derive[k].target);
    return 0;
}

int space_parse(Space *s, const char *text, const char *origin) {
    memset(s, 0, sizeof *s);
    s->origin = xstrdup(origin);
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && *p; p++) line += *p == '\n';
        return err_set("%s:%d: not valid JSON", origin, line);
    }
    s->json = root;
    if (!cJSON_IsObject(root)) return err_set("%s: must be a JSON object with \"params\"", origin);
    static const char *const keys[] = {"description", "params", "derive", "constraints", NULL};
    if (allowed_keys(root, keys, origin, "(top level)") != 0) return -1;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "description");
    if (d && !cJSON_IsString(d)) return err_set("%s: description: must be a string", origin);
    if (parse_params(s, cJSON_GetObjectItemCaseSensitive(root, "params")) != 0) return -1;
    if (parse_derive(s, cJSON_GetObjectItemCaseSensitive(root, "derive")) != 0) return -1;
    if (parse_constraints(s, cJSON_GetObjectItemCaseSensitive(root, "constraints")) != 0) return -1;
    return check_derive_order(s);
}

int space_load(Space *s, const char *path) {
    char *text = read_file(path, NULL);
    if (!text) {
        memset(s, 0, sizeof *s);
        return err_prefix("--space");
    }
    int rc = space_parse(s, text, path);
    free(text);
    return rc;
}

void space_free(Space *s) {
    for (int i = 0; i < s->n_params; i++) {
        free(s->params[i].name);
        cJSON_Delete(s->params[i].values);
    }
    for (int i = 0; i < s->n_derive; i++) free(s->derive[i].target), expr_free(s->derive[i].expr);
    for (int i = 0; i < s->n_cons; i++) expr_free(s->cons[i].a), expr_free(s->cons[i].b);
    free(s->params);
    free(s->derive);
    free(s->cons);
    free(s->origin);
    cJSON_Delete(s->json);
    memset(s, 0, sizeof *s);
}

const Param *space_find(const Space *s, const char *name) {
    for (int i = 0; i < s->n_params; i++)
        if (!strcmp(s->params[i].name, name)) return &s->params[i];
    return NULL;
}

static const char *json_type_name(const cJSON *v) {
    return cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "a string" : cJSON_IsBool(v) ? "a bool" : "null";
}

static int check_param_against(Param *p, const cJSON *bv, const char *origin) {
    if (!bv && train_setting_find(p->name))  // a base.json from before the setting existed
        return err_set("%s: params.%s: the base config has no such setting (written by an older frontier?): add "
                       "\"%s\" with its default (`frontier train --settings`) to the base, or start a new --out",
                       origin, p->name, p->name);
    if (!bv) return err_set("%s: params.%s: not a setting of frontier train (see frontier train --help)", origin, p->name);
    switch (p->type) {
    case PARAM_BOOL:
        if (!cJSON_IsBool(bv) && !cJSON_IsNumber(bv)) return err_set("%s: params.%s: the setting is %s, not a toggle", origin, p->name, json_type_name(bv));
        p->bool_as_json_bool = cJSON_IsBool(bv);
        return 0;
    case PARAM_INT:
    case PARAM_FLOAT:
        if (!cJSON_IsNumber(bv)) return err_set("%s: params.%s: the setting is %s, not a number", origin, p->name, json_type_name(bv));
        return 0;
    case PARAM_CHOICE: {
        int i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, p->values) {
            int same = (cJSON_IsNumber(v) && cJSON_IsNumber(bv)) || (cJSON_IsString(v) && (cJSON_IsString(bv) || cJSON_IsNull(bv))) ||
                       (cJSON_IsBool(v) && cJSON_IsBool(bv));
            if (!same) return err_set("%s: params.%s.values[%d]: the setting is %s", origin, p->name, i, json_type_name(bv));
            i++;
        }
        return 0;
    }
    }
    return 0;
}

int space_check_base(Space *s, const cJSON *base) {
    for (int i = 0; i < s->n_params; i++)
        if (check_param_against(&s->params[i], cJSON_GetObjectItemCaseSensitive(base, s->params[i].name), s->origin) != 0)
            return -1;
    for (int i = 0; i < s->n_derive; i++) {
        char path[300];
        snprintf(path, sizeof path, "derive.%s", s->derive[i].target);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(base, s->derive[i].target);
        if (!cJSON_IsNumber(t)) return err_set("%s: %s: not a numeric setting of frontier train", s->origin, path);
        if (expr_check_names(s->derive[i].expr, base, s->origin, path) != 0) return -1;
    }
    for (int i = 0; i < s->n_cons; i++) {
        char path[64];
        snprintf(path, sizeof path, "constraints[%d]", i);
        if (expr_check_names(s->cons[i].a, base, s->origin, path) || expr_check_names(s->cons[i].b, base, s->origin, path))
            return -1;
    }
    return 0;
}

// A number a param may give the setting, against the setting's range: 0, or -1 + err.
static int check_in_setting(const Setting *t, double v, const char *origin, const char *path) {
    int is_int = t->type == SETTING_INT || t->type == SETTING_INT64;
    if (is_int && t->min < t->max && (v < (double)t->min || v > (double)t->max))
        return err_set("%s: %s: %g lies outside --%s's range %lld..%lld", origin, path, v, t->name, (long long)t->min,
                       (long long)t->max);
    if (is_int && v != floor(v)) return err_set("%s: %s: %g is not an integer, and --%s takes integers", origin, path, v, t->name);
    if (t->has_range && !((t->lo_open ? v > t->lo : v >= t->lo) && (t->hi_open ? v < t->hi : v <= t->hi)))
        return err_set("%s: %s: %g lies outside --%s's range %c%g, %g%c", origin, path, v, t->name, t->lo_open ? '(' : '[',
                       t->lo, t->hi, t->hi_open ? ')' : ']');
    return 0;
}

int space_check_settings(const Space *s) {
    for (int i = 0; i < s->n_params; i++) {
        const Param *p = &s->params[i];
        const Setting *t = train_setting_find(p->name);
        char path[300];
        snprintf(path, sizeof path, "params.%s", p->name);
        if (!t) return err_set("%s: %s: not a setting of frontier train (frontier train --settings lists them)", s->origin, path);
        int numeric = t->type == SETTING_INT || t->type == SETTING_INT64 || t->type == SETTING_FLOAT || t->type == SETTING_DOUBLE;
        switch (p->type) {
        case PARAM_INT:
        case PARAM_FLOAT:
            if (!numeric) return err_set("%s: %s: --%s is not a number", s->origin, path, t->name);
            if (check_in_setting(t, p->min, s->origin, path) || check_in_setting(t, p->max, s->origin, path)) return -1;
            break;
        case PARAM_BOOL:
            if (t->type != SETTING_FLAG && !(t->type == SETTING_INT && t->min == 0 && t->max == 1))
                return err_set("%s: %s: --%s is not a 0|1 setting", s->origin, path, t->name);
            break;
        case PARAM_CHOICE: {
            const cJSON *v;
            cJSON_ArrayForEach(v, p->values)
                if (cJSON_IsNumber(v) && numeric && check_in_setting(t, v->valuedouble, s->origin, path) != 0) return -1;
            break;
        }
        }
    }
    for (int i = 0; i < s->n_derive; i++)
        if (!train_setting_find(s->derive[i].target))
            return err_set("%s: derive.%s: not a setting of frontier train", s->origin, s->derive[i].target);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

static int on_grid(const Param *p, double v) {
    if (p->step <= 0) return 1;
    double k = (v - p->min) / p->step;
    return fabs(k - round(k)) <= 1e-6 * fmax(1, fabs(k));
}

int space_check_value(const Param *p, const cJSON *v) {
    char *t = json_value_text(v);
    int rc = 0;
    switch (p->type) {
    case PARAM_BOOL:
        if (!cJSON_IsBool(v) && !(cJSON_IsNumber(v) && (v->valuedouble == 0 || v->valuedouble == 1)))
            rc = err_set("%s: %s is not a toggle (true/false or 0/1)", p->name, t);
        break;
    case PARAM_CHOICE: {
        int found = 0;
        const cJSON *w;
        cJSON_ArrayForEach(w, p->values) found |= cJSON_Compare(v, w, 1);
        if (!found) {
            char *list = cJSON_PrintUnformatted(p->values);
            rc = err_set("%s: %s is not one of the choices %s", p->name, t, list);
            free(list);
        }
        break;
    }
    case PARAM_INT:
    case PARAM_FLOAT: {
        double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        if (!cJSON_IsNumber(v) || !isfinite(x)) rc = err_set("%s: %s is not a number", p->name, t);
        else if (p->type == PARAM_INT && x != floor(x)) rc = err_set("%s: %s is not an integer", p->name, t);
        else if (x < p->min) rc = err_set("%s: %s is below the minimum %g", p->name, t, p->min);
        else if (x > p->max) rc = err_set("%s: %s is above the maximum %g", p->name, t, p->max);
        else if (!on_grid(p, x)) rc = err_set("%s: %s is not on the grid %g + k*%g", p->name, t, p->min, p->step);
        break;
    }
    }
    free(t);
    return rc;
}

char *json_value_text(const cJSON *v) {
    if (!v) return xstrdup("(unset)");
    if (cJSON_IsString(v)) return xstrdup(v->valuestring);
    if (cJSON_IsNumber(v)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.6g", v->valuedouble);
        return xstrdup(buf);
    }
    char *s = cJSON_PrintUnformatted(v);
    return s ? s : xstrdup("?");
}

// Round to 3 significant digits, or onto the step grid; either way clean of float noise.
static double tidy(const Param *p, double x) {
    if (p->step > 0) x = p->min + round((x - p->min) / p->step) * p->step;
    else if (x != 0) {
        double mag = pow(10, floor(log10(fabs(x))) - 2);
        x = round(x / mag) * mag;
    }
    if (x != 0) {  // 0.30000000000000004 -> 0.3
        char buf[64];
        snprintf(buf, sizeof buf, "%.10g", x);
        x = strtod(buf, NULL);
    }
    return fmin(p->max, fmax(p->min, x));
}

static cJSON *number_value(const Param *p, double x) {
    x = tidy(p, x);
    if (p->type == PARAM_INT) x = round(x);
    return cJSON_CreateNumber(x);
}

static cJSON *uniform_value(const Param *p, Rng *r) {
    switch (p->type) {
    case PARAM_BOOL: {
        int on = rng_uniform(r) < 0.5;
        return p->bool_as_json_bool ? cJSON_CreateBool(on) : cJSON_CreateNumber(on);
    }
    case PARAM_CHOICE: {
        int n = cJSON_GetArraySize(p->values), k = (int)(rng_uniform(r) * n);
        return cJSON_Duplicate(cJSON_GetArrayItem(p->values, k < n ? k : n - 1), 1);
    }
    default: break;
    }
    double u = rng_uniform(r);
    if (p->type == PARAM_INT && !p->log) {  // uniform over the grid points
        int64_t n = (int64_t)floor((p->max - p->min) / p->step + 1e-9) + 1;
        int64_t k = (int64_t)(u * (double)n);
        return number_value(p, p->min + (double)(k < n ? k : n - 1) * p->step);
    }
    double x = p->log ? exp(log(p->min) + u * (log(p->max) - log(p->min))) : p->min + u * (p->max - p->min);
    return number_value(p, x);
}

// A step away from x: x/÷ e^U(0.2,0.8) on a log scale, ± U(0.1,0.35) of the range otherwise; at
// least one grid step (or 1 for ints) so it never stands still unless it hits a bound.
static cJSON *local_value(const Param *p, Rng *r, double x) {
    int up = rng_uniform(r) < 0.5;
    double u = rng_uniform(r), y;
    if (p->log && x > 0) y = x * exp((up ? 1 : -1) * (0.2 + 0.6 * u));
    else y = x + (up ? 1 : -1) * (0.1 + 0.25 * u) * (p->max - p->min);
    cJSON *v = number_value(p, y);
    if (v->valuedouble == x) {
        double unit = p->step > 0 ? p->step : p->type == PARAM_INT ? 1 : 0;
        if (unit > 0) {
            cJSON_Delete(v);
            v = number_value(p, x + (up ? unit : -unit));
        }
    }
    return v;
}

static cJSON *other_choice(const Param *p, Rng *r, const cJSON *cur) {
    int n = cJSON_GetArraySize(p->values), m = 0;
    const cJSON *w, *pick = NULL;
    cJSON_ArrayForEach(w, p->values) m += !cJSON_Compare(w, cur, 1);
    if (m == 0) return cJSON_Duplicate(cJSON_GetArrayItem(p->values, 0), 1);
    int k = (int)(rng_uniform(r) * m);
    if (k >= m) k = m - 1;
    cJSON_ArrayForEach(w, p->values) {
        if (cJSON_Compare(w, cur, 1)) continue;
        if (k-- == 0) { pick = w; break; }
    }
    (void)n;
    return cJSON_Duplicate(pick, 1);
}

cJSON *space_sample(const Space *s, Rng *r) {
    cJSON *c = cJSON_CreateObject();
    for (int i = 0; i < s->n_params; i++) cJSON_AddItemToObject(c, s->params[i].name, uniform_value(&s->params[i], r));
    return c;
}

cJSON *space_mutate(const Space *s, Rng *r, const cJSON *parent) {
    int k = (int)(rng_uniform(r) * s->n_params);
    return space_mutate_param(s, r, parent, k < s->n_params ? k : s->n_params - 1);
}

cJSON *space_mutate_param(const Space *s, Rng *r, const cJSON *parent, int k) {
    const Param *p = &s->params[k];
    const cJSON *cur = cJSON_GetObjectItemCaseSensitive(parent, p->name);
    cJSON *v;
    if (p->type == PARAM_BOOL) {
        int on = cJSON_IsTrue(cur) || (cJSON_IsNumber(cur) && cur->valuedouble != 0);
        v = p->bool_as_json_bool ? cJSON_CreateBool(!on) : cJSON_CreateNumber(!on);
    } else if (p->type == PARAM_CHOICE) {
        v = other_choice(p, r, cur);
    } else if (!cJSON_IsNumber(cur) || cur->valuedouble < p->min || cur->valuedouble > p->max || rng_uniform(r) < 0.2) {
        v = uniform_value(p, r);
    } else {
        v = local_value(p, r, cur->valuedouble);
    }
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToObject(c, p->name, v);
    return c;
}

// ---------------------------------------------------------------------------------------------
// Applying a change
// ---------------------------------------------------------------------------------------------

typedef struct {
    const char **names;
    int n, cap;
} NameSet;

static int set_has(const NameSet *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name)) return 1;
    return 0;
}

static void set_add(NameSet *s, const char *name) {
    if (set_has(s, name)) return;
    if (s->n == s->cap) s->names = xrealloc(s->names, (size_t)(s->cap = s->cap ? 2 * s->cap : 16) * sizeof *s->names);
    s->names[s->n++] = name;
}

static int reads_any(const Expr *e, const NameSet *changed) {
    for (int i = 0; i < changed->n; i++)
        if (expr_reads(e, changed->names[i])) return 1;
    return 0;
}

// Set child[key] = v (a copy); 1 if the value differs from what was there.
static int set_setting(cJSON *child, const char *key, const cJSON *v) {
    cJSON *old = cJSON_GetObjectItemCaseSensitive(child, key);
    if (old && cJSON_Compare(old, v, 1)) return 0;
    cJSON_ReplaceItemInObjectCaseSensitive(child, key, cJSON_Duplicate(v, 1));
    return 1;
}

static int run_derive(const Space *s, cJSON *child, const cJSON *change, NameSet *changed) {
    for (int i = 0; i < s->n_derive; i++) {
        const Derive *d = &s->derive[i];
        if (cJSON_GetObjectItemCaseSensitive(change, d->target) || !reads_any(d->expr, changed)) continue;
        double x;
        if (expr_eval(d->expr, child, &x) != 0) return err_prefix("%s (derived)", d->target);
        cJSON *v = cJSON_CreateNumber(x);
        // A derived value is a consequence, not a proposal: the param's range (if the target is
        // also a param) limits what is proposed, not this; constraints still apply.
        if (set_setting(child, d->target, v)) set_add(changed, d->target);
        cJSON_Delete(v);
    }
    return 0;
}

static int check_constraints(const Space *s, const cJSON *child, const NameSet *changed) {
    for (int i = 0; i < s->n_cons; i++) {
        const Constraint *c = &s->cons[i];
        if (!reads_any(c->a, changed) && !reads_any(c->b, changed)) continue;
        double a, b;
        if (expr_eval(c->a, child, &a) != 0 || expr_eval(c->b, child, &b) != 0) return -1;
        int broken = c->kind == CONS_DIVIDES ? a <= 0 || fmod(b, a) != 0 : !(a <= b);
        if (!broken) continue;
        char *ta = expr_text(c->a), *tb = expr_text(c->b);
        if (c->kind == CONS_DIVIDES) err_set("constraint: %s %g is not a multiple of %s %g", tb, b, ta, a);
        else err_set("constraint: %s %g must be at most %s %g", ta, a, tb, b);
        free(ta);
        free(tb);
        return -1;
    }
    return 0;
}

cJSON *space_config_diff(const cJSON *parent, const cJSON *child) {
    cJSON *d = cJSON_CreateObject();
    const cJSON *it;
    cJSON_ArrayForEach(it, child) {
        const cJSON *pv = cJSON_GetObjectItemCaseSensitive(parent, it->string);
        if (!pv || !cJSON_Compare(pv, it, 1)) cJSON_AddItemToObject(d, it->string, cJSON_Duplicate(it, 1));
    }
    return d;
}

int space_apply(const Space *s, const cJSON *parent, const cJSON *change, cJSON **child_out, cJSON **diff_out) {
    cJSON *child = cJSON_Duplicate(parent, 1);
    NameSet changed = {0};
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, change) {
        if (!cJSON_GetObjectItemCaseSensitive(child, it->string)) {
            rc = err_set("\"%s\" is not a setting of frontier train", it->string);
            break;
        }
        const Param *p = space_find(s, it->string);
        if (p && (rc = space_check_value(p, it)) != 0) break;
        if (set_setting(child, it->string, it)) set_add(&changed, it->string);
    }
    if (rc == 0) rc = run_derive(s, child, change, &changed);
    if (rc == 0) rc = check_constraints(s, child, &changed);
    free(changed.names);
    if (rc != 0) {
        cJSON_Delete(child);
        return -1;
    }
    if (diff_out) *diff_out = space_config_diff(parent, child);
    *child_out = child;
    return 0;
}

int space_validate_change(const Space *s, const cJSON *change) {
    if (!cJSON_IsObject(change) || !change->child)
        return err_set("a change must be a non-empty JSON object of settings, e.g. {\"matrix-lr\": 0.03}");
    const cJSON *it;
    cJSON_ArrayForEach(it, change) {
        const Param *p = space_find(s, it->string);
        if (!p) {
            for (int i = 0; i < s->n_derive; i++)
                if (!strcmp(s->derive[i].target, it->string))
                    return err_set("\"%s\" is derived by the space; change what it is computed from instead", it->string);
            return err_set("\"%s\" is not a param of the space %s", it->string, s->origin);
        }
        if (space_check_value(p, it) != 0) return -1;
    }
    return 0;
}

char *space_describe_diff(const cJSON *parent, const cJSON *diff) {
    size_t cap = 256, len = 0;
    char *out = xmalloc(cap);
    out[0] = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, diff) {
        char *a = json_value_text(cJSON_GetObjectItemCaseSensitive(parent, it->string)), *b = json_value_text(it);
        size_t need = strlen(it->string) + strlen(a) + strlen(b) + 16;
        while (len + need >= cap) out = xrealloc(out, cap *= 2);
        len += (size_t)snprintf(out + len, cap - len, "%s%s %s -> %s", len ? ", " : "", it->string, a, b);
        free(a);
        free(b);
    }
    return out;
}
