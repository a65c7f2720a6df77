// cli/cmd_eval.c — `frontier eval` (val_bpb of a trained run) and `frontier sample` (text from it).
//
// Both load a run folder written by `frontier train`: model.safetensors (its metadata holds the
// model config and the tokenizer id) and tokenizer/, which must be the tokenizer the model was
// trained with (same id). `eval` without --input scores the pinned validation set of the data
// the run used (RUN_DIR/config.json "data", or the default prepared folder, cached); with
// --input it scores those documents, written to a temporary llm.c shard first, packed and
// scored exactly like validation (eval/bpb.h).
#include <cjson/cJSON.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/corpus.h"
#include "data/prepare.h"
#include "data/shard.h"
#include "dist/dist.h"
#include "eval/bpb.h"
#include "eval/core.h"
#include "eval/sample.h"
#include "kernels/kernels.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/timer.h"
#include "util/json_file.h"

// ---------------------------------------------------------------------------------------------
// A trained run: model + its tokenizer
// ---------------------------------------------------------------------------------------------

typedef struct {
    char *run_dir;     // folder with tokenizer/ and config.json
    char *model_path;  // RUN_DIR/model.safetensors (or the .safetensors path given)
    char tokenizer_id[65];
    int64_t step;
    Model model;
    Tokenizer *tok;
} Run;

static void run_free(Run *r) {
    free(r->run_dir);
    free(r->model_path);
    if (r->model.param) model_free(&r->model);
    tokenizer_free(r->tok);
    memset(r, 0, sizeof *r);
}

// --weights: which of a run folder's weights are read (ckpt_model_path_weights).
static const char *const WEIGHTS[] = {"auto", "avg", "raw", NULL};
#define WEIGHTS_HELP "a run folder's weights: avg = the weight average a run with --ema-steps/--ema-seconds " \
                     "saved (model_avg.safetensors), raw = the last checkpoint's weights, auto = avg when the run has one"

// --ckpt RUN_DIR, or RUN_DIR/model.safetensors itself (the run folder is then its folder); weights:
// an index into WEIGHTS.
static int run_load(const char *ckpt, int weights, Run *r) {
    memset(r, 0, sizeof *r);
    r->model_path = ckpt_model_path_weights(ckpt, WEIGHTS[weights]);
    if (weights == 1 && !path_has_suffix(ckpt, ".safetensors") && !path_exists(r->model_path))
        return err_set("--weights avg: %s has no weight average (model_avg.safetensors: a run trained with "
                       "--ema-steps or --ema-seconds writes it when it finishes)", ckpt);
    if (path_has_suffix(ckpt, ".safetensors")) {
        const char *slash = strrchr(ckpt, '/');
        r->run_dir = slash ? strndup(ckpt, (size_t)(slash - ckpt) + (slash == ckpt)) : xstrdup(".");
    } else {
        r->run_dir = xstrdup(ckpt);
    }
    ModelConfig cfg;
    if (ckpt_read_meta(r->model_path, &cfg, r->tokenizer_id, &r->step) != 0) return -1;
    char *tokdir = path_join(r->run_dir, "tokenizer");
    r->tok = tokenizer_load(tokdir);
    int rc = 0;
    if (!r->tok) {
        rc = err_prefix("the run's tokenizer");
    } else if (strcmp(r->tok->id, r->tokenizer_id) != 0 || r->tok->vocab_size != cfg.vocab_size) {
        rc = err_set("%s is tokenizer %.16s (vocab %d), but %s was trained with tokenizer %.16s (vocab %d): use the "
                     "tokenizer folder of the same run", tokdir, r->tok->id, r->tok->vocab_size, r->model_path,
                     r->tokenizer_id[0] ? r->tokenizer_id : "(none recorded)", cfg.vocab_size);
    }
    free(tokdir);
    if (rc != 0) return rc;
    if (model_build(&r->model, &cfg) != 0) return err_prefix("%s", r->model_path);
    return ckpt_load_model(r->model_path, &r->model);
}

