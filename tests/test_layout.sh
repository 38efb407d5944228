#!/usr/bin/env bash
# The one-way flow datasets -> runtime (+kernels) -> trace -> analyze ->
# plots / notebooks-export, as the compiler sees it: for each folder, headers
# of the stages it must not use are not found with the flags the Makefile
# gives its files (INC.<folder>), and those it may use are. The rules here
# are written out independently of the Makefile's rows, so a row that lets a
# stage see backwards fails. Prints PASS/FAIL lines (tests/run.sh counts them).
cd "$(dirname "$0")/.." || exit 2
fail=0

# compiles FLAGS HEADER: 0 when a file compiled with FLAGS can include HEADER.
compiles() {
    # shellcheck disable=SC2086
    printf '#include "%s"\n' "$2" | cc -std=c11 -fsyntax-only -x c - $1 2>/dev/null
}

# rule FOLDER "MAY..." "MUST_NOT...": one PASS/FAIL line for the folder.
rule() {
    local dir=$1 bad="" flags
    flags=$(make -s --no-print-directory print-inc F="$dir/x.c") || bad=" no flags;"
    for h in $2; do compiles "$flags" "$h" || bad+=" cannot include $h;"; done
    for h in $3; do compiles "$flags" "$h" && bad+=" can include $h;"; done
    if [ -z "$bad" ]; then
        echo "PASS layout: $dir sees only what it may"
    else
        echo "FAIL layout: $dir:$bad"
        fail=1
    fi
}

model="gguf.h safetensors.h tensor.h tokenizer.h model.h"        # runtime/format, tokenizer, model
run="forward.h router.h run.h gpu.h settings.h"                  # runtime
fit="fit.h router_file.h"                                        # runtime/fit
rec="record.h record_ctx.h grid.h shard.h mpi_api.h"             # runtime/record
above="$run $fit $rec"                                           # the runtime that runs models
rule common "err.h flags.h f16.h" "$model attention.h dataset.h trace.h stats.h"
rule kernels "err.h attention.h" "$model $above dataset.h trace.h stats.h"
rule datasets "err.h mapfile.h dataset.h" "$model $above attention.h trace.h stats.h"
rule runtime/format "err.h gguf.h" "tokenizer.h model.h $above attention.h trace.h"
rule runtime/tokenizer "gguf.h tokenizer.h" "model.h $above attention.h trace.h"
rule runtime/model "gguf.h tokenizer.h model.h" "$above attention.h trace.h stats.h"
rule runtime/trace/store "err.h trace_h5.h trace_codec.h store.h" "trace.h trace_schema.h trace_read.h $model $above attention.h dataset.h stats.h report.h"
rule runtime/trace "err.h f16.h trace.h trace_read.h trace_h5.h trace_codec.h store.h" "$model $above attention.h dataset.h stats.h report.h"
# runtime -> fit -> record: the core knows neither, fitting writes router
# files that recording reads, and nothing below sees recording
rule runtime "$model $run attention.h dataset.h trace.h" "$fit $rec stats.h report.h plot.h store.h trace_h5.h"
rule runtime/fit "$model $run $fit attention.h dataset.h trace.h" "$rec stats.h report.h plot.h"
rule runtime/record "$model $run $fit $rec attention.h dataset.h trace.h" "stats.h report.h plot.h"
rule runtime/mpi "mpi_api.h" "$model $run $fit trace.h dataset.h"
rule analyze "err.h trace_read.h stats.h report.h" "$model $above attention.h dataset.h plot.h trace_h5.h trace_codec.h store.h"
rule plots "trace_read.h report.h plot.h" "$model $above attention.h dataset.h"
rule notebooks-export "report.h plot.h" "$model $above attention.h dataset.h"
exit $fail
