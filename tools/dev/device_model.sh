#!/usr/bin/env bash
# The model runner on the GPU machine: the model tests (tensor-core linear
# layers, methods in the loop), llama-debian-27m's logits against transformers
# in fp32, 16k passkeys, and `kvscope generate` with methods beside
# tools/peers/bench_hf.py, into $OUT. The 27m model comes in two halves,
# .m1/part and .m2/part with its json files in .m2/ (tools/dev/README.md).
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F='*TinyModel*:*SelectionInTheLoop*:*KeptQueries*:*SelectionPlan*'
KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 --gtest_filter="$F" 2>&1 | tail -4
KVSCOPE_TEST_NO_VALIDATION=1 KVSCOPE_TEST_DEVICE=NVIDIA $B/kvscope_tests --gtest_brief=1 --gtest_filter="$F" 2>&1 | tail -4
M=/tmp/m27; mkdir -p $M; cat .m1/part .m2/part > $M/model.safetensors; cp .m2/*.json $M/
python3 - <<'PY'
import sys; sys.path.insert(0, "tools")
from transformers import AutoTokenizer
from capture_qkv import passkey_prompt
tok = AutoTokenizer.from_pretrained("/tmp/m27")
for length, depth, key in [(4096, 0.5, 51234), (16000, 0.1, 83917), (16000, 0.5, 27465), (16000, 0.9, 60318)]:
    text, ids, span = passkey_prompt(tok, length, depth, passkey=key)
    open(f"/tmp/p{length}_{depth}.txt", "w").write(text)
PY
echo "=== logits at 4k"
$B/kvscope generate --model $M --prompt-file /tmp/p4096_0.5.txt --steps 1 --logits /tmp/kv4k.safetensors > /dev/null 2>&1
python3 tools/dev/compare_logits.py --model $M --kvscope /tmp/kv4k.safetensors | tee $OUT/logits4k.json
echo "=== 16k passkeys (83917, 27465, 60318): dense, then methods at depth 0.5"
for d in 0.1 0.5 0.9; do echo "dense $d: $($B/kvscope generate --model $M --prompt-file /tmp/p16000_$d.txt --steps 8 2>/dev/null)"; done
run() {  # name, then generate's flags
  local name=$1; shift
  for rep in 1 2; do
    $B/kvscope generate --model $M --steps 64 --json $OUT/$name.$rep.json "$@" > $OUT/$name.$rep.txt 2>/dev/null
  done
  python3 -c "import json,sys;j=json.load(open('$OUT/$name.2.json'));p=j['gpu_ms_by_part'];print('%-28s ttft %8.1f ms  decode %6.3f ms/tok  gpu model %7.1f attn %7.1f sel %7.1f  %s'%('$name',j['time_to_first_token_ms'],j['decode_ms_per_token'],p['model'],p['attention'],p['selection'],open('$OUT/$name.2.txt').read().strip()[:12]))"
}
P4=/tmp/p4096_0.5.txt; P16=/tmp/p16000_0.5.txt
run dense4k --prompt-file $P4
run dense4k_chunk1024 --prompt-file $P4 --chunk 1024
run quoka1024_4k --prompt-file $P4 --prefill-method quoka --prefill-budget 1024
run dense16k --prompt-file $P16
run dense16k_chunk1024 --prompt-file $P16 --chunk 1024
run dense16k_chunk4096 --prompt-file $P16 --chunk 4096
run quoka1024_16k --prompt-file $P16 --prefill-method quoka --prefill-budget 1024
run quoka2048_16k --prompt-file $P16 --prefill-method quoka --prefill-budget 2048
for b in 256 1024 2048; do
  run quest${b}_16k --prompt-file $P16 --chunk 1024 --method quest --budget $b
  run fier${b}_16k --prompt-file $P16 --chunk 1024 --method fier --budget $b
done
run quest1024_dl01_16k --prompt-file $P16 --chunk 1024 --method quest --budget 1024 --dense-layers 0,1
run streaming1024_16k --prompt-file $P16 --chunk 1024 --method streaming --budget 1024
run quest256_4k --prompt-file $P4 --chunk 1024 --method quest --budget 256
run fier256_4k --prompt-file $P4 --chunk 1024 --method fier --budget 256
echo "=== transformers eager"
timeout 240 python3 tools/peers/bench_hf.py --model $M --lengths 4096,16000 --new-tokens 64 --repeats 2 --modes eager | tee $OUT/bench_hf.jsonl
