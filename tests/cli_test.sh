#!/usr/bin/env bash
# The CLI contract (docs/cli.md): exit codes, one-line errors, no half-written files.
set -u
kvscope=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "top-level help" -- "$kvscope" --help
for c in devices info synth dense select eval bench inspect generate capture needle ruler ppl speed merge; do expect 0 "$c --help" -- "$kvscope" "$c" --help; done
expect 2 "no command" -- "$kvscope"
expect 2 "unknown command" -- "$kvscope" frobnicate
expect 2 "unknown option" -- "$kvscope" synth --out "$work/x.safetensors" --bogus 1
expect 2 "bad number" -- "$kvscope" synth --out "$work/x.safetensors" --tokens 12x
expect 2 "H not a multiple of G" -- "$kvscope" synth --out "$work/x.safetensors" --heads 6 --kv-heads 4
[ -e "$work/x.safetensors" ] && { echo "FAIL: a refused synth left a file"; failures=$((failures + 1)); }
expect 0 "devices" -- "$kvscope" devices
expect 0 "synth" -- "$kvscope" synth --out "$work/s.safetensors" --heads 4 --kv-heads 2 --dim 64 --tokens 300 --layers 2
expect 0 "info" -- "$kvscope" info "$work/s.safetensors"
grep -q "^1 *4 *2 *2 *300 *64 *F16" "$work/out" || { echo "FAIL: info does not list layer 1"; failures=$((failures + 1)); }
grep -q "^values *all finite" "$work/out" || { echo "FAIL: info does not report finite values"; failures=$((failures + 1)); }
expect 0 "dense decode check" -- "$kvscope" --debug dense --capture "$work/s.safetensors" --decode --probes 8 --check
expect 0 "dense prefill check" -- "$kvscope" --debug dense --capture "$work/s.safetensors" --prefill --chunk 64 --check --json
grep -q '"pass": true' "$work/out" || { echo "FAIL: dense --json lacks a passing check"; failures=$((failures + 1)); }
# KVSCOPE_PIPELINE_LOG: a line a pipeline built (device, kernel [specialisation],
# create ms, first-dispatch ms), which tools/dev/pipeline_compiles.py reads.
expect 0 "dense prefill with a pipeline log" -- env KVSCOPE_PIPELINE_LOG="$work/pipelines.tsv" \
  "$kvscope" dense --capture "$work/s.safetensors" --prefill --chunk 64
awk -F'\t' 'NF != 4 || $2 !~ /^[a-z0-9_]+ \[[0-9,]*\]$/ || $3 !~ /^[0-9.]+$/ || $4 !~ /^[0-9.]+$/ { bad = 1 } END { exit bad || NR == 0 }' \
  "$work/pipelines.tsv" && grep -q "attention_merge" "$work/pipelines.tsv" &&
  python3 "$(dirname "$0")/../tools/dev/pipeline_compiles.py" "$work/pipelines.tsv" | grep -q '^| `attention_merge` |' ||
  { echo "FAIL: KVSCOPE_PIPELINE_LOG's lines or their table"; failures=$((failures + 1)); }
expect 2 "dense on a missing layer" -- "$kvscope" dense --capture "$work/s.safetensors" --layer 5 --decode
expect 2 "dense without a mode" -- "$kvscope" dense --capture "$work/s.safetensors"
head -c 100 "$work/s.safetensors" >"$work/truncated.safetensors"
expect 2 "info on a truncated file" -- "$kvscope" info "$work/truncated.safetensors"
expect 2 "info on a missing file" -- "$kvscope" info "$work/none.safetensors"
expect 0 "eval decode with json and csv" -- "$kvscope" --debug-sync eval --capture "$work/s.safetensors" --decode --probes 2 --budgets 32,64 --json "$work/e.json" --csv "$work/e.csv"
grep -q '"timings_ms"' "$work/e.json" || { echo "FAIL: eval --json lacks timings_ms"; failures=$((failures + 1)); }
[ "$(wc -l <"$work/e.csv")" = 25 ] || { echo "FAIL: eval --csv has $(wc -l <"$work/e.csv") lines, expected 25"; failures=$((failures + 1)); }
# The table a newcomer reads: dense once a layer (two layers), a summary line of the best method at each budget.
[ "$(grep -c '^[0-9]* *dense ' "$work/out")" = 2 ] && grep -q '^most coverage (mean over layers): 32 keys: .*; 64 keys: ' "$work/out" ||
  { echo "FAIL: eval's table: dense once a layer and a summary line"; failures=$((failures + 1)); }
