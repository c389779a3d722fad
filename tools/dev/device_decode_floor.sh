#!/usr/bin/env bash
# Decode against its memory floor (docs/perf.md), on the GPU machine: carry
# .gl, .icu and .devbin with kvscope (and, to time old against new in the same
# call, an older build as .devbin/kvscope.old: OLD=1). For each binary, in one
# process a part: the bench's dense and Quest decode at MHA 32k and 128k and
# dense decode at GQA (the kernels alone); the Llama-3.1-8B dense decode step
# by stage at 32k and 128k; Quest end to end on LongChat-7B's MHA shape at
# 32k. Then cuBLAS's one-token products and the copy bandwidth
# (tools/peers/bench_linear.py). SLICES=1 times the 8B step at 32k again with
# every matrix-vector product's channels forced into 1, 2, 4 and 8 slices
# (KVSCOPE_MATVEC_SLICES). SUITE=1 runs device_env.sh's gpu_suite first (carry
# kvscope_tests in .devbin too). Results into $OUT.
set -u
. tools/dev/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
rows() { grep -E "page_|topk|sparse_attention|dense_partial|dense_merge|total|read|^H=" ; }
[ "${SUITE:-0}" = 1 ] && gpu_suite
binaries=$B/kvscope
[ "${OLD:-0}" = 1 ] && binaries="$B/kvscope.old $B/kvscope"
for K in $binaries; do
  tag=$(basename "$K")
  echo "=== $tag: bench, MHA"
  $K bench --in-process --lengths 32768,131072 --kv-heads 32 --steps dense-decode,quest-decode --repeat 20 \
    --json $OUT/bench_mha_$tag.json 2>&1 | rows
  echo "=== $tag: bench, GQA"
  $K bench --in-process --lengths 32768,131072 --steps dense-decode,quest-decode,fier-decode --repeat 20 \
    --json $OUT/bench_gqa_$tag.json 2>&1 | rows
  for L in 32768 131000; do
    echo "=== $tag: Llama-3.1-8B dense decode at $L"
    $K speed --model assets/shapes/llama-3.1-8b.json --random-weights --regime decode --length $L --chunk 2048 \
      --steps 16 --rounds 1 --methods dense --json $OUT/speed8b_${L}_$tag.json 2>&1 | tail -2
  done
  echo "=== $tag: LongChat-7B at 32k, dense and Quest"
  $K speed --model assets/shapes/longchat-7b-v1.5-32k.json --random-weights --regime decode --length 32700 \
    --chunk 2048 --methods dense,quest --budgets 256,2048 --steps 8 --rounds 1 --json $OUT/longchat_$tag.json 2>&1 | tail -3
done
if [ "${SLICES:-0}" = 1 ]; then
  for S in 1 2 4 8; do
    echo "=== kvscope: Llama-3.1-8B dense decode at 32768, matrix-vector products in $S slices"
    KVSCOPE_MATVEC_SLICES=$S $B/kvscope speed --model assets/shapes/llama-3.1-8b.json --random-weights --regime decode \
      --length 32768 --chunk 2048 --steps 16 --rounds 1 --methods dense --json $OUT/speed8b_slices$S.json 2>&1 | tail -2
  done
fi
python3 tools/peers/bench_linear.py --config assets/shapes/llama-3.1-8b.json --tokens 1 | tee $OUT/cublas.jsonl | cut -c1-300
