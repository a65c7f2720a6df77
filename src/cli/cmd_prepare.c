// cli/cmd_prepare.c — `frontier prepare`: corpus -> tokenizer -> llm.c token shards (cached).
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/prepare.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/timer.h"

static void print_split(const char *name, const SplitStats *s) {
    int64_t text_tokens = s->tokens - s->docs;  // minus one <|bos|> per document
    printf("  %-5s %6lld docs  %11lld tokens (%lld incl. <|bos|>)  %6.1f MB  %.3f bytes/token  %d shard%s\n", name,
           (long long)s->docs, (long long)text_tokens, (long long)s->tokens, (double)s->bytes / 1e6,
           text_tokens ? (double)s->bytes / (double)text_tokens : 0.0, s->shards, s->shards == 1 ? "" : "s");
}

int cmd_prepare(int argc, char **argv) {
    PrepareConfig cfg = prepare_defaults();
    StringList train = {0}, val = {0};
    int quiet = 0;
    Option opts[] = {
        {"train", OPT_LIST, &train, "PATH", "training corpus file or folder (.jsonl/.txt), repeatable (default ../shared/data/text/train)", 0, 0, 0, 0, NULL},
        {"val", OPT_LIST, &val, "PATH", "validation corpus file or folder, repeatable (default ../shared/data/text/val)", 0, 0, 0, 0, NULL},
        {"tokenizer", OPT_STRING, &cfg.tokenizer_dir, "DIR", "use this tokenizer instead of training one", 0, 0, 0, 0, NULL},
        {"cache", OPT_STRING, &cfg.cache_dir, "DIR", "cache folder for tokenizers and shards", 0, 0, 0, 0, NULL},
        {"vocab-size", OPT_INT, &cfg.bpe.vocab_size, "N", "vocabulary size when training (incl. 9 special tokens)", 265, 65536, 0, 0, NULL},
        {"doc-cap", OPT_INT64, &cfg.bpe.doc_cap, "CHARS", "characters kept per document when training", 1, INT64_MAX, 0, 0, NULL},
        {"max-chars", OPT_INT64, &cfg.bpe.max_chars, "CHARS", "characters read in total when training", 1, INT64_MAX, 0, 0, NULL},
        {"shard-tokens", OPT_INT64, &cfg.shard_tokens, "N", "maximum tokens per shard", 1, INT32_MAX, 0, 0, NULL},
        {"threads", OPT_INT, &cfg.threads, "N", "threads (0 = all cores)", 0, 1024, 0, 0, NULL},
        {"quiet", OPT_FLAG, &quiet, NULL, "no progress lines", 0, 0, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier prepare [options]",
                        "Train (or load) the tokenizer and write train/val token shards in llm.c's format, <|bos|> "
                        "before every document, into a cache folder keyed by the tokenizer id and the input files. "
                        "A second run with the same inputs does nothing and says so. Refused (exit 2): a file that is "
                        "both a --train and a --val input (compared by device and inode, so links and overlapping "
                        "folders count), and a document holding a NUL byte (named file:line and byte offset; never "
                        "cut short).",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) { string_list_free(&train); string_list_free(&val); return rc == ARGS_HELP ? 0 : 2; }
    const char *cache = cfg.cache_dir;
    if (!*cache || (path_exists(cache) && !is_dir(cache))) {
        err_usage("--cache %s: %s", cache, *cache ? "not a folder (it is a file)" : "empty: give a folder");
        string_list_free(&train);
        string_list_free(&val);
        return report_error();
    }
    cfg.train = train.items;
    cfg.n_train = train.n;
    cfg.val = val.items;
    cfg.n_val = val.n;
    cfg.quiet = quiet;
    double t0 = now_seconds();
    PrepareResult res;
    rc = prepare_run(&cfg, &res);
    string_list_free(&train);
    string_list_free(&val);
    if (rc != 0) return report_error();
    printf("data %s%s\n  tokenizer %.16s (vocab %d) in %s\n", res.data_dir, res.cached ? " (cached)" : "",
           res.tokenizer_id, res.vocab_size, res.tokenizer_dir);
    print_split("train", &res.train);
    print_split("val", &res.val);
    printf("  took %.1f s\n", now_seconds() - t0);
    return 0;
}