expect 0 "select prefill" -- "$kvscope" --debug-sync select --capture "$work/s.safetensors" --layer 1 --method quoka --budget 32 --prefill --chunk 64 --out "$work/sel.safetensors"
expect 2 "select with an unknown method" -- "$kvscope" select --capture "$work/s.safetensors" --layer 0 --method nope --budget 8 --decode --out "$work/bad.safetensors"
[ -e "$work/bad.safetensors" ] && { echo "FAIL: a refused select left a file"; failures=$((failures + 1)); }
expect 2 "eval with a bad budget list" -- "$kvscope" eval --capture "$work/s.safetensors" --decode --budgets 8,x
expect 2 "eval with a bad --gqa-agg" -- "$kvscope" eval --capture "$work/s.safetensors" --decode --gqa-agg median
# LessIsMore attends layer 4 with layer 2's set (its defaults): the bundled capture holds layers 0 and 4.
expect 2 "eval of lessismore without its choosing layer" -- "$kvscope" eval --layers 4 --methods lessismore --budgets 64 --decode --probes 2
grep -q "layer 2 chose" "$work/err" || { echo "FAIL: lessismore's refusal names no choosing layer"; failures=$((failures + 1)); }
expect 0 "eval of lessismore choosing at a layer the capture holds" -- "$kvscope" eval --layers 4 --methods lessismore --budgets 64 --decode --probes 2 --lim-start 0
expect 0 "bench at two small sizes" -- "$kvscope" --debug-sync bench --lengths 256,512 --heads 4 --kv-heads 2 --dim 64 --budget 64 --prefill-budget 64 --chunk 64 --repeat 2 --json "$work/b.json"
grep -q '"read_gb_per_s"' "$work/b.json" && grep -q '"per_copy_us"' "$work/b.json" ||
  { echo "FAIL: bench --json lacks read_gb_per_s or per_copy_us"; failures=$((failures + 1)); }
# The shape it timed, for scripts that set it beside other measurements (tools/peers/bench_torch.py).
grep -q '"kv_heads": 2' "$work/b.json" && grep -q '"prefill_budget": 64' "$work/b.json" ||
  { echo "FAIL: bench --json lacks its config"; failures=$((failures + 1)); }
# Each of the 14 default steps at each of the 2 lengths ran in a process of its own; all rows came back.
[ "$(grep -c '"stage": "total"' "$work/b.json")" = 28 ] ||
  { echo "FAIL: bench --json lacks a step's total row"; failures=$((failures + 1)); }
expect 0 "bench in one process" -- "$kvscope" bench --lengths 256 --heads 4 --kv-heads 2 --dim 64 --budget 64 --chunk 64 --repeat 2 --steps dense-decode,quest-decode --in-process
[ "$(grep -c ' total ' "$work/out")" = 2 ] || { echo "FAIL: bench --in-process lacks a step"; failures=$((failures + 1)); }
expect 0 "bench without calibration" -- "$kvscope" bench --lengths 256 --heads 4 --kv-heads 2 --dim 64 --budget 64 --chunk 64 --repeat 2 --steps quest-decode --skip-calibration --json "$work/c.json"
# No read bandwidth measured: no fraction of it (it printed "inf%").
grep -q '"fraction_of_read": null' "$work/c.json" && ! grep -q 'inf' "$work/out" ||
  { echo "FAIL: bench --skip-calibration printed a fraction of an unmeasured bandwidth"; failures=$((failures + 1)); }
expect 2 "bench with a length below two chunks" -- "$kvscope" bench --lengths 100 --chunk 128
expect 0 "inspect a prefill chunk" -- "$kvscope" --debug-sync inspect --capture "$work/s.safetensors" --prefill --chunk 64 --method quoka --budget 32 --repeat 2 --json
grep -q '"inspection_ms"' "$work/out" || { echo "FAIL: inspect --json lacks inspection_ms"; failures=$((failures + 1)); }
expect 2 "inspect a block past the end" -- "$kvscope" inspect --capture "$work/s.safetensors" --decode --probes 4 --block 9 --method quest --budget 8
expect 2 "unknown device" -- "$kvscope" --device no-such-gpu dense --capture "$work/s.safetensors" --decode

stories=$(dirname "$0")/../assets/models/stories260K
expect 0 "generate with stories260K" -- "$kvscope" --debug-sync generate --model "$stories/stories260K.bin" --prompt "Once upon a time" --steps 12 --json "$work/g.json"
grep -q "[a-z]" "$work/out" ||
  { echo "FAIL: generate printed no text"; failures=$((failures + 1)); }
