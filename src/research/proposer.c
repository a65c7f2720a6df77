// research/proposer.c — agent mode: run the proposer command, read its change (see proposer.h).
#include "research/proposer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "research/proc.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

enum { MAX_OUTPUT = 1 << 20 };

static int take_object(cJSON *o, cJSON **change, char **description) {
    cJSON *inner = cJSON_GetObjectItemCaseSensitive(o, "change");
    if (inner) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "description");
        if (!cJSON_IsObject(inner)) return err_set("\"change\" must be an object of settings");
        if (d && !cJSON_IsString(d)) return err_set("\"description\" must be a string");
        for (const cJSON *it = o->child; it; it = it->next)
            if (strcmp(it->string, "change") && strcmp(it->string, "description"))
                return err_set("unexpected key \"%s\" next to \"change\" (only \"description\" may be there)", it->string);
        *change = cJSON_Duplicate(inner, 1);
        *description = d ? xstrdup(d->valuestring) : NULL;
        return 0;
    }
    *change = cJSON_Duplicate(o, 1);
    *description = NULL;
    return 0;
}

int proposer_parse_output(const char *text, cJSON **change, char **description) {
    *change = NULL, *description = NULL;
    cJSON *o = cJSON_Parse(text);
    if (!cJSON_IsObject(o)) {  // else the last non-empty line (an agent may talk first)
        cJSON_Delete(o), o = NULL;
        const char *end = text + strlen(text);
        while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t')) end--;
        const char *start = end;
        while (start > text && start[-1] != '\n') start--;
        if (end > start) {
            char *line = xmalloc((size_t)(end - start) + 1);
            memcpy(line, start, (size_t)(end - start));
            line[end - start] = 0;
            o = cJSON_Parse(line);
            free(line);
        }
    }
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        char shown[80];
        snprintf(shown, sizeof shown, "%s", text);
        for (char *p = shown; *p; p++)
            if ((unsigned char)*p < 0x20) *p = ' ';
        return err_set("the proposer's output is not a JSON object (got \"%s%s\"); print one object like "
                       "{\"matrix-lr\": 0.03}", shown, strlen(text) >= sizeof shown ? "..." : "");
    }
    int rc = take_object(o, change, description);
    cJSON_Delete(o);
    return rc;
}

int proposer_run(const char *cmd, const char *trial_dir, const cJSON *bundle, double limit_s, Proposal *p) {
    memset(p, 0, sizeof *p);
    if (mkdir_p(trial_dir) != 0) return -1;
    char *in = path_join(trial_dir, "proposer.in.json"), *out = path_join(trial_dir, "proposer.out");
    char *log = path_join(trial_dir, "proposer.log");
    char *text = cJSON_Print(bundle);
    int rc = write_file_atomic(in, text, strlen(text));
    free(text);
    const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
    ProcSpec spec = {argv, in, out, log, 0, limit_s, 0, NULL, 0, 0, 0};
    ProcResult pr;
    if (rc == 0) rc = proc_run(&spec, &pr);
    if (rc == 0) {
        p->wall_s = pr.wall_s, p->interrupted = pr.interrupted;
        size_t len = 0;
        char *got = NULL;
        if (pr.exit_code != 0) rc = err_set("the proposer failed: %s (its stderr is in %s)", proc_describe(&pr), log);
        else if (!(got = read_file(out, &len))) rc = -1;
        else if (len > MAX_OUTPUT) rc = err_set("the proposer printed %zu bytes; expected one JSON object", len);
        else rc = proposer_parse_output(got, &p->change, &p->description);
        free(got);
    }
    free(in);
    free(out);
    free(log);
    return rc;
}

void proposal_free(Proposal *p) {
    cJSON_Delete(p->change);
    free(p->description);
    memset(p, 0, sizeof *p);
}