// RUN_DIR/config.json (every training setting), or NULL + err.
static cJSON *run_config(const Run *r) {
    char *path = path_join(r->run_dir, "config.json");
    size_t len;
    char *text = read_file(path, &len);
    cJSON *j = text ? cJSON_ParseWithLength(text, len) : NULL;
    if (text && !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        j = NULL;
        err_set("%s: not a JSON object", path);
    }
    free(text);
    free(path);
    return j;
}

static int threads_arg(int threads) {
    if (threads > 0) omp_set_num_threads(threads);
    return omp_get_max_threads();
}

// ---------------------------------------------------------------------------------------------
// eval
// ---------------------------------------------------------------------------------------------

// The validation shards of the run's data: config.json "data", or (null) the default corpus
// prepared with the run's vocabulary and cache (cached: normally a no-op). The folder must have
// been made with the checkpoint's tokenizer (manifest.json says which).
static int run_val_shards(const Run *r, int threads, char *data_dir, size_t dsz, char ***shards, int *n) {
    cJSON *cfg = run_config(r);
    if (!cfg) return err_prefix("finding the validation data the run used (or pass --input FILE)");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(cfg, "data");
    const cJSON *cache = cJSON_GetObjectItemCaseSensitive(cfg, "cache");
    int rc = 0;
    if (cJSON_IsString(data)) {
        snprintf(data_dir, dsz, "%s", data->valuestring);
    } else {
        PrepareConfig pc = prepare_defaults();
        pc.cache_dir = cJSON_IsString(cache) ? cache->valuestring : "cache";
        pc.bpe.vocab_size = r->model.cfg.vocab_size;
        pc.threads = threads;
        pc.quiet = 1;
        PrepareResult pr;
        if ((rc = prepare_run(&pc, &pr)) != 0) err_prefix("preparing the default data the run used");
        else snprintf(data_dir, dsz, "%s", pr.data_dir);
    }
    cJSON_Delete(cfg);
    if (rc != 0) return rc;
    char *mpath = path_join(data_dir, "manifest.json");
    size_t len;
    char *text = read_file(mpath, &len);
    if (text) {
        cJSON *m = cJSON_ParseWithLength(text, len);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "tokenizer_id");
        if (!cJSON_IsString(id) || strcmp(id->valuestring, r->tokenizer_id) != 0)
            rc = err_set("%s: the data was made with tokenizer %.16s but %s with %.16s", mpath,
                         cJSON_IsString(id) ? id->valuestring : "?", r->model_path, r->tokenizer_id);
        cJSON_Delete(m);
    } else {
        rc = err_prefix("the run's data folder %s", data_dir);
    }
    free(text);
    free(mpath);
    if (rc != 0) return rc;
    return shard_list(data_dir, "val_", shards, n);
}

