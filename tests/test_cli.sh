#!/usr/bin/env bash
# The CLI as a user runs it: outputs on the real model checked against the HF
# golden fixture, and one clear error (file + problem, non-zero exit, no
# crash) for each kind of bad input.
cd "$(dirname "$0")/.." || exit 2
AHA=${AHA:-./aha}
SMOL=models/SmolLM2-135M-Instruct.Q4_1.gguf
TINY=tests/fixtures/tiny
PY=${PY:-.venv/bin/python}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; shift; printf '  %s\n' "$@"; }

# expect_ok NAME PATTERN CMD...: exit 0 and stdout matches PATTERN (grep -E)
expect_ok() {
    local name=$1 pat=$2; shift 2
    local out; out=$("$@" 2>"$tmp/err"); local rc=$?
    if [ $rc -eq 0 ] && grep -qE -- "$pat" <<<"$out"; then pass "$name"
    else fail "$name" "exit $rc" "$(head -c 600 <<<"$out")" "$(head -c 300 "$tmp/err")"; fi
}
# expect_err NAME PATTERN CMD...: exit 1 or 2 (not a signal), one stderr line matching PATTERN
expect_err() {
    local name=$1 pat=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
    local lines; lines=$(grep -c . "$tmp/err")
    if { [ $rc -eq 1 ] || [ $rc -eq 2 ]; } && grep -qE -- "$pat" "$tmp/err" && [ "$lines" -le 1 ]; then pass "$name"
    else fail "$name" "exit $rc (want 1 or 2), $lines stderr lines" "$(head -c 600 "$tmp/err")"; fi
}
golden() { "$PY" -c "import json,sys; g=json.load(open('tests/fixtures/smollm2/golden.json')); print($1, end='')"; }

# --- usage
expect_ok "aha --help lists the commands and --version, on stdout" "aha --version" sh -c "$AHA --help 2>/dev/null"
expect_ok "aha --version names the version and git revision" "^aha [0-9]+\.[0-9]+\.[0-9]+ \([0-9a-f]+" $AHA --version
expect_ok "aha generate --help lists every flag with its default, on stdout" "--top-p .*default: 0.9" sh -c "$AHA generate --help 2>/dev/null"
expect_ok "a missing argument prints the usage to stderr, exit 2" "^usage: aha ppl" sh -c "$AHA ppl $SMOL 2>&1 >/dev/null; test \$? -eq 2"
expect_ok "--flag=value is the same as --flag value" "ctx 64\)$" $AHA ppl $SMOL README.md --ctx=64 --max-tokens=128
# record shares sweep's flag table but refuses the grid flags: its usage must not offer them
if ! $AHA record --help 2>/dev/null | grep -qE -- "--policies|--heads-from" && $AHA record --help 2>/dev/null | grep -q -- "--route"
then pass "record --help does not list sweep's --policies / --heads-from"
else fail "record --help does not list sweep's --policies / --heads-from" "$($AHA record --help 2>&1 | grep -E -- '--policies|--heads-from')"; fi
expect_ok "sweep --help lists --policies and --heads-from" "--heads-from .*default: unset" \
    sh -c "$AHA sweep --help 2>/dev/null | grep -A200 -- --policies"
expect_err "record refuses sweep's --policies" "--policies and --heads-from are aha sweep's" \
    $AHA record $SMOL README.md -o "$tmp/p.h5" --policies local
expect_err "a boolean flag takes no value" "--force takes no value" $AHA record $SMOL README.md -o "$tmp/b.h5" --force=1
expect_err "unknown command" "unknown command 'frobnicate'" $AHA frobnicate
expect_err "unknown flag" "unknown flag '--bogus'" $AHA generate $SMOL hi --bogus 1
expect_err "flag value not a number" "-n: 'many' is not a valid integer" $AHA generate $SMOL hi -n many
# make bench-peers' script: its flags are checked before anything is downloaded or built
expect_ok "bench-peers.sh --help lists every flag with its default" "--version V .*default: 0.3.36" scripts/bench-peers.sh --help
expect_err "bench-peers.sh: unknown flag" "bench-peers: unknown flag '--bogus'" scripts/bench-peers.sh --bogus
expect_err "bench-peers.sh: --reps not a count" "bench-peers: '0' is not a count" scripts/bench-peers.sh --reps 0
expect_err "bench-peers.sh: missing model" "nothere.gguf: no such model" scripts/bench-peers.sh --model "$tmp/nothere.gguf"

