// cli/cmd_research.c — `frontier research` (the autoresearch loop, research/research.h) and
// `frontier research report DIR` (its progress page and summary, research/report.h).
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "research/proc.h"
#include "research/report.h"
#include "research/research.h"
#include "research/trial.h"
#include "util/duration.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/mem.h"

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "frontier research: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see frontier research --help)\n");
    va_end(ap);
    return FRONTIER_EXIT_USAGE;
}

static int cmd_research_report(int argc, char **argv) {
    const char *out = NULL, *md = NULL;
    Option opts[] = {
        {"out", OPT_STRING, &out, "FILE", "where to write the page (default DIR/report.html)", 0, 0, 0, 0, NULL},
        {"md", OPT_STRING, &md, "FILE", "where to write the markdown summary (default DIR/summary.md)", 0, 0, 0, 0, NULL},
        {0},
    };
    StringList pos = {0};
    const char *usage = "frontier research report DIR [--out FILE] [--md FILE]";
    int rc = args_parse_one(usage,
                        "Write the progress of a research folder as a self-contained HTML page (inline SVG: val_bpb "
                        "per trial, kept trials labelled with their change, the running best as a step line; the "
                        "numbers, the kept changes, the best config and the ledger) and a markdown summary (best "
                        "config, improvement over the baseline, seed spread, kept changes). Reads DIR/results.tsv "
                        "and, when present, research.json, base.json and best.json. Files are written atomically.",
                        opts, argc, argv, "DIR", &pos);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : FRONTIER_EXIT_USAGE;
    const char *dir = pos.items[0], *outs[][2] = {{"out", out}, {"md", md}};
    for (int i = 0; i < 2; i++)
        if (outs[i][1] && (!*outs[i][1] || is_dir(outs[i][1]))) {
            fprintf(stderr, "%s: --%s %s: expected a file to write\n", usage, outs[i][0],
                    *outs[i][1] ? outs[i][1] : "is empty");
            string_list_free(&pos);
            return FRONTIER_EXIT_USAGE;
        }
    char *ledger = path_join(dir, "results.tsv");
    int have = path_exists(ledger);
    free(ledger);
    if (!have) {
        fprintf(stderr, "%s: %s is %s: give a research folder (the --out of `frontier research`)\n", usage, dir,
                !path_exists(dir) ? "missing" : !is_dir(dir) ? "a file" : "not a research folder (no results.tsv)");
        string_list_free(&pos);
        return FRONTIER_EXIT_USAGE;
    }
    rc = research_report_write(dir, out, md);
    if (rc == 0) {
        char *html = out ? xstrdup(out) : path_join(pos.items[0], "report.html");
        char *sum = md ? xstrdup(md) : path_join(pos.items[0], "summary.md");
        printf("report %s\nsummary %s\n", html, sum);
        free(html);
        free(sum);
    }
    string_list_free(&pos);
    return rc == 0 ? 0 : report_error();
}

static const char SUMMARY[] =
    "  frontier research --budget-per-trial TIME (--trials N | --hours H) [--strategy greedy|random|halving]\n"
    "                    [--space FILE] [--base CONFIG.json] [--out DIR] [--proposer CMD] [--alpha P] [--max-seeds N]\n"
    "                    [--trainer CMD] [--launcher TEMPLATE] [--lanes N] [--promote-budget TIME [--promote-seeds N]]\n"
    "  frontier research report DIR\n\n"
    "Unattended experiments in the manner of karpathy/autoresearch: each trial trains a config from scratch "
    "for the same wall-clock budget (a separate `frontier train` process; a crash ends only that trial, a hang "
    "is killed at twice the budget plus the evaluation allowance) and is scored by val_bpb on the pinned "
    "validation set. First the base config runs with --baseline-seeds seeds; then the strategy proposes changes from the search space: greedy (one setting moved from the "
    "best), random (every param drawn afresh), halving (successive halving: a bracket of greedy candidates at "
    "budget/eta^(rungs-1), the best 1/eta promoted rung by rung to the full budget), or an external agent "
    "(--proposer CMD gets research/program.md, the space and the ledger as JSON on stdin and prints one JSON "
    "change). Each candidate is compared with the incumbent on the same seeds (paired: what a seed does to "
    "both cancels), one seed at a time: it is discarded as soon as it is clearly worse or no better on "
    "average, runs another seed while promising, and is kept only when the paired improvement is "
    "significant at --alpha (a sequential one-sided test over at most --max-seeds seeds; the spread of the "
    "differences is pooled over the research). With --promote-budget, each keep is re-judged at that "
    "larger budget on --promote-seeds fresh seeds, paired with the incumbent it beat, before anything builds on "
    "it; one that does not hold there is marked no-transfer and the incumbent it beat is restored. Every trial is a row of DIR/results.tsv "
    "(fsync'ed); DIR/best.json is the best full config (`frontier train --config DIR/best.json` reproduces "
    "it). Rerunning the same command continues after the last recorded trial. See docs/research.md.\n\n"
    "  frontier research report DIR    the progress chart (HTML) and summary.md of a research folder";