// Encode the documents of `inputs` (<|bos|> before each) into DIR/val_000000.bin.
static int write_input_shard(const Tokenizer *tok, const StringList *inputs, int threads, const char *dir,
                             char **shard, int64_t *n_docs) {
    char **files;
    int nf;
    if (expand_inputs(inputs->items, inputs->n, CORPUS_EXTS, &files, &nf) != 0) return err_prefix("--input"), err_mark_usage();
    if (tok->vocab_size > 65536) {
        free_string_list(files, nf);
        return err_set("vocab %d does not fit llm.c's uint16 shards", tok->vocab_size);
    }
    *shard = path_join(dir, "val_000000.bin");
    *n_docs = 0;
    ShardWriter w;
    if (shard_writer_open(&w, *shard) != 0) { free_string_list(files, nf); return -1; }
    Encoder **enc = xmalloc((size_t)threads * sizeof *enc);
    for (int i = 0; i < threads; i++) enc[i] = encoder_new(tok);
    int rc = 0;
    uint16_t *buf = NULL;
    size_t buf_cap = 0;
    for (int f = 0; f < nf && rc == 0; f++) {
        DocList d = {0};
        if ((rc = corpus_read_file(files[f], &d)) != 0) break;
        const char **texts = xmalloc((size_t)(d.n + 1) * sizeof *texts);
        for (int i = 0; i < d.n; i++) texts[i] = doc_text(&d, i);
        IdVec *ids = xcalloc((size_t)d.n + 1, sizeof *ids);
        rc = encode_batch(enc, threads, texts, d.len, d.n, ids);
        for (int i = 0; i < d.n && rc == 0; i++) {
            if (ids[i].len + 1 > buf_cap) buf = xrealloc(buf, (buf_cap = ids[i].len + 1) * sizeof *buf);
            buf[0] = (uint16_t)tok->bos_id;
            for (size_t k = 0; k < ids[i].len; k++) buf[k + 1] = (uint16_t)ids[i].data[k];
            rc = shard_writer_append(&w, buf, ids[i].len + 1);
            (*n_docs)++;
        }
        for (int i = 0; i < d.n; i++) idvec_free(&ids[i]);
        free(ids);
        free(texts);
        doclist_free(&d);
    }
    if (rc == 0 && *n_docs == 0) rc = err_usage("--input: no documents in the given files");
    if (rc == 0) rc = shard_writer_close(&w);
    else shard_writer_abort(&w);
    for (int i = 0; i < threads; i++) encoder_free(enc[i]);
    free(enc);
    free(buf);
    free_string_list(files, nf);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// CORE: frontier eval --core
// ---------------------------------------------------------------------------------------------

static const char *default_core_dir(void) {
    static char buf[1024];
    const char *env = getenv("FRONTIER_DATA");
    snprintf(buf, sizeof buf, "%s/core", env && *env ? env : "../shared/data");
    return buf;
}

// core.json says what the CORE covers: tasks_scored of tasks_total (core.yaml's), the labels of
// the selected tasks that had no data ("missing", with why in "missing_detail") and those --tasks
// left out ("not_selected"). `frontier score` refuses to compare a CORE that covers less than the
// others or than its bundle's full set (known-absent tasks aside).
static int write_core_json(const char *run_dir, const char *model_path, const CoreSuite *suite, const CoreResult *res,
                           int max_per_task, KernelPrecision precision) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "core", res->core);
    cJSON_AddStringToObject(o, "model", model_path);  // which weights: the average or the last checkpoint's
    cJSON_AddNumberToObject(o, "n_tasks", res->n_scored);  // = tasks_scored (older readers)
    cJSON_AddNumberToObject(o, "tasks_scored", res->n_scored);
    cJSON_AddNumberToObject(o, "tasks_total", res->n_total);
    cJSON_AddNumberToObject(o, "max_per_task", max_per_task);
    cJSON_AddNumberToObject(o, "tokens", (double)res->tokens);
    cJSON_AddNumberToObject(o, "seconds", res->seconds);
    char kdesc[256];
    cJSON_AddStringToObject(o, "kernels", kernels_description(precision, kdesc, sizeof kdesc));  // what the time was measured with
    cJSON_AddStringToObject(o, "precision", kernels_precision_name(precision));
    cJSON_AddNumberToObject(o, "threads", omp_get_max_threads());
    cJSON_AddNumberToObject(o, "ranks", dist_world());
    cJSON *missing = cJSON_AddArrayToObject(o, "missing"), *detail = cJSON_AddArrayToObject(o, "missing_detail");
    cJSON *unselected = cJSON_AddArrayToObject(o, "not_selected"), *tasks = cJSON_AddArrayToObject(o, "tasks");
    for (int i = 0; i < suite->n_tasks; i++) {
        int selected = 0;
        for (int k = 0; k < res->n && !selected; k++) selected = !strcmp(res->tasks[k].label, suite->tasks[i].label);
        if (!selected) cJSON_AddItemToArray(unselected, cJSON_CreateString(suite->tasks[i].label));
    }
    for (int i = 0; i < res->n; i++) {
        const CoreTaskResult *t = &res->tasks[i];
        if (!t->available) {
            cJSON_AddItemToArray(missing, cJSON_CreateString(t->label));
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "label", t->label);
            cJSON_AddStringToObject(m, "path", t->path);
            cJSON_AddStringToObject(m, "reason", t->known_absent ? "known absent: the data bundle does not ship it"
                                                                 : "data file missing (--allow-missing-tasks)");
            cJSON_AddItemToArray(detail, m);
            continue;
        }
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "label", t->label);
        cJSON_AddStringToObject(x, "type", t->type);
        cJSON_AddNumberToObject(x, "accuracy", t->accuracy);
        cJSON_AddNumberToObject(x, "centered", t->centered);
        cJSON_AddNumberToObject(x, "baseline", t->baseline);
        cJSON_AddNumberToObject(x, "rows", t->rows);
        cJSON_AddNumberToObject(x, "tokens", (double)t->tokens);  // through the model
        cJSON_AddNumberToObject(x, "seconds", t->seconds);
        cJSON_AddItemToArray(tasks, x);
    }
    char *path = path_join(run_dir, "core.json");
    int rc = json_write_atomic(path, o);
    cJSON_Delete(o);
    if (rc == 0) printf("wrote %s\n", path);
    free(path);
    return rc;
}

