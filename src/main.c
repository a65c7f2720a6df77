// main.c — the `frontier` command line: find the subcommand and hand over. Nothing else.
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "dist/dist.h"
#include "util/error.h"

static const char USAGE[] =
    "frontier — train a language model from scratch under a wall-clock budget on this machine,\n"
    "and score it by validation bits-per-byte.\n\n"
    "usage: frontier <command> [options]\n\n"
    "commands:\n"
    "  info        CPU model, cores, SIMD/AMX features and AMX permission\n"
    "  tokenizer   train | encode | decode | stats a byte-level BPE tokenizer\n"
    "  prepare     corpus -> tokenizer -> llm.c token shards (cached)\n"
    "  train       train a model within a wall-clock budget; checkpoint; val_bpb\n"
    "  run         the main job: prepare + train the default preset for 5 minutes + val_bpb\n"
    "  profile     time and cost every kernel call of a few training steps: trace + table\n"
    "  eval        val_bpb of a trained run (validation set or given documents), or --core\n"
    "  sample      generate text from a trained run (KV cache; temperature, top-k, seed)\n"
    "  report      a self-contained HTML report (plots, budget, kernels) of a run folder\n"
    "  score       competition scores of several runs: val_bpb rank, CORE, phase-2 composite\n"
    "  kernels     the kernel lab: check every variant against the reference; benchmark them\n"
    "  research    unattended time-budgeted experiments over a search space (autoresearch)\n"
    "  plan        the model, batch and schedule for this machine and budget: a table and plan.json\n"
    "  help        this text\n\n"
    "Run `frontier <command> --help` for a command's options.\n";

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        fputs(USAGE, stderr);
        return FRONTIER_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (!strcmp(cmd, "info")) return cmd_info(argc - 2, argv + 2);
    if (!strcmp(cmd, "tokenizer")) return cmd_tokenizer(argc - 2, argv + 2);
    if (!strcmp(cmd, "prepare")) return cmd_prepare(argc - 2, argv + 2);
    if (!strcmp(cmd, "train")) return cmd_train(argc - 2, argv + 2);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "profile")) return cmd_profile(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "sample")) return cmd_sample(argc - 2, argv + 2);
    if (!strcmp(cmd, "report")) return cmd_report(argc - 2, argv + 2);
    if (!strcmp(cmd, "score")) return cmd_score(argc - 2, argv + 2);
    if (!strcmp(cmd, "kernels")) return cmd_kernels(argc - 2, argv + 2);
    if (!strcmp(cmd, "research")) return cmd_research(argc - 2, argv + 2);
    if (!strcmp(cmd, "plan")) return cmd_plan(argc - 2, argv + 2);
    fprintf(stderr, "frontier: unknown command '%s'\n\n%s", cmd, USAGE);
    return FRONTIER_EXIT_USAGE;
}

// Under mpirun every rank runs the same command; a rank that fails takes the job down with it
// (dist_exit), so no rank is left waiting in a collective.
int main(int argc, char **argv) {
    dist_init(&argc, &argv);
    return dist_exit(dispatch(argc, argv));
}
