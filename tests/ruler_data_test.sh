#!/usr/bin/env bash
# `kvscope ruler --data` on RULER's own layout (tests/data/ruler, hand-made in
# the shape of RULER's scripts/data/prepare.py output: three tasks of two
# records): a run with two methods and every output, the same sweep resumed
# from a results file cut after two cells and as two shards merged (each
# compared with the uninterrupted run), and the refusals, each one line on
# stderr, exit 2, no file written.
#   ruler_data_test.sh KVSCOPE
set -u
kvscope=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/expect.sh"

tests=$(cd "$(dirname "$0")" && pwd)
model=$tests/../assets/models/llama-debian-5m
data=$tests/data/ruler
# 3 tasks x (dense, quest at 32): 6 cells; 4 tokens an answer keeps it to seconds.
ruler=(ruler --model "$model" --data "$data" --methods dense,quest --budgets 32 --tokens-to-generate 4)
cd "$work"

expect 0 "ruler --data with dense and quest, every output" -- "$kvscope" "${ruler[@]}" --results full.jsonl --json full.json --csv full.csv
grep -q "^RULER's files in .*tests/data/ruler" out && grep -q "^dense  .*  *[0-9.]*  *[0-9.]*  *[0-9.]*  *[0-9.]*$" out &&
  grep -q "^quest 32 decode" out || fail "ruler --data's table"
[ "$(lines full.jsonl)" = 7 ] || fail "the results file holds $(lines full.jsonl) lines, not a header and 6 cells"
head -1 full.csv | grep -q '^task,length,method,budget,regime,score,samples' && [ "$(lines full.csv)" = 7 ] &&
  grep -q '^qa_1,100,quest,32,decode,[0-9.]*,2$' full.csv || fail "ruler --data's CSV"
python3 - full.json <<'EOF' || fail "ruler --data's JSON: tasks, files, metrics, samples and scores"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["tasks"] == ["niah_single_1", "vt", "qa_1"], r["tasks"]
assert [f["metric"] for f in r["files"]] == ["string_match_all", "string_match_all", "string_match_part"]
assert [f["tokens_to_generate"] for f in r["files"]] == [128, 30, 32]
assert "lengths" not in r and "seed" not in r and r["max_generate"] == 4
cells = r["results"]
assert [(c["task"], c["method"]) for c in cells] == [(t, m) for t in r["tasks"] for m in ("dense", "quest")]
for c in cells:
    assert c["samples"] == 2 and c["indices"] == [0, 1] and len(c["predictions"]) == 2
    part = c["task"] == "qa_1"
    # The score from the predictions, as RULER's constants.py computes it.
    def match(pred, refs):
        pred = pred.strip().lower()
        found = [r.lower() in pred for r in refs]
        return float(any(found)) if part else sum(found) / len(found)
    want = 100 * sum(match(p, refs) for p, refs in zip(c["predictions"], c["references"])) / 2
    assert abs(c["score"] - want) < 1e-9, (c["task"], c["score"], want)
EOF

# Cut after its second cell, resumed: the same reports as the uninterrupted run.
head -3 full.jsonl >cut.jsonl
expect 0 "ruler --data resumed" -- "$kvscope" "${ruler[@]}" --results cut.jsonl --resume --json cut.json --csv cut.csv
same "resumed JSON" full.json cut.json
same "resumed CSV" full.csv cut.csv
[ "$(lines cut.jsonl)" = 7 ] || fail "the resumed results file holds $(lines cut.jsonl) lines"

# Two shards, merged.
for i in 1 2; do
  expect 0 "ruler --data shard $i/2" -- "$kvscope" "${ruler[@]}" --results shard$i.jsonl --shard $i/2
done
expect 0 "merge of the two shards" -- "$kvscope" merge merged.jsonl shard1.jsonl shard2.jsonl --json merged.json
same "merged JSON" full.json merged.json

# Another file under the same name is another sweep: its resume is refused.
cp -r "$data" changed
sed -i 's/4829173/4829174/' changed/niah_single_1/validation.jsonl
expect 2 "resume over changed files" -- "$kvscope" ruler --model "$model" --data changed --methods dense,quest --budgets 32 \
  --tokens-to-generate 4 --results full.jsonl --resume

# Refusals, before any file is written.
expect 2 "--chat with --data" -- "$kvscope" "${ruler[@]}" --chat --json refused.json --results refused.jsonl
grep -q "chat template" err || fail "--chat's refusal does not say why"
expect 2 "--chat-format with --data" -- "$kvscope" "${ruler[@]}" --chat-format chatml --json refused.json
expect 2 "--lengths with --data" -- "$kvscope" "${ruler[@]}" --lengths 4096 --json refused.json
expect 2 "a missing folder" -- "$kvscope" ruler --model "$model" --data "$work/none" --json refused.json
expect 2 "a task folder that is not there" -- "$kvscope" "${ruler[@]}" --tasks vt,qa_2 --json refused.json
grep -q "qa_2/validation.jsonl" err || fail "the missing task's refusal names no file"
cp -r "$data" broken
sed -i '2s/.*/{"index": 1, "input": "cut/' broken/vt/validation.jsonl
expect 2 "a line that is not JSON" -- "$kvscope" ruler --model "$model" --data broken --methods dense --json refused.json --results refused.jsonl
grep -q "broken/vt/validation.jsonl line 2: not JSON" err || fail "the broken line's refusal: $(cat err)"
sed -i '2s/.*/{"index": 1, "input": "x", "answer_prefix": " A:"}/' broken/vt/validation.jsonl
expect 2 "a record without outputs" -- "$kvscope" ruler --model "$model" --data broken --methods dense --json refused.json --results refused.jsonl
grep -q "broken/vt/validation.jsonl line 2: no 'outputs'" err || fail "the record without outputs: $(cat err)"
for f in refused.json refused.jsonl; do [ -e "$f" ] && fail "a refused run left $f"; done

echo "$passes passed, $failures failed"
[ "$failures" = 0 ]