static int run_core(Run *r, const char *run_dir, const char *core_dir, const char *tasks_csv, int max_per_task,
                    int allow_missing) {
    CoreSuite *suite = core_load(core_dir ? core_dir : default_core_dir());
    if (!suite) {  // a bundle that does not load (missing or malformed core.yaml, a bad task file)
        if (core_dir) err_prefix("--core-dir %s", core_dir), err_mark_usage();
        return -1;
    }
    const char *only[64];
    int n_only = 0;
    char *list = tasks_csv ? xstrdup(tasks_csv) : NULL;
    for (char *tok = list ? strtok(list, ",") : NULL; tok && n_only < 64; tok = strtok(NULL, ",")) only[n_only++] = tok;
    // Under mpirun the rows are shared out (core.c); rank 0 alone reports and writes core.json.
    CoreConfig cc = {.max_per_task = max_per_task, .only = n_only ? only : NULL, .n_only = n_only,
                     .quiet = dist_rank() != 0, .allow_missing = allow_missing};
    CoreResult res;
    int rc = core_evaluate(&r->model, r->tok, suite, &cc, &res);
    if (rc == 0 && dist_rank() == 0) {
        printf("\n%-34s %-18s %6s %9s %9s %9s\n", "task", "type", "rows", "accuracy", "baseline", "centered");
        for (int i = 0; i < res.n; i++) {
            const CoreTaskResult *t = &res.tasks[i];
            if (!t->available) {
                printf("%-34s %-18s %6s %9s %9.3f %9s  (not scored: %s)\n", t->label, t->type, "-", "-", t->baseline,
                       "-", t->known_absent ? "not in the data bundle" : "data file missing, --allow-missing-tasks");
                continue;
            }
            printf("%-34s %-18s %6d %9.4f %9.3f %+9.4f\n", t->label, t->type, t->rows, t->accuracy, t->baseline, t->centered);
        }
        // The line says what the number covers: how many of core.yaml's tasks, and which are not in it.
        char why[1536] = "";
        size_t used = 0;
        for (int absent = 1; absent >= 0; absent--) {
            int first = 1;
            for (int i = 0; i < res.n && used + 1 < sizeof why; i++) {
                const CoreTaskResult *t = &res.tasks[i];
                if (t->available || t->known_absent != absent) continue;
                int k = snprintf(why + used, sizeof why - used, "%s%s", first ? (absent ? "; not in the data bundle: "
                                                                                        : "; data missing (--allow-missing-tasks): ")
                                                                              : ", ", t->label);
                first = 0;
                if (k > 0) used = used + (size_t)k < sizeof why ? used + (size_t)k : sizeof why - 1;
            }
        }
        if (res.n < res.n_total && used + 1 < sizeof why)
            snprintf(why + used, sizeof why - used, "; %d not selected (--tasks)", res.n_total - res.n);
        printf("CORE %.4f = mean centered over %d of %d tasks%s; %lld tokens in %.1f s (%.0f tok/s)\n", res.core,
               res.n_scored, res.n_total, why, res.tokens, res.seconds, res.tokens / (res.seconds + 1e-9));
        rc = write_core_json(run_dir, r->model_path, suite, &res, max_per_task, r->model.precision);
    }
    core_result_free(&res);
    core_free(suite);
    free(list);
    return rc;
}