int cmd_research(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "report")) return cmd_research_report(argc - 1, argv + 1);
    const char *budget = NULL, *hours = NULL, *space = NULL, *strategy = NULL, *out = "runs/research", *base = NULL;
    const char *proposer = NULL, *proposer_timeout = "10m", *program = NULL, *threshold = "0", *eval_margin = "5m";
    const char *alpha = "0.05", *trainer = NULL, *launcher = NULL, *promote_budget = NULL;
    int trials = 0, baseline_seeds = 3, max_seeds = 6, eta = 3, rungs = 2, bracket = 0, keep_weights = 0;
    int promote_seeds = 3, lanes = 1;
    int64_t seed = 1;
    Option opts[] = {
        {"budget-per-trial", OPT_STRING, &budget, "TIME", "training budget of a trial: 90s, 2m, 5m (required)", 0, 0, 0, 0, NULL},
        {"trials", OPT_INT, &trials, "N", "stop when the ledger has N trials (baselines and rejected proposals count)", 1, 1000000, 0, 0, NULL},
        {"hours", OPT_STRING, &hours, "H", "stop before a trial that would take the ledger's machine time past H hours (trials side by side in lanes count once)", 0, 0, 0, 0, NULL},
        {"space", OPT_STRING, &space, "FILE", "search space (default research/space.json)", 0, 0, 0, 0, NULL},
        {"strategy", OPT_STRING, &strategy, "NAME", "greedy, random or halving (default greedy)", 0, 0, 0, 0, NULL},
        {"seed", OPT_INT64, &seed, "S", "seed of the proposals (the trainer's seed is in the base config)", 0, INT64_MAX, 0, 0, NULL},
        {"out", OPT_STRING, &out, "DIR", "research folder; rerun with the same DIR to continue", 0, 0, 0, 0, NULL},
        {"base", OPT_STRING, &base, "CONFIG.json", "base config (frontier train --config format; default: the trainer's defaults)", 0, 0, 0, 0, NULL},
        {"proposer", OPT_STRING, &proposer, "CMD", "agent mode: run CMD via /bin/sh -c for each proposal", 0, 0, 0, 0, NULL},
        {"proposer-timeout", OPT_STRING, &proposer_timeout, "TIME", "kill the proposer after this long (its proposal is rejected)", 0, 0, 0, 0, NULL},
        {"program", OPT_STRING, &program, "FILE", "the protocol sent to the proposer (default research/program.md)", 0, 0, 0, 0, NULL},
        {"alpha", OPT_STRING, &alpha, "P", "the keep rule's one-sided level: a change with no effect is kept with probability at most P (default 0.05)", 0, 0, 0, 0, NULL},
        {"max-seeds", OPT_INT, &max_seeds, "N", "seeds a candidate runs at most before it is discarded (default 6)", 2, PLAN_MAX_SEEDS, 0, 0, NULL},
        {"threshold", OPT_STRING, &threshold, "X", "a keep must also improve the mean paired val_bpb by more than X (default 0)", 0, 0, 0, 0, NULL},
        {"baseline-seeds", OPT_INT, &baseline_seeds, "N", "seeds the base config runs with first (default 3; at least 3: they are the noise estimate the first candidates are judged with)", 3, 64, 0, 0, NULL},
        {"trainer", OPT_STRING, &trainer, "CMD", "run each trial as the shell command CMD with `--config FILE --run-dir DIR --quiet` appended, instead of this frontier's train; it must leave DIR/summary.json with val_bpb", 0, 0, 0, 0, NULL},
        {"launcher", OPT_STRING, &launcher, "TEMPLATE", "run each trial through a cluster launcher: {cmd} becomes the trial's command, {trial} its number, {dir} its folder, e.g. 'mpirun -np 1 --host node3 {cmd}' or 'srun -N1 -n1 -c2 {cmd}' (docs/research.md)", 0, 0, 0, 0, NULL},
        {"lanes", OPT_INT, &lanes, "N", "trials at once, each on 1/N of the cores (pinned) unless --launcher places them: each candidate run trains beside a run of the incumbent on the same seed (side-by-side pairs), and the other lanes run what follows (its next seeds), so the decisions are those of one lane; default 1", 1, RESEARCH_MAX_LANES, 0, 0, NULL},
        {"promote-budget", OPT_STRING, &promote_budget, "TIME", "re-judge every keep at this larger budget (e.g. 5m for 2m trials) before building on it; off by default", 0, 0, 0, 0, NULL},
        {"promote-seeds", OPT_INT, &promote_seeds, "N", "fresh seeds (pairs) a promotion runs (default 3)", 1, 64, 0, 0, NULL},
        {"eta", OPT_INT, &eta, "N", "halving: keep the best 1/N of each rung; budgets grow N-fold per rung", 2, 100, 0, 0, NULL},
        {"rungs", OPT_INT, &rungs, "N", "halving: rungs, the last at the full budget", 1, 8, 0, 0, NULL},
        {"bracket", OPT_INT, &bracket, "N", "halving: candidates per bracket at the first rung (0 = eta^(rungs-1))", 0, 10000, 0, 0, NULL},
        {"eval-margin", OPT_STRING, &eval_margin, "TIME", "least time allowed for start-up + evaluation before a trial counts as hung", 0, 0, 0, 0, NULL},
        {"keep-weights", OPT_FLAG, &keep_weights, NULL, "keep every trial's weights (default: only kept trials')", 0, 0, 0, 0, NULL},
        {0},
    };
    const char *usage = "frontier research [options]";
    int rc = parse_args(usage, SUMMARY, opts, argc, argv, NULL);
    if (rc != ARGS_OK) return rc == ARGS_HELP ? 0 : FRONTIER_EXIT_USAGE;

    ResearchOptions o;
    memset(&o, 0, sizeof o);
    if (!budget) return usage_error("--budget-per-trial is required");
    if ((o.budget_s = duration_parse(budget)) <= 0) return usage_error("--budget-per-trial '%s': expected a duration like 90s, 2m or 5m", budget);
    if (!trials && !hours) return usage_error("give --trials N or --hours H (or both)");
    if (promote_budget && (o.promote_budget_s = duration_parse(promote_budget)) <= o.budget_s)
        return usage_error("--promote-budget '%s': expected a duration (like 5m) longer than --budget-per-trial %s (the next scale)",
                           promote_budget, budget);
    o.promote_seeds = promote_seeds, o.lanes = lanes;
    if (lanes > 1 && !launcher && proc_cpus() < lanes)
        return usage_error("--lanes %d needs %d CPUs, one lane each, and this process may use %d: drop --lanes or run "
                           "the trials elsewhere with --launcher", lanes, lanes, proc_cpus());
    if (hours) {
        char *end;
        o.hours = strtod(hours, &end);
        if (end == hours || *end || !(o.hours > 0) || !isfinite(o.hours)) return usage_error("--hours '%s': expected a positive number of hours", hours);
    }
    {
        char *end;
        o.threshold = strtod(threshold, &end);
        if (end == threshold || *end || !(o.threshold >= 0) || !(o.threshold <= 1e3))
            return usage_error("--threshold '%s': expected a number of bits per byte in [0, 1000]", threshold);
        o.alpha = strtod(alpha, &end);
        if (end == alpha || *end || !(o.alpha > 0) || !(o.alpha < 0.5))
            return usage_error("--alpha '%s': expected a probability in (0, 0.5), e.g. 0.05", alpha);
    }
    if (trainer && !*trainer) return usage_error("--trainer is empty: give a command");
    if (launcher && trial_check_launcher(launcher) != 0) return usage_error("%s", err_msg());
    if (!strategy || !strcmp(strategy, "greedy")) o.strategy = STRAT_GREEDY;
    else if (!strcmp(strategy, "random")) o.strategy = STRAT_RANDOM;
    else if (!strcmp(strategy, "halving")) o.strategy = STRAT_HALVING;
    else return usage_error("--strategy '%s': expected greedy, random or halving", strategy);
    if (proposer && o.strategy != STRAT_GREEDY)
        return usage_error("--proposer replaces the strategy (the agent proposes one change to the best at a time); drop --strategy %s", strategy);
    if (proposer) o.strategy = STRAT_AGENT;
    if ((o.proposer_timeout_s = duration_parse(proposer_timeout)) <= 0) return usage_error("--proposer-timeout '%s': expected a duration like 30s or 10m", proposer_timeout);
    if ((o.eval_margin_s = duration_parse(eval_margin)) <= 0) return usage_error("--eval-margin '%s': expected a positive duration like 90s or 5m", eval_margin);
    if (!*out) return usage_error("--out '%s': expected a folder", out);
    if (path_exists(out) && !is_dir(out)) return usage_error("--out %s: not a folder (it is a file)", out);
    const char *files[][2] = {{"space", space}, {"base", base}, {"program", program}};
    for (int i = 0; i < 3; i++) {  // input files given: they must be there (read only later, after work started)
        const char *p = files[i][1];
        if (!p) continue;
        if (!*p) return usage_error("--%s is empty: give a file", files[i][0]);
        if (!path_exists(p)) return usage_error("--%s %s: no such file", files[i][0], p);
        if (is_dir(p)) return usage_error("--%s %s: a folder, expected a file", files[i][0], p);
    }

    char *space_path = space ? xstrdup(space) : shipped_path("research/space.json");
    char *program_path = program ? xstrdup(program) : shipped_path("research/program.md");
    o.out_dir = out, o.space_path = space_path, o.base_path = base, o.proposer = proposer, o.program_path = program_path;
    o.max_trials = trials, o.seed = (uint64_t)seed, o.baseline_seeds = baseline_seeds, o.max_seeds = max_seeds;
    o.trainer = trainer, o.launcher = launcher;
    o.eta = eta, o.rungs = rungs, o.keep_weights = keep_weights, o.exe = "/proc/self/exe";
    o.bracket = bracket;
    if (!o.bracket) {
        o.bracket = 1;
        for (int r = 1; r < rungs; r++) o.bracket *= eta;
    }
    rc = research_run(&o);
    free(space_path);
    free(program_path);
    if (rc == 130) return 130;
    return rc == 0 ? 0 : report_error();
}