# --- the real model
expect_ok "info: SmolLM2 architecture" "architecture +llama$" $AHA info $SMOL
expect_ok "info: SmolLM2 GQA heads" "heads +9 query, 3 key/value \(GQA 3:1\), head_dim 64" $AHA info $SMOL
expect_ok "info: SmolLM2 stored dtypes" "stored .*Q4_1" $AHA info $SMOL
expect_ok "info: SmolLM2 tokenizer" "tokenizer +bpe" $AHA info $SMOL
expect_ok "info: AHA router detected" "aha router +yes" $AHA info $TINY/faolmo
expect_ok "info: no tokenizer in a tiny checkpoint" "tokenizer +none" $AHA info $TINY/qwen3
expect_ok "tokenize: ids equal HF's" "^$(golden "' '.join(map(str, g['prompts'][0]['ids']))")\$" \
    $AHA tokenize --ids $SMOL "$(golden "g['prompts'][0]['text']")"

for i in 0 2; do
    prompt=$(golden "g['prompts'][$i]['text']")
    # HF's text decodes the EOS token that ended generation; aha stops before printing it
    want=$(golden "g['prompts'][$i]['greedy']['text'].removesuffix('<|im_end|>' if g['prompts'][$i]['greedy']['stopped_at_eos'] else '')")
    n=$(golden "len(g['prompts'][$i]['greedy']['new_ids'])")
    got=$($AHA generate $SMOL "$prompt" -n "$n" 2>"$tmp/err")
    if [ "$got" = "$prompt$want" ]; then pass "generate: greedy text of prompt $i equals HF's"
    else fail "generate: greedy text of prompt $i equals HF's" "got:  $got" "want: $prompt$want"; fi
done

# ppl over a file holding one golden prompt: exp(mean NLL) of the same tokens
golden "g['prompts'][3]['text']" >"$tmp/chat.txt"
want=$(golden "'%.4f' % __import__('math').exp(g['prompts'][3]['mean_nll'])")
expect_ok "ppl: equals exp(mean NLL) from HF" "^ppl $want " $AHA ppl $SMOL "$tmp/chat.txt"
expect_ok "ppl: chunked over a longer file" "ppl [0-9.]+ .*ctx 64" \
    $AHA ppl $SMOL README.md --ctx 64 --max-tokens 200

# --- bad input: one line naming the file and the problem
expect_err "missing model" "nope.gguf: cannot open" $AHA info nope.gguf
head -c 100000 $SMOL >"$tmp/trunc.gguf"
expect_err "truncated GGUF" "trunc.gguf: .*(past the end|truncated)" $AHA info "$tmp/trunc.gguf"
printf 'GGUF' >"$tmp/short.gguf"
expect_err "GGUF of 4 bytes" "short.gguf: " $AHA info "$tmp/short.gguf"
printf 'NOPE1234567890123456789012' >"$tmp/magic.gguf"
expect_err "bad GGUF magic" "magic.gguf: .*magic" $AHA info "$tmp/magic.gguf"

