// util/json_file.c — see json_file.h.
#include "util/json_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

int json_write_atomic(const char *path, const cJSON *j) {
    char *text = cJSON_Print(j);
    if (!text) return err_set("%s: out of memory printing JSON", path);
    size_t n = strlen(text);
    text = xrealloc(text, n + 2);
    text[n] = '\n', text[n + 1] = 0;
    int rc = write_file_atomic(path, text, n + 1);
    free(text);
    return rc;
}

cJSON *json_read_object(const char *path, const char *what) {
    char *text = read_file(path, NULL);
    if (!text) { err_prefix("%s", what); return NULL; }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        err_set("%s %s: not a JSON object", what, path);
        return NULL;
    }
    return j;
}

double jnum(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

const char *jstr(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