// --ckpt: given, and naming a run folder or a .safetensors file that exists.
static int check_ckpt(const char *ckpt) {
    if (!ckpt) return err_usage("--ckpt RUN_DIR is required: the folder `frontier train` wrote (see --help)");
    if (!*ckpt) return err_usage("--ckpt is empty: give the run folder `frontier train` wrote");
    if (!path_exists(ckpt)) return err_usage("--ckpt %s: no such run folder or file", ckpt);
    if (!is_dir(ckpt) && !path_has_suffix(ckpt, ".safetensors"))
        return err_usage("--ckpt %s: not a run folder nor a .safetensors file", ckpt);
    return 0;
}

// The flags that only mean something with --core (or without it), and the paths given.
static int eval_flags_check(const Option *opts, int core, const char *tasks, const char *core_dir,
                            const StringList *inputs) {
    static const char *const core_only[] = {"tasks", "max-per-task", "core-dir", "allow-missing-tasks", NULL};
    for (int i = 0; core_only[i]; i++)
        if (!core && args_find(opts, core_only[i])->seen)
            return err_usage("--%s only applies with --core (the CORE benchmark): add --core, or drop it", core_only[i]);
    if (core && inputs->n) return err_usage("--input scores documents by val_bpb; it does not go with --core");
    if (tasks && strspn(tasks, ", ") == strlen(tasks))
        return err_usage("--tasks '%s' names no task: give labels like copa,winograd", tasks);
    if (core_dir && !*core_dir) return err_usage("--core-dir is empty: give the CORE bundle's folder");
    if (core_dir && !is_dir(core_dir))
        return err_usage("--core-dir %s: %s (the folder with core.yaml)", core_dir,
                         path_exists(core_dir) ? "not a folder" : "no such folder");
    for (int i = 0; i < inputs->n; i++) {
        if (!*inputs->items[i]) return err_usage("--input is empty: give a .jsonl/.txt file or a folder");
        if (!path_exists(inputs->items[i])) return err_usage("--input %s: no such file or folder", inputs->items[i]);
    }
    return 0;
}