mk() { rm -rf "$tmp/$1"; cp -r $TINY/llama_gqa "$tmp/$1"; }
mk badjson; printf '{"model_type": "llama", ' >"$tmp/badjson/config.json"
expect_err "malformed config.json" "badjson/config.json: .*JSON" $AHA info "$tmp/badjson"
mk arch; sed -i 's/"model_type": "llama"/"model_type": "gpt2"/' "$tmp/arch/config.json"
expect_err "unknown architecture" "unknown architecture 'gpt2'" $AHA info "$tmp/arch"
mk layers; sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$tmp/layers/config.json"
expect_err "missing tensor" "missing tensor 'model.layers.2" $AHA info "$tmp/layers"
mk shape; sed -i 's/"intermediate_size": 96/"intermediate_size": 80/' "$tmp/shape/config.json"
expect_err "shape mismatch" "model.safetensors: tensor 'model.layers.0.mlp.gate_proj.weight' has shape \[96, 64\], expected \[80, 64\]" $AHA info "$tmp/shape"
mk heads; sed -i 's/"num_key_value_heads": 2/"num_key_value_heads": 3/' "$tmp/heads/config.json"
expect_err "kv heads do not divide heads" "3 key/value heads do not divide 4" $AHA info "$tmp/heads"
mk huge; sed -i 's/"hidden_size": 64/"hidden_size": 2000000000/' "$tmp/huge/config.json"
expect_err "overflowing dimension" "implausible shape" $AHA info "$tmp/huge"
mk noweights; rm "$tmp/noweights/model.safetensors"
expect_err "no weights file" "no model.safetensors" $AHA info "$tmp/noweights"
mk truncst; head -c 5000 $TINY/llama_gqa/model.safetensors >"$tmp/truncst/model.safetensors"
expect_err "truncated safetensors" "truncst/model.safetensors: " $AHA info "$tmp/truncst"
mkg() { rm -rf "$tmp/$1"; cp -r $TINY/gemma3 "$tmp/$1"; }
mkg gact; sed -i 's/"hidden_activation": "gelu_pytorch_tanh"/"hidden_activation": "relu"/' "$tmp/gact/config.json"
expect_err "gemma: unsupported hidden_activation" "gact/config.json: \"hidden_activation\" is relu: not implemented" $AHA info "$tmp/gact"
mkg gtypes; sed -i '0,/"sliding_attention",/s///' "$tmp/gtypes/config.json"
expect_err "gemma: layer_types of the wrong length" "gtypes/config.json: layer_types has 5 entries for 6 layers" $AHA info "$tmp/gtypes"
mkg gmm; printf '{"model_type": "gemma3"}' >"$tmp/gmm/config.json"
expect_err "gemma3 config without text_config" "gmm/config.json: gemma3 config without a \"text_config\" object" $AHA info "$tmp/gmm"

: >"$tmp/empty.txt"
expect_err "ppl: empty input" "empty.txt: empty input" $AHA ppl $SMOL "$tmp/empty.txt"
printf 'abc \xff\xfe def' >"$tmp/bad-utf8.txt"
expect_err "ppl: invalid UTF-8" "bad-utf8.txt: .*invalid UTF-8" $AHA ppl $SMOL "$tmp/bad-utf8.txt"
expect_err "ppl: missing file" "nothere.txt: cannot open" $AHA ppl $SMOL "$tmp/nothere.txt"
printf 'AHATOK01\001\0\0\0\0\0\0\0\010\0\0\0' >"$tmp/g8.tok"  # one document of 8 tokens: 5, 6, ..., 12
for i in 5 6 7 8 9 10 11 12; do printf "\\$(printf %03o $i)\0\0\0" >>"$tmp/g8.tok"; done
# --- flag ranges: each flag row's range is checked as it is parsed and shown in
# its usage line; an error names the one flag that is wrong, its range and the value typed
expect_err "record --tau outside [0, 1)" "^aha: --tau must be in \\[0, 1\\) \\(got 2\\)$" $AHA record tests/fixtures/tiny/llama_aha README.md -o "$tmp/tau.h5" --tau 2
expect_ok "usage lines show each flag's range" "--batch .*\\(>= 1; default: 256\\)" sh -c "$AHA record --help"
expect_err "record --threads -1" "^aha: --threads must be >= 0 \\(got -1\\)$" $AHA record $TINY/llama_gqa README.md -o "$tmp/r.h5" --threads -1
expect_err "generate --threads -1" "^aha: --threads must be >= 0 \\(got -1\\)$" $AHA generate $SMOL hi --threads -1
expect_err "report names the one flag out of range" "^aha: --min-count must be >= 1 \\(got 0\\)$" $AHA report "$tmp/x.h5" --max-rows 3 --min-count 0
expect_err "fit names the one flag out of range" "^aha: --holdout must be in \\[0, 1\\) \\(got 1\\)$" $AHA fit $TINY/llama_gqa README.md -o "$tmp/r.st" --holdout 1
expect_err "plot names the one flag out of range" "^aha: --width must be >= 100 \\(got 50\\)$" $AHA plot "$tmp/x.h5" -o "$tmp/p" --width 50
expect_err "ppl --ctx 1" "^aha: --ctx must be 0 or >= 2 \\(got 1\\)$" $AHA ppl $SMOL README.md --ctx 1
expect_err "a float flag is never NaN" "^aha: --temp: 'nan' is not a valid number$" $AHA generate $SMOL hi --temp nan
expect_err "--windows with an empty element" "^aha: --windows: '16,' has an empty element$" $AHA record $TINY/llama_gqa README.md -o "$tmp/r.h5" --windows 16,
expect_err "--eps out of [0, 1]" "^aha: --eps must be in \\[0, 1\\] \\(got 1.5\\)$" $AHA record $TINY/llama_gqa README.md -o "$tmp/r.h5" --eps 0.1,1.5
expect_err "--policies with an empty element" "^aha: --policies: '0.1,' has an empty element$" $AHA sweep $TINY/llama_gqa README.md -o "$tmp/r.h5" --policies oracle:0.1,
expect_err "--sinks >= ctx" "^aha: --sinks must be less than the context, 32 tokens \\(got 32" $AHA record $TINY/llama_gqa README.md -o "$tmp/s.h5" --ctx 32 --sinks 32
[ ! -e "$tmp/s.h5" ] && pass "--sinks >= ctx leaves no trace behind" || fail "--sinks >= ctx leaves no trace behind" "$(ls "$tmp")"
expect_err "fit --sinks >= ctx" "^aha: --sinks must be less than the context, 32 tokens \\(got 40" $AHA fit $TINY/llama_gqa README.md -o "$tmp/s.st" --ctx 32 --sinks 40
printf '# no heads\n\n' >"$tmp/none.heads"
expect_err "an empty heads: file" "none.heads: lists no heads" $AHA record $TINY/llama_gqa "$tmp/g8.tok" -o "$tmp/h.h5" --route heads:"$tmp/none.heads"
expect_ok "aha fit --help lists every flag with its default, on stdout" "--target-global .*default: -1" sh -c "$AHA fit --help 2>/dev/null"
expect_err "fit: -o is required" "-o ROUTER is required" $AHA fit $TINY/llama_gqa README.md
expect_err "fit --export of a gemma checkpoint is refused by name" "--export: .*gemma3 is a gemma3 checkpoint, which --export does not write" $AHA fit $TINY/gemma3 "$tmp/g8.tok" -o "$tmp/g.st" --export "$tmp/gexp" --window 4
expect_err "fit: unknown --label" "--label: 'mass' is not werr, deps or learned" $AHA fit $TINY/llama_gqa README.md -o "$tmp/r.st" --label mass
expect_err "fit --label learned on a model without AHA rows" "no AHA router rows" $AHA fit $TINY/llama_gqa README.md -o "$tmp/r.st" --label learned
expect_err "record --router: not a router file" "not a router file" $AHA record $TINY/llama_gqa README.md -o "$tmp/rf.h5" --router $TINY/llama_gqa/model.safetensors
expect_err "record --router: missing file" "nothere.st: " $AHA record $TINY/llama_gqa README.md -o "$tmp/rf.h5" --router "$tmp/nothere.st"
expect_err "generate: context too small" "exceed --ctx 4" $AHA generate $SMOL "The capital of France is" -n 8 --ctx 4
expect_err "generate: model without tokenizer" "has no tokenizer" $AHA generate $TINY/qwen2 hello

