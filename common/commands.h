// The subcommands of the aha CLI, each in the file of its stage. Each takes
// the whole argv (argv[1] is the command) and returns the exit code.
#pragma once

// aha info (or inspect) PATH: aha.c sends a trace to analyze/'s inspector,
// anything else to the model's; both take these flags and print this usage.
int aha_cmd_info_model(int argc, char **argv);
int aha_cmd_info_trace(int argc, char **argv);
#define AHA_INFO_USAGE                                                                          \
    "usage: aha info MODEL|TRACE [--json]   (also: aha inspect)\n"                                \
    "  MODEL: a Hugging Face folder or a .gguf file: architecture, shapes, parameters, dtype,\n"  \
    "         resident weight memory (--weights), AHA router, tokenizer\n"                       \
    "  TRACE: an aha trace (an HDF5 file, e.g. .h5): settings, provenance, documents, runs,\n"   \
    "         datasets (shape, dtype), and whether it is complete"
#define AHA_INFO_JSON "print one JSON object instead of text (a trace's keys: the schema's names)"
int aha_cmd_tokenize(int argc, char **argv);
int aha_cmd_generate(int argc, char **argv);
int aha_cmd_ppl(int argc, char **argv);
int aha_cmd_record(int argc, char **argv);
int aha_cmd_sweep(int argc, char **argv);
int aha_cmd_fit(int argc, char **argv);
int aha_cmd_report(int argc, char **argv);
int aha_cmd_plot(int argc, char **argv);
int aha_cmd_merge(int argc, char **argv);
int aha_cmd_verify(int argc, char **argv);
#define AHA_VERIFY_USAGE                                                                              \
    "usage: aha verify TRACE... [--block N]\n"                                                        \
    "  reads every chunk of every dataset of each trace and checks it against its checksum, and\n"    \
    "  every value against what the schema allows (docs/trace-format.md, \"aha verify\"); one line\n" \
    "  per trace; exits 1 naming the first problem of each trace that has one"
int aha_cmd_notebook(int argc, char **argv);