int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *core_dir = NULL, *tasks = NULL, *precision = "fp32";
    StringList inputs = {0};
    int64_t eval_tokens = 0;
    int batch = 0, seq_len = 0, threads = 0, core = 0, max_per_task = 0, allow_missing = 0, weights = 0;
    Option opts[] = {
        {"core", OPT_FLAG, &core, NULL, "score the CORE benchmark instead of val_bpb (writes RUN_DIR/core.json)", 0, 0, 0, 0, NULL},
        {"tasks", OPT_STRING, &tasks, "A,B", "with --core: only these task labels", 0, 0, 0, 0, NULL},
        {"max-per-task", OPT_INT, &max_per_task, "N", "with --core: at most N rows per task after the shuffle (0 = all)", 0, 1 << 30, 0, 0, NULL},
        {"core-dir", OPT_STRING, &core_dir, "DIR", "with --core: the CORE bundle (default ../shared/data/core)", 0, 0, 0, 0, NULL},
        {"allow-missing-tasks", OPT_FLAG, &allow_missing, NULL, "with --core: score the tasks that have data when some "
         "task's data file is missing (else an error), and list the missing ones in the result", 0, 0, 0, 0, NULL},
        {"ckpt", OPT_STRING, &ckpt, "RUN_DIR", "the trained run folder (or its model.safetensors); required", 0, 0, 0, 0, NULL},
        {"weights", OPT_ENUM, &weights, "auto|avg|raw", WEIGHTS_HELP, 0, 0, 0, 0, WEIGHTS},
        {"input", OPT_LIST, &inputs, "FILE", "score these documents (.jsonl/.txt file or folder; repeatable) instead", 0, 0, 0, 0, NULL},
        {"eval-tokens", OPT_INT64, &eval_tokens, "N", "stop after the row reaching N target positions (0 = all)", 0,
         INT64_MAX, 0, 0, NULL},
        {"batch", OPT_INT, &batch, "B", "rows per forward (0 = the run's --eval-batch, else its --device-batch)", 0, 1 << 20, 0, 0, NULL},
        {"seq-len", OPT_INT, &seq_len, "T", "row length (0 = the model's seq_len; at most that)", 0, 1 << 20, 0, 0, NULL},
        {"precision", OPT_STRING, &precision, "fp32|bf16|auto", "matmul operands: fp32 (default: scores compare "
         "across runs, whatever trained them) or bf16 (fp32 accumulation, as PyTorch's autocast; 1.5-2x faster "
         "with AVX512_BF16; val_bpb within ~1e-4, near-tied CORE rows may flip); auto = bf16 where the CPU has bf16 "
         "matmuls", 0, 0, 0, 0, NULL},
        {"threads", OPT_INT, &threads, "N", "threads (0 = all cores)", 0, 1024, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier eval [options]",
                        "Score a trained run by bits per byte: on the pinned validation set of the data it was "
                        "trained on (default), or on the documents given with --input (<|bos|> before each, packed "
                        "like validation). Prints the numbers, then one JSON line with them as the last line of "
                        "stdout. With --core: the CORE benchmark instead, written to RUN_DIR/core.json, which says "
                        "how many of core.yaml's tasks it covers and lists those without data. A task whose data "
                        "file is missing is an error (exit 2, naming the task and the path) unless "
                        "--allow-missing-tasks; a task the data bundle is known not to ship (coqa, per the shared "
                        "data's README) is left out and reported, never an error.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) { string_list_free(&inputs); return rc == ARGS_HELP ? 0 : FRONTIER_EXIT_USAGE; }
    // Every flag's value is checked before --ckpt is required or loaded, so an error names the
    // flag that is wrong.
    KernelPrecision prec;
    if (kernels_precision_parse(precision, &prec) != 0 || kernels_precision_check(prec) != 0) {
        err_mark_usage();
        string_list_free(&inputs);
        return report_error();
    }
    if (eval_flags_check(opts, core, tasks, core_dir, &inputs) != 0 || check_ckpt(ckpt) != 0) {
        string_list_free(&inputs);
        return report_error();
    }
    int nt = threads_arg(threads);
    Run r;
    char data_dir[1024] = "", *tmpdir = NULL, **shards = NULL;
    int n_shards = 0;
    int64_t n_docs = 0;
    BpbResult res;
    if (run_load(ckpt, weights, &r) != 0) {  // what --ckpt names is not a run frontier can read: bad input
        err_prefix("--ckpt %s", ckpt);
        err_mark_usage();
        rc = report_error();
        goto done;
    }
    r.model.precision = prec;
    if (core) {
        if (threads) omp_set_num_threads(nt);
        rc = run_core(&r, r.run_dir, core_dir, tasks, max_per_task, allow_missing) == 0 ? 0 : report_error();
        goto done;
    }
    int T = seq_len ? seq_len : r.model.cfg.seq_len;
    if (T > r.model.cfg.seq_len) {
        err_usage("--seq-len %d exceeds the model's seq_len %d: give at most that (0 = the model's)", T,
                  r.model.cfg.seq_len);
        rc = report_error();
        goto done;
    }
    if (!batch) {  // the run's evaluation batch; any B gives the same result
        cJSON *cfg = run_config(&r);
        const cJSON *eb = cJSON_GetObjectItemCaseSensitive(cfg, "eval-batch");
        const cJSON *db = cJSON_GetObjectItemCaseSensitive(cfg, "device-batch");
        batch = cJSON_IsNumber(eb) && eb->valueint > 0   ? eb->valueint
                : cJSON_IsNumber(db) && db->valueint > 0 ? db->valueint
                                                         : 8;
        cJSON_Delete(cfg);
    }
    if (inputs.n) {
        const char *tmp_root = getenv("TMPDIR");
        char tmpl[1024];
        snprintf(tmpl, sizeof tmpl, "%s/frontier-eval-XXXXXX", tmp_root && *tmp_root ? tmp_root : "/tmp");
        if (!mkdtemp(tmpl)) { err_errno("cannot make a temporary folder %s", tmpl); rc = report_error(); goto done; }
        tmpdir = xstrdup(tmpl);
        shards = xcalloc(1, sizeof *shards);
        if (write_input_shard(r.tok, &inputs, nt, tmpdir, &shards[0], &n_docs) != 0) {
            n_shards = shards[0] ? 1 : 0;
            rc = report_error();
            goto done;
        }
        n_shards = 1;
        snprintf(data_dir, sizeof data_dir, "%d input%s, %lld documents", inputs.n, inputs.n == 1 ? "" : "s",
                 (long long)n_docs);
    } else if (run_val_shards(&r, threads, data_dir, sizeof data_dir, &shards, &n_shards) != 0) {
        rc = report_error();
        goto done;
    }
    if (eval_bpb(&r.model, (const char *const *)shards, n_shards, r.tok->bos_id, r.tok->token_bytes, batch, T,
                 eval_tokens, &res) != 0) {
        rc = report_error();
        goto done;
    }
    if (dist_rank() != 0) {  // under mpirun: every rank scored its share; rank 0 reports
        rc = 0;
        goto done;
    }
    printf("eval     %s (step %lld) on %s%s\n", r.model_path, (long long)r.step,
           inputs.n ? "" : "the pinned validation set ", data_dir);
    printf("val_bpb  %.6f\n", res.bpb);
    printf("tokens   %lld scored, %lld target positions, %lld rows of T=%d (B=%d)\n", (long long)res.tokens,
           (long long)res.positions, (long long)res.rows, res.T, batch);
    printf("seconds  %.2f\n", res.seconds);
    char kdesc[256];
    printf("kernels  %s (--precision %s)\n", kernels_description(prec, kdesc, sizeof kdesc), kernels_precision_name(prec));
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "val_bpb", res.bpb);
    cJSON_AddNumberToObject(j, "tokens", (double)res.tokens);
    cJSON_AddNumberToObject(j, "positions", (double)res.positions);
    cJSON_AddNumberToObject(j, "rows", (double)res.rows);
    cJSON_AddNumberToObject(j, "T", res.T);
    cJSON_AddNumberToObject(j, "seconds", res.seconds);
    cJSON_AddNumberToObject(j, "nats", res.nats);
    cJSON_AddNumberToObject(j, "bytes", (double)res.bytes);
    cJSON_AddStringToObject(j, "precision", kernels_precision_name(prec));
    cJSON_AddStringToObject(j, "model", r.model_path);
    char *line = cJSON_PrintUnformatted(j);
    printf("%s\n", line);
    free(line);
    cJSON_Delete(j);
    rc = 0;
done:
    if (tmpdir && remove_tree(tmpdir) != 0 && rc == 0) rc = report_error();
    free(tmpdir);
    free_string_list(shards, n_shards);
    string_list_free(&inputs);
    run_free(&r);
    return rc;
}