# --- outputs: never one of the command's inputs (by device and inode, so an
# alias too; even with --force), nor inside an input folder; an existing one
# replaced only with --force; a folder where a file is meant (and back) said so
cp "$tmp/g8.tok" "$tmp/data.tok"; ln -s data.tok "$tmp/alias.tok"
mkdir -p "$tmp/docs" "$tmp/m"; cp "$tmp/g8.tok" "$tmp/docs/a.tok"; cp -r $TINY/llama_gqa/. "$tmp/m/"
same() { cmp -s "$1" "$2" && pass "$3" || fail "$3" "$1 changed"; }
R="$AHA record $tmp/m"
expect_err "record -o naming the dataset by another name, with --force" "alias.tok: is the dataset" $R "$tmp/data.tok" -o "$tmp/alias.tok" --force
same "$tmp/data.tok" "$tmp/g8.tok" "... and the dataset is untouched"
expect_err "record -o inside the dataset folder" "docs/t.h5: lies inside the dataset \(the folder" $R "$tmp/docs" -o "$tmp/docs/t.h5"
expect_err "record -o naming a model file, with --force" "m/model.safetensors: lies inside the model" $R "$tmp/data.tok" -o "$tmp/m/model.safetensors" --force
same "$tmp/m/model.safetensors" $TINY/llama_gqa/model.safetensors "... and the model is untouched"
expect_err "record -o naming a folder" "docs: is a folder, and -o names a file here" $R "$tmp/data.tok" -o "$tmp/docs"
$R "$tmp/data.tok" -o "$tmp/t.h5" --quiet >/dev/null 2>&1 && cp "$tmp/t.h5" "$tmp/t0.h5"
expect_err "sweep -o naming its --heads-from trace" "t.h5: is the --heads-from trace" $AHA sweep $tmp/m "$tmp/data.tok" -o "$tmp/t.h5" --force --policies topk:1 --heads-from "$tmp/t.h5"
expect_err "fit -o naming the dataset, with --force" "data.tok: is the dataset" $AHA fit $tmp/m "$tmp/data.tok" -o "$tmp/data.tok" --force
$AHA fit $tmp/m "$tmp/data.tok" -o "$tmp/r.st" --window 4 --quiet >/dev/null 2>&1
expect_err "fit -o an existing router without --force" "r.st: exists \(use --force to overwrite\)" $AHA fit $tmp/m "$tmp/data.tok" -o "$tmp/r.st" --window 4
expect_err "fit --export into the model's folder, with --force" "is the model" $AHA fit $tmp/m "$tmp/data.tok" -o "$tmp/r2.st" --export "$tmp/m" --force
expect_err "fit --export naming a file" "r.st: is a file, and --export names a folder here" $AHA fit $tmp/m "$tmp/data.tok" -o "$tmp/r2.st" --export "$tmp/r.st"
expect_err "merge -o naming its input, with --force" "t.h5: is a trace it reads" $AHA merge "$tmp/t.h5" -o "$tmp/t.h5" --force
same "$tmp/t.h5" "$tmp/t0.h5" "... and the trace is untouched"
expect_err "report -o naming the trace it reads" "t.h5: is a trace it reads" $AHA report "$tmp/t.h5" -o "$tmp/t.h5"
expect_err "report -o naming a file" "data.tok: is a file, and -o names a folder here" $AHA report "$tmp/t.h5" -o "$tmp/data.tok"
$AHA report "$tmp/t.h5" -o "$tmp/rep" >/dev/null 2>&1
expect_err "report -o into its last report without --force" "rep: exists \(use --force to replace it\)" $AHA report "$tmp/t.h5" -o "$tmp/rep"
expect_ok "report -o into its last report with --force" "" $AHA report "$tmp/t.h5" -o "$tmp/rep" --force
$R "$tmp/data.tok" -o "$tmp/tp.h5" --windows 2,4 --quiet >/dev/null 2>&1  # windows the 8 tokens pass: every figure draws
expect_ok "plot -o a new folder" "fig/sparsity.png" $AHA plot "$tmp/tp.h5" -o "$tmp/fig"
expect_err "plot -o into its last figures without --force" "fig: exists \(use --force to replace it\)" $AHA plot "$tmp/tp.h5" -o "$tmp/fig"
expect_err "notebook -o naming the trace it reads, with --force" "t.h5: is a trace it reads" $AHA notebook "$tmp/t.h5" -o "$tmp/t.h5" --force
expect_err "notebook --figures into a plot's figures without --force" "fig: exists" $AHA notebook "$tmp/tp.h5" -o "$tmp/nb.ipynb" --figures "$tmp/fig"
[ ! -e "$tmp/nb.ipynb" ] && pass "... and no notebook is written" || fail "... and no notebook is written"