grep -q '"decode_ms_per_token"' "$work/g.json" && grep -q '"gpu_ms_by_stage"' "$work/g.json" ||
  { echo "FAIL: generate --json lacks its timings"; failures=$((failures + 1)); }
expect 0 "generate with quest in decode and quoka in prefill" -- "$kvscope" --debug-sync generate --model "$stories/stories260K.bin" \
  --prompt "Once upon a time, there was a little girl named Lily. She loved to play outside" --chunk 8 --steps 40 \
  --method quest --budget 16 --page-size 8 --prefill-method quoka --prefill-budget 8 --n-q 4 --dense-layers 0 --json "$work/gs.json"
grep -q '"prefill": {' "$work/gs.json" && grep -q '"page-size": "8"' "$work/gs.json" && grep -q '"sparse_attention_partial"' "$work/gs.json" && grep -q '"selection": [0-9]' "$work/gs.json" ||
  { echo "FAIL: generate --json lacks the selection or its sparse attention"; failures=$((failures + 1)); }
expect 2 "generate with a method a model run cannot feed" -- "$kvscope" generate --model "$stories/stories260K.bin" --method h2o --budget 8
expect 2 "generate with a method and no budget" -- "$kvscope" generate --model "$stories/stories260K.bin" --method quest
printf 'GGUF\003\000\000\000' > "$work/cut.gguf"
expect 2 "generate with a GGUF file cut after its version" -- "$kvscope" generate --model "$work/cut.gguf" --prompt hi
expect 2 "generate --chat for a model without a chat template" -- "$kvscope" generate --model "$(dirname "$0")/../assets/models/llama-debian-5m" --chat --prompt hi --steps 1
expect 2 "generate --chat-format of no known format" -- "$kvscope" generate --model "$(dirname "$0")/../assets/models/llama-debian-5m" --chat-format alpaca --prompt hi --steps 1
expect 0 "generate --chat-format chatml" -- "$kvscope" generate --model "$(dirname "$0")/../assets/models/llama-debian-5m" --chat-format chatml --prompt hi --steps 1
expect 2 "generate with a budget and no method" -- "$kvscope" generate --model "$stories/stories260K.bin" --prefill-budget 8
expect 2 "generate with a layer the model lacks" -- "$kvscope" generate --model "$stories/stories260K.bin" --method quest --budget 8 --dense-layers 7
debian5m=$(dirname "$0")/../assets/models/llama-debian-5m
expect 0 "needle with dense and streaming, every output" -- "$kvscope" --debug-sync needle --model "$debian5m" --lengths 256 --depths 0.5 \
  --methods dense,streaming --budgets 16 --json "$work/n.json" --csv "$work/n.csv" --plot "$work/n.png"
grep -q '"results"' "$work/n.json" && grep -q '"regime": "decode"' "$work/n.json" && head -1 "$work/n.csv" | grep -q '^task,length,depth,method,budget,regime,accuracy' &&
  [ "$(head -c 4 "$work/n.png" | tail -c 3)" = "PNG" ] && [ ! -e "$work/n.json.partial" ] ||
  { echo "FAIL: needle's JSON, CSV or PNG"; failures=$((failures + 1)); }
expect 0 "needle with the kv task in prefill" -- "$kvscope" needle --model "$debian5m" --task kv --lengths 256 --depths 0.3 --methods quoka --budgets 32 --regime prefill --chunk 64
expect 0 "ruler's niah_single_1 with dense and quest, every output" -- "$kvscope" ruler --model "$debian5m" --tasks niah_single_1 --lengths 400 \
  --samples 1 --methods dense,quest --budgets 32 --tokens-to-generate 4 --json "$work/r.json" --csv "$work/r.csv" --results "$work/r.jsonl"
grep -q "RULER at 400 tokens" "$work/out" && grep -q '"score"' "$work/r.json" && grep -q '"references"' "$work/r.json" &&
  head -1 "$work/r.csv" | grep -q '^task,length,method,budget,regime,score,samples' && [ "$(wc -l <"$work/r.jsonl")" = 3 ] ||
  { echo "FAIL: ruler's table, JSON, CSV or results file"; failures=$((failures + 1)); }
expect 2 "ruler with an unknown task" -- "$kvscope" ruler --model "$debian5m" --tasks qa_1
expect 2 "ruler with a length too short for vt" -- "$kvscope" ruler --model "$debian5m" --tasks vt --lengths 512 --methods dense
expect 2 "ruler with a missing word list" -- "$kvscope" ruler --model "$debian5m" --words "$work/no-words.txt"
expect 0 "ppl with dense and quest, both regimes" -- "$kvscope" --debug-sync ppl --model "$debian5m" --length 128 --scored 20 \
  --methods dense,quest --budgets 32 --regime both --chunk 64 --json "$work/p.json"
