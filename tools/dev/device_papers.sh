#!/usr/bin/env bash
# The seed papers' speed tables at their own scale (docs/perf.md, "The papers'
# tables"), each table one `kvscope speed` process with random weights, into
# $OUT (at most 8 files come back from a call: all parts make 7); PARTS
# chooses (default all):
#   kernels  kvscope bench at 32k and 128k, GQA (32/8) and MHA (32/32): the
#            decode and prefill steps of dense, Quest, Fier and QuoKA, then
#            tools/peers/bench_torch.py on the same GPU (flash attention's chunk)
#   quest    Llama-2-7B's MHA shape, decode at 32k, budgets 256-4096
#   fier     Llama-3-8B's shape, decode at 32k and 128k at 11% and 3% of the
#            cache, per query head and per KV head (Quest beside it)
#   quoka    Llama-3-8B's shape, time to first token at LENGTHS (default
#            32768 65536 131000) with 128-, 512- and 2,048-token chunks
set -u
. tools/dev/device_env.sh
PARTS=${PARTS:-kernels,quest,fier,quoka}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
speed() {  # name, shape, then speed's flags
  local name=$1 shape=$2; shift 2
  echo "=== $name"
  $B/kvscope speed --model assets/shapes/$shape.json --random-weights --json $OUT/$name.json "$@" 2>&1 | grep -v "^kvscope: note"
}
if has kernels; then
  steps=dense-decode,quest-decode,fier-decode,dense-prefill,quoka-prefill
  for heads in 8 32; do
    $B/kvscope bench --lengths 32768,131072 --kv-heads $heads --budget 2048 --prefill-budget 1024 --chunk 128 \
      --steps $steps --json $OUT/bench-g$heads.json >> $OUT/kernels.txt 2>&1
    python3 tools/peers/bench_torch.py --tokens 32768,131072 --kv-heads $heads --kvscope $OUT/bench-g$heads.json \
      >> $OUT/kernels.txt 2>&1
  done
  grep -E "total|device" $OUT/kernels.txt
fi
has quest && speed quest-llama2-32k llama-2-7b --regime decode --length 32700 --chunk 2048 --methods dense,quest \
  --budgets 256,512,1024,2048,4096
if has fier; then
  for length in 32768 131000; do
    speed fier-llama3-$length llama-3-8b --regime decode --length $length --chunk 2048 --methods dense,quest,fier \
      --budgets 11%,3% --gqa-agg head,max
  done
fi
if has quoka; then
  for length in ${LENGTHS:-32768 65536 131000}; do
    speed quoka-llama3-$length llama-3-8b --regime prefill --length $length --chunk 128,512,2048 --rounds 1 --steps 1 \
      --methods dense,quoka --budgets 1024,2048
  done
fi
true
