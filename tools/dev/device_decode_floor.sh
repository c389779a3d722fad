#!/usr/bin/env bash
# Issue "decode at the memory floor", timed old against new in one call on the
# GPU machine (carry .gl, .icu and .devbin with kvscope): Quest's selection
# fused (quest_page_topk) against its two dispatches (KVSCOPE_QUEST_FUSED=0)
# in the bench at MHA 32k and 128k and per KV head at GQA, and end to end on
# Llama-2-7B's MHA shape at 32k; dense decode in F16 and BF16; the 8B dense
# decode step by stage with model_matvec's input staged and not
# (KVSCOPE_MATVEC_STAGED=0); cuBLAS's one-token products and the copy bandwidth.
# PARTS (quest,dense,model,cublas) chooses; results into $OUT.
set -u
for f in .icu/*.deb .devbin/wamerican_*.deb; do dpkg -x "$f" / 2>/dev/null; done
. tools/dev/device_env.sh
PARTS=${PARTS:-quest,dense,model,cublas}
has() { [[ ",$PARTS," == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
K=$B/kvscope
rows() { grep -E "page_|topk|sparse_attention|dense_partial|total|read" | grep -v "^$" ; }
if has quest; then
  for fused in 0 1; do
    echo "=== KVSCOPE_QUEST_FUSED=$fused"
    KVSCOPE_QUEST_FUSED=$fused $K bench --lengths 32768,131072 --kv-heads 32 --steps dense-decode,quest-decode --repeat 30 \
      --json $OUT/quest_mha_fused$fused.json 2>&1 | rows
    KVSCOPE_QUEST_FUSED=$fused $K bench --lengths 32768,131072 --steps quest-decode --gqa-agg max --repeat 30 \
      --json $OUT/quest_gqa_max_fused$fused.json 2>&1 | rows
  done
  for fused in 0 1; do
    echo "=== end to end, KVSCOPE_QUEST_FUSED=$fused"
    KVSCOPE_QUEST_FUSED=$fused $K speed --model assets/shapes/llama-2-7b.json --random-weights --regime decode --length 32700 \
      --chunk 2048 --methods dense,quest --budgets 2048 --steps 16 --rounds 2 --json $OUT/quest_e2e_fused$fused.json 2>&1 | tail -4
  done
fi
if has dense; then
  for dt in F16 BF16; do
    $K bench --lengths 32768,131072 --steps dense-decode --dtype $dt --repeat 30 --json $OUT/dense_$dt.json 2>&1 | rows
  done
fi
if has model; then
  for L in 32768 131000; do
    for staged in 0 1; do
      echo "=== 8B dense decode at $L, KVSCOPE_MATVEC_STAGED=$staged"
      KVSCOPE_MATVEC_STAGED=$staged $K speed --model assets/shapes/llama-3.1-8b.json --random-weights --regime decode \
        --length $L --chunk 2048 --steps 16 --rounds 1 --methods dense --json $OUT/speed8b_${L}_staged$staged.json 2>&1 | tail -3
    done
  done
fi
has cublas && python3 tools/peers/bench_linear.py --config assets/shapes/llama-3.1-8b.json --tokens 1 | tee $OUT/cublas.jsonl | cut -c1-300
true
