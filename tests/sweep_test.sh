#!/usr/bin/env bash
# Sweeps that lose nothing (docs/cli.md, "Results files"): a needle sweep
# killed after its second cell and resumed, a results file cut mid-line and
# resumed, three shards merged (by the CLI and by kvscope.merge), ppl, eval
# and speed shards merged, and every refusal in one line. Each is compared
# with one uninterrupted run of the same sweep.
#   sweep_test.sh KVSCOPE [PYTHON_MODULE_DIR]
set -u
kvscope=$(realpath "$1")
python_dir=${2:+$(realpath "$2")}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/expect.sh"

assets=$(cd "$(dirname "$0")/../assets" && pwd)
model=$assets/models/llama-debian-5m
# 3 (length, depth) groups of 2 cells, about a second each on lavapipe.
needle=(needle --model "$model" --lengths 112,120,128 --depths 0.5 --methods dense,quest --budgets 16)
cd "$work"

expect 0 "needle, uninterrupted" -- "$kvscope" "${needle[@]}" --results full.jsonl --json full.json --csv full.csv --plot full.png
[ "$(lines full.jsonl)" = 7 ] || fail "the results file holds $(lines full.jsonl) lines, not a header and 6 cells"

# Killed (SIGKILL) once its second cell is on disk, then resumed.
"$kvscope" "${needle[@]}" --results killed.jsonl >/dev/null 2>&1 &
pid=$!
for _ in $(seq 3000); do
  [ -f killed.jsonl ] && [ "$(lines killed.jsonl)" -ge 3 ] && break
  sleep 0.01
done
kill -KILL $pid 2>/dev/null
wait $pid 2>/dev/null
held=$(lines killed.jsonl)
if [ "$held" -ge 3 ] && [ "$held" -lt 7 ]; then echo "ok: killed with $((held - 1)) cells done"; passes=$((passes + 1))
elif [ "$held" = 7 ]; then echo "note: the sweep finished before the kill (a fast device): the resume below has nothing to run"
else fail "the sweep was killed with $held lines in its results file"; fi
expect 0 "needle resumed after SIGKILL" -- "$kvscope" "${needle[@]}" --results killed.jsonl --resume --json killed.json --csv killed.csv --plot killed.png
grep -q "already in killed.jsonl" err || fail "the resumed run does not say what it found"
same "resumed JSON is the uninterrupted run's" full.json killed.json
same "resumed CSV" full.csv killed.csv
same "resumed plot" full.png killed.png
[ "$(lines killed.jsonl)" = 7 ] || fail "the resumed results file holds $(lines killed.jsonl) lines"

# Cut in the middle of its fifth line, as a kill during a write leaves it.
cut_at=$(( $(head -4 full.jsonl | wc -c) + 40 ))
head -c "$cut_at" full.jsonl >cut.jsonl
expect 0 "needle resumed from a line cut short" -- "$kvscope" "${needle[@]}" --results cut.jsonl --resume --json cut.json
grep -q "cut short" err || fail "no note about the cut line"
same "JSON after a cut line" full.json cut.json
python3 -c "import json,sys; [json.loads(l) for l in open('cut.jsonl')]" || fail "cut.jsonl is not JSON Lines after the resume"

# A resume that has nothing left to run writes the same reports.
cp full.jsonl again.jsonl
expect 0 "needle resumed with every cell done" -- "$kvscope" "${needle[@]}" --results again.jsonl --resume --json again.json
same "JSON of a finished resume" full.json again.json

# Three shards, merged.
for i in 1 2 3; do
  expect 0 "needle shard $i/3" -- "$kvscope" "${needle[@]}" --results shard$i.jsonl --shard $i/3
done
expect 0 "merge of three needle shards" -- "$kvscope" merge merged.jsonl shard1.jsonl shard2.jsonl shard3.jsonl \
  --json merged.json --csv merged.csv --plot merged.png
same "merged JSON" full.json merged.json
same "merged CSV" full.csv merged.csv
same "merged plot" full.png merged.png
[ "$(lines merged.jsonl)" = 7 ] || fail "the merged results file holds $(lines merged.jsonl) lines"
expect 0 "the merged file merges again as one shard" -- "$kvscope" merge remerged.jsonl merged.jsonl --json remerged.json
same "a merge of the merged file" full.json remerged.json
if [ -n "$python_dir" ]; then
  expect 0 "kvscope.merge from Python" -- env PYTHONPATH="$python_dir" python3 -c \
    "import kvscope; r = kvscope.merge('py.jsonl', ['shard3.jsonl', 'shard1.jsonl', 'shard2.jsonl'], json='py.json', csv='py.csv', plot='py.png'); assert len(r['results']) == 6"
  same "Python's merged JSON" full.json py.json
  same "Python's merged plot" full.png py.png
  expect 1 "kvscope.merge refuses a missing shard" -- env PYTHONPATH="$python_dir" python3 -c \
    "import kvscope
try:
    kvscope.merge('py2.jsonl', ['shard1.jsonl'])
except ValueError as e:
    print(e); raise SystemExit(1)"
fi

