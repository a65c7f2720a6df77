// cli/cmd_tokenizer.c — `frontier tokenizer train|encode|decode|stats`.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "data/corpus.h"
#include "data/prepare.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"
#include "util/timer.h"

// ---------------------------------------------------------------------------------------------
// Shared: input documents
// ---------------------------------------------------------------------------------------------

// All documents of all inputs, concatenated in order (texts point into the DocLists).
typedef struct {
    DocList *lists;
    int n_lists;
    const char **texts;
    size_t *lens;
    int n;
    size_t bytes;
} Inputs;

// --input paths the user gave that cannot be read are bad flag values.
static int expand_user_inputs(const StringList *paths, char ***files, int *nf) {
    for (int i = 0; i < paths->n; i++)
        if (!*paths->items[i]) return err_usage("--input is empty: give a .jsonl/.txt file or a folder");
    if (expand_inputs(paths->items, paths->n, CORPUS_EXTS, files, nf) != 0) return err_prefix("--input"), err_mark_usage();
    return 0;
}

// A --tokenizer folder: given, existing, and one tokenizer_load can read (else a usage error
// naming the flag). NULL + err otherwise.
static Tokenizer *load_tokenizer_flag(const char *tokdir) {
    if (!tokdir) return err_usage("--tokenizer DIR is required (a folder written by `frontier tokenizer train --out`)"), NULL;
    if (!*tokdir) return err_usage("--tokenizer is empty: give a tokenizer folder"), NULL;
    if (!is_dir(tokdir))
        return err_usage("--tokenizer %s: %s", tokdir, path_exists(tokdir) ? "not a folder" : "no such folder"), NULL;
    Tokenizer *tok = tokenizer_load(tokdir);
    if (!tok) err_prefix("--tokenizer"), err_mark_usage();
    return tok;
}

// An output path flag: not empty, and not a folder where a file goes (or the reverse).
static int check_out_flag(const char *flag, const char *path, int want_dir) {
    if (!path) return 0;
    if (!*path) return err_usage("--%s is empty: give a %s", flag, want_dir ? "folder" : "file name");
    if (want_dir && path_exists(path) && !is_dir(path)) return err_usage("--%s %s: not a folder (it is a file)", flag, path);
    if (!want_dir && is_dir(path)) return err_usage("--%s %s is a folder: give a file name", flag, path);
    return 0;
}

// Every --input names something that exists; else err, the list freed, -1.
static int check_inputs_exist(StringList *inputs) {
    for (int i = 0; i < inputs->n; i++)
        if (!path_exists(inputs->items[i])) {
            err_usage("--input %s: no such file or folder", inputs->items[i]);
            string_list_free(inputs);
            return -1;
        }
    return 0;
}

static int load_inputs(const StringList *paths, Inputs *in) {
    memset(in, 0, sizeof *in);
    char **files;
    int nf;
    if (expand_user_inputs(paths, &files, &nf) != 0) return -1;
    in->lists = xcalloc((size_t)nf, sizeof *in->lists);
    in->n_lists = nf;
    int rc = 0;
    for (int f = 0; f < nf && rc == 0; f++) {
        if ((rc = corpus_read_file(files[f], &in->lists[f])) != 0) break;
        DocList *d = &in->lists[f];
        in->texts = xrealloc(in->texts, (size_t)(in->n + d->n + 1) * sizeof *in->texts);
        in->lens = xrealloc(in->lens, (size_t)(in->n + d->n + 1) * sizeof *in->lens);
        for (int i = 0; i < d->n; i++) {
            in->texts[in->n] = doc_text(d, i);
            in->lens[in->n++] = d->len[i];
        }
        in->bytes += d->bytes;
    }
    free_string_list(files, nf);
    return rc;
}

static void free_inputs(Inputs *in) {
    for (int i = 0; i < in->n_lists; i++) doclist_free(&in->lists[i]);
    free(in->lists);
    free(in->texts);
    free(in->lens);
}

static Encoder **make_encoders(const Tokenizer *tok, int nt) {
    Encoder **e = xmalloc((size_t)nt * sizeof *e);
    for (int i = 0; i < nt; i++) e[i] = encoder_new(tok);
    return e;
}

static void free_encoders(Encoder **e, int nt);

