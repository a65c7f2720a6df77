// model/params.c — the parameter table (see params.h).
#include "model/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

ParamTensor *param_table_add(ParamTable *tab, const char *name, int rows, int cols, ParamKind kind) {
    tab->t = xrealloc(tab->t, (size_t)(tab->n + 1) * sizeof *tab->t);
    ParamTensor *p = &tab->t[tab->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->rows = rows;
    p->cols = cols;
    p->numel = (size_t)rows * (size_t)cols;
    p->offset = (tab->total + 15) & ~(size_t)15;
    p->kind = kind;
    tab->total = p->offset + p->numel;
    return p;
}

const ParamTensor *param_table_find(const ParamTable *tab, const char *name) {
    for (int i = 0; i < tab->n; i++)
        if (!strcmp(tab->t[i].name, name)) return &tab->t[i];
    return NULL;
}

void param_table_free(ParamTable *tab) {
    free(tab->t);
    tab->t = NULL;
    tab->n = 0;
    tab->total = 0;
}