# Refusals: one line, exit 2, nothing written.
expect 2 "a results file that holds a sweep, without --resume" -- "$kvscope" "${needle[@]}" --results full.jsonl
expect 2 "a resume of another seed's sweep" -- "$kvscope" "${needle[@]}" --seed 1 --results full.jsonl --resume
grep -q "seed" err || fail "the refusal does not name the seed"
expect 2 "a resume of other lengths" -- "$kvscope" needle --model "$model" --lengths 112 --depths 0.5 --methods dense,quest --budgets 16 --results full.jsonl --resume
expect 2 "a resume of another shard" -- "$kvscope" "${needle[@]}" --results shard1.jsonl --shard 2/3 --resume
expect 2 "--shard without --results" -- "$kvscope" "${needle[@]}" --shard 1/2
expect 2 "--resume without --results" -- "$kvscope" "${needle[@]}" --resume
expect 2 "--shard 4/3" -- "$kvscope" "${needle[@]}" --results bad.jsonl --shard 4/3
expect 2 "--shard 0/3" -- "$kvscope" "${needle[@]}" --results bad.jsonl --shard 0/3
expect 2 "--results naming a folder" -- "$kvscope" "${needle[@]}" --results "$work"
expect 2 "--results in a missing folder" -- "$kvscope" "${needle[@]}" --results no/such/r.jsonl
[ -e bad.jsonl ] && fail "a refused shard left a results file"
printf 'not json\n' >junk.jsonl
expect 2 "a resume of a file that is not a results file" -- "$kvscope" "${needle[@]}" --results junk.jsonl --resume
expect 2 "merge with a shard missing" -- "$kvscope" merge m.jsonl shard1.jsonl shard3.jsonl
expect 2 "merge with a shard twice" -- "$kvscope" merge m.jsonl shard1.jsonl shard1.jsonl shard2.jsonl shard3.jsonl
head -c "$(( $(head -1 shard2.jsonl | wc -c) + 20 ))" shard2.jsonl >short2.jsonl
expect 2 "merge with a shard that did not finish" -- "$kvscope" merge m.jsonl shard1.jsonl short2.jsonl shard3.jsonl
expect 2 "merge of a shard and a whole run" -- "$kvscope" merge m.jsonl shard1.jsonl full.jsonl
expect 2 "merge of a file that is not a results file" -- "$kvscope" merge m.jsonl junk.jsonl
expect 2 "merge with nothing to merge" -- "$kvscope" merge m.jsonl
[ -e m.jsonl ] && fail "a refused merge left its output"

# ppl: a cell a run; two shards.
ppl=(ppl --model "$model" --length 80 --scored 4 --methods dense,quest --budgets 16)
expect 0 "ppl, uninterrupted" -- "$kvscope" "${ppl[@]}" --results ppl.jsonl --json ppl.json
for i in 1 2; do expect 0 "ppl shard $i/2" -- "$kvscope" "${ppl[@]}" --results ppl$i.jsonl --shard $i/2; done
expect 0 "merge of ppl shards" -- "$kvscope" merge pplm.jsonl ppl2.jsonl ppl1.jsonl --json pplm.json
same "merged ppl JSON" ppl.json pplm.json
expect 2 "merge --csv of ppl, which writes none" -- "$kvscope" merge pplx.jsonl ppl1.jsonl ppl2.jsonl --csv pplx.csv
[ -e pplx.jsonl ] && fail "a refused merge left its output"

# eval: a layer's cells together; GPU times differ run to run, the rest may not.
capture=$assets/real-passkey-4k.safetensors
eval_args=(eval --capture "$capture" --decode --probes 2 --layers all --methods dense,quest,streaming --budgets 32,64)
expect 0 "eval, uninterrupted" -- "$kvscope" "${eval_args[@]}" --results eval.jsonl --json eval.json --csv eval.csv
for i in 1 2; do expect 0 "eval shard $i/2" -- "$kvscope" "${eval_args[@]}" --results eval$i.jsonl --shard $i/2; done
expect 0 "merge of eval shards" -- "$kvscope" merge evalm.jsonl eval1.jsonl eval2.jsonl --json evalm.json --csv evalm.csv
untimed='import json, sys
drop = {"timings_ms", "build_timings_ms", "select_ms", "attention_ms"}
rows = [[{k: v for k, v in r.items() if k not in drop} for r in json.load(open(f))] for f in sys.argv[1:]]
sys.exit(0 if rows[0] == rows[1] and len(rows[0]) == 12 else 1)'
python3 -c "$untimed" eval.json evalm.json && { echo "ok: merged eval rows"; passes=$((passes + 1)); } || fail "merged eval rows differ"
[ "$(cut -d, -f1-7 eval.csv)" = "$(cut -d, -f1-7 evalm.csv)" ] || fail "merged eval CSV differs"

# speed: a table a shard; the merged report holds both tables' runs in order.
speed=(speed --model "$model" --length 96 --steps 2 --rounds 1 --methods dense,quest --budgets 16 --chunk 32)
for i in 1 2; do expect 0 "speed shard $i/2" -- "$kvscope" "${speed[@]}" --results speed$i.jsonl --shard $i/2; done
expect 0 "merge of speed shards" -- "$kvscope" merge speedm.jsonl speed1.jsonl speed2.jsonl --json speedm.json
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
runs = lambda t: [(x["method"], x["budget"]) for x in t["results"]]
assert runs(r["decode"]) == runs(r["prefill"]) == [("dense", 0), ("quest", 16)], r
assert r["decode"]["prefill_ms"] > 0' speedm.json && { echo "ok: merged speed tables"; passes=$((passes + 1)); } || fail "merged speed tables"

echo "sweeps: $passes passed, $failures failed"
[ "$failures" = 0 ]
