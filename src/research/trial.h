// research/trial.h — one training trial: `frontier train` in a child process, then its summary.
//
// Layout of a trial folder DIR/trials/NNNN/: trial.json (the full config, budget included: what
// `frontier train --config` reads), command.sh (the exact command, runnable: it trains the trial
// again; its header names the checkout's commit and the machine), train.log (the child's stdout and stderr), run/ (the run
// folder: config.json, metrics.jsonl, summary.json, and the weights unless they were deleted).
// The child is `<exe> train --config trial.json --run-dir run --quiet`, where exe is
// /proc/self/exe: the very binary that runs the research; with --trainer CMD it is the shell
// command line CMD with those arguments appended (`/bin/sh -c 'CMD "$@"'`): a wrapper (a
// launcher, a container, a profiler) or another trainer, which must leave run/summary.json with
// a val_bpb. With a launcher TEMPLATE (--launcher) the command runs through it instead: {cmd} in
// the template becomes that command with its arguments, {trial} the trial number (NNNN) and {dir}
// the trial folder, e.g. `mpirun -np 1 --host node3 {cmd}` or `srun -N1 -n1 -c2 -J t{trial}
// {cmd}`. The template is one command (it runs as `exec TEMPLATE`: wrap a compound one in sh -c);
// the launcher's process group gets SIGTERM at the hang limit and SIGKILL 10 s later
// (TRIAL_LAUNCHER_GRACE_S), so the launcher can stop what it started elsewhere.
//
// Tests can make a trial fail on purpose: FRONTIER_RESEARCH_FAULT="crash:3,hang:5,signal:7"
// makes trial 3 exit 1, trial 5 hang (it is killed at the limit) and trial 7 die of SIGKILL,
// instead of training.
#pragma once

struct cJSON;

typedef struct {
    int ok;                 // trained and has a val_bpb
    int timed_out;
    int interrupted;        // the research process got SIGINT/SIGTERM: do not record the trial
    double val_bpb, tokens, tok_per_s, mfu, peak_mb, wall_s;
    double train_s;         // timed training seconds (summary timed_s), NaN if unknown
    double unique_tokens;   // the training data's tokens (summary unique_tokens), NaN if unknown
    char error[512];        // why it failed: the child's last error line, or how it ended
} TrialResult;

#define TRIAL_LAUNCHER_GRACE_S 10.0

typedef struct {
    const char *exe;       // the frontier binary ("/proc/self/exe": the research's own)
    const char *trainer;   // NULL: `exe train`; else a shell command the arguments are appended to
    const char *launcher;  // NULL: run the trainer directly; else a template holding {cmd}
    int cpu_first, cpu_count;  // cpu_count > 0: pin the trial to these CPUs (research/proc.h)
} TrialRunner;

// The launcher template's problems (no {cmd}, an unknown {placeholder}), or 0.
int trial_check_launcher(const char *launcher);

// Run trial `id` in trial_dir (created if missing; a run/ left there by an interrupted attempt
// is removed first) with `config` (budget_s is written into it as "budget"). limit_s: the hang
// limit. -1 + err only for problems of the research itself (cannot write the folder, cannot fork).
int trial_run(const TrialRunner *runner, const char *trial_dir, int id, const struct cJSON *config, double budget_s,
              double limit_s, TrialResult *res);

// The figures of a run folder's summary.json into r (val_bpb, tokens, tok_per_s, mfu, peak_mb,
// train_s, unique_tokens; the rest untouched): 0, or -1 + err when it is missing or has no val_bpb.
int trial_read_summary(const char *run_dir, TrialResult *r);

// The fault FRONTIER_RESEARCH_FAULT asks for at trial id ("crash", "hang", "signal"), or NULL.
const char *trial_fault(int id);

// Delete the weights (*.safetensors) of a finished trial's run folder to save disk.
void trial_drop_weights(const char *trial_dir);

// "120s" for a budget in seconds (static buffer).
const char *trial_budget_text(double budget_s);
