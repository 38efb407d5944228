// The subcommands of the aha CLI, each in the file of its stage. Each takes
// the whole argv (argv[1] is the command) and returns the exit code.
#pragma once

int aha_cmd_info(int argc, char **argv);
int aha_cmd_tokenize(int argc, char **argv);
int aha_cmd_generate(int argc, char **argv);
int aha_cmd_ppl(int argc, char **argv);
int aha_cmd_record(int argc, char **argv);
int aha_cmd_sweep(int argc, char **argv);
int aha_cmd_report(int argc, char **argv);
int aha_cmd_plot(int argc, char **argv);
int aha_cmd_merge(int argc, char **argv);
int aha_cmd_notebook(int argc, char **argv);