# --- settings: each flag parsed once, at the edge, from one table per group;
# --format's two meanings have two names, the old one an alias that says so
expect_err "record --data-format: the formats, listed, before the model is read" \
    "^aha: --data-format: 'parquet' is not auto, text, jsonl, gsm8k, mbpp, hellaswag, mmlu, csqa, multinews or tokens$" \
    $AHA record "$tmp/nothere" "$tmp/data.tok" -o "$tmp/df.h5" --data-format parquet
expect_err "record --route: an unknown policy refused before the model is read" "^aha: --route: unknown router 'bogus'" \
    $AHA record "$tmp/nothere" "$tmp/data.tok" -o "$tmp/df.h5" --route bogus
expect_err "fit --regress: the values, listed" "^aha: --regress: 'l2' is not label or log-error$" \
    $AHA fit "$tmp/nothere" "$tmp/data.tok" -o "$tmp/df.st" --regress l2
note() { printf 'aha: note: --format is now %s (the old name still works)' "$1"; }
$R "$tmp/data.tok" -o "$tmp/fmt-new.h5" --quiet --data-format tokens >/dev/null 2>"$tmp/err-new"
$R "$tmp/data.tok" -o "$tmp/fmt-old.h5" --quiet --format tokens >/dev/null 2>"$tmp/err-old"
attrs=$("$PY" -c "import h5py, sys; print(*(h5py.File(p).attrs['dataset_format'].decode() for p in sys.argv[1:]))" \
        "$tmp/fmt-new.h5" "$tmp/fmt-old.h5" 2>&1)
