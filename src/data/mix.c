// data/mix.c — the --mix spec (see mix.h).
#include "data/mix.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "data/prepare.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_file.h"
#include "util/mem.h"

void mix_text_folders(const char *data_root, const char *sep, char *buf, size_t n) {
    char dir[PATH_MAX], names[32][256];
    int k = 0;
    snprintf(dir, sizeof dir, "%s/text", data_root);
    buf[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) && k < 32;) {
        char path[PATH_MAX + 256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "train") || !strcmp(e->d_name, "val") || !is_dir(path)) continue;
        snprintf(names[k++], sizeof names[0], "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)k, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < k; i++) {
        size_t at = strlen(buf);
        snprintf(buf + at, n - at, "%s%s", i ? sep : "", names[i]);
    }
}

// A weight as written: a plain decimal number (no "inf", "nan", hex), into *w. 0 or -1.
static int parse_weight(const char *text, double *w) {
    if (!*text || strspn(text, "0123456789.eE+-") != strlen(text)) return -1;
    char *end;
    *w = strtod(text, &end);
    return *end || !isfinite(*w) ? -1 : 0;
}

// One item SOURCE[=W] (trimmed, not empty) into *src; has_weight says whether W was written.
static int parse_item(const char *item, const char *data_root, MixSource *src, int *has_weight) {
    const char *eq = strrchr(item, '=');
    size_t name_len = eq ? (size_t)(eq - item) : strlen(item);
    *has_weight = eq != NULL;
    if (name_len == 0)
        return err_usage("--mix: '%s' names no source: write SOURCE or SOURCE=W, e.g. extra_wiki=0.3", item);
    if (name_len >= sizeof src->name) return err_usage("--mix: '%.60s...': the source name is too long", item);
    memcpy(src->name, item, name_len);
    src->name[name_len] = 0;
    src->weight = 0;
    if (eq) {
        int is_train = !strcmp(src->name, "train");
        if (parse_weight(eq + 1, &src->weight) != 0 || src->weight < 0 || src->weight > 1 ||
            (src->weight == 0 && !is_train))
            return err_usage("--mix: '%s': the weight must be a share of the training tokens in (0, 1], like "
                             "%s=0.3%s", item, src->name, is_train ? " (or train=0 to leave train out)" : "");
    }
    const char *name = src->name;
    if (!strcmp(name, "train")) {
        src->path[0] = 0;
        return 0;
    }
    if (strchr(name, '/') || name[0] == '.') {  // a path
        if (!path_exists(name))
            return err_usage("--mix: '%s': no such file or folder (give a folder or file of .jsonl/.txt documents)", name);
        if (snprintf(src->path, sizeof src->path, "%s", name) >= (int)sizeof src->path)
            return err_usage("--mix: '%.60s...': the path is too long", name);
        return 0;
    }
    char folders[2048];
    if (!strcmp(name, "val"))
        return err_usage("--mix: 'val' is the validation set, which is held out of training: it cannot be a source");
    int k = snprintf(src->path, sizeof src->path, "%s/text/%s", data_root, name);
    if (k < (int)sizeof src->path && is_dir(src->path)) return 0;
    mix_text_folders(data_root, ", ", folders, sizeof folders);
    return err_usage("--mix: unknown source '%s': a source is train, a folder of %s/text/ (%s), or a path to a folder "
                     "of .jsonl/.txt documents (with a '/', like ./my_corpus)", name, data_root,
                     folders[0] ? folders : "none there");
}

// Two sources that are the same: the same name, or paths to the same file or folder.
static int same_source(const MixSource *a, const MixSource *b) {
    if (!strcmp(a->name, b->name)) return 1;
    if (!a->path[0] || !b->path[0]) return 0;
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a->path, ra) && realpath(b->path, rb) && !strcmp(ra, rb);
}