// Every input document encoded on nt threads into *ids (in->n vectors; free_ids), the wall time
// of the encoding into *seconds. 0, or -1 + err.
static int encode_inputs(const Tokenizer *tok, const Inputs *in, int nt, IdVec **ids, double *seconds) {
    *ids = xcalloc((size_t)(in->n ? in->n : 1), sizeof **ids);
    Encoder **enc = make_encoders(tok, nt);
    double t0 = now_seconds();
    int rc = encode_batch(enc, nt, in->texts, in->lens, in->n, *ids);
    *seconds = now_seconds() - t0;
    free_encoders(enc, nt);
    return rc;
}

static void free_ids(IdVec *ids, int n) {
    for (int i = 0; ids && i < n; i++) idvec_free(&ids[i]);
    free(ids);
}

static void free_encoders(Encoder **e, int nt) {
    for (int i = 0; i < nt; i++) encoder_free(e[i]);
    free(e);
}

// ---------------------------------------------------------------------------------------------
// train
// ---------------------------------------------------------------------------------------------

static int tokenizer_train_cmd(int argc, char **argv) {
    BpeTrainConfig cfg = bpe_train_defaults();
    StringList inputs = {0};
    const char *out = NULL;
    Option opts[] = {
        {"input", OPT_LIST, &inputs, "PATH", "corpus file or folder (.jsonl/.txt), repeatable (default: the shared train set)", 0, 0, 0, 0, NULL},
        {"out", OPT_STRING, &out, "DIR", "folder to write tokenizer.tiktoken and tokenizer.json into (required)", 0, 0, 0, 0, NULL},
        {"vocab-size", OPT_INT, &cfg.vocab_size, "N", "vocabulary size incl. the 9 special tokens", 265, 65536, 0, 0, NULL},
        {"doc-cap", OPT_INT64, &cfg.doc_cap, "CHARS", "characters kept from the start of each document", 1, INT64_MAX, 0, 0, NULL},
        {"max-chars", OPT_INT64, &cfg.max_chars, "CHARS", "stop reading after this many characters", 1, INT64_MAX, 0, 0, NULL},
        {"threads", OPT_INT, &cfg.threads, "N", "threads (0 = all cores)", 0, 1024, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier tokenizer train [options]",
                        "Train a byte-level BPE tokenizer (nanochat/rustbpe semantics: most frequent pair first, "
                        "ties to the smallest pair) and save it in tiktoken format. A document holding a NUL byte "
                        "is refused (exit 2, naming file:line and byte offset), never cut short.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) { string_list_free(&inputs); return rc == ARGS_HELP ? 0 : 2; }
    if (check_out_flag("out", out, 1) != 0) { string_list_free(&inputs); return report_error(); }
    if (!out) {
        fprintf(stderr, "frontier tokenizer train: --out DIR is required (where to save the tokenizer)\n");
        string_list_free(&inputs);
        return 2;
    }
    char **files;
    int nf;
    if (inputs.n) rc = expand_user_inputs(&inputs, &files, &nf);
    else {  // the shared corpus: missing, it is this machine's setup that is wrong
        const char *dflt = default_train_path();
        rc = expand_inputs(&dflt, 1, CORPUS_EXTS, &files, &nf) != 0 ? err_prefix("the default corpus (set --input PATH)") : 0;
    }
    string_list_free(&inputs);
    if (rc != 0) return report_error();
    cfg.verbose = 1;
    double t0 = now_seconds();
    Tokenizer *tok = tokenizer_train_files(files, nf, &cfg, 0);
    free_string_list(files, nf);
    if (!tok) return report_error();
    if (tokenizer_save(tok, out) != 0) { tokenizer_free(tok); return report_error(); }
    printf("trained vocab %d (%d merges) on %lld docs / %.1fM chars in %.1f s\nsaved %s (id %.16s)\n", tok->vocab_size,
           tok->n_ranks - 256, (long long)tok->train_docs, (double)tok->train_chars / 1e6, now_seconds() - t0, out,
           tok->id);
    tokenizer_free(tok);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// encode
// ---------------------------------------------------------------------------------------------

static int write_ids_u32(const char *path, const IdVec *ids, int n) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return -1;
    for (int i = 0; i < n; i++)
        if (atomic_write(&af, ids[i].data, ids[i].len * sizeof *ids[i].data) != 0) { atomic_abort(&af); return -1; }
    return atomic_commit(&af);
}

static int tokenizer_encode_cmd(int argc, char **argv) {
    const char *tokdir = NULL, *text = NULL, *out = NULL;
    StringList inputs = {0};
    int threads = 0, bos = 0;
    Option opts[] = {
        {"tokenizer", OPT_STRING, &tokdir, "DIR", "tokenizer folder (required)", 0, 0, 0, 0, NULL},
        {"text", OPT_STRING, &text, "STRING", "text to encode", 0, 0, 0, 0, NULL},
        {"input", OPT_LIST, &inputs, "PATH", "corpus file or folder to encode, each document separately; repeatable", 0, 0, 0, 0, NULL},
        {"out", OPT_STRING, &out, "FILE", "write all ids as little-endian uint32 to FILE instead of printing them", 0, 0, 0, 0, NULL},
        {"bos", OPT_FLAG, &bos, NULL, "put <|bos|> before every document", 0, 0, 0, 0, NULL},
        {"threads", OPT_INT, &threads, "N", "threads (0 = all cores)", 0, 1024, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier tokenizer encode [options]",
                        "Encode text to token ids (special tokens are never parsed out of text). With neither "
                        "--text nor --input, reads standard input as one document, byte for byte (NUL bytes "
                        "included); a document of an --input file holding a NUL byte is refused (exit 2, naming "
                        "file:line and byte offset).",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) { string_list_free(&inputs); return rc == ARGS_HELP ? 0 : 2; }
    if (text && inputs.n) { fprintf(stderr, "frontier tokenizer encode: give --text or --input, not both\n"); string_list_free(&inputs); return 2; }
    if (check_out_flag("out", out, 0) != 0) { string_list_free(&inputs); return report_error(); }
    if (check_inputs_exist(&inputs) != 0) return report_error();
    Tokenizer *tok = load_tokenizer_flag(tokdir);
    if (!tok) { string_list_free(&inputs); return report_error(); }
    Inputs in = {0};
    char *stdin_buf = NULL;
    if (inputs.n) {
        rc = load_inputs(&inputs, &in);
    } else {
        size_t len = 0;
        if (!text) {  // read stdin
            size_t cap = 1 << 16;
            stdin_buf = xmalloc(cap);
            for (size_t got; (got = fread(stdin_buf + len, 1, cap - len, stdin)) > 0;)
                if ((len += got) == cap) stdin_buf = xrealloc(stdin_buf, cap *= 2);
            text = stdin_buf;
        } else {
            len = strlen(text);
        }
        in.texts = xmalloc(sizeof *in.texts);
        in.lens = xmalloc(sizeof *in.lens);
        in.texts[0] = text;
        in.lens[0] = len;
        in.n = 1;
        in.bytes = len;
    }
    string_list_free(&inputs);
    int nt = threads > 0 ? threads : omp_get_max_threads();
    IdVec *ids = NULL;
    double dt = 0;
    if (rc == 0) rc = encode_inputs(tok, &in, nt, &ids, &dt);
    size_t n_tokens = 0;
    for (int i = 0; i < in.n && rc == 0; i++) {
        if (bos) {  // shift in the BOS
            idvec_push(&ids[i], 0);
            memmove(ids[i].data + 1, ids[i].data, (ids[i].len - 1) * sizeof *ids[i].data);
            ids[i].data[0] = (uint32_t)tok->bos_id;
        }
        n_tokens += ids[i].len;
    }
    if (rc == 0 && out) {
        rc = write_ids_u32(out, ids, in.n);
    } else if (rc == 0) {
        for (int i = 0; i < in.n; i++) {
            for (size_t j = 0; j < ids[i].len; j++) printf(j ? " %u" : "%u", ids[i].data[j]);
            printf("\n");
        }
    }
    if (rc == 0)
        fprintf(stderr, "encoded %d docs, %zu bytes -> %zu tokens (%.3f bytes/token) in %.3f s (%.1f MB/s, %d threads)\n",
                in.n, in.bytes, n_tokens, n_tokens ? (double)in.bytes / (double)n_tokens : 0.0, dt,
                dt > 0 ? (double)in.bytes / dt / 1e6 : 0.0, nt);
    free_ids(ids, in.n);
    free_inputs(&in);
    free(stdin_buf);
    tokenizer_free(tok);
    return rc == 0 ? 0 : report_error();
}

// ---------------------------------------------------------------------------------------------
// decode
// ---------------------------------------------------------------------------------------------

static int parse_id_text(const char *s, IdVec *ids) {
    while (*s) {
        while (*s == ' ' || *s == '\n' || *s == '\t' || *s == ',' || *s == '\r') s++;
        if (!*s) break;
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || v > UINT32_MAX || *s == '-')
            return err_usage("decode: expected a token id (0 to %u), got '%.20s'", UINT32_MAX, s);
        idvec_push(ids, (uint32_t)v);
        s = end;
    }
    return 0;
}

static int tokenizer_decode_cmd(int argc, char **argv) {
    const char *tokdir = NULL, *ids_file = NULL;
    Option opts[] = {
        {"tokenizer", OPT_STRING, &tokdir, "DIR", "tokenizer folder (required)", 0, 0, 0, 0, NULL},
        {"ids-file", OPT_STRING, &ids_file, "FILE", "read little-endian uint32 ids from FILE (as encode --out writes)", 0, 0, 0, 0, NULL},
        {0},
    };
    StringList pos = {0};
    int rc = parse_args("frontier tokenizer decode [options] [ID ...]",
                        "Decode token ids to bytes on standard output. Ids come from the arguments, from --ids-file, "
                        "or as whitespace-separated numbers on standard input.",
                        opts, argc, argv, &pos);
    if (rc != ARGS_OK) { string_list_free(&pos); return rc == ARGS_HELP ? 0 : 2; }
    if (ids_file && (!*ids_file || !path_exists(ids_file) || is_dir(ids_file))) {
        err_usage("--ids-file %s: %s", ids_file, !*ids_file ? "empty: give a file of uint32 ids"
                                                 : is_dir(ids_file) ? "a folder, not a file of uint32 ids"
                                                                    : "no such file");
        string_list_free(&pos);
        return report_error();
    }
    if (ids_file && pos.n) { fprintf(stderr, "frontier tokenizer decode: give ids as arguments or --ids-file, not both\n"); string_list_free(&pos); return 2; }
    Tokenizer *tok = load_tokenizer_flag(tokdir);
    if (!tok) { string_list_free(&pos); return report_error(); }
    IdVec ids = {0};
    rc = 0;
    if (ids_file) {
        size_t len;
        char *buf = read_file(ids_file, &len);
        if (!buf) rc = -1;
        else if (len % 4) rc = err_usage("--ids-file %s: size %zu is not a multiple of 4 (uint32 ids)", ids_file, len);
        else for (size_t i = 0; i < len / 4; i++) { uint32_t v; memcpy(&v, buf + 4 * i, 4); idvec_push(&ids, v); }
        free(buf);
    } else if (pos.n) {
        for (int i = 0; i < pos.n && rc == 0; i++) rc = parse_id_text(pos.items[i], &ids);
    } else {
        size_t cap = 1 << 16, len = 0;
        char *buf = xmalloc(cap + 1);
        for (size_t got; (got = fread(buf + len, 1, cap - len, stdin)) > 0;)
            if ((len += got) == cap) buf = xrealloc(buf, (cap *= 2) + 1);
        buf[len] = 0;
        rc = parse_id_text(buf, &ids);
        free(buf);
    }
    string_list_free(&pos);
    uint8_t *out = NULL;
    size_t out_len = 0, out_cap = 0;
    // The ids are the user's input: one outside the vocabulary is a bad value, not a failure here.
    if (rc == 0 && (rc = tokenizer_decode(tok, ids.data, ids.len, &out, &out_len, &out_cap)) != 0) err_mark_usage();
    if (rc == 0) fwrite(out, 1, out_len, stdout);
    free(out);
    idvec_free(&ids);
    tokenizer_free(tok);
    return rc == 0 ? 0 : report_error();
}

// ---------------------------------------------------------------------------------------------
// stats
// ---------------------------------------------------------------------------------------------

static void print_token(const Tokenizer *tok, int id) {
    printf("  %5d  %2u bytes  \"", id, tok->tok_len[id]);
    for (uint32_t i = 0; i < tok->tok_len[id]; i++) {
        uint8_t c = tok->bytes[tok->tok_off[id] + i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c >= 32 && c < 127) putchar(c);
        else printf("\\x%02x", c);
    }
    printf("\"\n");
}

static int tokenizer_stats_cmd(int argc, char **argv) {
    const char *tokdir = NULL;
    StringList inputs = {0};
    int threads = 0;
    Option opts[] = {
        {"tokenizer", OPT_STRING, &tokdir, "DIR", "tokenizer folder (required)", 0, 0, 0, 0, NULL},
        {"input", OPT_LIST, &inputs, "PATH", "also measure compression on this corpus file or folder; repeatable", 0, 0, 0, 0, NULL},
        {"threads", OPT_INT, &threads, "N", "threads (0 = all cores)", 0, 1024, 0, 0, NULL},
        {0},
    };
    int rc = parse_args("frontier tokenizer stats [options]",
                        "Describe a tokenizer: vocabulary, token length histogram, longest tokens and, with --input, "
                        "bytes per token and throughput on that text.",
                        opts, argc, argv, NULL);
    if (rc != ARGS_OK) { string_list_free(&inputs); return rc == ARGS_HELP ? 0 : 2; }
    if (check_inputs_exist(&inputs) != 0) return report_error();
    Tokenizer *tok = load_tokenizer_flag(tokdir);
    if (!tok) { string_list_free(&inputs); return report_error(); }
    printf("tokenizer %s\n  id %s\n  vocab %d = 256 bytes + %d merges + %d special (<|bos|> = %d)\n", tokdir, tok->id,
           tok->vocab_size, tok->n_ranks - 256, TOKENIZER_N_SPECIAL, tok->bos_id);
    if (tok->train_chars)
        printf("  trained on %lld docs, %lld chars (doc cap %lld)\n", (long long)tok->train_docs,
               (long long)tok->train_chars, (long long)tok->doc_cap);
    int hist[17] = {0}, longest = 0;
    double mean = 0;
    for (int i = 0; i < tok->n_ranks; i++) {
        uint32_t n = tok->tok_len[i];
        hist[n > 16 ? 16 : n]++;
        mean += n;
        if (n > tok->tok_len[longest]) longest = i;
    }
    printf("  mean token length %.2f bytes; histogram (bytes: count):", mean / tok->n_ranks);
    for (int k = 1; k <= 16; k++)
        if (hist[k]) printf(" %d%s:%d", k, k == 16 ? "+" : "", hist[k]);
    printf("\n  last merges:\n");
    for (int i = tok->n_ranks - 5; i < tok->n_ranks; i++) print_token(tok, i);
    printf("  longest token:\n");
    print_token(tok, longest);
    if (inputs.n) {
        Inputs in;
        rc = load_inputs(&inputs, &in);
        int nt = threads > 0 ? threads : omp_get_max_threads();
        IdVec *ids = NULL;
        double dt = 0;
        if (rc == 0) rc = encode_inputs(tok, &in, nt, &ids, &dt);
        size_t nt_tokens = 0;
        for (int i = 0; i < in.n && rc == 0; i++) nt_tokens += ids[i].len;
        if (rc == 0)
            printf("  on the input: %d docs, %zu bytes -> %zu tokens = %.3f bytes/token; encode %.1f MB/s on %d threads\n",
                   in.n, in.bytes, nt_tokens, nt_tokens ? (double)in.bytes / (double)nt_tokens : 0.0,
                   (double)in.bytes / dt / 1e6, nt);
        free_ids(ids, in.n);
        free_inputs(&in);
    }
    string_list_free(&inputs);
    tokenizer_free(tok);
    return rc == 0 ? 0 : report_error();
}

// ---------------------------------------------------------------------------------------------
// dispatch
// ---------------------------------------------------------------------------------------------

int cmd_tokenizer(int argc, char **argv) {
    static const char *help =
        "usage: frontier tokenizer <train|encode|decode|stats> [options]\n\n"
        "  train    train a BPE tokenizer on a corpus and save it (tiktoken format + JSON)\n"
        "  encode   text or corpus files -> token ids\n"
        "  decode   token ids -> text\n"
        "  stats    describe a tokenizer; bytes/token and throughput on a corpus\n\n"
        "Run `frontier tokenizer <command> --help` for its options.\n";
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
        fputs(help, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    if (!strcmp(argv[0], "train")) return tokenizer_train_cmd(argc - 1, argv + 1);
    if (!strcmp(argv[0], "encode")) return tokenizer_encode_cmd(argc - 1, argv + 1);
    if (!strcmp(argv[0], "decode")) return tokenizer_decode_cmd(argc - 1, argv + 1);
    if (!strcmp(argv[0], "stats")) return tokenizer_stats_cmd(argc - 1, argv + 1);
    fprintf(stderr, "frontier tokenizer: unknown command '%s'\n\n%s", argv[0], help);
    return 2;
}
