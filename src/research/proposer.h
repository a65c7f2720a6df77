// research/proposer.h — agent mode: ask an external command for the next change.
//
// Each round runs `/bin/sh -c CMD` in its own process group with, on stdin, one JSON object (the
// bundle, docs/research.md): {"protocol": program.md's text, "trial": N, "budget_s", "space",
// "base", "best": {"trial", "val_bpb", "config", "change_from_base"}, "baseline": {"val_bpb",
// "seed_spread"}, "threshold", "ledger": results.tsv's text}. Its stdout must hold one JSON
// object: either the change itself ({"matrix-lr": 0.03}) or {"change": {...}, "description":
// "why"}; the whole output, or else its last non-empty line, is parsed. The command runs under a
// time limit; its stdin, stdout and stderr are kept in the trial folder (proposer.in.json,
// proposer.out, proposer.log).
#pragma once

struct cJSON;

typedef struct {
    struct cJSON *change;   // the proposed change (owned)
    char *description;      // the agent's words, or NULL
    double wall_s;
    int interrupted;
} Proposal;

// Run the proposer. 0 with p->change set; -1 + err (why the proposal is rejected: timed out,
// exit status, no JSON object on stdout) otherwise; p->wall_s is set either way.
int proposer_run(const char *cmd, const char *trial_dir, const struct cJSON *bundle, double limit_s, Proposal *p);
void proposal_free(Proposal *p);

// Parse a proposer's stdout (exposed for tests).
int proposer_parse_output(const char *text, struct cJSON **change, char **description);