int mix_parse(const char *spec, const char *data_root, Mix *out) {
    memset(out, 0, sizeof *out);
    MixSource all[MIX_MAX_SOURCES + 1];  // as written, train wherever it is
    int weighted[MIX_MAX_SOURCES + 1], n = 0, train_at = -1;
    const char *p = spec ? spec : "";
    if (!strcmp(p, MIX_AUTO))
        return err_usage("--mix auto: the planner's choice (`frontier plan --mix auto` or `frontier run --phase N --mix "
                         "auto` writes the mixture it chose into plan.json); to train, give the sources, like "
                         "extra_wiki=0.3,extra_textbooks=0.05");
    while (*p) {  // each comma-separated item, trimmed of spaces
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[1400];
        if (len >= sizeof item) return err_usage("--mix: the item '%.60s...' is too long", p);
        memcpy(item, p, len);
        item[len] = 0;
        char *a = item, *b = item + len;
        while (*a == ' ') a++;
        while (b > a && b[-1] == ' ') *--b = 0;
        if (!*a)
            return err_usage("--mix '%s': item %d is empty: separate sources with single commas, like "
                             "extra_wiki=0.3,extra_textbooks=0.05", spec, n + 1);
        if (n == MIX_MAX_SOURCES) return err_usage("--mix: more than %d sources", MIX_MAX_SOURCES);
        if (parse_item(a, data_root, &all[n], &weighted[n]) != 0) return -1;
        for (int i = 0; i < n; i++)
            if (same_source(&all[i], &all[n]))
                return err_usage("--mix: '%s' is listed twice%s%s%s: give each source once", all[n].name,
                                 strcmp(all[i].name, all[n].name) ? " (as '" : "",
                                 strcmp(all[i].name, all[n].name) ? all[i].name : "",
                                 strcmp(all[i].name, all[n].name) ? "', the same folder)" : "");
        if (!strcmp(all[n].name, "train")) train_at = n;
        n++;
        p = end ? end + 1 : p + len;
        if (end && !*p)
            return err_usage("--mix '%s': it ends with a comma: remove it, or add the source it was to name", spec);
    }
    if (train_at < 0) {  // train is in every mixture: implicitly, with the remainder or its natural share
        if (n == MIX_MAX_SOURCES) return err_usage("--mix: more than %d sources (train included)", MIX_MAX_SOURCES);
        all[n] = (MixSource){.name = "train"};
        weighted[n] = 0;
        train_at = n++;
    }
    // Which rule: no weight anywhere, or on every source but possibly train.
    int n_weighted = 0, other_unweighted = -1;
    for (int i = 0; i < n; i++) {
        n_weighted += weighted[i];
        if (!weighted[i] && i != train_at && other_unweighted < 0) other_unweighted = i;
    }
    double sum = 0;  // of the weights given to the sources other than train
    for (int i = 0; i < n; i++)
        if (i != train_at) sum += all[i].weight;
    if (n_weighted > 0 && other_unweighted >= 0) {
        int w = 0;
        while (!weighted[w]) w++;
        return err_usage("--mix: '%s' has no weight but '%s=%g' has one: give every source a weight, or none (natural "
                         "shares, by token count); train alone may go without (it gets the remainder)",
                         all[other_unweighted].name, all[w].name, all[w].weight);
    }
    if (n == 1 && weighted[train_at] && all[train_at].weight == 0)
        return err_usage("--mix: train=0 leaves no source: name the sources to train on, like train=0,extra_wiki=1");
    if (n_weighted > 0 && weighted[train_at]) {
        double total = sum + all[train_at].weight;
        if (fabs(total - 1) > MIX_SUM_TOLERANCE)
            return err_usage("--mix: the weights add up to %.9g, not 1: they are shares of the training tokens (or leave "
                             "train's out, and it gets the remainder)", total);
    } else if (n_weighted > 0) {
        double rest = 1 - sum;
        if (rest <= MIX_SUM_TOLERANCE)
            return err_usage("--mix: the weights of the sources other than train add up to %.9g, which leaves train "
                             "%s (its share is the remainder): lower them, or write train=0 to train on them alone",
                             sum, rest < -MIX_SUM_TOLERANCE ? "less than nothing" : "nothing");
        all[train_at].weight = rest;
    }
    // train first, then the others as written; train=0 leaves it out
    out->weighted = n_weighted > 0;
    if (!(out->weighted && all[train_at].weight == 0)) out->src[out->n++] = all[train_at];
    for (int i = 0; i < n; i++)
        if (i != train_at) out->src[out->n++] = all[i];
    return 0;
}

int mix_is_mixture(const Mix *m) { return m->n > 1 || (m->n == 1 && strcmp(m->src[0].name, "train") != 0); }

// The validation inputs data_dir/manifest.json names that exist, into a malloc'ed list (a
// missing or unreadable manifest: none, since the shards' own checks come first in training).
static char **manifest_val_inputs(const char *data_dir, int *n) {
    char *mpath = path_join(data_dir, "manifest.json");
    cJSON *m = path_exists(mpath) ? json_read_object(mpath, "the data folder's manifest") : NULL;
    free(mpath);
    err_clear();
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "val"), "inputs"), *it;
    char **out = xcalloc((size_t)cJSON_GetArraySize(in) + 1, sizeof *out);
    *n = 0;
    cJSON_ArrayForEach(it, in)
        if (cJSON_IsString(it) && path_exists(it->valuestring)) out[(*n)++] = xstrdup(it->valuestring);
    cJSON_Delete(m);
    return out;
}

int mix_prepare_source(const MixSource *m, const char *data_dir, const char *cache_dir, int threads, int quiet,
                       PrepareResult *out) {
    int n_val = 0;
    char **val = manifest_val_inputs(data_dir, &n_val);
    char *tokdir = path_join(data_dir, "tokenizer");
    PrepareConfig pc = prepare_defaults();
    const char *train[1] = {m->path};
    pc.train = train, pc.n_train = 1;
    pc.val = (const char *const *)val, pc.n_val = n_val;
    pc.train_only = 1;
    pc.tokenizer_dir = tokdir;
    pc.cache_dir = cache_dir ? cache_dir : "cache";
    pc.threads = threads;
    pc.quiet = quiet;
    if (!quiet) fprintf(stderr, "mix: source %s (%s): training shards with the tokenizer of %s\n", m->name, m->path, data_dir);
    int rc = prepare_run(&pc, out);
    free(tokdir);
    free_string_list(val, n_val);
    return rc == 0 ? 0 : err_prefix("--mix source %s", m->name);
}