grep -q '"perplexity"' "$work/p.json" && [ "$(grep -c '"regime"' "$work/p.json")" = 4 ] ||
  { echo "FAIL: ppl's JSON lacks a run"; failures=$((failures + 1)); }
[ "$(grep -cE '^(dense|quest) +[-0-9]+ +(decode|prefill) +[0-9.]+ +[0-9.]+$' "$work/out")" = 4 ] ||
  { echo "FAIL: ppl's table lacks a row:"; cat "$work/out"; failures=$((failures + 1)); }
# A method really in the loop changes what the model says: StreamingLLM at 16
# keys loses the passkey that dense finds.
expect 0 "speed in decode with dense and streaming" -- "$kvscope" --debug-sync speed --model "$debian5m" --length 300 \
  --regime decode --steps 4 --rounds 2 --methods dense,streaming --budgets 16 --json "$work/d.json"
[ "$(grep -c '"ms_per_token"' "$work/d.json")" = 2 ] && grep -q '"continuation": " 61538' "$work/d.json" &&
  [ "$(grep -c '"continuation": " 61538' "$work/d.json")" = 1 ] ||
  { echo "FAIL: speed's decode JSON: two runs, dense answering the passkey and streaming at 16 keys not"; failures=$((failures + 1)); }
expect 0 "speed in prefill with dense and quoka" -- "$kvscope" --debug-sync speed --model "$debian5m" --length 300 --regime prefill \
  --steps 5 --rounds 1 --methods dense,quoka --budgets 32 --chunk 64 --json "$work/f.json"
[ "$(grep -c '"time_to_first_token_ms"' "$work/f.json")" = 2 ] && [ "$(grep -c '"continuation": " 61538' "$work/f.json")" = 2 ] ||
  { echo "FAIL: speed's prefill JSON: two runs, both answering the passkey"; failures=$((failures + 1)); }
expect 2 "speed with a prompt file and a length" -- "$kvscope" speed --model "$debian5m" --prompt-file "$0" --length 300
expect 2 "speed with no rounds" -- "$kvscope" speed --model "$debian5m" --rounds 0
expect 2 "speed with an unknown regime" -- "$kvscope" speed --model "$debian5m" --regime sideways
# Both regimes by default: the decode table, then the prefill one, in one JSON.
expect 0 "speed in both regimes" -- "$kvscope" speed --model "$debian5m" --length 128 --steps 2 --rounds 1 \
  --budgets 32 --chunk 64 --json "$work/b.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); d,p=j["decode"],j["prefill"]
assert [r["method"] for r in d["results"]] == ["dense","quest","fier"] and all("ms_per_token" in r for r in d["results"])
assert [r["method"] for r in p["results"]] == ["dense","quoka"] and all("time_to_first_token_ms" in r for r in p["results"])' "$work/b.json" ||
  { echo "FAIL: speed's JSON in both regimes: dense, quest and fier decode, dense and quoka prefill"; failures=$((failures + 1)); }
expect 2 "speed with a method a model run cannot feed" -- "$kvscope" speed --model "$debian5m" --methods snapkv
expect 2 "speed with a refused --json" -- "$kvscope" speed --model "$debian5m" --length 300 --json "$work/no/such/dir/d.json"
expect 2 "ppl scoring more tokens than the text has" -- "$kvscope" ppl --model "$debian5m" --length 100 --scored 200
expect 2 "ppl with a text shorter than the length" -- "$kvscope" ppl --model "$debian5m" --length 100000
expect 2 "needle with an unknown task" -- "$kvscope" needle --model "$debian5m" --task riddle
expect 2 "needle with a depth past 1" -- "$kvscope" needle --model "$debian5m" --depths 1.5
expect 2 "needle with a method a model run cannot feed" -- "$kvscope" needle --model "$debian5m" --methods h2o --budgets 16
expect 2 "needle with a zero budget" -- "$kvscope" needle --model "$debian5m" --budgets 0
expect 2 "needle with a length too short" -- "$kvscope" needle --model "$debian5m" --lengths 10
expect 2 "needle with an unknown regime" -- "$kvscope" needle --model "$debian5m" --regime sideways
expect 2 "needle without a model" -- "$kvscope" needle --lengths 256
expect 2 "needle with a refused --plot" -- "$kvscope" needle --model "$debian5m" --lengths 256 --plot "$work/no/such/dir/n.png"
expect 2 "generate without a model" -- "$kvscope" generate --prompt hi
expect 2 "generate with a missing model" -- "$kvscope" generate --model "$work/none"
expect 2 "generate past the context" -- "$kvscope" generate --model "$stories/stories260K.bin" --steps 600
expect 2 "generate with a bad temperature" -- "$kvscope" generate --model "$stories/stories260K.bin" --temperature hot
expect 2 "generate with a truncated checkpoint" -- "$kvscope" generate --model "$work/truncated.safetensors" --tokenizer "$stories/tok512.bin"
expect 2 "generate with a wrong tokenizer" -- "$kvscope" generate --model "$stories/stories260K.bin" --tokenizer "$work/s.safetensors"
expect 2 "generate with a refused --json" -- "$kvscope" generate --model "$stories/stories260K.bin" --steps 2 --json "$work/no/such/dir/g.json"

# Random weights from a bare config.json (no tokenizer beside it): token ids in and out.
shape=$work/shape
mkdir -p "$shape" && cp "$(dirname "$0")/../assets/models/llama-debian-5m/config.json" "$shape/"
expect 0 "generate with random weights and token ids" -- "$kvscope" --debug-sync generate --model "$shape/config.json" --random-weights \
  --seed 3 --prompt "5 6 7" --steps 4
grep -Eq "^( [0-9]+){4}$" "$work/out" || { echo "FAIL: generate with random weights printed no token ids"; failures=$((failures + 1)); }
# A paper's table in one process: budgets as a share of the prompt, Fier per
# query head and per KV head, a prefill table per chunk size.
expect 0 "speed with random weights" -- "$kvscope" speed --model "$shape" --random-weights --length 100 --steps 2 --rounds 1 \
  --methods dense,fier --budgets 10% --gqa-agg head,max --chunk 32,64 --json "$work/r.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); d,p=j["decode"],j["prefill"]
assert [(r["method"],r["variant"],r["budget"]) for r in d["results"]] == [("dense","",0),("fier","gqa-agg=head",10),("fier","gqa-agg=max",10)]
assert [t["chunk"] for t in p] == [32,64] and all(len(t["results"]) == 3 for t in p)' "$work/r.json" ||
  { echo "FAIL: speed with random weights: Fier per head and per KV head at 10% of 100 keys, prefill tables at chunks 32 and 64"; failures=$((failures + 1)); }
expect 2 "speed with a percentage over 100" -- "$kvscope" speed --model "$shape" --random-weights --budgets 120%
expect 2 "needle with a percentage budget" -- "$kvscope" needle --model "$debian5m" --budgets 3%
expect 2 "needle with random weights and no tokenizer" -- "$kvscope" needle --model "$shape" --random-weights --lengths 256
expect 2 "generate with random weights and a text prompt" -- "$kvscope" generate --model "$shape" --random-weights --prompt hello
expect 2 "random weights without a config" -- "$kvscope" generate --model "$work/none.json" --random-weights --prompt "1"

debian5m=$(dirname "$0")/../assets/models/llama-debian-5m
expect 0 "capture a passkey prompt" -- "$kvscope" --debug-sync capture --model "$debian5m" --passkey --length 300 --depth 0.5 --layers 0,5 --out "$work/pk.safetensors"
expect 0 "info on the capture" -- "$kvscope" info "$work/pk.safetensors"
grep -q "^5 *4 *2 *2 " "$work/out" || { echo "FAIL: the capture lacks layer 5"; failures=$((failures + 1)); }
expect 0 "eval on the capture" -- "$kvscope" eval --capture "$work/pk.safetensors" --decode --probes 2 --budgets 32 --methods quest,fier
grep -q "needle" "$work/out" || { echo "FAIL: eval on a passkey capture shows no needle recall"; failures=$((failures + 1)); }
expect 2 "capture without a prompt" -- "$kvscope" capture --model "$debian5m" --out "$work/np.safetensors"
expect 2 "capture of a missing layer" -- "$kvscope" capture --model "$debian5m" --prompt hello --layers 6 --out "$work/np.safetensors"
expect 2 "capture with a depth past 1" -- "$kvscope" capture --model "$debian5m" --passkey --length 300 --depth 1.5 --out "$work/np.safetensors"
[ -e "$work/np.safetensors" ] && { echo "FAIL: a refused capture left a file"; failures=$((failures + 1)); }

echo "cli: $passes passed, $failures failed"
[ "$failures" = 0 ]
