// cli/commands.h — the subcommands. Each takes the arguments after its name and returns the
// process exit code: 0 success, 1 runtime error (message printed), 2 usage error.
#pragma once

int cmd_info(int argc, char **argv);
int cmd_tokenizer(int argc, char **argv);
int cmd_prepare(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_kernels(int argc, char **argv);
int cmd_research(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_phase(int argc, char **argv);  // `frontier run --phase N`