if [ ! -s "$tmp/err-new" ] && [ "$(cat "$tmp/err-old")" = "$(note --data-format)" ] && [ "$attrs" = "tokens tokens" ]
then pass "record --format: the alias of --data-format, with one line that names it"
else fail "record --format: the alias of --data-format, with one line that names it" "$(cat "$tmp/err-new" "$tmp/err-old")" "$attrs"; fi
new=$($AHA report "$tmp/t.h5" --out-format json 2>"$tmp/err-new"); old=$($AHA report "$tmp/t.h5" --format json 2>"$tmp/err-old")
if [ -n "$new" ] && [ "$new" = "$old" ] && [ "${new:0:1}" = "{" ] && [ ! -s "$tmp/err-new" ] && [ "$(cat "$tmp/err-old")" = "$(note --out-format)" ]
then pass "report --format: the alias of --out-format, with one line that names it"
else fail "report --format: the alias of --out-format, with one line that names it" "$(cat "$tmp/err-new" "$tmp/err-old")"; fi
$R "$tmp/data.tok" -o "$tmp/w2.h5" --quiet --windows 2,4 >/dev/null 2>&1 # windows inside its 8 tokens: every figure has points
expect_ok "plot --out-format svg" "fig-svg/sparsity.svg" $AHA plot "$tmp/w2.h5" -o "$tmp/fig-svg" --out-format svg
expect_err "plot --out-format: the values, listed" "^aha: --out-format: 'gif' is not png, svg or pdf$" \
    $AHA plot "$tmp/t.h5" -o "$tmp/fig-gif" --out-format gif
# a list flag's value given twice names the flag (not the trace it would have written); a flag without a
# default says "unset", once; --sinks that cover a whole context say so
expect_err "record --windows 16,16 names --windows" "^aha: --windows: 16 is given twice \(each value once\)$" \
    $R "$tmp/data.tok" -o "$tmp/dup.h5" --windows 16,16
expect_err "sweep --eps 0.1,0.10 names --eps" "^aha: --eps: 0.10 is given twice \(each value once\)$" \
    $AHA sweep $tmp/m "$tmp/data.tok" -o "$tmp/dup.h5" --route local --eps 0.1,0.10
expect_ok "--text-field's usage line: its meaning unset, one default" '--text-field +JSONL field with the text; unset: "text", .* \(default: unset\)$' \
    sh -c "$AHA record --help | grep -- --text-field"
$R "$tmp/data.tok" -o "$tmp/sinks.h5" --sinks 20 --windows 2,4 >"$tmp/out" 2>"$tmp/err"
if grep -q "^aha: warning: --sinks 20: 1 of 1 contexts hold at most 21 tokens, so every key before their window is a sink" "$tmp/err" &&
   grep -q "all decisions: w2 0.0000 w4 0.0000" "$tmp/out"
then pass "record --sinks covering every context: its 0 global comes with a warning"
else fail "record --sinks covering every context: its 0 global comes with a warning" "$(cat "$tmp/err")"; fi
# every flag of the usage text with its default; an enum's with its values
bad=""
for cmd in record sweep fit report plot; do
    bad+=$($AHA $cmd --help | grep -E '^  -' | grep -vE '\(([^;]*; )?default: .*\)$|^  --format +the old name of --(data|out)-format$')
done
expect_ok "record, sweep, fit, report and plot --help show every flag's default" "^$" echo "$bad"
expect_ok "usage: --data-format lists the dataset formats" \
    "--data-format .*\(auto \| text \| jsonl \| gsm8k \| mbpp \| hellaswag \| mmlu \| csqa \| multinews \| tokens; default: auto\)" \
    sh -c "$AHA sweep --help"
expect_ok "usage: fit's --label, --weight, --regress and --weights list their values" \
    "label.*werr \| deps \| learned; default: werr.*weight.*cost \| none; default: cost.*regress.*label \| log-error; default: label.*weights.*stored \| f32; default: stored" \
    sh -c "$AHA fit --help | tr -d '\n'"
expect_ok "usage: report's and plot's --out-format list theirs" "auto \| md \| csv \| json; default: auto.*png \| svg \| pdf; default: png" \
    sh -c "{ $AHA report --help; $AHA plot --help; } | tr -d '\n'"
