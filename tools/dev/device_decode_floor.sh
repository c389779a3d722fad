#!/usr/bin/env bash
# Issue "decode at the memory floor", timed old against new in one call on the
# GPU machine (carry .gl, .icu and .devbin with kvscope), in order of
# importance, each in one process: Quest's selection fused (quest_page_topk)
# against its two dispatches (KVSCOPE_QUEST_FUSED=0) in the bench at MHA 32k
# and 128k; the 8B dense decode step by stage with model_matvec's input staged
# and not (KVSCOPE_MATVEC_STAGED=0); cuBLAS's one-token products and the copy
# bandwidth; dense decode in F16 and BF16; Quest end to end on Llama-2-7B's
# MHA shape at 32k, both ways. Results into $OUT.
set -u
for f in .icu/*.deb .devbin/wamerican_*.deb; do dpkg -x "$f" / 2>/dev/null; done
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
K=$B/kvscope
rows() { grep -E "page_|topk|sparse_attention|dense_partial|dense_merge|total|read|^H=" ; }
for fused in 0 1; do
  echo "=== MHA, KVSCOPE_QUEST_FUSED=$fused"
  KVSCOPE_QUEST_FUSED=$fused $K bench --in-process --lengths 32768,131072 --kv-heads 32 --steps dense-decode,quest-decode \
    --repeat 20 --json $OUT/quest_mha_fused$fused.json 2>&1 | rows
done
for staged in 0 1; do
  echo "=== 8B dense decode at 32k, KVSCOPE_MATVEC_STAGED=$staged"
  KVSCOPE_MATVEC_STAGED=$staged $K speed --model assets/shapes/llama-3.1-8b.json --random-weights --regime decode \
    --length 32768 --chunk 2048 --steps 16 --rounds 1 --methods dense --json $OUT/speed8b_staged$staged.json 2>&1 | tail -2
done
python3 tools/peers/bench_linear.py --config assets/shapes/llama-3.1-8b.json --tokens 1 | tee $OUT/cublas.jsonl | cut -c1-300
for dt in F16 BF16; do
  echo "=== dense decode $dt"
  $K bench --in-process --lengths 32768,131072 --steps dense-decode --dtype $dt --repeat 20 --json $OUT/dense_$dt.json 2>&1 | rows
done
for fused in 0 1; do
  echo "=== Quest end to end, KVSCOPE_QUEST_FUSED=$fused"
  KVSCOPE_QUEST_FUSED=$fused $K speed --model assets/shapes/llama-2-7b.json --random-weights --regime decode --length 32700 \
    --chunk 2048 --methods dense,quest --budgets 2048 --steps 8 --rounds 1 --json $OUT/quest_e2e_fused$fused.json 2>&1 | tail -3
done