// ---------------------------------------------------------------------------------------------
// sample
// ---------------------------------------------------------------------------------------------

typedef struct {
    const Tokenizer *tok;
    uint8_t *buf;
    size_t cap;
} Printer;

static void print_token(int32_t token, void *ctx) {
    Printer *p = ctx;
    uint32_t id = (uint32_t)token;
    size_t len = 0;
    if (tokenizer_decode(p->tok, &id, 1, &p->buf, &len, &p->cap) == 0) fwrite(p->buf, 1, len, stdout);
    fflush(stdout);
}

int cmd_sample(int argc, char **argv) {
    const char *ckpt = NULL, *prompt = NULL;
    int n = 200, top_k = 50, threads = 0, weights = 0;
    double temperature = 0.8;
    int64_t seed = 42;
    Option opts[] = {
        {"ckpt", OPT_STRING, &ckpt, "RUN_DIR", "the trained run folder (or its model.safetensors); required", 0, 0, 0, 0, NULL},
        {"weights", OPT_ENUM, &weights, "auto|avg|raw", WEIGHTS_HELP, 0, 0, 0, 0, WEIGHTS},
        {"prompt", OPT_STRING, &prompt, "TEXT", "text to continue (<|bos|> is put in front)", 0, 0, 0, 0, NULL},
        {"n", OPT_INT, &n, "N", "tokens to generate at most", 0, INT32_MAX, 0, 0, NULL},
        {"temperature", OPT_DOUBLE, &temperature, "T", "softmax temperature; 0 = greedy (at most 1000)", 0, 1000, 0, 0, NULL},
        {"top-k", OPT_INT, &top_k, "K", "draw from the K most likely tokens (0 = all)", 0, INT32_MAX, 0, 0, NULL},
        {"seed", OPT_INT64, &seed, "S", "random seed (same seed, same text)", 0, INT64_MAX, 0, 0, NULL},
        {"threads", OPT_INT, &threads, "N", "threads (0 = all cores)", 0, 1024, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier sample [options]",
                        "Generate text from a trained run: the prompt, after <|bos|>, goes through the model one token "
                        "at a time, then tokens are drawn one by one with a KV cache and written to stdout as they "
                        "come. Stops after -n tokens, at <|bos|> (a new document), or when the model's context "
                        "(seq_len) is full. A summary goes to stderr.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : FRONTIER_EXIT_USAGE;
    if (!prompt) prompt = "";
    if (check_ckpt(ckpt) != 0) return report_error();
    threads_arg(threads);
    Run r;
    if (run_load(ckpt, weights, &r) != 0) {
        err_prefix("--ckpt %s", ckpt);
        err_mark_usage();
        rc = report_error();
        run_free(&r);
        return rc;
    }
    // <|bos|> + the prompt's tokens
    Encoder *enc = encoder_new(r.tok);
    IdVec ids = {0};
    idvec_push(&ids, (uint32_t)r.tok->bos_id);
    rc = encoder_encode(enc, (const uint8_t *)prompt, strlen(prompt), &ids);
    encoder_free(enc);
    Sampler *s = rc == 0 ? sampler_new(&r.model, 0) : NULL;
    int32_t *prompt_ids = xmalloc(ids.len * sizeof *prompt_ids);
    for (size_t i = 0; i < ids.len; i++) prompt_ids[i] = (int32_t)ids.data[i];
    Printer pr = {.tok = r.tok};
    SampleConfig sc = {.temperature = temperature, .top_k = top_k, .seed = (uint64_t)seed, .stop_id = r.tok->bos_id};
    SampleStop why = SAMPLE_STOP_N;
    double t0 = now_seconds();
    int got = s ? sampler_generate(s, prompt_ids, (int)ids.len, n, &sc, NULL, print_token, &pr, &why) : -1;
    double dt = now_seconds() - t0;
    if (got < 0) {
        rc = report_error();
    } else {
        if (got > 0) printf("\n");
        fflush(stdout);
        const char *reason = why == SAMPLE_STOP_TOKEN ? "drew <|bos|> (a new document would start)"
                             : why == SAMPLE_STOP_FULL ? "the context is full"
                                                       : "-n reached";
        fprintf(stderr, "sample: %d tokens after a %zu-token prompt (with <|bos|>) in %.2f s (%.1f tok/s); stopped: %s",
                got, ids.len, dt, dt > 0 ? (got + (double)ids.len) / dt : 0.0, reason);
        if (why == SAMPLE_STOP_FULL) fprintf(stderr, " (seq_len %d positions)", sampler_capacity(s));
        fprintf(stderr, "\n");
        rc = 0;
    }
    sampler_free(s);
    free(prompt_ids);
    free(pr.buf);
    idvec_free(&ids);
    run_free(&r);
    return rc;
}
